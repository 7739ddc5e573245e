"""PlacementClient.claim: the three kinds of 409 from PUT /allocations/{consumer} and
what the scheduler does with each (a fake placement scripted per test)."""

import json

import pytest
import requests

from nimbus.common import context as ctx_mod
from nimbus.common.clients import placement as pc
from nimbus.scheduler import driver, exception, selection, testing
from nimbus.scheduler.host_manager import HostManager

CONSUMER = '11111111-1111-1111-1111-111111111111'
RP = '22222222-2222-2222-2222-222222222222'
AREQ = {'allocations': {RP: {'resources': {'VCPU': 1, 'MEMORY_MB': 512}}}}


def _response(status, body=None):
    r = requests.Response()
    r.status_code = status
    r._content = json.dumps(body).encode() if body is not None else b''
    r.encoding = 'utf-8'
    return r


def conflict(code=None, detail='conflict'):
    err = {'status': 409, 'title': 'Conflict', 'detail': detail}
    if code:
        err['code'] = code
    return _response(409, {'errors': [err]})


class ScriptedPlacement:
    """A requests.Session stand-in: PUTs answer from ``puts`` in order; GET
    /allocations/{consumer} answers ``consumer``."""

    def __init__(self, puts, consumer=None):
        self.puts = list(puts)
        self.consumer = consumer or {'allocations': {}}
        self.calls = []

    def request(
        self, method, url, json=None, params=None, headers=None, timeout=None
    ):
        self.calls.append((method, url, json))
        if method == 'PUT':
            return self.puts.pop(0)
        if method == 'GET' and '/allocations/' in url:
            return _response(200, self.consumer)
        raise AssertionError(f'unexpected {method} {url}')

    def puts_sent(self):
        return [c for c in self.calls if c[0] == 'PUT']


def client(session, retries=3):
    return pc.PlacementClient(
        'http://placement', session=session, retries=retries
    )


def test_claimed_on_204():
    s = ScriptedPlacement([_response(204)])
    out = client(s).claim(None, CONSUMER, AREQ, 'p', 'u')
    assert out.status == pc.CLAIMED and out.claimed and out.attempts == 1
    body = s.calls[0][2]
    assert body['consumer_generation'] is None
    assert body['allocations'] == {
        RP: {'resources': {'VCPU': 1, 'MEMORY_MB': 512}}
    }


def test_capacity_refusal_is_refused_without_retry():
    s = ScriptedPlacement(
        [conflict(None, 'Unable to allocate inventory: 4 of 4 used')]
    )
    out = client(s).claim(None, CONSUMER, AREQ, 'p', 'u')
    assert out.status == pc.REFUSED and not out
    assert '4 of 4 used' in out.detail
    assert len(s.puts_sent()) == 1  # no re-PUT, no consumer read
    assert len(s.calls) == 1
    assert (
        client(ScriptedPlacement([conflict()])).claim_resources(
            None, CONSUMER, AREQ, 'p', 'u'
        )
        is False
    )


def test_provider_generation_race_is_put_again():
    # concurrent_update while the consumer is as expected (absent): a provider race.
    s = ScriptedPlacement(
        [
            conflict(
                pc.CONCURRENT_UPDATE,
                'Inventory and/or allocations '
                'changed while attempting to allocate',
            ),
            conflict(pc.CONCURRENT_UPDATE),
            _response(204),
        ]
    )
    out = client(s).claim(None, CONSUMER, AREQ, 'p', 'u')
    assert out.status == pc.CLAIMED and out.attempts == 3
    puts = s.puts_sent()
    assert (
        len(puts) == 3 and puts[0][2] == puts[2][2]
    )  # the same claim each time


def test_provider_race_gives_up_after_bounded_retries():
    s = ScriptedPlacement([conflict(pc.CONCURRENT_UPDATE)] * 3)
    out = client(s, retries=2).claim(None, CONSUMER, AREQ, 'p', 'u')
    assert out.status == pc.REFUSED and out.attempts == 3
    assert 'provider generation kept changing after 3 attempts' in out.detail
    assert len(s.puts_sent()) == 3


def test_consumer_generation_conflict():
    other = '33333333-3333-3333-3333-333333333333'
    s = ScriptedPlacement(
        [conflict(pc.CONCURRENT_UPDATE, 'consumer generation conflict')],
        consumer={
            'allocations': {
                other: {'generation': 4, 'resources': {'VCPU': 2}}
            },
            'consumer_generation': 1,
            'project_id': 'p',
            'user_id': 'u',
        },
    )
    out = client(s).claim(None, CONSUMER, AREQ, 'p', 'u')
    assert out.status == pc.CONSUMER_CONFLICT and not out
    assert (
        'expected generation null' in out.detail
        and 'at generation 1' in out.detail
    )
    assert other in out.detail
    assert len(s.puts_sent()) == 1  # retrying cannot help


