"""The cell conductor's side of server actions (RPC 1.5): the task
compare-and-swap of instance_update and instance_action_event, on a real
SQLite cell database; and the endpoint refusing malformed messages."""

import pytest

from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import instance_states as states
from nimbus.common import rpc
from nimbus.common.objects import ActionEvent
from nimbus.common.objects import InstanceUpdate
from nimbus.common.objects import MalformedPrimitive
from nimbus.conductor import cell_conductor
from nimbus.conductor import manager
from nimbus.db import cell_instances as instances
from nimbus.db import instance_actions
from nimbus import db as nimbus_db

CTX = context.get_admin_context()


@pytest.fixture
def cell(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'cell.sqlite')
    nimbus_db.sync_cell(url)
    db = common_db.get_database(url)
    with db.session() as session:
        instances.create(
            session,
            {
                'uuid': 'i-1',
                'project_id': 'p',
                'host': 'h1',
                'vm_state': states.ACTIVE,
                'task_state': states.POWERING_OFF,
                'flavor': {},
            },
        )
        instance_actions.start(session, 'i-1', 'stop', 'req-1', 'u', 'p')
    yield cell_conductor.CellConductor(None, db, None, None), db
    db.dispose()


def _event(phase, result=None, when='2026-11-28T16:00:00', last=False):
    return ActionEvent(
        instance_uuid='i-1',
        request_id='req-1',
        event='compute_stop_instance',
        host='h1',
        phase=phase,
        time=when,
        result=result,
        last=last,
    )


def test_the_swap_expects_the_task(cell):
    cond, db = cell
    change = InstanceUpdate(vm_state=states.STOPPED, task_state=None)
    assert (
        cond.instance_update(
            CTX, 'i-1', [states.ACTIVE], change, 'h1', None, [states.PAUSING]
        )
        is None
    )
    done = cond.instance_update(
        CTX, 'i-1', [states.ACTIVE], change, 'h1', None, [states.POWERING_OFF]
    )
    assert (done.vm_state, done.task_state) == (states.STOPPED, None)


def test_events_start_finish_once_and_end_the_action(cell):
    cond, db = cell
    assert cond.instance_action_event(CTX, _event('start'))
    assert cond.instance_action_event(CTX, _event('start'))  # twice
    finish = _event('finish', 'Success', '2026-11-28T16:00:01', last=True)
    assert cond.instance_action_event(CTX, finish)
    assert cond.instance_action_event(CTX, finish)  # a retried finish
    with db.session() as session:
        action = instance_actions.get(session, 'i-1', 'req-1')
    assert action['finish_time'] is not None and action['message'] is None
    assert [(e['event'], e['result']) for e in action['events']] == [
        ('compute_stop_instance', 'Success')
    ]


def test_an_error_marks_the_action(cell):
    cond, db = cell
    cond.instance_action_event(CTX, _event('finish', 'Error'))
    with db.session() as session:
        action = instance_actions.get(session, 'i-1', 'req-1')
    assert action['message'] == 'Error'
    assert action['events'][0]['start_time'] is not None


def test_an_event_of_no_action_is_refused(cell):
    cond, _db = cell
    event = _event('start')
    event.request_id = 'req-unknown'
    assert cond.instance_action_event(CTX, event) is False


@pytest.mark.parametrize(
    'primitive',
    [
        {},
        {'instance_uuid': 'i-1'},
        dict(_event('start').to_primitive(), phase='middle'),
        dict(_event('start').to_primitive(), event=''),
        dict(_event('finish', 'Success').to_primitive(), result='Meh'),
        dict(_event('start').to_primitive(), last='yes'),
    ],
)
def test_malformed_events_are_refused(cell, primitive):
    endpoint = manager.CellConductorManager(cell[0])
    with pytest.raises(rpc.InvalidMessage):
        endpoint.instance_action_event(CTX, event=primitive)


def test_unknown_task_states_are_refused(cell):
    endpoint = manager.CellConductorManager(cell[0])
    with pytest.raises(rpc.InvalidMessage):
        endpoint.instance_update(
            CTX,
            instance_uuid='i-1',
            expected_vm_states=[states.ACTIVE],
            updates=InstanceUpdate(task_state=None).to_primitive(),
            expected_task_states=['teleporting'],
        )


def test_action_event_round_trip():
    event = _event('finish', 'Error', last=True)
    event.traceback = 'Traceback...'
    assert ActionEvent.from_primitive(event.to_primitive()) == event
    with pytest.raises(MalformedPrimitive):
        ActionEvent.from_primitive({'nimbus_object.version': '2.0'})
