"""The super conductor releases only the claims its request made, and tells
the schedulers an instance's image properties with its placement.

A real SQLite API database holds the scheduler's records; the scheduler,
placement and cells are recording fakes."""

import oslo_messaging as messaging

from nimbus.common.objects import Instance
from nimbus.common.objects import RequestSpec
from nimbus.common.objects import selection as selection_obj
from nimbus.conductor import handoff
from nimbus.db.api import models as api_models

from .conftest import Conductor


class FakePlacement:
    def __init__(self):
        self.removed = []

    def remove_allocations(self, ctxt, consumer):
        self.removed.append(consumer)


class ScriptedScheduler:
    """Each select_destinations call plays the next step: ``(scheduled,
    failed, answer)`` writes a ``scheduled`` record per uuid in
    ``scheduled`` and a ``failed`` one per uuid in ``failed`` (as the
    scheduler does before it answers), then returns ``answer`` or raises
    it."""

    def __init__(self, api_db, steps):
        self.api_db = api_db
        self.steps = list(steps)
        self.calls = 0
        self.events = []

    def select_destinations(self, ctxt, spec, uuids, alternates):
        self.calls += 1
        scheduled, failed, answer = self.steps.pop(0)
        with self.api_db.session() as s:
            for outcome, which in (
                ('scheduled', scheduled),
                ('failed', failed),
            ):
                for uuid in which:
                    s.add(
                        api_models.SchedulingRecord(
                            request_id=spec.request_id,
                            instance_uuid=uuid,
                            outcome=outcome,
                            detail={'message': 'x'},
                        )
                    )
        if isinstance(answer, BaseException):
            raise answer
        return _selections(answer)

    def dry_run(self, ctxt, spec):
        return None

    def update_instance_info(self, ctxt, host, info):
        self.events.append((host, info.to_cache()))


SPEC = {
    'request_id': 'req-1',
    'min_count': 1,
    'num_instances': 2,
    'instance_uuids': ['u1', 'u2'],
}
SELECTED = [{'service_host': 'host-1'}]


def _spec(values):
    """The RequestSpec of a primitive without a flavor."""
    return RequestSpec.from_primitive(dict(values, flavor={}))


def _selections(answer):
    """The scheduler client's answer: Selections, as its rpcapi
    converts them."""
    return [selection_obj.list_from_primitive(s) for s in answer]


def test_a_scheduler_error_releases_nothing(api_db):
    # The scheduler answers an error only after undoing its own claims; u2's
    # consumer holds someone else's allocations (a generation conflict).
    sched = ScriptedScheduler(
        api_db,
        [((), ('u2',), messaging.RemoteError('PlacementError', 'down'))],
    )
    placement = FakePlacement()
    cond = Conductor(api_db, sched, placement)
    cond.schedule_and_build_instances(None, _spec(SPEC), ['u1', 'u2'])
    assert placement.removed == []
    assert [b[0] for b in cond.buried] == ['u1', 'u2']
    assert cond.buried[0][1] == 'Scheduling failed.'


def test_a_lost_answer_releases_only_what_the_scheduler_claimed(api_db):
    # First decision: u1 claimed, u2 met a consumer generation conflict
    # (not ours); the answer is lost. The retry places u1 again.
    sched = ScriptedScheduler(
        api_db,
        [
            (('u1',), ('u2',), messaging.MessagingTimeout('lost')),
            (('u1',), ('u2',), [SELECTED, []]),
        ],
    )
    placement = FakePlacement()
    cond = Conductor(api_db, sched, placement)
    cond.schedule_and_build_instances(None, _spec(SPEC), ['u1', 'u2'])
    assert sched.calls == 2
    assert placement.removed == ['u1']
    assert cond.built == ['u1']
    assert [b[0] for b in cond.buried] == ['u2']


