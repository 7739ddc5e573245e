"""The cell conductor walks alternates and settles instances, on a real
SQLite cell database with recording fakes for placement and computes."""

import pytest

from nimbus.common.clients import placement as placement_client
from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import instance_states as states
from nimbus.common.objects import BuildAttempt
from nimbus.common.objects import InstanceUpdate
from nimbus.common.objects import RequestSpec
from nimbus.common.objects import Selection
from nimbus.conductor import cell_conductor
from nimbus.db import cell_instances as instances
from nimbus import db as nimbus_db


class FakePlacement:
    """Answers claims as PlacementClient.claim does: hosts in ``refuse``
    have no room left; a claim on a host in ``conflict`` finds the
    consumer's allocations changed by someone else."""

    def __init__(self, refuse=(), conflict=()):
        self.refuse = set(refuse)
        self.conflict = set(conflict)
        self.claims = []
        self.removed = []

    def claim(
        self, ctxt, consumer, areq, project, user, consumer_generation=None
    ):
        host = areq['host']
        self.claims.append((consumer, host))
        if host in self.conflict:
            return placement_client.ClaimOutcome(
                placement_client.CONSUMER_CONFLICT,
                'consumer generation conflict: consumer %s is at '
                'generation 3' % consumer,
            )
        if host in self.refuse:
            return placement_client.ClaimOutcome(
                placement_client.REFUSED, 'no room on %s' % host
            )
        return placement_client.ClaimOutcome(placement_client.CLAIMED)

    def remove_allocations(self, ctxt, consumer):
        self.removed.append(consumer)


class FakeComputeAPI:
    def __init__(self):
        self.builds = []

    def build_and_run_instance(
        self, ctxt, host, instance, spec, selection, host_list, accel_uuids
    ):
        self.builds.append(
            (host, instance.uuid, [s.service_host for s in host_list])
        )


def _selection(host):
    return Selection(
        service_host=host,
        nodename=host,
        compute_node_uuid='rp-' + host,
        allocation_request={'host': host, 'allocations': {}},
    )


def _spec(values):
    return RequestSpec.from_primitive(dict(values, flavor={}))


@pytest.fixture
def conductor(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'cell.sqlite')
    nimbus_db.sync_cell(url)
    db = common_db.get_database(url)
    with db.session() as session:
        instances.create(
            session,
            {
                'uuid': 'i-1',
                'project_id': 'p',
                'user_id': 'u',
                'host': 'h0',
                'node': 'h0',
                'vm_state': states.BUILDING,
                'flavor': {'vcpus': 1},
            },
        )
        instances.record_attempt(
            session, 'i-1', 'h0', 'h0', 'failed', 'disk on fire'
        )
    placement, compute = FakePlacement(refuse={'h1'}), FakeComputeAPI()
    yield (
        cell_conductor.CellConductor(None, db, placement, compute),
        placement,
        compute,
        db,
    )
    db.dispose()


def test_claims_the_next_alternate_that_still_fits(conductor):
    cond, placement, compute, db = conductor
    cond.build_instances(
        context.get_admin_context(),
        'i-1',
        _spec({'project_id': 'p', 'user_id': 'u'}),
        [_selection('h1'), _selection('h2'), _selection('h3')],
        'h0',
        'disk on fire',
    )
    assert placement.claims == [('i-1', 'h1'), ('i-1', 'h2')]
    assert compute.builds == [('h2', 'i-1', ['h3'])]
    with db.session() as session:
        row = instances.get(session, 'i-1')
        assert (row.host, row.task_state) == ('h2', states.RESCHEDULING)


