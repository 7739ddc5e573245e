"""No password in a daemon's log: every daemon as its own process on
RabbitMQ (``rabbit://guest:guest@...``) and PostgreSQL with a password in
each database URL (trust authentication ignores it), at DEBUG. A server is
booted, ``nimbus-manage cell list`` and ``audit`` run; no log, no output
holds a password, and the services' banners name their bus masked."""

import glob
import time

import pytest

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemons

pytestmark = pytest.mark.integration

DB_PASSWORD = 'PgSecretInUrl'


def _with_password(url, password):
    scheme, rest = url.split('://', 1)
    user, host = rest.split('@', 1)
    return '%s://%s:%s@%s' % (scheme, user, password, host)


def test_daemons_never_log_a_password(tmp_path, fresh):
    databases = {
        name: _with_password(fresh.database('postgresql'), DB_PASSWORD)
        for name in ('api', 'cell0', 'cell1', 'placement')
    }
    api_bus, cell_bus = fresh.vhost(), fresh.vhost()
    assert ':guest@' in api_bus  # the password the broker knows
    cloud = daemons.DaemonCloud(
        str(tmp_path / 'cloud'),
        api_bus,
        cell_bus,
        databases,
        hosts=1,
        common_options={'DEFAULT': {'debug': 'true'}},
    )
    outputs = []
    try:
        cloud.prepare()
        cloud.start()
        api = ComputeClient(cloud.api_url)
        deadline = time.monotonic() + 60
        while not api.get('/os-hypervisors/detail')['hypervisors']:
            assert time.monotonic() < deadline, cloud.logs()
            time.sleep(0.5)
        cloud.manage('cell', 'discover-hosts')
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        server = api.create_server('vm', flavor['id'], image['id'])['server'][
            'id'
        ]
        while api.server(server)['status'] != 'ACTIVE':
            assert time.monotonic() < deadline + 60, cloud.logs()
            time.sleep(0.5)
        outputs.append(cloud.manage('cell', 'list'))
        outputs.append(cloud.manage('audit'))
        assert 'guest:***@' in outputs[0]
        assert 'no disagreement' in outputs[1]
    finally:
        cloud.stop()
    logs = {}
    for path in glob.glob(str(tmp_path / 'cloud' / '*.log')):
        with open(path, errors='replace') as f:
            logs[path] = f.read()
    assert (
        'Serving topic conductor as'
        in logs[str(tmp_path / 'cloud' / 'conductor.log')]
    )
    assert 'guest:***@' in logs[str(tmp_path / 'cloud' / 'conductor.log')]
    for name, text in list(logs.items()) + [('output', o) for o in outputs]:
        assert DB_PASSWORD not in text, name
        assert ':guest@' not in text, name
