"""A stopped (SHUTOFF) server's resize and cold migrate to another cell
(tests/functional/test_cross_cell_resize.py's cloud): as Nova, it waits
in VERIFY_RESIZE (vm_state ``resized``) with its guest off, and stays
stopped after the confirm or the revert, its guest off on the host it
ends on, a confirm or revert its super conductor died in included."""

import pytest

from nimbus.common import instance_states as states
from nimbus.conductor import cross_cell_end

from tests.functional.test_cross_cell_end_faults import _interrupt
from tests.functional.test_cross_cell_end_faults import _recover
from tests.functional.test_cross_cell_resize import _cloud
from tests.functional.test_cross_cell_resize import _in_target
from tests.functional.test_cross_cell_resize import _refuse_spawn
from tests.functional.test_cross_cell_resize import _resize
from tests.functional.test_cross_cell_resize import _wait_migration
from tests.functional.test_cross_cell_resize import SOURCE
from tests.functional.test_server_actions import ADMIN


@pytest.fixture
def api(make_cloud, tmp_path):
    return _cloud(make_cloud, tmp_path)


def _power(api, host, uuid):
    return api.cloud.computes[host].driver.power_state(uuid)


def _boot_stopped(api):
    uuid = api.boot_on_source()
    response = api.action(uuid, {'os-stop': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-STS:power_state'] == states.SHUTDOWN
    return uuid


def _move(api, uuid, kind):
    if kind == 'resize':
        _resize(api, uuid)
    else:
        response = api.action(uuid, {'migrate': None}, who=ADMIN)
        assert response.status_code == 202, response.text
    dest, migration = _in_target(api, uuid, kind)
    server = api.show(uuid)
    assert server['status'] == 'VERIFY_RESIZE'
    assert server['OS-EXT-STS:vm_state'] == states.RESIZED
    assert server['OS-EXT-STS:power_state'] == states.SHUTDOWN
    # Neither guest runs while it waits.
    assert _power(api, dest, uuid) == states.SHUTDOWN
    assert _power(api, SOURCE, uuid) == states.SHUTDOWN
    return dest, migration


@pytest.mark.parametrize('kind', ['resize', 'migration'])
def test_a_stopped_server_moved_then_confirmed_stays_stopped(api, kind):
    uuid = _boot_stopped(api)
    dest, migration = _move(api, uuid, kind)
    response = api.action(uuid, {'confirmResize': None}, who=ADMIN)
    assert response.status_code == 204, response.text
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-STS:vm_state'] == states.STOPPED
    assert server['OS-EXT-STS:power_state'] == states.SHUTDOWN
    assert server['OS-EXT-SRV-ATTR:host'] == dest
    assert server['flavor']['vcpus'] == (2 if kind == 'resize' else 1)
    api.assert_confirmed(uuid, dest, migration, states.STOPPED)
    assert _power(api, dest, uuid) == states.SHUTDOWN
    # And it starts on its new host.
    response = api.action(uuid, {'os-start': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert _power(api, dest, uuid) == states.RUNNING


@pytest.mark.parametrize('kind', ['resize', 'migration'])
def test_a_stopped_server_moved_then_reverted_stays_stopped(api, kind):
    uuid = _boot_stopped(api)
    before = api.hosts_of(uuid)
    dest, migration = _move(api, uuid, kind)
    response = api.action(uuid, {'revertResize': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-STS:vm_state'] == states.STOPPED
    assert server['OS-EXT-STS:power_state'] == states.SHUTDOWN
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert server['flavor']['vcpus'] == 1
    api.assert_reverted(uuid, before, migration, states.STOPPED)
    assert _power(api, SOURCE, uuid) == states.SHUTDOWN
    response = api.action(uuid, {'os-start': None}, who=ADMIN)
    assert response.status_code == 202, response.text
    server, _ = api.wait(uuid, 'ACTIVE')
    assert _power(api, SOURCE, uuid) == states.RUNNING


@pytest.mark.parametrize('step', ['drop_source_copy', 'show_confirmed'])
def test_an_interrupted_confirm_of_a_stopped_server(api, monkeypatch, step):
    uuid = _boot_stopped(api)
    dest, migration = _move(api, uuid, 'resize')
    _interrupt(
        api, monkeypatch, uuid, cross_cell_end.Confirm, step, 'confirmResize'
    )
    _recover(api, migration, 'cross_cell_move_confirmed')
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-SRV-ATTR:host'] == dest
    assert api.rows('cell2', uuid) == [(False, states.STOPPED, dest)]
    assert api.rows('cell1', uuid) == []
    assert api.allocations(migration) == {}
    assert list(api.hosts_of(uuid)) == [dest]
    assert uuid not in api.guests(SOURCE)
    assert _power(api, dest, uuid) == states.SHUTDOWN


@pytest.mark.parametrize('step', ['map_back', 'show_reverted'])
def test_an_interrupted_revert_of_a_stopped_server(api, monkeypatch, step):
    uuid = _boot_stopped(api)
    before = api.hosts_of(uuid)
    dest, migration = _move(api, uuid, 'migration')
    _interrupt(
        api, monkeypatch, uuid, cross_cell_end.Revert, step, 'revertResize'
    )
    _recover(api, migration, 'cross_cell_move_reverted')
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert server['OS-EXT-STS:power_state'] == states.SHUTDOWN
    assert api.rows('cell1', uuid) == [(False, states.STOPPED, SOURCE)]
    assert api.rows('cell2', uuid) == []
    assert api.hosts_of(uuid) == before
    assert api.allocations(migration) == {}
    assert uuid not in api.guests(dest)
    assert _power(api, SOURCE, uuid) == states.SHUTDOWN


def test_a_stopped_server_whose_move_fails_stays_stopped(api):
    uuid = _boot_stopped(api)
    before = api.hosts_of(uuid)
    _refuse_spawn(api)
    _resize(api, uuid)
    record = _wait_migration(api, uuid, 'error')
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-STS:power_state'] == states.SHUTDOWN
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert api.rows('cell1', uuid) == [(False, states.STOPPED, SOURCE)]
    assert api.rows('cell2', uuid) == []
    assert api.hosts_of(uuid) == before
    assert api.allocations(record['uuid']) == {}
    assert _power(api, SOURCE, uuid) == states.SHUTDOWN
    assert 'cannot spawn the guest' in api.fault(uuid)
