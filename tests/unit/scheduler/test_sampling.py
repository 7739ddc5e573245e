"""Opt-in candidate sampling (``[filter_scheduler] hosts_to_score_percentage``,
``sampling.py``): rotating windows, the fall-back to every candidate when a
sample runs out of hosts, the explanation, and the default (off) leaving
decisions exactly as they were."""

import copy

from hypothesis import given, settings, strategies as st

from nimbus.common import context as ctx_mod
from nimbus.common.clients import placement as pc
from nimbus.scheduler import driver, exception, sampling, selection, testing
from nimbus.scheduler import conf as sconf
from nimbus.scheduler.explain import Explanation
from nimbus.scheduler.host_manager import HostManager
from nimbus.scheduler.host_source import InMemoryHostInfoSource

from .conftest import host


def _conf(pct, least=1):
    return sconf.make_conf(
        **{
            'filter_scheduler.hosts_to_score_percentage': pct,
            'filter_scheduler.min_hosts_to_score': least,
        }
    )


def _table_states(n, conf, seed=1):
    """HostStates from a host manager (with its table) and placement's
    answer for ``spec``."""
    hm = HostManager(
        conf, testing.make_source(n, seed=seed, cells=2, disabled_every=7)
    )
    hm.refresh()
    return hm


def _decide(sched, hm, spec, exp=None):
    body = testing.candidates_for(hm.all_host_states(), spec)
    areqs = {
        next(iter(a['allocations'])): a for a in body['allocation_requests']
    }
    states = hm.host_states_for_candidates(body['provider_summaries'], areqs)
    return sched.schedule(
        copy.deepcopy(spec),
        states,
        areqs,
        explanation=exp,
        provider_summaries=body['provider_summaries'],
    )


def test_wanted():
    conf = _conf(10, least=50)
    assert sampling.wanted(conf, 1000, 1) == 100
    assert sampling.wanted(conf, 200, 1) == 50
    assert sampling.wanted(conf, 1000, 300) == 300
    assert sampling.wanted(conf, 50, 1) is None  # no fewer than wanted
    assert sampling.wanted(sconf.make_conf(), 100000, 1) is None  # off


def test_default_is_off_and_decides_as_before():
    spec = testing.spec(vcpus=2, memory_mb=2048, root_gb=10, num=5)
    picks = []
    for conf in (sconf.make_conf(), _conf(100)):
        hm = _table_states(300, conf)
        sched = selection.FilterScheduler(conf)
        got = []
        for _ in range(4):
            exp = Explanation(spec)
            res = _decide(sched, hm, spec, exp)
            assert exp.sample is None and 'sampled' not in exp.to_dict()
            got.append([[s.service_host for s in r] for r in res])
        assert sched.next_start == 0
        picks.append(got)
    assert picks[0] == picks[1]


def test_windows_rotate_and_wrap():
    conf = _conf(10, least=20)
    hm = _table_states(200, conf)
    sched = selection.FilterScheduler(conf)
    spec = testing.spec(vcpus=1, memory_mb=512, root_gb=1)
    starts, ends = [], []
    for _ in range(12):
        exp = Explanation(spec)
        res = _decide(sched, hm, spec, exp)
        sample = exp.sample
        assert sample.candidates == 200 and sample.partial
        assert sample.want == 20 and sample.examined >= 20
        starts.append(sample.start)
        ends.append((sample.start + sample.examined) % 200)
        # the chosen host is one of the window's
        window = {
            f'host-{(sample.start + k) % 200}' for k in range(sample.examined)
        }
        assert res[0][0].service_host in window
        assert {s.service_host for s in res[0]} <= window
        counts = exp.filter_counts()
        assert counts[0]['in'] == sample.examined
        assert counts[-1]['out'] >= 20
    # each decision starts where the previous one stopped, wrapping
    assert starts[0] == 0
    assert starts[1:] == ends[:-1]
    assert any(e < s for s, e in zip(starts, ends, strict=True))


