"""The faults the super conductor writes for instances the scheduler did not
place: a one-line message naming placement's count and the filter that
eliminated the most hosts, the scheduler's explanation in the details, and an
admin record with every rejected host."""

import sqlalchemy as sa


from nimbus.common.objects import RequestSpec
from nimbus.common.objects import selection as selection_obj
from nimbus.common import exception as common_exc
from nimbus.conductor import faults
from nimbus.db.api import models as api_models

from .conftest import Conductor
from nimbus.scheduler import exception as sched_exc

EXPLANATION = {
    'placement_candidates': 20,
    'placement_query': 'resources=VCPU:8',
    'pre_filters': [],
    'filters': [
        {'name': 'ComputeFilter', 'in': 20, 'out': 19},
        {'name': 'NUMATopologyFilter', 'in': 19, 'out': 2},
        {'name': 'ImagePropertiesFilter', 'in': 2, 'out': 0},
    ],
    'rejected': [
        {
            'host': 'host-%d' % i,
            'filter': 'NUMATopologyFilter',
            'reason': 'needs 2 cells of 4 pinned CPUs, host has 3 free',
        }
        for i in range(30)
    ],
}


def test_summary_names_placement_count_and_the_worst_filter():
    assert faults.fault_summary(EXPLANATION) == (
        'No valid host was found: placement returned 20 hosts; '
        'NUMATopologyFilter rejected 17'
    )
    assert faults.fault_summary(dict(EXPLANATION, placed=3, requested=5)) == (
        'No valid host was found: placed 3 of 5; placement returned 20 '
        'hosts; NUMATopologyFilter rejected 17'
    )


def test_summary_when_placement_returned_nothing_or_no_explanation():
    assert faults.fault_summary(
        {'placement_candidates': 0, 'filters': []}
    ) == ('No valid host was found: placement returned 0 hosts')
    assert faults.fault_summary(
        {'placement_candidates': 1, 'filters': []}
    ) == ('No valid host was found: placement returned 1 host')
    assert faults.fault_summary(None) == 'No valid host was found.'
    assert (
        faults.fault_summary({}, fallback="no aggregate defines zone 'x'\nTB")
        == "No valid host was found: no aggregate defines zone 'x'"
    )
    assert len(faults.fault_summary({'message': 'x' * 400})) == 255


def test_summary_falls_back_to_what_happened_later():
    exp = {
        'placement_candidates': 3,
        'filters': [{'name': 'ComputeFilter', 'in': 3, 'out': 3}],
        'later': [
            {
                'host': 'host-1',
                'what': 'ResourceCapacity',
                'reason': 'no capacity left for another instance',
            }
        ],
    }
    assert faults.fault_summary(exp) == (
        'No valid host was found: placement returned 3 hosts; no capacity '
        'left for another instance'
    )


def test_explanation_text_has_funnel_and_a_sample():
    text = faults.explanation_text(EXPLANATION, sample_size=2)
    assert text.startswith(
        'placement returned 20 hosts; ComputeFilter: 20 '
        'in, 19 out; NUMATopologyFilter: 19 in, 2 out; '
        'ImagePropertiesFilter: 2 in, 0 out. Rejected: '
    )
    assert text.count('NUMATopologyFilter: needs 2 cells') == 2
    empty = faults.explanation_text(
        {'placement_candidates': 0, 'placement_query': 'resources=VCPU:99'}
    )
    assert empty == (
        'placement returned 0 hosts for GET '
        '/allocation_candidates?resources=VCPU:99'
    )


class FakeScheduler:
    def __init__(self, selections=None, dry_run=None, error=None):
        self.selections = selections
        self.result = dry_run
        self.error = error
        self.dry_runs = []

    def select_destinations(self, ctxt, spec, uuids, alternates):
        if self.error is not None:
            raise self.error
        return _selections(self.selections)

    def dry_run(self, ctxt, spec):
        self.dry_runs.append(spec.to_primitive())
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def _records(api_db):
    with api_db.session() as s:
        return [
            (r.instance_uuid, r.outcome, r.detail)
            for r in s.execute(
                sa.select(api_models.SchedulingRecord)
            ).scalars()
        ]