def test_no_alternate_left_is_error_with_every_attempt(conductor):
    cond, placement, compute, db = conductor
    cond.build_instances(
        context.get_admin_context(),
        'i-1',
        _spec({'project_id': 'p', 'user_id': 'u'}),
        [_selection('h1')],
        'h0',
        'disk on fire',
    )
    assert compute.builds == []
    assert placement.removed == ['i-1']
    with db.session() as session:
        row = instances.get(session, 'i-1')
        assert row.vm_state == states.ERROR
        fault = session.execute(
            instances.models.InstanceFault.__table__.select()
        ).one()
    assert '2 attempts' in fault.message
    assert 'h0: failed - disk on fire' in fault.details
    assert 'h1: claim-failed' in fault.details


def test_consumer_conflict_stops_the_walk_and_keeps_their_allocations(
    conductor,
):
    cond, placement, compute, db = conductor
    placement.conflict = {'h2'}
    cond.build_instances(
        context.get_admin_context(),
        'i-1',
        _spec({'project_id': 'p', 'user_id': 'u'}),
        [_selection('h1'), _selection('h2'), _selection('h3')],
        'h0',
        'disk on fire',
    )
    # h1 refused (no room): next; h2 conflict: stop, h3 is never tried.
    assert placement.claims == [('i-1', 'h1'), ('i-1', 'h2')]
    assert compute.builds == []
    # The allocations placement holds for i-1 now are not ours.
    assert placement.removed == []
    with db.session() as session:
        row = instances.get(session, 'i-1')
        assert (row.vm_state, row.task_state) == (states.ERROR, None)
        fault = session.execute(
            instances.models.InstanceFault.__table__.select()
        ).one()
        tried = instances.attempts(session, 'i-1')
    assert "consumer's allocations changed under it" in fault.message
    assert 'h2' in fault.message
    assert 'h1: claim-failed' in fault.details
    assert 'h2: claim-conflict' in fault.details
    assert 'generation 3' in fault.details
    assert [a['result'] for a in tried] == [
        'failed',
        'claim-failed',
        'claim-conflict',
    ]


def test_refused_claim_reason_is_recorded(conductor):
    cond, placement, compute, db = conductor
    cond.build_instances(
        context.get_admin_context(),
        'i-1',
        _spec({'project_id': 'p', 'user_id': 'u'}),
        [_selection('h1'), _selection('h2')],
        'h0',
        'x',
    )
    with db.session() as session:
        tried = instances.attempts(session, 'i-1')
    assert tried[1]['result'] == 'claim-failed'
    assert 'no room on h1' in tried[1]['reason']


def test_instance_deleted_meanwhile_releases_the_new_claim(conductor):
    cond, placement, compute, db = conductor
    with db.session() as session:
        instances.transition(
            session,
            'i-1',
            [states.BUILDING],
            {'vm_state': states.DELETED, 'deleted': True},
        )
    cond.build_instances(
        context.get_admin_context(),
        'i-1',
        _spec({'project_id': 'p', 'user_id': 'u'}),
        [_selection('h2')],
        'h0',
        'x',
    )
    assert compute.builds == []
    assert placement.removed == ['i-1']


def test_compare_and_swap_refuses_a_stale_expectation(conductor):
    cond, placement, compute, db = conductor
    ctxt = context.get_admin_context()
    assert (
        cond.instance_update(
            ctxt,
            'i-1',
            [states.ACTIVE],
            InstanceUpdate.from_primitive({'task_state': None}),
        )
        is None
    )
    done = cond.instance_update(
        ctxt,
        'i-1',
        [states.BUILDING],
        InstanceUpdate.from_primitive({'vm_state': states.ACTIVE}),
    )
    assert done.uuid == 'i-1' and done.vm_state == states.ACTIVE
    # ACTIVE -> BUILDING is not in the table, whatever the caller expects.
    assert (
        cond.instance_update(
            ctxt,
            'i-1',
            [states.ACTIVE],
            InstanceUpdate.from_primitive({'vm_state': states.BUILDING}),
        )
        is None
    )
    with pytest.raises(ValueError):
        cond.instance_update(
            ctxt,
            'i-1',
            [states.ACTIVE],
            InstanceUpdate.from_primitive({'project_id': 'stolen'}),
        )


