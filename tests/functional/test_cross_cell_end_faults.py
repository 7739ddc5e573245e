"""A super conductor that dies in the confirm or the revert of a
cross-cell move (tests/functional/test_cross_cell_resize.py): the move is
left ``confirming`` or ``reverting`` and its recovery pass
(:func:`nimbus.conductor.cross_cell_recovery.settle_ends`) runs it again.

Each test lets the confirm or revert stop before one of its steps (the
step raises, as a process that dies there; nothing is given back), then
runs the recovery pass and checks the end an uninterrupted confirm or
revert leaves: the server in one cell on one host, the other cell's copy
gone, the migration records final, placement holding the instance's
allocation only, the guest on one hypervisor."""

import threading

import pytest

from nimbus import services
from nimbus.common import context
from nimbus.conductor import cross_cell_end
from nimbus.conductor import cross_cell_recovery
from nimbus.conductor import recovery

from tests.functional.test_cross_cell_faults import _age
from tests.functional.test_cross_cell_faults import _conductor
from tests.functional.test_cross_cell_faults import _wait_gone
from tests.functional.test_cross_cell_resize import _cloud
from tests.functional.test_cross_cell_resize import _in_target
from tests.functional.test_cross_cell_resize import _resize
from tests.functional.test_cross_cell_resize import SOURCE
from tests.functional.test_server_actions import ADMIN


@pytest.fixture
def api(make_cloud, tmp_path):
    # These tests run the recovery pass themselves, on records they aged:
    # the cloud's own pass (10 s after its start, then every 60 s) would
    # race them for the same migration on a slow machine.
    return _cloud(make_cloud, tmp_path, conductor={'recovery_interval': 0})


class Died(Exception):
    """The super conductor stopped here."""


def _die_before(monkeypatch, kind, step):
    """``kind``'s ``step`` raises (the steps before it ran); an Event set
    once it did."""
    died = threading.Event()

    def die(self, *args, **kwargs):
        died.set()
        raise Died('the super conductor died before %s' % step)

    monkeypatch.setattr(kind, step, die)
    return died


def _interrupt(api, monkeypatch, uuid, kind, step, action):
    """Ask for ``action`` (confirmResize, revertResize, or a delete) of
    ``uuid`` in VERIFY_RESIZE; its super conductor dies before ``step``."""
    died = _die_before(monkeypatch, kind, step)
    if action == 'delete':
        response = api.call('DELETE', '/servers/%s' % uuid, who=ADMIN)
    else:
        response = api.action(uuid, {action: None}, who=ADMIN)
    assert response.status_code in (202, 204), response.text
    assert died.wait(60), 'the %s never reached %s' % (action, step)
    monkeypatch.undo()


def _recover(api, migration, expected):
    """The recovery pass once the migration's records are old enough;
    what it acted on."""
    conductor = _conductor(api)
    ctxt = context.get_admin_context()
    # Too recent to be taken for dead.
    assert cross_cell_recovery.settle_ends(conductor, ctxt, 300) == {
        'confirmed': 0,
        'reverted': 0,
    }
    for cell in ('cell1', 'cell2'):
        _age(api, cell, migration)
    acted = recovery.Recovery(services.auditor(api.cloud.conf), conductor).run(
        ctxt
    )
    assert acted == {expected: 1}
    # Once only: a second pass finds nothing.
    for cell in ('cell1', 'cell2'):
        _age(api, cell, migration)
    assert cross_cell_recovery.settle_ends(conductor, ctxt, 300) == {
        'confirmed': 0,
        'reverted': 0,
    }


def _confirmed(api, uuid, dest, migration):
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == dest
    assert server['flavor']['vcpus'] == 2
    api.assert_confirmed(uuid, dest, migration)
    (target,) = api.migrations_in('cell2', uuid)
    assert (target['status'], target['hidden']) == ('confirmed', False)
    (source,) = api.migrations_in('cell1', uuid)
    assert (source['status'], source['hidden']) == ('confirmed', True)
    events = api.events(
        uuid,
        {'confirmResize': ['compute_confirm_snapshot_based_resize_at_source']},
    )
    assert set(events['confirmResize'].values()) == {'Success'}


def _reverted(api, uuid, before, dest, migration):
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == SOURCE
    assert server['flavor']['vcpus'] == 1
    assert server['OS-EXT-STS:power_state'] == 1
    api.assert_reverted(uuid, before, migration)
    api.assert_revert_recorded(uuid)


