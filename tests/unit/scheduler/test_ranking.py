"""The array-backed Ranking against the weighing rules written out per host in
plain Python floats: the same totals to the last bit, the same order (ties
keep candidate order), also after hosts change, leave or are filtered out."""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nimbus.scheduler import plugins, ranking, testing
from nimbus.scheduler.weighers import misc, resources

from .conftest import host


def scalar_totals(hosts, weighers, spec):
    """Each weigher's raw value from ``weigh`` per host, normalised to
    [0, 1] over the hosts and multiplied, summed weigher after weigher."""
    totals = [0.0] * len(hosts)
    for w in weighers:
        if not w.is_enabled_for(spec):
            continue
        key = w.override_key
        if key and any(key in h.aggregate_metadata for h in hosts):
            mults = [w.weight_multiplier(h) for h in hosts]
        elif w.default_multiplier() == 0.0:
            continue
        else:
            mults = [w.default_multiplier()] * len(hosts)
        raw = [w.weigh(h, spec) for h in hosts]
        lo, hi = min(raw), max(raw)
        if lo == hi:
            continue
        totals = [
            t + m * ((v - lo) / (hi - lo))
            for t, v, m in zip(totals, raw, mults, strict=False)
        ]
    return totals


def stable_best(totals, k, exclude=None, cell=None, hosts=None):
    idx = [
        i
        for i in range(len(totals))
        if i != exclude and (cell is None or hosts[i].cell_uuid == cell)
    ]
    return sorted(idx, key=lambda i: -totals[i])[:k]


def make_hosts(seed, n):
    rng = random.Random(seed)
    hosts = []
    for i in range(n):
        aggs = []
        if rng.random() < 0.2:
            aggs = [{'metadata': {'ram_weight_multiplier': rng.choice('02')}}]
        hosts.append(
            host(
                f'h{i}',
                cell_uuid=rng.choice(['cell-1', 'cell-2']),
                # few distinct values: many ties
                vcpus_used=rng.choice([0, 4, 8]),
                memory_mb_used=rng.choice([0, 1024, 7000]),
                local_gb_used=rng.choice([0, 10]),
                num_io_ops=rng.choice([0, 1, 3]),
                aggregates=aggs,
            )
        )
    return hosts


@pytest.mark.parametrize('seed', range(8))
def test_totals_and_order_match_the_scalar_rules(conf, seed):
    hosts = make_hosts(seed, 60)
    spec = testing.spec(vcpus=1, memory_mb=512, root_gb=1)
    weighers = plugins.load_weighers(conf)
    r = ranking.Ranking(hosts, weighers, spec)
    want = scalar_totals(hosts, weighers, spec)
    assert r.totals.tolist() == want
    assert len(set(want)) < len(want)  # ties exist, so order is tested
    assert r.ranked(1) == stable_best(want, 1)
    for k in (1, 3, 7, 60):
        for cell in (None, 'cell-1', 'cell-2'):
            for excl in (None, 0, 5):
                assert r.ranked(k, exclude=excl, cell=cell) == stable_best(
                    want, k, excl, cell, hosts
                )


@pytest.mark.parametrize('seed', range(4))
def test_update_remove_keep_stay_equal_to_a_fresh_ranking(conf, seed):
    rng = random.Random(seed)
    hosts = make_hosts(100 + seed, 40)
    spec = testing.spec(vcpus=2, memory_mb=2048, root_gb=5)
    weighers = plugins.load_weighers(conf)
    r = ranking.Ranking(hosts, weighers, spec)
    for step in range(12):
        i = rng.randrange(len(r))
        if step % 3 == 0:
            r.hosts[i].consume_from_request(spec)
            r.update(i)
        elif step % 3 == 1:
            r.remove(i)
        else:
            gone = {id(h) for h in rng.sample(r.hosts, 2)}
            r.keep([h for h in r.hosts if id(h) not in gone])
        want = scalar_totals(r.hosts, weighers, spec)
        assert r.totals.tolist() == want
        assert r.ranked(5, cell='cell-2') == stable_best(
            want, 5, None, 'cell-2', r.hosts
        )


