"""The compute's build flow with recording fakes around it."""

import dataclasses

import pytest

from nimbus.common import config
from nimbus.common import context
from nimbus.common.objects import Instance
from nimbus.common.objects import InstanceEvent
from nimbus.common.objects.migration import Migration
from nimbus.common import instance_states as states
from nimbus.common.objects import RequestSpec
from nimbus.common.objects import Selection
from nimbus.compute import build
from nimbus.compute import events as events_mod
from nimbus.compute.virt import fake


class Recorder:
    """The cell conductor and placement: per-instance compare-and-swap."""

    def __init__(self, state=states.BUILDING):
        self.initial = state
        self.states = {}
        self.hosts = {}  # instance uuid -> host; 'h1' unless set
        self.calls = []

    @property
    def state(self):
        """The state of the only instance most tests use ('i')."""
        return self.states.get('i', self.initial)

    def instance_update(
        self,
        ctxt,
        uuid,
        expected,
        updates,
        expected_host=None,
        build_attempt=None,
        brief=False,
    ):
        self.calls.append(('update', expected, updates))
        current = self.states.get(uuid, self.initial)
        if current not in expected:
            return None
        if expected_host and self.hosts.get(uuid, 'h1') != expected_host:
            return None
        self.states[uuid] = updates.get('vm_state', current)
        if build_attempt is not None:  # recorded with the swap (1.4)
            self.calls.append(
                (
                    'attempt',
                    build_attempt.host,
                    build_attempt.result,
                    build_attempt.reason,
                )
            )
        if brief:  # 1.16: whether it held, not the record
            return True
        return Instance(
            uuid=uuid, display_name='vm', node='h1', vm_state=self.states[uuid]
        )

    def record_build_attempt(
        self, ctxt, uuid, host, node, result, reason=None
    ):
        self.calls.append(('attempt', host, result, reason))

    def build_instances(
        self, ctxt, uuid, spec, host_list, failed_host=None, reason=None
    ):
        self.calls.append(('reschedule', host_list, failed_host))

    def instances_on_host(self, ctxt, host):
        return self.on_host

    moves = ()

    def moves_of_host(self, ctxt, host):
        return list(self.moves)

    def remove_allocations(self, ctxt, uuid):
        self.calls.append(('free', uuid))

    def remove_provider_from_consumer(self, ctxt, uuid, providers):
        self.calls.append(('free-here', uuid, sorted(providers)))

    members = ()

    def group_members(self, ctxt, group_uuid, exclude=None):
        return [m for m in self.members if m.uuid != exclude]

    def service_disable(self, ctxt, host, binary, reason):
        self.calls.append(('disable', host, binary, reason))

    def compute_node_update(self, ctxt, node):
        self.calls.append(('node', node.values['failed_builds']))


class Tracker:
    failed_builds = 0
    node_uuid = 'rp'
    nodename = 'h1'


@pytest.fixture
def runner(tmp_path):
    def make(fail=False, conductor_state=states.BUILDING, threshold=10):
        conf = config.build_conf(
            [],
            overrides={
                'DEFAULT': {'state_path': str(tmp_path)},
                'fake_driver': {'fail_builds': fail},
                'compute': {
                    'arq_binding_timeout': 1,
                    'consecutive_build_service_disable_threshold': threshold,
                },
            },
        )
        conductor = Recorder(conductor_state)
        driver = fake.FakeDriver(conf, 'h1')
        events = events_mod.InstanceEvents()
        runner = build.BuildRunner(
            conf, 'h1', driver, conductor, conductor, events, Tracker()
        )
        build_contracts = runner.build

        def build_primitive_spec(ctxt, instance, spec, *args):
            # The spec as the compute's endpoint hands it over (a contract).
            spec = RequestSpec.from_primitive(dict(spec, flavor={}))
            return build_contracts(ctxt, instance, spec, *args)

        runner.build = build_primitive_spec
        return (runner, conductor, driver, events)

    return make


SELECTION = Selection(
    service_host='h1',
    nodename='h1',
    compute_node_uuid='rp',
    allocation_request={'allocations': {'rp': {'resources': {'VCPU': 1}}}},
)


def test_success_goes_active_and_records_the_attempt(runner):
    r, conductor, driver, _ = runner()
    r.build(
        context.get_admin_context(), Instance(uuid='i'), {}, SELECTION, [], []
    )
    assert conductor.state == states.ACTIVE
    assert ('attempt', 'h1', 'success', None) in conductor.calls
    assert driver.list_instances() == ['i']


