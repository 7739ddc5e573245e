"""``nimbus-manage audit`` run as the operator runs it: a subprocess with a
config file, against a cloud on SQLite with every kind of disagreement."""

import configparser
import os
import subprocess
import sys

import orjson
import pytest
import sqlalchemy as sa

from nimbus.conductor import audit
from nimbus.db.api import models as api_models
from nimbus import services
from tests.functional import test_audit as helpers


@pytest.fixture
def admin(make_cloud):
    return helpers.admin_cloud(make_cloud)


MANAGE = os.path.join(os.path.dirname(sys.executable), 'nimbus-manage')


@pytest.fixture
def arq_store():
    store = helpers.ArqStore()
    yield store
    store.stop()


def _config(tmp_path, cloud, arq_store):
    parser = configparser.ConfigParser(interpolation=None)
    parser['DEFAULT'] = {'state_path': str(tmp_path)}
    parser['api_database'] = {'connection': cloud.db_urls['api']}
    parser['placement_client'] = {'endpoint': cloud.placement_url}
    parser['accelerator_client'] = {'endpoint': arq_store.endpoint}
    parser['conductor'] = {'audit_grace': '0'}
    path = tmp_path / 'manage.conf'
    with open(path, 'w') as f:
        parser.write(f)
    return str(path)


def _manage(config, *args):
    return subprocess.run(
        [MANAGE, '--config-file', config, 'audit'] + list(args),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_cli_lists_heals_and_exits_by_what_remains(admin, arq_store, tmp_path):
    made, healthy, healthy_arq = helpers._make_every_kind(admin, arq_store)
    config = _config(tmp_path, admin.cloud, arq_store)

    table = _manage(config)
    assert table.returncode == 1, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ['KIND', 'UUID', 'WHERE']
    for kind, uuid in made.items():
        # The uuid column (a uuid may also be named in another's detail).
        (row,) = [line for line in lines[1:] if line.split()[1] == uuid]
        assert row.split()[0] == kind
    assert lines[-1].startswith('audit: %d disagreement(s)' % len(made))

    result = _manage(config, '--json')
    assert result.returncode == 1
    report = orjson.loads(result.stdout)
    assert report['counts'] == {kind: 1 for kind in audit.KINDS}
    assert {(d['kind'], d['uuid']) for d in report['disagreements']} == set(
        (kind, uuid) for kind, uuid in made.items()
    )
    assert not any(d['healed'] for d in report['disagreements'])

    healed = _manage(config, '--heal', '--json')
    assert healed.returncode == 1, healed.stderr  # unsafe kinds remain
    report = orjson.loads(healed.stdout)
    assert {d['kind'] for d in report['disagreements'] if d['healed']} == set(
        audit.HEALABLE
    )
    assert report['remaining'] == {
        kind: 1 for kind in audit.KINDS if kind not in audit.HEALABLE
    }
    assert made['orphan_arq'] not in arq_store.arqs
    assert healthy_arq in arq_store.arqs
    assert all(helpers._allocations(admin.cloud, u) for u in healthy)

    after = orjson.loads(_manage(config, '--json').stdout)
    assert after['counts'] == report['remaining']


@pytest.mark.slow
def test_cli_exits_zero_on_a_consistent_cloud_and_after_a_full_heal(
    admin, arq_store, tmp_path
):
    servers = helpers._boot(admin, 'fine', count=2)
    config = _config(tmp_path, admin.cloud, arq_store)
    clean = _manage(config)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.strip().startswith('audit: no disagreement')

    # Only safe kinds: a build request left beside its instance.
    with services.api_db(admin.cloud.conf).session() as session:
        session.add(
            api_models.BuildRequest(
                instance_uuid=servers[0], project_id='admin', instance={}
            )
        )
    assert _manage(config).returncode == 1
    healed = _manage(config, '--heal')
    assert healed.returncode == 0, healed.stdout + healed.stderr
    assert 'healed' in healed.stdout
    with services.api_db(admin.cloud.conf).session() as session:
        assert (
            session.execute(sa.select(api_models.BuildRequest)).first() is None
        )
    assert _manage(config).returncode == 0


@pytest.mark.slow
def test_cli_says_why_when_placement_cannot_be_read(
    admin, arq_store, tmp_path
):
    cloud = admin.cloud
    config = _config(tmp_path, cloud, arq_store)
    text = (
        open(config).read().replace(cloud.placement_url, 'http://127.0.0.1:9')
    )
    with open(config, 'w') as f:
        f.write(text)
    result = _manage(config)
    assert result.returncode == 2
    assert 'placement could not be read' in result.stderr
    assert 'Traceback' not in result.stderr
