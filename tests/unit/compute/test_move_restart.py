"""nimbus.compute.move_restart alone: what a compute settles at its start
of the moves it was in the middle of (the cell conductor and placement are
recorders; the driver is the fake one)."""

import pytest

from nimbus.common import config
from nimbus.common import context
from nimbus.common import instance_states as states
from nimbus.common.objects import Instance
from nimbus.common.objects.migration import Migration
from nimbus.compute import move_restart
from nimbus.compute import resize
from nimbus.compute.virt import fake

CTXT = context.get_admin_context()
OLD = {'vcpus': 1, 'memory_mb': 256, 'root_gb': 1}
NEW = {'vcpus': 2, 'memory_mb': 512, 'root_gb': 1}


class Recorder:
    def __init__(self, moves=()):
        self.moves = list(moves)
        self.calls = []

    def moves_of_host(self, ctxt, host):
        return list(self.moves)

    def move_step(self, ctxt, uuid, migration_uuid, statuses, status, *rest):
        self.calls.append(('step', uuid, statuses, status) + rest)
        instance = next(i for i, m in self.moves if m.uuid == migration_uuid)
        migration = next(m for i, m in self.moves if m.uuid == migration_uuid)
        return instance, migration

    def instance_update(self, ctxt, uuid, vm_states, updates, **expected):
        self.calls.append(('update', uuid, vm_states, updates, expected))
        return Instance(uuid=uuid)

    def instance_action_event(self, ctxt, event):
        self.calls.append(('event', event.event, event.phase))

    def move_allocations(self, ctxt, source, target, target_type=None):
        self.calls.append(('move-allocations', source, target))
        return True

    def remove_allocations(self, ctxt, consumer):
        self.calls.append(('free', consumer))


@pytest.fixture
def driver(tmp_path):
    conf = config.build_conf(
        [], overrides={'DEFAULT': {'state_path': str(tmp_path)}}
    )
    return fake.FakeDriver(conf, 'h2')


def _move(status, task, source='h1', dest='h2', host='h1'):
    instance = Instance(
        uuid='vm',
        vm_state=states.ACTIVE,
        task_state=task,
        host=host,
        flavor=OLD,
    )
    migration = Migration(
        uuid='m',
        instance_uuid='vm',
        migration_type='resize',
        status=status,
        source_compute=source,
        dest_compute=dest,
        dest_node=dest,
        old_flavor=OLD,
        new_flavor=NEW,
        details={'vm_state': states.ACTIVE, 'dest_node_uuid': 'rp-2'},
    )
    return instance, migration


def _resizes(host, driver, recorder):
    return resize.Resizes(host, driver, recorder, recorder, recorder)


class Runner:
    def __init__(self, host, driver, recorder):
        self.host = host
        self.driver = driver
        self.conductor = recorder
        self.placement = recorder


def test_a_cut_short_finish_is_done_again_on_the_destination(driver):
    recorder = Recorder([_move('post-migrating', states.RESIZE_FINISH)])
    settled = move_restart.recover(
        _resizes('h2', driver, recorder),
        Runner('h2', driver, recorder),
        CTXT,
        [],
    )
    assert settled == ['vm']
    # The guest spawned again, with the new flavor.
    assert driver.list_instances() == ['vm']
    (step,) = [c for c in recorder.calls if c[0] == 'step']
    assert step[2:4] == (['post-migrating'], 'finished')
    updates = step[6]
    assert updates['vm_state'] == states.RESIZED
    assert updates['host'] == 'h2'
    assert updates['flavor'] == NEW
    assert updates['compute_node_uuid'] == 'rp-2'


def test_a_source_cut_short_undoes_the_move(driver):
    driver.spawn(Instance(uuid='vm'), {})
    driver.power_off('vm')
    recorder = Recorder([_move('migrating', states.RESIZE_MIGRATING)])
    settled = move_restart.recover(
        _resizes('h1', driver, recorder),
        Runner('h1', driver, recorder),
        CTXT,
        [],
    )
    assert settled == ['vm']
    assert driver.power_state('vm') == states.RUNNING
    # The source's allocation back to the instance, before the step.
    names = [c[0] for c in recorder.calls]
    assert names == ['move-allocations', 'step']
    assert recorder.calls[0][1:] == ('m', 'vm')
    step = recorder.calls[1]
    assert step[2:4] == (['migrating'], 'error')
    assert step[6]['task_state'] is None
    assert 'source' in step[6]['fault']['message']


@pytest.mark.parametrize(
    'status,task,host',
    [
        # Its messages may still be queued for a live peer: left alone.
        ('pre-migrating', states.RESIZE_PREP, 'h1'),
        ('post-migrating', states.RESIZE_MIGRATED, 'h1'),
        ('finished', None, 'h2'),
    ],
)
def test_moves_another_process_carries_on_are_left_alone(
    driver, status, task, host
):
    recorder = Recorder([_move(status, task, host=host)])
    for me in ('h1', 'h2'):
        assert (
            move_restart.recover(
                _resizes(me, driver, recorder),
                Runner(me, driver, recorder),
                CTXT,
                [],
            )
            == []
        )
    assert recorder.calls == []


def test_an_unshelve_cut_short_goes_back_to_offloaded(driver):
    recorder = Recorder()
    instance = Instance(
        uuid='vm',
        vm_state=states.SHELVED_OFFLOADED,
        task_state=states.SPAWNING,
        host='h2',
    )
    settled = move_restart.recover(
        None, Runner('h2', driver, recorder), CTXT, [instance]
    )
    assert settled == ['vm']
    update, free = recorder.calls
    assert update[2] == [states.SHELVED_OFFLOADED]
    assert update[3]['host'] is None and update[3]['task_state'] is None
    assert 'Unshelve interrupted' in update[3]['fault']['message']
    assert update[4]['expected_task_states'] == [states.SPAWNING]
    assert free == ('free', 'vm')


def test_an_unshelve_spawned_before_the_crash_is_active(driver):
    driver.spawn(Instance(uuid='vm'), {})
    recorder = Recorder()
    instance = Instance(
        uuid='vm',
        vm_state=states.SHELVED_OFFLOADED,
        task_state=states.SPAWNING,
        host='h2',
    )
    move_restart.recover(
        None, Runner('h2', driver, recorder), CTXT, [instance]
    )
    (update,) = recorder.calls
    assert update[3]['vm_state'] == states.ACTIVE