def test_failure_frees_the_claim_and_hands_over_the_alternates(runner):
    r, conductor, driver, _ = runner(fail=True)
    alternates = [dataclasses.replace(SELECTION, service_host='h2')]
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        {},
        SELECTION,
        alternates,
        [],
    )
    kinds = [c[0] for c in conductor.calls]
    # Only this host's providers are freed: an alternate's claim made
    # meanwhile (a duplicate of the build handled late) is not ours.
    assert kinds == ['update', 'free-here', 'attempt', 'node', 'reschedule']
    assert conductor.calls[1] == ('free-here', 'i', ['rp'])
    assert conductor.calls[-1] == ('reschedule', alternates, 'h1')
    assert r.tracker.failed_builds == 1
    assert driver.list_instances() == []


def test_not_building_any_more_means_no_spawn(runner):
    r, conductor, driver, _ = runner(conductor_state=states.DELETED)
    r.build(
        context.get_admin_context(), Instance(uuid='i'), {}, SELECTION, [], []
    )
    assert driver.list_instances() == []


def test_waits_for_bound_accelerators(runner):
    r, conductor, driver, events = runner()
    events.deliver(
        'i', [InstanceEvent('accelerator-request-bound', 'arq-1', 'completed')]
    )
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        {},
        SELECTION,
        [],
        ['arq-1'],
    )
    assert conductor.state == states.ACTIVE


def test_unbound_accelerators_time_out_into_a_reschedule(runner):
    r, conductor, driver, _ = runner()
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        {},
        SELECTION,
        [],
        ['arq-1'],
    )
    attempt = [c for c in conductor.calls if c[0] == 'attempt'][0]
    assert attempt[2] == 'failed' and 'arq-1' in attempt[3]
    assert conductor.calls[-1][0] == 'reschedule'


def test_recovery_after_a_crash(runner):
    r, conductor, driver, _ = runner()
    driver.spawn(Instance(uuid='spawned'), {})
    driver.spawn(Instance(uuid='orphan'), {})
    conductor.on_host = [
        Instance(
            uuid='spawned',
            vm_state=states.BUILDING,
            task_state=states.SPAWNING,
            node='h1',
        ),
        Instance(
            uuid='lost',
            vm_state=states.BUILDING,
            task_state=states.SPAWNING,
            node='h1',
        ),
    ]
    r.recover(context.get_admin_context())
    updates = [c for c in conductor.calls if c[0] == 'update']
    assert updates[0][2]['vm_state'] == states.ACTIVE
    assert updates[1][2]['vm_state'] == states.ERROR
    assert 'restarted' in updates[1][2]['fault']['details']
    assert ('free', 'lost') in conductor.calls
    assert driver.list_instances() == ['spawned']


def test_recovery_leaves_a_build_the_cell_conductor_settled_first(runner):
    r, conductor, driver, _ = runner()
    # The cell conductor's build check failed it while this compute was
    # down: the recovery's compare-and-swap loses and frees nothing twice.
    conductor.states['lost'] = states.ERROR
    conductor.on_host = [
        Instance(
            uuid='lost',
            vm_state=states.BUILDING,
            task_state=states.SPAWNING,
            node='h1',
        )
    ]
    r.recover(context.get_admin_context())
    assert conductor.states['lost'] == states.ERROR
    assert ('free', 'lost') not in conductor.calls
    assert not [c for c in conductor.calls if c[0] == 'attempt']


def test_guests_without_a_live_instance_are_destroyed(runner):
    r, conductor, driver, _ = runner()
    for uuid in ('live', 'deleted-meanwhile', 'unknown'):
        driver.spawn(Instance(uuid=uuid), {})
    destroyed = r.destroy_orphans(
        [
            Instance(uuid='live', vm_state=states.ACTIVE),
            Instance(uuid='deleted-meanwhile', vm_state=states.DELETED),
        ]
    )
    assert destroyed == ['deleted-meanwhile', 'unknown']
    assert driver.list_instances() == ['live']
    # Allocations are not the orphan sweep's business.
    assert not [c for c in conductor.calls if c[0] == 'free']


def test_the_guest_of_a_move_through_the_host_is_kept(runner):
    # A resize's source keeps the old guest until the confirm, though the
    # instance is already on the destination (issue 24, section 3).
    r, conductor, driver, _ = runner()
    for uuid in ('resized-away', 'unknown'):
        driver.spawn(Instance(uuid=uuid), {})
    conductor.moves = [
        (
            None,
            Migration(
                uuid='m-1',
                instance_uuid='resized-away',
                migration_type='resize',
                status='finished',
            ),
        )
    ]
    assert r.destroy_orphans([]) == ['unknown']
    assert driver.list_instances() == ['resized-away']


