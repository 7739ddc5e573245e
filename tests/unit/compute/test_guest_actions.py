"""Server actions on a compute (nimbus.compute.guest_actions) with the
real fake driver and a cell conductor stand-in that applies each
compare-and-swap to one instance record as the cell database would."""

import pytest

from nimbus.common import config
from nimbus.common import context
from nimbus.common import instance_states as states
from nimbus.common.objects import Instance
from nimbus.common.objects import InstanceUpdate
from nimbus.compute import exception
from nimbus.compute import guest_actions
from nimbus.compute.virt import fake

UUID = 'i-1'
HOST = 'h1'


class CellStandIn:
    """One instance record; ``instance_update`` is a compare-and-swap on
    vm_state, host and task_state (what nimbus.db.cell_instances does);
    events are kept as sent."""

    def __init__(self, vm_state, task_state):
        self.record = {
            'vm_state': vm_state,
            'task_state': task_state,
            'power_state': 1,
            'host': HOST,
        }
        self.swaps = []
        self.events = []
        self.faults = []

    def instance_update(
        self,
        ctxt,
        instance_uuid,
        expected_vm_states,
        updates,
        expected_host=None,
        expected_task_states=None,
    ):
        changes = InstanceUpdate(**updates).changes()
        record = self.record
        if (
            record['vm_state'] not in expected_vm_states
            or (expected_host and record['host'] != expected_host)
            or (
                expected_task_states is not None
                and record['task_state'] not in expected_task_states
            )
        ):
            return None
        new = changes.get('vm_state')
        if new is not None and not states.allowed(record['vm_state'], new):
            return None
        fault = changes.pop('fault', None)
        if fault:
            self.faults.append(fault)
        record.update(changes)
        self.swaps.append(dict(changes))
        return Instance(
            uuid=instance_uuid,
            **{k: v for k, v in record.items() if k != 'power_state'},
        )

    def instance_action_event(self, ctxt, event):
        self.events.append(
            (event.event, event.phase, event.result, event.last)
        )
        return True


@pytest.fixture
def driver(tmp_path):
    conf = config.build_conf(
        [], overrides={'DEFAULT': {'state_path': str(tmp_path)}}
    )
    driver = fake.FakeDriver(conf, HOST)
    driver.spawn(
        Instance(
            uuid=UUID, flavor={'vcpus': 2, 'memory_mb': 256, 'root_gb': 1}
        ),
        {},
    )
    return driver


def _run(driver, cell, name, **options):
    actions = guest_actions.GuestActions(HOST, driver, cell)
    actions.run(context.get_admin_context(), name, UUID, 'req-1', options)


def test_stop_then_start(driver):
    cell = CellStandIn(states.ACTIVE, states.POWERING_OFF)
    _run(driver, cell, 'stop')
    assert cell.record['vm_state'] == states.STOPPED
    assert cell.record['task_state'] is None
    assert cell.record['power_state'] == states.SHUTDOWN
    assert driver.power_state(UUID) == fake.SHUTDOWN
    assert cell.events == [
        ('compute_stop_instance', 'start', None, False),
        ('compute_stop_instance', 'finish', 'Success', True),
    ]
    cell.record['task_state'] = states.POWERING_ON
    _run(driver, cell, 'start')
    assert (cell.record['vm_state'], cell.record['power_state']) == (
        states.ACTIVE,
        states.RUNNING,
    )


def test_reboot_steps_through_reboot_started(driver):
    cell = CellStandIn(states.ACTIVE, states.REBOOTING_HARD)
    _run(driver, cell, 'reboot_hard')
    assert [s.get('task_state') for s in cell.swaps] == [
        states.REBOOT_STARTED_HARD,
        None,
    ]
    assert 'hard reboot' in driver.get_console_output(UUID)


def test_a_failed_reboot_leaves_error_with_a_fault(driver):
    driver.pause(UUID)  # a soft reboot needs a running guest
    cell = CellStandIn(states.ACTIVE, states.REBOOTING)
    _run(driver, cell, 'reboot')
    assert cell.record['vm_state'] == states.ERROR
    assert cell.record['task_state'] is None
    assert cell.record['power_state'] == fake.PAUSED
    (fault,) = cell.faults
    assert 'paused' in fault['message']
    assert cell.events[-1][1:] == ('finish', 'Error', True)


def test_a_failed_pause_keeps_the_state_and_clears_the_task(driver):
    driver.power_off(UUID)
    cell = CellStandIn(states.ACTIVE, states.PAUSING)
    _run(driver, cell, 'pause')
    assert cell.record['vm_state'] == states.ACTIVE
    assert cell.record['task_state'] is None
    assert cell.events[-1][2] == 'Error'


def test_an_instance_moved_meanwhile_is_left_alone(driver):
    # The task is no longer ours (an admin reset the server).
    cell = CellStandIn(states.ACTIVE, None)
    _run(driver, cell, 'reboot')
    assert cell.swaps == []
    assert cell.events[-1][2] == 'Error'


def test_rebuild_of_a_stopped_server_stays_stopped(driver):
    driver.power_off(UUID)
    cell = CellStandIn(states.STOPPED, states.REBUILDING)
    _run(driver, cell, 'rebuild', image_ref='img-2', power_on=False)
    assert cell.record['vm_state'] == states.STOPPED
    assert [s.get('task_state') for s in cell.swaps] == [
        states.REBUILD_SPAWNING,
        None,
    ]
    assert 'rebuilt from image img-2' in driver.get_console_output(UUID)


