"""A multi-create's claims in one placement request (``claim_many``, POST
/allocations), and the one-by-one claims it falls back to when placement
refuses the batch or its outcome is unknown. Oracle: the scheduler that
claims one instance at a time (a placement client without ``claim_many``)
on the same hosts."""

from hypothesis import given, settings, strategies as st
from nimbus.common import context as ctx_mod
from nimbus.common.clients import placement as pc
from nimbus.common import exception as common_exc
from nimbus.scheduler import conf as sconf
from nimbus.scheduler import driver, exception, testing
from nimbus.scheduler.host_manager import HostManager


class OneByOne:
    """Candidates for every host; every PUT claims (``refuse``: consumer
    uuids whose first PUT is refused for capacity)."""

    def __init__(self, hm, spec, refuse=()):
        self.hm = hm
        self.spec = spec
        self.refuse = set(refuse)
        self.claimed = {}
        self.puts = []
        self.removed = []

    def get_allocation_candidates(self, ctxt, params):
        return testing.candidates_for(self.hm.all_host_states(), self.spec)

    def claim(self, ctxt, consumer, areq, project_id, user_id):
        self.puts.append(consumer)
        if consumer in self.refuse:
            self.refuse.discard(consumer)
            return pc.ClaimOutcome(pc.REFUSED, 'no room')
        self.claimed[consumer] = next(iter(areq['allocations']))
        return pc.ClaimOutcome(pc.CLAIMED)

    def remove_allocations(self, ctxt, consumer):
        self.removed.append(consumer)
        self.claimed.pop(consumer, None)


class Batched(OneByOne):
    """The same, with ``claim_many`` answering ``answer``: True (all
    claimed), False (refused, nothing claimed) or an exception."""

    def __init__(self, hm, spec, answer=True, refuse=()):
        super().__init__(hm, spec, refuse)
        self.answer = answer
        self.batches = []

    def claim_many(self, ctxt, claims, project_id, user_id):
        self.batches.append([uuid for uuid, _areq in claims])
        if isinstance(self.answer, Exception):
            raise self.answer
        if self.answer:
            for uuid, areq in claims:
                self.claimed[uuid] = next(iter(areq['allocations']))
        return self.answer


def _run(conf, placement_cls, spec, **kw):
    hm = HostManager(conf, testing.make_source(6, seed=3))
    hm.refresh()
    placement = placement_cls(hm, spec, **kw)
    sched = driver.Scheduler(conf, placement, hm)
    try:
        out = sched.select_destinations(ctx_mod.get_admin_context(), spec)
    except exception.NoValidHost:
        out = None
    placed = None
    if out is not None:
        placed = [[s.service_host for s in hosts] for hosts in out]
    usage = sorted(
        (h.host, h.free_ram_mb, h.vcpus_used) for h in hm.all_host_states()
    )
    return placed, placement, usage


def _spec(num, vcpus, min_count):
    return testing.spec(
        vcpus=vcpus, memory_mb=1024, num=num, min_count=min(min_count, num)
    )


@settings(max_examples=25, deadline=None)
@given(
    num=st.integers(2, 40),
    vcpus=st.integers(1, 16),
    min_count=st.integers(1, 40),
    answer=st.sampled_from([True, False, 'error']),
)
def test_batch_places_as_one_by_one(num, vcpus, min_count, answer):
    """Whatever placement answers the batch, the instances land where the
    one-by-one scheduler puts them, with the same host states after, and
    each placed instance is claimed exactly once."""
    conf = sconf.make_conf()
    spec = _spec(num, vcpus, min_count)
    expected, _p, expected_usage = _run(
        conf, OneByOne, _spec(num, vcpus, min_count)
    )
    if answer == 'error':
        answer = common_exc.PlacementError(reason='answer lost')
    got, placement, usage = _run(conf, Batched, spec, answer=answer)
    assert got == expected
    assert usage == expected_usage
    placed = [
        u
        for u, hosts in zip(spec.instance_uuids, got or [], strict=False)
        if hosts
    ]
    assert sorted(placement.claimed) == sorted(placed)
    if got is None:  # NoValidHost: nothing claimed, nothing left
        assert placement.batches == [] and placement.puts == []
        return
    assert len(placement.batches) == 1
    if answer is True:
        assert placement.batches[0] == placed
        assert placement.puts == []
    else:
        assert sorted(placement.puts) == sorted(placed)
    assert placement.removed == []


def test_refused_batch_then_a_refused_claim_moves_on(conf):
    """After a refused batch, a claim refused one by one tries the next
    host, as without batches."""
    spec = _spec(4, 1, 4)
    first = spec.instance_uuids[0]
    got, placement, _usage = _run(
        conf, Batched, spec, answer=False, refuse=[first]
    )
    assert all(got)
    assert placement.puts.count(first) == 2
    assert sorted(placement.claimed) == sorted(spec.instance_uuids)


def test_one_instance_is_not_batched(conf):
    spec = _spec(1, 1, 1)
    got, placement, _usage = _run(conf, Batched, spec)
    assert got and got[0]
    assert placement.batches == []
    assert placement.puts == spec.instance_uuids