def test_no_guest_is_destroyed_when_the_moves_cannot_be_read(runner):
    r, conductor, driver, _ = runner()
    driver.spawn(Instance(uuid='maybe-moving'), {})

    def unreadable(ctxt, host):
        raise RuntimeError('cell conductor down')

    conductor.moves_of_host = unreadable
    assert r.destroy_orphans([]) == []
    assert driver.list_instances() == ['maybe-moving']


class FakeArqs:
    """The accelerator client as the compute uses it."""

    def __init__(self, states_, reasons=None):
        self.states = states_
        self.reasons = reasons or {}
        self.deleted = []

    def get_arqs(self, ctxt, uuids):
        return [
            {
                'uuid': u,
                'state': self.states[u],
                'device_rp_uuid': 'dev-' + u,
                'hostname': 'h1',
                'failure_reason': self.reasons.get(u),
            }
            for u in uuids
        ]

    def delete_arqs(self, ctxt, uuids):
        self.deleted.append(list(uuids))

    def delete_arqs_for_instance(self, ctxt, instance_uuid):
        self.deleted.append(instance_uuid)


def test_arqs_already_bound_are_not_waited_for(runner):
    r, conductor, driver, _ = runner()
    r.accelerator = FakeArqs({'arq-1': 'Bound'})
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        {},
        SELECTION,
        [],
        ['arq-1'],
    )
    assert conductor.state == states.ACTIVE
    assert r.accelerator.deleted == []


def test_a_failed_bind_deletes_the_arqs_and_names_the_device(runner):
    r, conductor, driver, events = runner()
    r.accelerator = FakeArqs(
        {'arq-1': 'BindStarted'}, {'arq-1': 'bitstream rejected'}
    )
    events.deliver(
        'i', [InstanceEvent('accelerator-request-bound', 'arq-1', 'failed')]
    )
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        {},
        SELECTION,
        [],
        ['arq-1'],
    )
    attempt = [c for c in conductor.calls if c[0] == 'attempt'][0]
    assert attempt[2] == 'failed'
    assert 'arq-1 (device dev-arq-1 on h1: bitstream rejected)' in attempt[3]
    assert r.accelerator.deleted == [['arq-1']]
    assert driver.list_instances() == []


def test_terminate_deletes_the_arqs(runner):
    r, conductor, driver, _ = runner()
    r.accelerator = FakeArqs({})
    r.terminate(context.get_admin_context(), 'i')
    assert r.accelerator.deleted == ['i']


def test_terminate_marks_deleted_when_placement_is_down(runner):
    """A placement outage does not lose the delete: the guest goes, the
    record is marked deleted, the allocation is left to the recovery
    pass."""
    r, conductor, driver, _ = runner(conductor_state=states.ACTIVE)
    driver.spawn(Instance(uuid='i'), {})

    def placement_down(ctxt, uuid):
        raise ConnectionError('placement is down')

    conductor.remove_allocations = placement_down
    r.terminate(context.get_admin_context(), 'i')
    assert driver.list_instances() == []
    assert conductor.state == states.DELETED


def test_a_bind_failure_is_not_rescheduled_when_switched_off(runner):
    r, conductor, driver, events = runner()
    r.conf.set_override('reschedule_on_bind_failure', False, 'accelerator')
    r.accelerator = FakeArqs({'arq-1': 'BindFailed'})
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        {},
        SELECTION,
        [dataclasses.replace(SELECTION, service_host='h2')],
        ['arq-1'],
    )
    assert conductor.calls[-1] == ('reschedule', [], 'h1')


ANTI = {
    'instance_group': {'uuid': 'g', 'policy': 'anti-affinity', 'rules': {}}
}
ALTERNATE = dataclasses.replace(SELECTION, service_host='h2', nodename='h2')


def _member(uuid, host, vm_state=states.ACTIVE, task_state=None):
    return Instance(
        uuid=uuid, host=host, vm_state=vm_state, task_state=task_state
    )


