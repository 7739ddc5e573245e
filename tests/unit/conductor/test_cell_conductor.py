"""The cell conductor walks alternates and settles instances, on a real
SQLite cell database with recording fakes for placement and computes."""

import pytest

from nimbus.common.clients import placement as placement_client
from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import instance_states as states
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
            (host, instance['uuid'], [s.service_host for s in host_list])
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
    assert done['vm_state'] == states.ACTIVE
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


class FakeBinder:
    """The conductors' AcceleratorBinder: hosts in ``broken`` fail."""

    def __init__(self, broken=()):
        self.broken = set(broken)
        self.deleted = []
        self.bound = []

    def create_and_bind(self, ctxt, instance, spec, selection):
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