SPEC = {
    'request_id': 'req-1',
    'min_count': 2,
    'num_instances': 4,
    'instance_uuids': ['u1', 'u2', 'u3', 'u4'],
    'instance_group': {
        'uuid': 'g',
        'policy': 'anti-affinity',
        'members': ['u1', 'u2', 'u3', 'u4'],
        'hosts': ['old-host'],
    },
}
SELECTED = [{'service_host': 'host-1'}]


def _spec(values):
    """The RequestSpec of a primitive without a flavor."""
    return RequestSpec.from_primitive(dict(values, flavor={}))


def _selections(answer):
    """The scheduler client's answer: Selections, as its rpcapi
    converts them."""
    return [selection_obj.list_from_primitive(s) for s in answer]


def test_unplaced_instances_get_a_dry_run_explanation(api_db):
    dry = {
        'placement_candidates': 3,
        'placement_query': 'q',
        'pre_filters': [],
        'ranked': [],
        'filters': [
            {'name': 'ServerGroupAntiAffinityFilter', 'in': 3, 'out': 0}
        ],
        'rejected': [
            {
                'host': 'host-%d' % i,
                'filter': 'ServerGroupAntiAffinityFilter',
                'reason': 'group g already has 1 member here',
            }
            for i in (1, 2, 3)
        ],
    }
    sched = FakeScheduler([SELECTED, SELECTED, [], []], dry_run=dry)
    cond = Conductor(api_db, sched)
    cond.schedule_and_build_instances(
        None, _spec(SPEC), SPEC['instance_uuids']
    )
    assert cond.built == ['u1', 'u2']
    assert [b[0] for b in cond.buried] == ['u3', 'u4']
    for _uuid, message, details in cond.buried:
        assert message == (
            'No valid host was found: placed 2 of 4; '
            'placement returned 3 hosts; '
            'ServerGroupAntiAffinityFilter rejected 3'
        )
        assert details.startswith(
            'The scheduler placed 2 of the 4 instances '
            'of this request (min_count 2); this one '
            'did not fit.'
        )
        assert 'ServerGroupAntiAffinityFilter: 3 in, 0 out' in details
        assert 'host-2: ServerGroupAntiAffinityFilter: group g' in details
    # One more instance of the request, against what the claims left; the
    # group's hosts are recomputed by the scheduler.
    (asked,) = sched.dry_runs
    assert asked['num_instances'] == 1 and asked['instance_uuids'] == []
    assert asked['instance_group']['hosts'] == []
    assert SPEC['instance_group']['hosts'] == ['old-host']
    records = _records(api_db)
    assert [(u, o) for u, o, _d in records] == [
        ('u3', 'failed'),
        ('u4', 'failed'),
    ]
    detail = records[0][2]
    assert detail['placed'] == 2 and detail['requested'] == 4
    assert len(detail['rejected']) == 3
    assert detail['message'] == cond.buried[0][1]


def _scheduler_records(api_db, uuids, detail):
    """What the scheduler writes for each instance it could not place."""
    with api_db.session() as s:
        for uuid in uuids:
            s.add(
                api_models.SchedulingRecord(
                    request_id='req-1',
                    instance_uuid=uuid,
                    outcome='failed',
                    detail=detail,
                )
            )


def test_unplaced_uses_the_schedulers_record_when_it_explains(api_db):
    _scheduler_records(
        api_db, ['u2'], dict(EXPLANATION, message='did not fit')
    )
    sched = FakeScheduler([SELECTED, []], dry_run=RuntimeError('unused'))
    cond = Conductor(api_db, sched)
    cond.schedule_and_build_instances(
        None, _spec(dict(SPEC, instance_group=None)), ['u1', 'u2']
    )
    assert sched.dry_runs == []
    ((uuid, message, details),) = cond.buried
    assert uuid == 'u2'
    assert message == (
        'No valid host was found: placed 1 of 2; placement '
        'returned 20 hosts; NUMATopologyFilter rejected 17'
    )
    assert 'this one did not fit. Why: placement returned 20 hosts' in details
    # The scheduler's record is the admin's; nothing is added.
    assert len(_records(api_db)) == 1


