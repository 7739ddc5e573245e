"""Property: a server action's compare-and-swap on a real SQLite cell
(nimbus.api.objects.server_actions.begin -> cell_instances.transition)
holds exactly when the server is in one of the action's vm_states with
one of its task states, on its host; then the task is the action's and
the instance action is recorded. The oracle is the ACTIONS table."""

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from nimbus import db as nimbus_db
from nimbus.api.objects import server_actions as action_obj
from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import instance_states as states
from nimbus.db import cell_instances
from nimbus.db import instance_actions

_SEQ = iter(range(10**9))


class _Cells:
    def __init__(self, db):
        self._db = db

    def db(self, cell):
        return self._db


@pytest.fixture(scope='module')
def cells(tmp_path_factory):
    url = 'sqlite:///%s' % (tmp_path_factory.mktemp('cell') / 'c.sqlite')
    nimbus_db.sync_cell(url)
    db = common_db.get_database(url)
    yield _Cells(db)
    db.dispose()


LIVE = [s for s in states.VM_STATES if s != states.DELETED]


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    vm_state=st.sampled_from(LIVE),
    task_state=st.sampled_from(states.TASK_STATES),
    name=st.sampled_from(sorted(states.ACTIONS)),
    moved=st.booleans(),
)
def test_an_action_takes_its_task_exactly_when_the_table_says(
    cells, vm_state, task_state, name, moved
):
    uuid = 'i-%d' % next(_SEQ)
    with cells.db(None).session() as session:
        cell_instances.create(
            session,
            {
                'uuid': uuid,
                'project_id': 'p',
                'host': 'h1',
                'vm_state': vm_state,
                'task_state': task_state,
                'flavor': {},
            },
        )
    record = {'uuid': uuid, 'cell': None, 'host': 'h2' if moved else 'h1'}
    ctx = context.RequestContext(user_id='u', project_id='p')
    action = states.ACTIONS[name]
    expected = (
        vm_state in action.vm_states
        and task_state in action.task_states
        and not moved
    )
    try:
        action_obj.begin(cells, record, name, ctx, name)
        took = True
    except action_obj.InvalidState:
        took = False
    assert took is expected
    with cells.db(None).session() as session:
        row = cell_instances.get(session, uuid)
        recorded = instance_actions.get(session, uuid, ctx.request_id)
    assert row.vm_state == vm_state  # the API never changes the state
    assert row.task_state == (action.task if took else task_state)
    assert (recorded is not None) is took


def test_reset_state_swaps_from_the_state_it_read(cells):
    with cells.db(None).session() as session:
        cell_instances.create(
            session,
            {
                'uuid': 'r-1',
                'project_id': 'p',
                'host': 'h1',
                'vm_state': states.STOPPED,
                'task_state': states.POWERING_ON,
                'flavor': {},
            },
        )
    stale = {'uuid': 'r-1', 'cell': None, 'vm_state': states.ACTIVE}
    assert not action_obj.reset_state(cells, stale, states.ERROR)
    fresh = dict(stale, vm_state=states.STOPPED)
    assert action_obj.reset_state(cells, fresh, states.ERROR)
    with cells.db(None).session() as session:
        row = cell_instances.get(session, 'r-1')
    assert (row.vm_state, row.task_state) == (states.ERROR, None)