def test_list_path_rotates_too(conf):
    conf = _conf(10, least=3)
    hs = [host(f'h{i}', vcpus=4 + i) for i in range(10)]
    sched = selection.FilterScheduler(conf)
    picked = []
    for _ in range(4):
        exp = Explanation(testing.spec(vcpus=1))
        res = sched.schedule(testing.spec(vcpus=1), hs, explanation=exp)
        picked.append(res[0][0].service_host)
        assert exp.sample.examined == 4  # three wanted, and a quarter
    # the best of each window of four: h3, h7, h9 (h8, h9, h0, h1), then
    # h5 (h2 to h5)
    assert picked == ['h3', 'h7', 'h9', 'h5']
    assert sched.next_start == 6


def _affinity(num, **kw):
    group = {
        'uuid': 'g',
        'name': 'g',
        'policy': 'affinity',
        'members': [],
        'hosts': [],
    }
    return testing.spec(
        vcpus=1, memory_mb=128, root_gb=1, num=num, instance_group=group, **kw
    )


def test_sample_that_runs_out_falls_back_to_every_candidate():
    """Affinity: the sample's hosts hold two instances each, the request
    three; the full scan puts all three on the big host. The sampled run's
    claims are released, its consumption undone, and it is decided again."""
    conf = _conf(10, least=2)
    hs = [host(f'h{i}', vcpus=2) for i in range(9)] + [host('big', vcpus=16)]
    claims = testing.InMemoryClaims()
    sched = selection.FilterScheduler(conf)
    spec = _affinity(3)
    exp = Explanation(spec)
    res = sched.schedule(
        spec, hs, claim=claims.claim, unclaim=claims.unclaim, explanation=exp
    )
    assert [r[0].service_host for r in res] == ['big'] * 3
    assert exp.sample.fell_back and not exp.sample.partial
    assert exp.to_dict()['sampled']['fell_back'] is True
    assert sorted(k[1] for k in claims.claims) == ['big'] * 3
    assert all(h.num_instances == 0 for h in hs[:9])
    assert hs[9].num_instances == 3
    assert sorted(spec.instance_group.members) == sorted(spec.instance_uuids)
    assert spec.instance_group.hosts.count('big') >= 1
    assert set(spec.instance_group.hosts) == {'big'}
    assert 'sampling: the sample ran out of hosts' in exp.message()


def test_fall_back_after_lost_races():
    """Every host of the sample refuses its claim (lost races): the
    request is decided again over every candidate, not refused."""
    conf = _conf(20, least=2)
    hs = [host(f'h{i}', vcpus=4 + i) for i in range(10)]
    claims = testing.InMemoryClaims(fail_hosts={'h0', 'h1', 'h2'})
    res = selection.FilterScheduler(conf).schedule(
        testing.spec(vcpus=1), hs, claim=claims.claim
    )
    assert res[0][0].service_host == 'h9'


def test_no_valid_host_after_the_fall_back_is_truthful():
    conf = _conf(10, least=2)
    hs = [host(f'h{i}', vcpus=2) for i in range(10)]
    spec = _affinity(3, min_count=3)
    try:
        selection.FilterScheduler(conf).schedule(spec, hs)
    except exception.NoValidHost as err:
        assert 'ran out of hosts, every one of 10 candidates' in err.reason
        assert err.explanation['sampled']['examined'] == 10
    else:
        raise AssertionError('three instances fit no host')
    assert all(h.num_instances == 0 for h in hs)
    assert spec.instance_group.members == []


class _Batched:
    """Candidates for every host, a multi-create's claims in one batch."""

    def __init__(self, hm, spec):
        self.hm, self.spec = hm, spec
        self.batches = []

    def get_allocation_candidates(self, ctxt, params):
        return testing.candidates_for(self.hm.all_host_states(), self.spec)

    def claim(self, ctxt, consumer, areq, project_id, user_id):
        return pc.ClaimOutcome(pc.CLAIMED)

    def claim_many(self, ctxt, claims, project_id, user_id):
        self.batches.append([uuid for uuid, _areq in claims])
        return True

    def remove_allocations(self, ctxt, consumer):
        raise AssertionError('nothing was claimed one by one')