def test_fake_driver_guest_states(driver):
    driver.suspend(UUID)
    with pytest.raises(exception.GuestStateError):
        driver.pause(UUID)
    driver.resume(UUID)
    driver.rescue(UUID, 'img-r')
    driver.unrescue(UUID)
    diag = driver.get_diagnostics(UUID)
    assert diag['num_cpus'] == 2 and len(diag['cpu_details']) == 2
    assert diag['memory_details'] == {'maximum': 256, 'used': 0}
    assert diag['state'] == 'running' and diag['driver'] == 'libvirt'
    with pytest.raises(exception.GuestNotFound):
        driver.power_off('nope')
    actions = guest_actions.GuestActions(HOST, driver, None)
    # Nova's tail: pieces between newlines (Tempest counts them so); the
    # log ends with a newline, so 3 pieces are its last 2 lines.
    tail = actions.console_output(UUID, 3)
    assert len(tail.split('\n')) == 3 and len(tail.splitlines()) == 2
    assert driver.get_console_output(UUID).endswith(tail)
    assert actions.console_output(UUID, 0) == ''
    # The guest's state survives a restart of the agent.
    again = fake.FakeDriver(driver.conf, HOST)
    assert again.power_state(UUID) == fake.RUNNING


def test_snapshot_steps_through_the_upload_tasks_and_keeps_the_state(driver):
    driver.pause(UUID)
    cell = CellStandIn(states.PAUSED, states.IMAGE_SNAPSHOT)
    _run(driver, cell, 'createImage', image_id='img-9')
    assert [s.get('task_state') for s in cell.swaps] == [
        states.IMAGE_PENDING_UPLOAD,
        states.IMAGE_UPLOADING,
        None,
    ]
    assert cell.record['vm_state'] == states.PAUSED
    assert 'vm_state' not in cell.swaps[-1]
    assert driver.power_state(UUID) == fake.PAUSED
    assert 'snapshot into image img-9' in driver.get_console_output(UUID)
    assert cell.events[-1] == (
        'compute_snapshot_instance',
        'finish',
        'Success',
        True,
    )


class _Members:
    def __init__(self, members):
        self.members = members

    def group_members(self, ctxt, group_uuid, exclude=None):
        return [m for m in self.members if m.uuid != exclude]


@pytest.mark.parametrize(
    'vm_state, refused',
    [
        (states.STOPPED, True),
        (states.PAUSED, True),
        (states.SOFT_DELETED, True),
        (states.ERROR, False),
    ],
)
def test_a_stopped_member_still_holds_its_host_for_anti_affinity(
    vm_state, refused
):
    from nimbus.common.objects import InstanceGroup
    from nimbus.compute import group_check

    members = _Members(
        [Instance(uuid='m-1', host=HOST, vm_state=vm_state, task_state=None)]
    )
    group = InstanceGroup(uuid='g-1', policy='anti-affinity')
    ctxt = context.get_admin_context()
    if refused:
        with pytest.raises(group_check.GroupPolicyViolation):
            group_check.check(members, ctxt, HOST, 'new', group)
    else:
        group_check.check(members, ctxt, HOST, 'new', group)


def test_actions_taken_before_a_restart_are_finished_from_their_task(
    driver, tmp_path
):
    from nimbus.compute import action_journal

    journal = action_journal.ActionJournal(str(tmp_path), HOST)
    # What a process killed in the middle of a hard reboot and of a
    # password change (of another server) left.
    journal.taken(UUID, 'reboot_hard', 'req-1', {})
    journal.taken('i-2', 'changePassword', 'req-2', {'admin_password': 's3'})
    journal.taken('i-3', 'stop', 'req-3', {})
    assert 's3' not in open(journal.path).read()

    cell = CellStandIn(states.ACTIVE, states.REBOOT_STARTED_HARD)
    restarted = action_journal.ActionJournal(str(tmp_path), HOST)
    actions = guest_actions.GuestActions(HOST, driver, cell, restarted)
    password_cell = CellStandIn(states.ACTIVE, states.UPDATING_PASSWORD)

    class Both:
        """i-1 in ``cell``, i-2 in ``password_cell``."""

        def instance_update(self, ctxt, uuid, *args, **kwargs):
            target = cell if uuid == UUID else password_cell
            return target.instance_update(ctxt, uuid, *args, **kwargs)

        def instance_action_event(self, ctxt, event):
            target = cell if event.instance_uuid == UUID else password_cell
            return target.instance_action_event(ctxt, event)

    actions.conductor = Both()
    actions.recover(
        context.get_admin_context(),
        [
            Instance(uuid=UUID, task_state=states.REBOOT_STARTED_HARD),
            Instance(uuid='i-2', task_state=states.UPDATING_PASSWORD),
            # i-3 was reset meanwhile: no task any more.
            Instance(uuid='i-3', task_state=None),
        ],
    )
    # Resumed after reboot_started_hard: only the final swap remains.
    assert cell.swaps == [
        {'task_state': None, 'vm_state': states.ACTIVE, 'power_state': 1}
    ]
    assert password_cell.record['task_state'] is None
    assert password_cell.events[-1][2] == 'Error'
    assert 'restart' in password_cell.faults[0]['message']
    assert restarted.entries() == {}