def test_own_earlier_claim_counts_as_claimed():
    # The first PUT landed but its answer was lost; the re-sent PUT conflicts with it.
    s = ScriptedPlacement(
        [conflict(pc.CONCURRENT_UPDATE)],
        consumer={
            'allocations': {
                RP: {
                    'generation': 2,
                    'resources': {'VCPU': 1, 'MEMORY_MB': 512},
                }
            },
            'consumer_generation': 1,
            'project_id': 'p',
            'user_id': 'u',
        },
    )
    assert client(s).claim(None, CONSUMER, AREQ, 'p', 'u').status == pc.CLAIMED


def test_other_errors_raise():
    s = ScriptedPlacement(
        [_response(400, {'errors': [{'status': 400, 'detail': 'bad'}]})]
    )
    with pytest.raises(Exception) as err:
        client(s).claim(None, CONSUMER, AREQ, 'p', 'u')
    assert 'bad' in str(err.value)


# ------------------------------------------------------------------ in the scheduler
class FakePlacement:
    """Candidates for every host; each claim answers from ``answers`` (consumer uuid ->
    list of 409 kinds, consumed per PUT), else claims."""

    def __init__(self, hm, answers):
        self.hm = hm
        self.answers = answers
        self.claimed = {}
        self.removed = []
        self.current_spec = None

    def get_allocation_candidates(self, ctxt, params):
        return testing.candidates_for(
            self.hm.all_host_states(), self.current_spec
        )

    def claim(self, ctxt, consumer, areq, project_id, user_id):
        kinds = self.answers.get(consumer) or []
        kind = kinds.pop(0) if kinds else 'ok'
        if kind == 'capacity':
            return pc.ClaimOutcome(pc.REFUSED, 'no room')
        if kind == 'consumer':
            return pc.ClaimOutcome(
                pc.CONSUMER_CONFLICT,
                'consumer generation conflict: already holds allocations',
            )
        self.claimed[consumer] = next(iter(areq['allocations']))
        return pc.ClaimOutcome(pc.CLAIMED)

    def remove_allocations(self, ctxt, consumer):
        self.removed.append(consumer)
        self.claimed.pop(consumer, None)


def _scheduler(conf, answers, records):
    hm = HostManager(conf, testing.make_source(6, seed=1))
    hm.refresh()
    placement = FakePlacement(hm, answers)
    sched = driver.Scheduler(
        conf,
        placement,
        hm,
        record=lambda c, o, s, d: records.append(
            (o, list(s.instance_uuids), d)
        ),
    )
    return sched, placement


def test_capacity_refusal_moves_to_next_host(conf):
    records = []
    sp = testing.spec(vcpus=1, num=1)
    uuid = sp.instance_uuids[0]
    sched, placement = _scheduler(
        conf, {uuid: ['capacity', 'capacity']}, records
    )
    placement.current_spec = sp
    out = sched.select_destinations(ctx_mod.get_admin_context(), sp)
    assert len(out) == 1 and out[0]
    assert placement.claimed[uuid] == out[0][0].compute_node_uuid


def test_consumer_conflict_fails_that_instance_only(conf):
    records = []
    sp = testing.spec(vcpus=1, num=3, min_count=1)
    bad = sp.instance_uuids[1]
    sched, placement = _scheduler(conf, {bad: ['consumer']}, records)
    placement.current_spec = sp
    out = sched.select_destinations(ctx_mod.get_admin_context(), sp)
    assert [bool(r) for r in out] == [True, False, True]
    assert set(placement.claimed) == {
        sp.instance_uuids[0],
        sp.instance_uuids[2],
    }
    assert placement.removed == []
    failed = [r for r in records if r[0] == 'failed']
    assert [r[1] for r in failed] == [[bad]]
    assert 'consumer generation conflict' in failed[0][2]['message']
    scheduled = [r for r in records if r[0] == 'scheduled'][0]
    assert scheduled[1] == [sp.instance_uuids[0], sp.instance_uuids[2]]
    by_uuid = {i['instance_uuid']: i for i in scheduled[2]['instances']}
    assert by_uuid[bad]['host'] is None
    assert 'consumer generation conflict' in by_uuid[bad]['reason']


def test_consumer_conflict_below_min_count_fails_request(conf):
    records = []
    sp = testing.spec(vcpus=1, num=2, min_count=2)
    sched, placement = _scheduler(
        conf, {sp.instance_uuids[0]: ['consumer']}, records
    )
    placement.current_spec = sp
    with pytest.raises(exception.NoValidHost) as err:
        sched.select_destinations(ctx_mod.get_admin_context(), sp)
    assert 'consumer generation conflict' in err.value.reason
    assert (
        err.value.explanation['failed_instances'][0]['instance_uuid']
        == sp.instance_uuids[0]
    )
    # the other instance's claim was released; the conflicting consumer's was never ours
    assert placement.removed == [sp.instance_uuids[1]]


def test_selection_loop_instance_claim_failed(conf):
    from .conftest import host

    hs = [host(f'h{i}', vcpus=8) for i in range(3)]
    sp = testing.spec(vcpus=1, num=2, min_count=1)

    def claim(h, areq, uuid):
        if uuid == sp.instance_uuids[0]:
            raise exception.InstanceClaimFailed('consumer generation conflict')
        return True

    res = selection.FilterScheduler(conf).schedule(sp, hs, claim=claim)
    assert res[0] == [] and res[1]
    assert sum(h.num_instances for h in hs) == 1