def test_a_begun_delete_is_only_finished_by_the_delete(conductor):
    """Once a delete has begun (task_state deleting), a build's last swap
    to ACTIVE or its failure to ERROR arriving later is refused; the move
    to DELETED still goes through."""
    cond, placement, compute, db = conductor
    ctxt = context.get_admin_context()

    def swap(expected, values):
        return cond.instance_update(
            ctxt, 'i-1', expected, InstanceUpdate.from_primitive(values)
        )

    assert swap([states.BUILDING], {'task_state': states.DELETING})
    assert swap([states.BUILDING], {'vm_state': states.ACTIVE}) is None
    assert (
        swap([states.BUILDING], {'vm_state': states.ERROR, 'task_state': None})
        is None
    )
    assert swap([states.BUILDING], {'task_state': states.SPAWNING}) is None
    # a second delete of the same server may mark it again
    assert swap([states.BUILDING], {'task_state': states.DELETING})
    done = swap(
        [states.BUILDING], {'vm_state': states.DELETED, 'task_state': None}
    )
    assert done.vm_state == states.DELETED


class FakeBinder:
    """The conductors' AcceleratorBinder: hosts in ``broken`` fail."""

    def __init__(self, broken=()):
        self.broken = set(broken)
        self.deleted = []
        self.bound = []

    def create_and_bind(self, ctxt, instance_uuid, spec, selection):
        from nimbus.conductor import accelerators

        host = selection.service_host
        if host in self.broken:
            raise accelerators.AcceleratorBindError('card broken on ' + host)
        self.bound.append(host)
        return ['arq-' + host]

    def delete(self, ctxt, uuids):
        self.deleted.append(list(uuids))


def test_a_reschedule_binds_new_arqs_on_the_alternate(conductor):
    cond, placement, compute, db = conductor
    cond.accelerator = FakeBinder(broken={'h2'})
    with db.session() as session:
        instances.transition(
            session, 'i-1', [states.BUILDING], {'accel_uuids': ['arq-h0']}
        )
    cond.build_instances(
        context.get_admin_context(),
        'i-1',
        _spec({'device_profile': 'p'}),
        [_selection('h2'), _selection('h3')],
        failed_host='h0',
        reason='bind failed',
    )
    assert compute.builds == [('h3', 'i-1', [])]
    assert cond.accelerator.bound == ['h3']
    assert cond.accelerator.deleted == [['arq-h0']]
    assert 'i-1' in placement.removed
    with db.session() as session:
        assert instances.to_dict(instances.get(session, 'i-1'))[
            'accel_uuids'
        ] == ['arq-h3']


def _reschedule_from_h0(cond):
    cond.build_instances(
        context.get_admin_context(),
        'i-1',
        _spec({'project_id': 'p', 'user_id': 'u'}),
        [_selection('h2'), _selection('h3')],
        'h0',
        'disk on fire',
    )


def test_the_same_reschedule_twice_moves_the_build_once(conductor):
    cond, placement, compute, db = conductor
    _reschedule_from_h0(cond)
    # The duplicate finds i-1 building on h2, not h0: dropped before any
    # claim (a second claim would conflict with h2's and fail the build).
    _reschedule_from_h0(cond)
    assert placement.claims == [('i-1', 'h2')]
    assert compute.builds == [('h2', 'i-1', ['h3'])]
    assert placement.removed == []
    with db.session() as session:
        row = instances.get(session, 'i-1')
        assert (row.vm_state, row.host) == (states.BUILDING, 'h2')


def test_a_late_reschedule_of_an_active_instance_changes_nothing(conductor):
    cond, placement, compute, db = conductor
    with db.session() as session:
        instances.transition(
            session, 'i-1', [states.BUILDING], {'vm_state': states.ACTIVE}
        )
    _reschedule_from_h0(cond)
    assert placement.claims == []
    assert placement.removed == []
    assert compute.builds == []
    with db.session() as session:
        assert instances.get(session, 'i-1').vm_state == states.ACTIVE