@given(
    st.lists(st.integers(0, 6), min_size=0, max_size=40), st.integers(0, 45)
)
@settings(max_examples=200, deadline=None)
def test_top_indices_is_a_stable_sort_prefix(values, k):
    totals = np.array(values, dtype=np.float64) / 3.0
    idx = np.arange(len(values))
    assert ranking.top_indices(totals, idx, k) == stable_best(
        totals.tolist(), k
    )


@pytest.mark.parametrize(
    'cls',
    [
        resources.RAMWeigher,
        resources.CPUWeigher,
        resources.DiskWeigher,
        resources.IoOpsWeigher,
        resources.NumInstancesWeigher,
        misc.HypervisorVersionWeigher,
    ],
)
def test_raw_attribute_is_what_weigh_returns(conf, cls):
    w = cls(conf)
    spec = testing.spec()
    for h in make_hosts(7, 20):
        assert getattr(h, w.raw_attribute) == w.weigh(h, spec)


def bits(a) -> list:
    """The doubles' bit patterns (tells -0.0 from 0.0)."""
    return np.asarray(a, dtype=np.float64).view(np.int64).tolist()


def plain_totals(active, n):
    """The totals as one new array per step, every step written out."""
    totals = np.zeros(n, dtype=np.float64)
    for _w, m, raw, (lo, hi) in active:
        if hi == lo:
            continue
        if isinstance(m, np.ndarray) or m != 0.0:
            totals = totals + m * ((raw - lo) / (hi - lo))
    return totals


VALUES = st.sampled_from([0.0, -0.0, 1.0, -1.0, 3.0, 0.5, -7.25, 1e6])


@given(
    columns=st.lists(
        st.tuples(
            st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, 1e6, 'per host']),
            st.lists(VALUES, min_size=5, max_size=5),
        ),
        min_size=1,
        max_size=6,
    )
)
@settings(max_examples=300, deadline=None)
def test_totals_are_the_same_doubles_as_every_step_written_out(columns):
    """Skipping ``- 0.0``, ``* 1.0`` and turning ``+ -1.0 * x`` into ``- x``
    gives the same bits (signed zeros included) as doing every step."""
    r = ranking.Ranking.__new__(ranking.Ranking)
    r._hosts, r.rows, r._buf, r.active = [None] * 5, None, None, []
    for m, values in columns:
        raw = np.array(values, dtype=np.float64)
        if m == 'per host':
            m = np.array(values[::-1], dtype=np.float64)
        r.active.append([None, m, raw, (float(raw.min()), float(raw.max()))])
    r._totals()
    assert bits(r.totals) == bits(plain_totals(r.active, 5))


@given(
    used=st.lists(
        st.sampled_from([0, 1024, 4096, 8192]), min_size=2, max_size=12
    ),
    steps=st.lists(
        st.tuples(
            st.integers(0, 11), st.sampled_from([0, 1024, 4096, 8192, 30000])
        ),
        min_size=1,
        max_size=8,
    ),
)
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_update_keeps_the_bounds_and_totals_of_a_fresh_ranking(
    conf, used, steps
):
    """After a host changes, the bounds (widened from the new value, or
    found again when the old one was a bound) and the totals are the
    very ones a ranking built afresh has."""
    hosts = [
        host(f'h{i}', memory_mb_used=u, vcpus_used=(i % 3) * 4)
        for i, u in enumerate(used)
    ]
    spec = testing.spec(vcpus=1, memory_mb=512, root_gb=1)
    weighers = plugins.load_weighers(conf)
    r = ranking.Ranking(hosts, weighers, spec)
    for i, ram_used in steps:
        i %= len(hosts)
        hosts[i].free_ram_mb = 32768 - ram_used
        hosts[i].free_vcpus = hosts[i].free_vcpus - 1
        r.update(i)
        fresh = ranking.Ranking(hosts, weighers, spec)
        assert [e[3] for e in r.active] == [e[3] for e in fresh.active]
        assert bits(r.totals) == bits(fresh.totals)