def test_each_decisions_claims_are_released_once(api_db):
    # Lost answer (u1 released), then the retry fails in the scheduler,
    # which released its own claims: u1 is not released a second time.
    sched = ScriptedScheduler(
        api_db,
        [
            (('u1',), ('u2',), messaging.MessagingTimeout('lost')),
            ((), (), RuntimeError('scheduler bug')),
        ],
    )
    placement = FakePlacement()
    cond = Conductor(api_db, sched, placement)
    cond.schedule_and_build_instances(None, _spec(SPEC), ['u1', 'u2'])
    assert placement.removed == ['u1']
    assert [b[0] for b in cond.buried] == ['u1', 'u2']
    assert 'RuntimeError: scheduler bug' in cond.buried[0][2]


def test_two_lost_answers_release_both_decisions_claims(api_db):
    sched = ScriptedScheduler(
        api_db,
        [
            (('u1',), ('u2',), messaging.MessagingTimeout('lost')),
            (('u1', 'u2'), (), messaging.MessagingTimeout('lost again')),
        ],
    )
    placement = FakePlacement()
    cond = Conductor(api_db, sched, placement)
    cond.schedule_and_build_instances(None, _spec(SPEC), ['u1', 'u2'])
    assert placement.removed == ['u1', 'u1', 'u2']
    assert [b[0] for b in cond.buried] == ['u1', 'u2']


def test_records_of_other_requests_are_not_ours(api_db):
    with api_db.session() as s:
        s.add(
            api_models.SchedulingRecord(
                request_id='req-other',
                instance_uuid='u1',
                outcome='scheduled',
                detail={},
            )
        )
    sched = ScriptedScheduler(
        api_db,
        [
            ((), (), messaging.MessagingTimeout('lost')),
            ((), (), messaging.MessagingTimeout('lost')),
        ],
    )
    placement = FakePlacement()
    cond = Conductor(api_db, sched, placement)
    cond.schedule_and_build_instances(None, _spec(SPEC), ['u1', 'u2'])
    assert placement.removed == []


class UnreadableDB:
    def session(self):
        raise RuntimeError('API database down')


def test_unreadable_records_release_nothing(api_db):
    # The scheduler claimed u1 and recorded it, but the conductor cannot
    # read the records: it cannot tell u1's claim from someone else's.
    sched = ScriptedScheduler(
        api_db,
        [
            (('u1',), (), messaging.MessagingTimeout('lost')),
            ((), (), RuntimeError('down')),
        ],
    )
    placement = FakePlacement()
    cond = Conductor(UnreadableDB(), sched, placement)
    cond.schedule_and_build_instances(None, _spec(SPEC), ['u1', 'u2'])
    assert sched.calls == 2
    assert placement.removed == []
    assert [b[0] for b in cond.buried] == ['u1', 'u2']


def test_schedulers_learn_the_image_properties(api_db):
    sched = ScriptedScheduler(api_db, [])
    cells = handoff.Handoff(None, api_db, None, sched, FakePlacement())
    spec = dict(
        SPEC,
        image={'id': 'img-1', 'properties': {'os_distro': 'ubuntu'}},
        instance_group={'uuid': 'g-1'},
    )
    cells.tell_schedulers(
        None,
        'host-1',
        Instance(uuid='u1', flavor={'flavorid': 'f1'}, image_ref='img-1'),
        _spec(spec),
    )
    cells.tell_schedulers(
        None,
        'host-2',
        Instance(uuid='u2', flavor={'flavorid': 'f1'}, image_ref=None),
        _spec(dict(SPEC, image=None)),
    )
    assert sched.events == [
        (
            'host-1',
            {
                'uuid': 'u1',
                'flavor_id': 'f1',
                'group_uuid': 'g-1',
                'image_ref': 'img-1',
                'image_properties': {'os_distro': 'ubuntu'},
            },
        ),
        (
            'host-2',
            {
                'uuid': 'u2',
                'flavor_id': 'f1',
                'group_uuid': None,
                'image_ref': None,
                'image_properties': None,
            },
        ),
    ]