def test_an_instances_own_reason_comes_first(api_db):
    funnel = {
        'placement_candidates': 2,
        'filters': [{'name': 'ComputeFilter', 'in': 2, 'out': 2}],
    }
    _scheduler_records(
        api_db,
        ['u2'],
        dict(funnel, message='consumer generation conflict for u2'),
    )
    cond = Conductor(api_db, FakeScheduler([SELECTED, []]))
    cond.schedule_and_build_instances(
        None, _spec(dict(SPEC, instance_group=None)), ['u1', 'u2']
    )
    ((_uuid, message, details),) = cond.buried
    assert message == (
        'No valid host was found: placed 1 of 2; consumer '
        'generation conflict for u2'
    )
    assert 'did not fit. consumer generation conflict for u2. Why:' in details


def test_a_record_that_does_not_explain_gets_a_dry_run(api_db):
    # Every filter passed every host for the first instance: the funnel
    # does not say why the second did not fit.
    funnel = {
        'placement_candidates': 3,
        'filters': [
            {'name': 'ServerGroupAntiAffinityFilter', 'in': 3, 'out': 3}
        ],
        'later': [],
    }
    _scheduler_records(api_db, ['u3'], dict(funnel, message='did not fit'))
    dry = {
        'placement_candidates': 3,
        'filters': [
            {'name': 'ServerGroupAntiAffinityFilter', 'in': 3, 'out': 0}
        ],
        'rejected': [],
    }
    sched = FakeScheduler([SELECTED, SELECTED, []], dry_run=dry)
    cond = Conductor(api_db, sched)
    cond.schedule_and_build_instances(
        None, _spec(dict(SPEC, instance_group=None)), ['u1', 'u2', 'u3']
    )
    ((_uuid, message, details),) = cond.buried
    assert message.endswith('ServerGroupAntiAffinityFilter rejected 3')
    assert 'Why another instance does not fit now: ' in details
    records = _records(api_db)
    assert [d.get('source') for _u, _o, d in records] == [
        None,
        'dry run after the claims of the placed instances',
    ]
    assert records[1][2]['placed'] == 2


def test_unplaced_without_any_explanation_still_says_so(api_db):
    sched = FakeScheduler([SELECTED, []], dry_run=RuntimeError('down'))
    cond = Conductor(api_db, sched)
    cond.schedule_and_build_instances(
        None, _spec(dict(SPEC, instance_group=None)), ['u1', 'u2']
    )
    ((_uuid, message, details),) = cond.buried
    assert message == 'No valid host was found: placed 1 of 2'
    assert 'placed 1 of the 2 instances' in details
    assert [o for _u, o, _d in _records(api_db)] == []


def test_no_valid_host_message_summarises_the_explanation(api_db):
    exc = sched_exc.NoValidHost(
        'No valid host: placement returned 20 hosts; ...', EXPLANATION
    )
    cond = Conductor(api_db, FakeScheduler(error=exc))
    cond.schedule_and_build_instances(None, _spec(SPEC), ['u1'])
    ((_uuid, message, details),) = cond.buried
    assert message == (
        'No valid host was found: placement returned 20 '
        'hosts; NUMATopologyFilter rejected 17'
    )
    assert details == 'No valid host: placement returned 20 hosts; ...'
    plain = common_exc.NoValidHost('zone az9 has no hosts')
    cond = Conductor(api_db, FakeScheduler(error=plain))
    cond.schedule_and_build_instances(None, _spec(SPEC), ['u1'])
    assert cond.buried[0][1] == (
        'No valid host was found: zone az9 has no hosts'
    )