def test_late_group_check_refuses_without_counting_a_failure(runner):
    r, conductor, driver, _ = runner()
    conductor.members = [_member('other', 'h1')]
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        ANTI,
        SELECTION,
        [ALTERNATE],
        [],
    )
    assert driver.list_instances() == []
    assert conductor.state == states.BUILDING
    kinds = [c[0] for c in conductor.calls]
    assert 'update' not in kinds  # never marked spawning
    attempt = [c for c in conductor.calls if c[0] == 'attempt'][0]
    assert attempt[1:3] == ('h1', 'group-policy')
    assert 'Anti-affinity instance group policy was violated' in attempt[3]
    assert ('free-here', 'i', ['rp']) in conductor.calls
    assert ('reschedule', [ALTERNATE], 'h1') in conductor.calls
    assert r.tracker.failed_builds == 0
    assert not [c for c in conductor.calls if c[0] == 'node']


def test_late_group_check_ignores_members_not_past_it(runner):
    r, conductor, driver, _ = runner()
    # Sent here too, but not yet past its own check; and one elsewhere.
    conductor.members = [
        _member('rival', 'h1', states.BUILDING, None),
        _member('far', 'h2'),
    ]
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        ANTI,
        SELECTION,
        [ALTERNATE],
        [],
    )
    assert conductor.state == states.ACTIVE
    assert driver.list_instances() == ['i']


def test_late_group_check_honours_max_server_per_host(runner):
    r, conductor, driver, _ = runner()
    conductor.members = [_member('a', 'h1')]
    spec = {
        'instance_group': {
            'uuid': 'g',
            'policy': 'anti-affinity',
            'rules': {'max_server_per_host': 2},
        }
    }
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        spec,
        SELECTION,
        [],
        [],
    )
    assert conductor.state == states.ACTIVE


def test_late_group_check_affinity_refuses_a_second_host(runner):
    r, conductor, driver, _ = runner()
    conductor.members = [_member('a', 'h2', states.BUILDING, states.SPAWNING)]
    spec = {'instance_group': {'uuid': 'g', 'policy': 'affinity'}}
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        spec,
        SELECTION,
        [ALTERNATE],
        [],
    )
    assert driver.list_instances() == []
    attempt = [c for c in conductor.calls if c[0] == 'attempt'][0]
    assert attempt[2] == 'group-policy' and 'h2' in attempt[3]


def test_failures_are_reported_and_disable_at_the_threshold(runner):
    r, conductor, _driver, _ = runner(fail=True, threshold=2)
    ctxt = context.get_admin_context()
    r.build(ctxt, Instance(uuid='i'), {}, SELECTION, [], [])
    assert ('node', 1) in conductor.calls
    assert not [c for c in conductor.calls if c[0] == 'disable']
    r.build(ctxt, Instance(uuid='j'), {}, SELECTION, [], [])
    assert ('node', 2) in conductor.calls
    assert (
        'disable',
        'h1',
        'nimbus-compute',
        'Auto-disabled due to 2 consecutive build failures',
    ) in conductor.calls


def test_threshold_zero_never_disables(runner):
    r, conductor, _driver, _ = runner(fail=True, threshold=0)
    for n in range(5):
        r.build(
            context.get_admin_context(),
            Instance(uuid='i%d' % n),
            {},
            SELECTION,
            [],
            [],
        )
    assert r.tracker.failed_builds == 5
    assert not [c for c in conductor.calls if c[0] == 'disable']


def test_a_stopping_compute_hands_back_builds_it_has_not_started(runner):
    r, conductor, driver, _ = runner()
    r.draining = True
    r.build(
        context.get_admin_context(),
        Instance(uuid='i'),
        {},
        SELECTION,
        [ALTERNATE],
        [],
    )
    assert driver.list_instances() == []
    assert [c[0] for c in conductor.calls] == [
        'free-here',
        'attempt',
        'reschedule',
    ]
    assert conductor.calls[1][1:3] == ('h1', 'handed-back')
    assert conductor.calls[2] == ('reschedule', [ALTERNATE], 'h1')
    assert r.tracker.failed_builds == 0


def test_guests_all_owned_read_no_moves(runner):
    """Every guest has its live instance: nothing can be an orphan, so
    the moves through the host (a call to the cell conductor) are not
    read."""
    r, conductor, driver, _ = runner()
    driver.spawn(Instance(uuid='mine'), {})

    asked = []
    conductor.moves_of_host = lambda ctxt, host: asked.append(host) or []
    assert r.destroy_orphans([Instance(uuid='mine', vm_state='active')]) == []
    assert asked == []
    assert driver.list_instances() == ['mine']
    # A guest without its instance: the moves are read, as before.
    driver.spawn(Instance(uuid='stray'), {})
    assert r.destroy_orphans([Instance(uuid='mine', vm_state='active')]) == [
        'stray'
    ]
    assert asked == ['h1']
