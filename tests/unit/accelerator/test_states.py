"""The ARQ state table, every ordered pair, in the table and as
compare-and-swap UPDATEs on a real database."""

import itertools

import pytest

from nimbus.accelerator import states
from nimbus.accelerator.objects import arq as arq_obj
from tests.unit.accelerator import helpers

I, BS, B, BF, U, UF, D = (
    states.INITIAL,
    states.BIND_STARTED,
    states.BOUND,
    states.BIND_FAILED,
    states.UNBOUND,
    states.UNBIND_FAILED,
    states.DELETING,
)

# The specification, written out pair by pair (rows: from; columns: to in
# the order I, BS, B, BF, U, UF, D).
SPEC = {
    I: (0, 1, 0, 0, 0, 0, 1),
    BS: (0, 0, 1, 1, 1, 0, 1),
    B: (0, 0, 0, 0, 1, 1, 1),
    BF: (0, 1, 0, 0, 1, 0, 1),
    U: (0, 1, 0, 0, 0, 0, 1),
    UF: (0, 0, 0, 0, 1, 0, 1),
    D: (0, 0, 0, 0, 0, 0, 0),
}
ORDER = (I, BS, B, BF, U, UF, D)
PAIRS = [
    (a, b, bool(SPEC[a][ORDER.index(b)]))
    for a, b in itertools.product(ORDER, ORDER)
]


def test_the_table_covers_every_state():
    assert set(states.TRANSITIONS) == set(states.ALL) == set(ORDER)
    assert len(PAIRS) == 49


@pytest.mark.parametrize('current,new,expected', PAIRS)
def test_allowed(current, new, expected):
    assert states.allowed(current, new) is expected
    if expected:
        states.check(current, new)
    else:
        with pytest.raises(states.InvalidTransition):
            states.check(current, new)


def test_unknown_states_are_errors():
    with pytest.raises(ValueError):
        states.allowed('Bogus', I)
    with pytest.raises(ValueError):
        states.allowed(I, 'Bogus')


@pytest.fixture(scope='module')
def adb(tmp_path_factory):
    return helpers.new_db(tmp_path_factory.mktemp('states'))


def _arq_in(adb, state):
    profile = {'name': 'p', 'groups': [{'resources:FPGA': 1}]}
    arq = arq_obj.create_for_profile(adb, profile)[0]
    from nimbus.accelerator.db import models

    table = models.AcceleratorRequest.__table__
    adb.write(
        lambda conn: conn.execute(
            table.update()
            .where(table.c.uuid == arq['uuid'])
            .values(state=state)
        )
    )
    return arq['uuid']


@pytest.mark.parametrize('current,new,expected', PAIRS)
def test_transition_is_compare_and_swap(adb, current, new, expected):
    uuid = _arq_in(adb, current)
    if expected:
        assert adb.write(arq_obj.transition, uuid, current, new) is True
        assert arq_obj.get(adb, uuid)['state'] == new
        # The same change again finds the ARQ no longer in ``current``.
        assert adb.write(arq_obj.transition, uuid, current, new) is False
        assert arq_obj.get(adb, uuid)['state'] == new
    else:
        with pytest.raises(states.InvalidTransition):
            adb.write(arq_obj.transition, uuid, current, new)
        assert arq_obj.get(adb, uuid)['state'] == current


def test_transition_from_a_stale_state_changes_nothing(adb):
    uuid = _arq_in(adb, B)
    # A writer that still believes the ARQ is BindStarted loses.
    assert adb.write(arq_obj.transition, uuid, BS, BF) is False
    assert arq_obj.get(adb, uuid)['state'] == B