def test_concurrent_copies_of_a_reschedule_claim_once(conductor):
    import threading

    cond, placement, compute, db = conductor
    threads = [
        threading.Thread(target=_reschedule_from_h0, args=(cond,))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert placement.claims == [('i-1', 'h2')]
    assert compute.builds == [('h2', 'i-1', ['h3'])]


def test_the_build_check_and_a_reschedule_do_not_both_move_a_build(conductor):
    """The build check took the build off h0 (its compute looked down)
    just before the compute's own reschedule arrived: the reschedule is
    stale, one walk only."""
    cond, placement, compute, db = conductor
    with db.session() as session:
        instances.get(session, 'i-1').build_alternates = instances.alternates(
            _spec({'project_id': 'p', 'user_id': 'u'}), [_selection('h3')]
        )
        session.flush()
        taken = instances.take_alternates(session, 'i-1', 'h0')
    assert taken is not None
    _reschedule_from_h0(cond)
    assert placement.claims == []
    assert compute.builds == []
    assert placement.removed == []


def test_a_build_attempt_recorded_twice_is_kept_once(conductor):
    cond, placement, compute, db = conductor
    ctxt = context.get_admin_context()
    for _ in range(2):
        cond.record_build_attempt(ctxt, 'i-1', 'h2', 'h2', 'failed', 'boom')
    # A different attempt after it is still recorded, and so is the same
    # one again once another came between them.
    cond.record_build_attempt(ctxt, 'i-1', 'h3', 'h3', 'failed', 'boom')
    cond.record_build_attempt(ctxt, 'i-1', 'h2', 'h2', 'failed', 'boom')
    with db.session() as session:
        tried = instances.attempts(session, 'i-1')
    assert [(a['host'], a['reason']) for a in tried] == [
        ('h0', 'disk on fire'),
        ('h2', 'boom'),
        ('h3', 'boom'),
        ('h2', 'boom'),
    ]


def test_final_swap_records_its_build_attempt_once(conductor):
    """RPC 1.4: the attempt travels with the swap, is written only when the
    swap holds, and a retried swap (reply lost) does not write it twice."""
    cond, _placement, _compute, db = conductor
    ctxt = context.get_admin_context()
    attempt = BuildAttempt(host='h0', node='h0', result='success')
    active = InstanceUpdate.from_primitive({'vm_state': states.ACTIVE})
    # On another host: the swap does not hold, nothing is recorded.
    assert (
        cond.instance_update(
            ctxt, 'i-1', [states.BUILDING], active, 'h9', attempt
        )
        is None
    )
    for _try in range(2):  # the second is a retry of a swap that held
        done = cond.instance_update(
            ctxt,
            'i-1',
            [states.BUILDING, states.ACTIVE],
            active,
            'h0',
            attempt,
        )
        assert done.vm_state == states.ACTIVE
    with db.session() as session:
        results = [
            (a['host'], a['result'])
            for a in instances.attempts(session, 'i-1')
        ]
    assert results == [('h0', 'failed'), ('h0', 'success')]


@pytest.mark.parametrize(
    'attempt',
    [
        {'host': 'h0'},
        {'host': 'h0', 'result': 1},
        {'host': 'h0', 'result': 'success', 'node': 5},
        {'host': 'h0', 'result': 'success', 'extra': 'x'},
    ],
)
def test_malformed_build_attempt_is_refused(conductor, attempt):
    from nimbus.common import rpc
    from nimbus.conductor import manager

    cond, _placement, _compute, db = conductor
    endpoint = manager.CellConductorManager(cond)
    with pytest.raises(rpc.InvalidMessage):
        endpoint.instance_update(
            context.get_admin_context(),
            instance_uuid='i-1',
            expected_vm_states=[states.BUILDING],
            updates={'vm_state': states.ACTIVE},
            build_attempt=attempt,
        )
    with db.session() as session:
        assert instances.get(session, 'i-1').vm_state == states.BUILDING
