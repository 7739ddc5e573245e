"""A cross-cell resize (tests/functional/test_cross_cell_resize.py) met
by what else happens to a server: its delete in VERIFY_RESIZE, the
confirm window running out, a super conductor that died in the middle
of the move. Same cloud: cell1 with the source host, cell2 with two."""

import datetime
import threading
import time

from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from nimbus import services
from nimbus.common import context
from nimbus.conductor import cross_cell_recovery
from nimbus.conductor import cross_cell_resize
from nimbus.conductor import recovery
from nimbus.conductor import super_conductor
from nimbus.db.cell import models as cell_models

from tests.functional.test_cross_cell_resize import _cloud
from tests.functional.test_cross_cell_resize import _in_target
from tests.functional.test_cross_cell_resize import _refuse_spawn
from tests.functional.test_cross_cell_resize import _resize
from tests.functional.test_cross_cell_resize import _wait_migration
from tests.functional.test_cross_cell_resize import SOURCE
from tests.functional.test_server_actions import ADMIN


@pytest.fixture
def api(make_cloud, tmp_path):
    # These tests run the recovery pass themselves, on records they aged:
    # the cloud's own pass (10 s after its start, then every 60 s) would
    # race them for the same migration on a slow machine.
    return _cloud(make_cloud, tmp_path, conductor={'recovery_interval': 0})


def _wait_gone(api, uuid, bound=60):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if api.call('GET', '/servers/%s' % uuid, who=ADMIN).status_code == 404:
            return
        time.sleep(0.05)
    raise AssertionError('%s still shows' % uuid)


def _wait_no_guest(api, host, uuid, bound=60):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if uuid not in api.guests(host):
            return
        time.sleep(0.05)
    raise AssertionError('%s still has a guest on %s' % (uuid, host))


def test_delete_in_verify_resize_confirms_first(api):
    uuid = api.boot_on_source()
    _resize(api, uuid)
    dest, migration = _in_target(api, uuid, 'resize')
    response = api.call('DELETE', '/servers/%s' % uuid, who=ADMIN)
    assert response.status_code == 204, response.text
    _wait_gone(api, uuid)
    _wait_no_guest(api, dest, uuid)
    # The source cell: no copy, no guest; the migration consumer holds
    # nothing, nor the instance.
    assert api.rows('cell1', uuid) == []
    assert api.rows('cell2', uuid) == []
    assert uuid not in api.guests(SOURCE)
    assert api.allocations(migration) == {}
    assert api.allocations(uuid) == {}
    (source,) = api.migrations_in('cell1', uuid)
    assert source['status'] == 'confirmed'
    (target,) = api.migrations_in('cell2', uuid)
    assert target['status'] == 'confirmed'


def _conductor(api):
    conf = api.cloud.conf
    return super_conductor.SuperConductor(
        conf,
        services.api_db(conf),
        services.cell_directory(conf),
        services.scheduler_api(conf),
        services.placement(conf),
    )


def _age(api, cell, migration_uuid, seconds=600):
    """The migration's last change ``seconds`` ago (as a wait would)."""
    when = timeutils.utcnow() - datetime.timedelta(seconds=seconds)
    with api.db(cell).session() as session:
        session.execute(
            sa.update(cell_models.Migration)
            .where(cell_models.Migration.uuid == migration_uuid)
            .values(updated_at=when)
        )


def test_auto_confirm_after_the_window(api):
    uuid = api.boot_on_source()
    _resize(api, uuid)
    dest, migration = _in_target(api, uuid, 'resize')
    conductor = _conductor(api)
    ctxt = context.get_admin_context()
    # Within the window: left alone.
    assert cross_cell_recovery.auto_confirm(conductor, ctxt, 60) == 0
    _age(api, 'cell2', migration)
    # The super conductor's recovery pass confirms it (its start, or
    # every [conductor] recovery_interval).
    api.cloud.conf.set_override('resize_confirm_window', 60)
    try:
        acted = recovery.Recovery(
            services.auditor(api.cloud.conf), conductor
        ).run(ctxt)
    finally:
        api.cloud.conf.clear_override('resize_confirm_window')
    assert acted['cross_cell_auto_confirm'] == 1
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == dest
    api.assert_confirmed(uuid, dest, migration)