@pytest.mark.parametrize('step', cross_cell_end.Confirm.STEPS)
def test_an_interrupted_confirm_is_finished(api, monkeypatch, step):
    uuid = api.boot_on_source()
    _resize(api, uuid)
    dest, migration = _in_target(api, uuid, 'resize')
    _interrupt(
        api, monkeypatch, uuid, cross_cell_end.Confirm, step, 'confirmResize'
    )
    (left,) = api.migrations_in('cell2', uuid)
    assert left['status'] == 'confirming'
    _recover(api, migration, 'cross_cell_move_confirmed')
    _confirmed(api, uuid, dest, migration)


@pytest.mark.parametrize('step', cross_cell_end.Revert.STEPS)
def test_an_interrupted_revert_is_finished(api, monkeypatch, step):
    uuid = api.boot_on_source()
    before = api.hosts_of(uuid)
    _resize(api, uuid)
    dest, migration = _in_target(api, uuid, 'resize')
    _interrupt(
        api, monkeypatch, uuid, cross_cell_end.Revert, step, 'revertResize'
    )
    left = api.migrations_in('cell2', uuid) or api.migrations_in('cell1', uuid)
    assert left[0]['status'] == 'reverting'
    _recover(api, migration, 'cross_cell_move_reverted')
    _reverted(api, uuid, before, dest, migration)


def test_a_refused_guest_step_waits_for_the_next_pass(api, monkeypatch):
    """The source compute refuses the old guest's destroy when the pass
    runs the confirm again: nothing is given back (the dead conductor may
    have done part of it); the next pass finishes it."""
    uuid = api.boot_on_source()
    _resize(api, uuid)
    dest, migration = _in_target(api, uuid, 'resize')
    _interrupt(
        api,
        monkeypatch,
        uuid,
        cross_cell_end.Confirm,
        'drop_old_guest',
        'confirmResize',
    )
    driver = api.cloud.computes[SOURCE].driver

    def refuse(instance_uuid):
        raise RuntimeError('the hypervisor is away')

    monkeypatch.setattr(driver, 'destroy', refuse)
    conductor = _conductor(api)
    ctxt = context.get_admin_context()
    _age(api, 'cell2', migration)
    assert cross_cell_recovery.settle_ends(conductor, ctxt, 300) == {
        'confirmed': 0,
        'reverted': 0,
    }
    (left,) = api.migrations_in('cell2', uuid)
    assert left['status'] == 'confirming'
    assert api.rows('cell1', uuid) == [(True, 'resized', SOURCE)]
    assert list(api.hosts_of(migration)) == [SOURCE]
    monkeypatch.undo()
    _age(api, 'cell2', migration)
    assert cross_cell_recovery.settle_ends(conductor, ctxt, 300) == {
        'confirmed': 1,
        'reverted': 0,
    }
    _confirmed(api, uuid, dest, migration)


def _nothing_left(api, uuid, migration, status):
    assert api.rows('cell1', uuid) == []
    assert api.rows('cell2', uuid) == []
    assert api.allocations(migration) == {}
    assert api.allocations(uuid) == {}
    for host in [SOURCE] + list(api.cloud.cell2_host_names()):
        assert uuid not in api.guests(host)
    for cell in ('cell1', 'cell2'):
        assert [m['status'] for m in api.migrations_in(cell, uuid)] == [status]


@pytest.mark.parametrize('step', ['drop_old_guest', 'drop_source_allocation'])
def test_a_delete_whose_confirm_died_is_cleaned_up(api, monkeypatch, step):
    """A delete in VERIFY_RESIZE confirms first (conductor RPC 1.12); its
    confirm dies, the delete goes on: the pass drops what the source
    kept and shows nothing again."""
    uuid = api.boot_on_source()
    _resize(api, uuid)
    _dest, migration = _in_target(api, uuid, 'resize')
    _interrupt(api, monkeypatch, uuid, cross_cell_end.Confirm, step, 'delete')
    _wait_gone(api, uuid)
    _recover(api, migration, 'cross_cell_move_confirmed')
    _nothing_left(api, uuid, migration, 'confirmed')
    assert api.call('GET', '/servers/%s' % uuid, who=ADMIN).status_code == 404


def test_a_server_deleted_in_a_stuck_revert_stays_deleted(api, monkeypatch):
    uuid = api.boot_on_source()
    _resize(api, uuid)
    _dest, migration = _in_target(api, uuid, 'resize')
    _interrupt(
        api,
        monkeypatch,
        uuid,
        cross_cell_end.Revert,
        'carry_actions_back',
        'revertResize',
    )
    response = api.call('DELETE', '/servers/%s' % uuid, who=ADMIN)
    assert response.status_code == 204, response.text
    _wait_gone(api, uuid)
    _recover(api, migration, 'cross_cell_move_reverted')
    _nothing_left(api, uuid, migration, 'error')
    assert api.call('GET', '/servers/%s' % uuid, who=ADMIN).status_code == 404
