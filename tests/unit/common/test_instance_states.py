"""The instance state machine is one total table (every pair once)."""

import itertools

import pytest

from nimbus.common import instance_states as states

S = states
# Every allowed swap, written out independently of the module's grid.
EXPECTED_ALLOWED = {
    (S.BUILDING, S.BUILDING),
    (S.BUILDING, S.ACTIVE),
    (S.BUILDING, S.ERROR),
    (S.BUILDING, S.DELETED),
    *((S.ACTIVE, t) for t in S.VM_STATES if t != S.BUILDING),
    *(
        (S.STOPPED, t)
        for t in (
            S.ACTIVE,
            S.STOPPED,
            S.RESCUED,
            S.RESIZED,
            S.SOFT_DELETED,
            S.SHELVED,
            S.SHELVED_OFFLOADED,
            S.ERROR,
            S.DELETED,
        )
    ),
    *(
        (source, t)
        for source in (S.PAUSED, S.SUSPENDED)
        for t in (
            S.ACTIVE,
            source,
            S.SOFT_DELETED,
            S.SHELVED,
            S.SHELVED_OFFLOADED,
            S.ERROR,
            S.DELETED,
        )
    ),
    *(
        (S.RESCUED, t)
        for t in (
            S.ACTIVE,
            S.STOPPED,
            S.RESCUED,
            S.SOFT_DELETED,
            S.ERROR,
            S.DELETED,
        )
    ),
    *(
        (S.RESIZED, t)
        for t in (
            S.ACTIVE,
            S.STOPPED,
            S.RESIZED,
            S.SOFT_DELETED,
            S.ERROR,
            S.DELETED,
        )
    ),
    *(
        (S.SOFT_DELETED, t)
        for t in (S.ACTIVE, S.SOFT_DELETED, S.ERROR, S.DELETED)
    ),
    *(
        (S.SHELVED, t)
        for t in (S.ACTIVE, S.SHELVED, S.SHELVED_OFFLOADED, S.ERROR, S.DELETED)
    ),
    *(
        (S.SHELVED_OFFLOADED, t)
        for t in (S.ACTIVE, S.SHELVED_OFFLOADED, S.ERROR, S.DELETED)
    ),
    *(
        (S.ERROR, t)
        for t in (
            S.ACTIVE,
            S.STOPPED,
            S.RESCUED,
            S.SOFT_DELETED,
            S.ERROR,
            S.DELETED,
        )
    ),
    (S.DELETED, S.DELETED),
}


def test_table_is_total():
    pairs = set(itertools.product(states.VM_STATES, repeat=2))
    assert set(states.TRANSITIONS) == pairs
    assert len(states.TRANSITIONS) == len(states.VM_STATES) ** 2


@pytest.mark.parametrize(
    'pair', sorted(itertools.product(states.VM_STATES, repeat=2))
)
def test_every_pair(pair):
    assert states.allowed(*pair) is (pair in EXPECTED_ALLOWED)


def test_sources_of_deleted_and_active():
    assert set(states.sources_of(states.DELETED)) == set(states.VM_STATES)
    assert set(states.sources_of(states.ACTIVE)) == set(states.VM_STATES) - {
        states.DELETED
    }


def test_deleted_is_final_and_nothing_returns_to_building():
    for state in states.VM_STATES:
        assert states.allowed(states.DELETED, state) is (
            state == states.DELETED
        )
        assert states.allowed(state, states.BUILDING) is (
            state == states.BUILDING
        )


def test_grid_rejects_a_partial_table():
    with pytest.raises(ValueError):
        states._parse('building x x\n')


def test_every_action_can_end_where_it_says():
    assert states.check_actions() == []


@pytest.mark.parametrize('name', sorted(states.ACTIONS))
def test_actions_name_known_states(name):
    action = states.ACTIONS[name]
    assert set(action.vm_states) <= set(states.VM_STATES)
    assert set(action.task_states) <= set(states.TASK_STATES)
    assert action.task in states.TASK_STATES
    assert action.final is None or action.final in states.VM_STATES


@pytest.mark.parametrize(
    'vm_state, task_state, status',
    [
        (S.BUILDING, None, 'BUILD'),
        (S.BUILDING, S.SPAWNING, 'BUILD'),
        (S.ERROR, None, 'ERROR'),
        (S.ACTIVE, None, 'ACTIVE'),
        (S.ACTIVE, S.DELETING, 'ACTIVE'),
        (S.ACTIVE, S.POWERING_OFF, 'ACTIVE'),
        (S.STOPPED, None, 'SHUTOFF'),
        (S.STOPPED, S.POWERING_ON, 'SHUTOFF'),
        (S.PAUSED, None, 'PAUSED'),
        (S.SUSPENDED, None, 'SUSPENDED'),
        (S.RESCUED, None, 'RESCUE'),
        (S.SOFT_DELETED, None, 'SOFT_DELETED'),
        (S.SHELVED_OFFLOADED, None, 'SHELVED_OFFLOADED'),
        (S.ACTIVE, S.REBOOTING, 'REBOOT'),
        (S.ACTIVE, S.REBOOT_STARTED, 'REBOOT'),
        (S.ACTIVE, S.REBOOTING_HARD, 'HARD_REBOOT'),
        (S.ACTIVE, S.REBUILDING, 'REBUILD'),
        (S.STOPPED, S.REBUILD_SPAWNING, 'REBUILD'),
        (S.ERROR, S.REBUILDING, 'REBUILD'),
        (S.ACTIVE, S.UPDATING_PASSWORD, 'PASSWORD'),
        ('bogus', None, 'UNKNOWN'),
    ],
)
def test_api_status(vm_state, task_state, status):
    assert states.api_status(vm_state, task_state) == status


def test_the_states_that_hold_a_host_are_live_placed_states():
    assert states.BUILDING not in states.HOLDS_HOST
    assert not {states.ERROR, states.DELETED, states.SHELVED_OFFLOADED} & set(
        states.HOLDS_HOST
    )
    assert {states.ACTIVE, states.STOPPED, states.PAUSED} <= set(
        states.HOLDS_HOST
    )