def _die_at(api, monkeypatch, which):
    """The super conductor 'dies' at a compute step: ``which`` fails and
    nothing is rolled back (its rollback made a no-op). Returns an event
    set once the move has given up there: until then the move's thread
    is still running and would take the real steps back once the test
    undoes these patches."""
    died = threading.Event()

    def rollback(self, migration, selected, exc):
        died.set()

    monkeypatch.setattr(cross_cell_resize.CrossCellMove, 'rollback', rollback)
    if which == 'finish':
        _refuse_spawn(api)
    else:
        driver = api.cloud.computes[SOURCE].driver

        def refuse(uuid):
            raise RuntimeError('gone')

        monkeypatch.setattr(driver, 'power_off', refuse)
    return died


@pytest.mark.parametrize(
    'which,status',
    [('prep_source', 'migrating'), ('finish', 'post-migrating')],
)
def test_a_move_interrupted_before_its_switch_is_undone(
    api, monkeypatch, which, status
):
    uuid = api.boot_on_source()
    before = api.hosts_of(uuid)
    died = _die_at(api, monkeypatch, which)
    _resize(api, uuid)
    left = _wait_migration(api, uuid, status)
    # The migration's status is set before its step is tried: wait for
    # the move to fail there before the patches go.
    assert died.wait(60)
    migration = left['uuid']
    # Left in its step: copies in both cells, mapped to the source.
    assert api.mapped_cell(uuid) == 'cell1'
    assert [hidden for hidden, _v, _h in api.rows('cell2', uuid)] == [True]
    monkeypatch.undo()
    conductor = _conductor(api)
    ctxt = context.get_admin_context()
    # Too recent to be taken for dead.
    assert cross_cell_recovery.settle_interrupted(conductor, ctxt, 300) == {
        'undone': 0,
        'switched': 0,
    }
    _age(api, 'cell1', migration)
    assert cross_cell_recovery.settle_interrupted(conductor, ctxt, 300) == {
        'undone': 1,
        'switched': 0,
    }
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    with api.db('cell1').session() as session:
        faults = session.execute(
            sa.select(cell_models.InstanceFault.message).where(
                cell_models.InstanceFault.instance_uuid == uuid
            )
        ).scalars()
        assert any('stopped in the middle' in m for m in faults)
    assert api.mapped_cell(uuid) == 'cell1'
    assert api.rows('cell1', uuid) == [(False, 'active', SOURCE)]
    assert api.rows('cell2', uuid) == []
    assert api.migrations_in('cell2', uuid) == []
    (record,) = api.migrations_in('cell1', uuid)
    assert record['status'] == 'error'
    assert api.hosts_of(uuid) == before
    assert api.allocations(migration) == {}
    assert uuid in api.guests(SOURCE)
    for host in api.cloud.cell2_host_names():
        assert uuid not in api.guests(host)


def test_a_move_interrupted_after_its_switch_stays_verify_resize(api):
    uuid = api.boot_on_source()
    _resize(api, uuid)
    dest, migration = _in_target(api, uuid, 'resize')
    # As if the super conductor died between the mapping's switch and
    # the source's last step.
    with api.db('cell1').session() as session:
        session.execute(
            sa.update(cell_models.Migration)
            .where(cell_models.Migration.uuid == migration)
            .values(status='post-migrating')
        )
        session.execute(
            sa.update(cell_models.Instance)
            .where(cell_models.Instance.uuid == uuid)
            .values(vm_state='active', task_state='resize_migrated')
        )
    _age(api, 'cell1', migration)
    conductor = _conductor(api)
    ctxt = context.get_admin_context()
    assert cross_cell_recovery.settle_interrupted(conductor, ctxt, 300) == {
        'undone': 0,
        'switched': 1,
    }
    assert api.rows('cell1', uuid) == [(True, 'resized', SOURCE)]
    assert api.migrations_in('cell1', uuid)[0]['status'] == 'finished'
    assert api.show(uuid)['status'] == 'VERIFY_RESIZE'
    # And its revert works as usual.
    response = api.action(uuid, {'revertResize': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert api.rows('cell2', uuid) == []
    assert api.allocations(migration) == {}