def test_driver_batch_holds_only_the_decision_made_again():
    conf = _conf(10, least=2)
    conf.set_override('emit_decisions', False, group='scheduler')
    nodes = [
        testing.compute_node(
            i,
            vcpus=16 if i == 9 else 2,
            vcpus_used=0,
            memory_mb=65536,
            memory_mb_used=0,
            local_gb=1000,
            local_gb_used=0,
            cpu_allocation_ratio=1.0,
            failed_builds=0,
            num_io_ops=0,
            hypervisor_version=7000000,
            pci_stats=[],
        )
        for i in range(10)
    ]
    services = [
        {'host': f'host-{i}', 'binary': 'nimbus-compute', 'up': True}
        for i in range(10)
    ]
    hm = HostManager(conf, InMemoryHostInfoSource(nodes, services, [], {}, []))
    hm.refresh()
    spec = _affinity(3)
    placement = _Batched(hm, spec)
    out = driver.Scheduler(conf, placement, hm).select_destinations(
        ctx_mod.get_admin_context(), spec
    )
    assert [r[0].service_host for r in out] == ['host-9'] * 3
    assert placement.batches == [list(spec.instance_uuids)]


def test_dry_run_describes_sampling_and_leaves_the_rotation():
    conf = _conf(10, least=20)
    hm = _table_states(200, conf)
    sched = selection.FilterScheduler(conf)
    spec = testing.spec(vcpus=1, memory_mb=512, root_gb=1, num=3)
    body = testing.candidates_for(hm.all_host_states(), spec)
    areqs = {
        next(iter(a['allocations'])): a for a in body['allocation_requests']
    }
    states = hm.host_states_for_candidates(body['provider_summaries'], areqs)
    out = sched.dry_run(spec, states, areqs, body['provider_summaries'])
    assert out['sampling']['wanted'] == 20
    assert out['sampling']['candidates'] == 200
    assert out['placed'] == 3
    assert sched.next_start == 0


@st.composite
def _cases(draw):
    n = draw(st.integers(4, 40))
    hosts = [
        dict(
            vcpus=draw(st.integers(1, 8)),
            service_disabled=draw(st.booleans()) and draw(st.booleans()),
        )
        for _ in range(n)
    ]
    return dict(
        hosts=hosts,
        pct=draw(st.integers(1, 99)),
        least=draw(st.integers(1, 10)),
        vcpus=draw(st.integers(1, 4)),
        num=draw(st.integers(1, 6)),
        policy=draw(st.sampled_from([None, 'affinity', 'anti-affinity'])),
        start=draw(st.integers(0, 50)),
        fail=draw(st.sets(st.integers(0, n - 1), max_size=3)),
    )


def _run(case, conf, start=0):
    hs = [host(f'h{i}', **kw) for i, kw in enumerate(case['hosts'])]
    group = None
    if case['policy']:
        group = {
            'uuid': 'g',
            'name': 'g',
            'policy': case['policy'],
            'members': [],
            'hosts': [],
        }
    spec = testing.spec(
        vcpus=case['vcpus'],
        memory_mb=128,
        root_gb=1,
        num=case['num'],
        min_count=1,
        instance_group=group,
    )
    claims = testing.InMemoryClaims(fail_hosts={f'h{i}' for i in case['fail']})
    sched = selection.FilterScheduler(conf)
    sched.next_start = start
    try:
        res = sched.schedule(
            spec, hs, claim=claims.claim, unclaim=claims.unclaim
        )
    except exception.NoValidHost:
        res = []
    return sum(1 for r in res if r), len(claims.claims)


@settings(max_examples=150, deadline=None)
@given(_cases())
def test_sampling_never_places_fewer_than_every_candidate(case):
    """Oracle: the unsampled scheduler on the same hosts. With sampling
    on, a request is placed whenever (and as fully as) the full scan
    places it, and exactly what was placed stays claimed."""
    full, full_claims = _run(case, sconf.make_conf())
    got, got_claims = _run(
        case, _conf(case['pct'], case['least']), case['start']
    )
    assert got == full
    assert got_claims == got
