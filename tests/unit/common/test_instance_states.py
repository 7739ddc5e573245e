"""The instance state machine is one total table (every pair once)."""

import itertools

import pytest

from nimbus.common import instance_states as states

EXPECTED_ALLOWED = {
    (states.BUILDING, states.BUILDING),
    (states.BUILDING, states.ACTIVE),
    (states.BUILDING, states.ERROR),
    (states.BUILDING, states.DELETED),
    (states.ACTIVE, states.ACTIVE),
    (states.ACTIVE, states.ERROR),
    (states.ACTIVE, states.DELETED),
    (states.ERROR, states.ERROR),
    (states.ERROR, states.DELETED),
    (states.DELETED, states.DELETED),
}


def test_table_is_total():
    pairs = set(itertools.product(states.VM_STATES, repeat=2))
    assert set(states.TRANSITIONS) == pairs


@pytest.mark.parametrize(
    'pair', sorted(itertools.product(states.VM_STATES, repeat=2))
)
def test_every_pair(pair):
    assert states.allowed(*pair) is (pair in EXPECTED_ALLOWED)


def test_sources_of_deleted_and_active():
    assert set(states.sources_of(states.DELETED)) == set(states.VM_STATES)
    assert set(states.sources_of(states.ACTIVE)) == {
        states.BUILDING,
        states.ACTIVE,
    }


def test_api_status():
    assert states.api_status(states.BUILDING) == 'BUILD'
    assert states.api_status(states.ERROR) == 'ERROR'
