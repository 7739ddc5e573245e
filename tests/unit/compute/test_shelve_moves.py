"""The RPC endpoints of shelve, unshelve and evacuate refuse malformed
messages (and keep serving); the compute's shelve steps and offload, and
the source's cleanup after an evacuation, on a fake driver and a
recording cell conductor."""

import pytest

from nimbus.common import instance_states as states
from nimbus.common import rpc
from nimbus.common.objects import migration as migration_obj
from nimbus.compute import manager as compute_manager
from nimbus.compute import shelve
from nimbus.conductor import manager as conductor_manager


class _Driver:
    def __init__(self, guests=()):
        self.guests = set(guests)
        self.calls = []

    def snapshot(self, uuid, image_id):
        self.calls.append(('snapshot', uuid, image_id))

    def power_off(self, uuid):
        self.calls.append(('power_off', uuid))

    def destroy(self, uuid):
        self.calls.append(('destroy', uuid))
        self.guests.discard(uuid)

    def list_instances(self):
        return sorted(self.guests)


class _Conductor:
    """Records each swap and holds while the instance has the task the
    swap expects."""

    def __init__(self, task, migrations=()):
        self.task = task
        self.swaps = []
        self.migrations = list(migrations)
        self.statuses = []

    def instance_update(self, ctxt, uuid, vm_states, updates, **kw):
        expected = kw.get('expected_task_states')
        if expected is not None and self.task not in expected:
            return None
        self.swaps.append(updates)
        self.task = updates.get('task_state', self.task)
        return object()

    def instance_action_event(self, ctxt, event):
        return True

    def evacuations_done(self, ctxt, host):
        return self.migrations

    def migration_set_status(self, ctxt, uuid, status, expected):
        self.statuses.append((uuid, status, tuple(expected)))
        return True


class _Placement:
    def __init__(self):
        self.removed = []

    def remove_allocations(self, ctxt, consumer):
        self.removed.append(consumer)


class _Runner:
    def __init__(self, conductor, driver):
        self.host = 'h1'
        self.conductor = conductor
        self.driver = driver
        self.placement = _Placement()
        self.accelerator = None


class _Actions:
    def _event(self, *args, **kwargs):
        pass


def test_shelve_steps_then_offloads_at_once():
    conductor = _Conductor(states.SHELVING)
    runner = _Runner(conductor, _Driver({'i1'}))
    shelve.ShelveMoves(runner, _Actions()).shelve(None, 'i1', 'r', 'img', True)
    tasks = [s.get('task_state') for s in conductor.swaps]
    assert tasks == [
        states.SHELVING_IMAGE_PENDING_UPLOAD,
        states.SHELVING_IMAGE_UPLOADING,
        states.SHELVING_OFFLOADING,
        None,
    ]
    assert conductor.swaps[2]['vm_state'] == states.SHELVED
    last = conductor.swaps[3]
    assert last['vm_state'] == states.SHELVED_OFFLOADED
    assert last['host'] is None and last['node'] is None
    assert runner.driver.calls == [
        ('snapshot', 'i1', 'img'),
        ('power_off', 'i1'),
        ('destroy', 'i1'),
    ]
    assert runner.placement.removed == ['i1']


def test_shelve_of_an_instance_that_changed_does_nothing():
    conductor = _Conductor(None)  # reset meanwhile: no task
    runner = _Runner(conductor, _Driver({'i1'}))
    shelve.ShelveMoves(runner, _Actions()).shelve(None, 'i1', 'r', 'img', True)
    assert conductor.swaps == [] and runner.driver.calls == []
    assert runner.placement.removed == []


def test_the_source_back_completes_its_done_evacuations():
    migration = migration_obj.Migration(
        uuid='m1',
        instance_uuid='i1',
        migration_type='evacuation',
        status='done',
        source_compute='h1',
    )
    conductor = _Conductor(None, [migration])
    runner = _Runner(conductor, _Driver({'i1', 'i2'}))
    assert shelve.clean_evacuated(runner, None) == ['m1']
    assert runner.driver.guests == {'i2'}
    assert runner.placement.removed == ['m1']
    assert conductor.statuses == [('m1', 'completed', ('done',))]


def test_compute_endpoints_refuse_malformed_moves():
    endpoint = compute_manager.ComputeManager(_Runner(None, None), None)
    try:
        with pytest.raises(rpc.InvalidMessage):
            endpoint.unshelve_instance(
                None, instance_uuid='i', request_id='r', selection={'x': 1}
            )
        with pytest.raises(rpc.InvalidMessage):
            endpoint.evacuate_instance(
                None,
                instance_uuid='i',
                request_id='r',
                migration={'uuid': 'm'},
                selection={},
            )
        # A malformed cast is logged and dropped (nothing to answer).
        assert (
            endpoint.shelve_instance(None, instance_uuid='i', request_id='r')
            is None
        )
    finally:
        endpoint.shutdown()


def test_conductor_endpoints_refuse_malformed_moves():
    class _Cell:
        def migration_set_status(self, ctxt, uuid, status, expected):
            migration_obj.check_status(status)
            return True

    endpoint = conductor_manager.CellConductorManager(_Cell())
    with pytest.raises(rpc.InvalidMessage, match='status'):
        endpoint.migration_set_status(
            None, migration_uuid='m', status='flying', expected=['done']
        )
    assert endpoint.migration_set_status(
        None, migration_uuid='m', status='completed', expected=['done']
    )
    with pytest.raises(rpc.InvalidMessage):
        endpoint.shelved_offloadable(None, host='h', seconds=-1)


def test_every_move_reaches_its_final_state():
    assert states.check_actions() == []
    for name in ('shelve', 'shelveOffload', 'unshelve', 'evacuate'):
        action = states.ACTIONS[name]
        assert action.task in states.TASK_STATES
    assert states.allowed(states.SHELVED_OFFLOADED, states.ACTIVE)
