"""The host table (host_table.py) and the selection's vectorised path over it.

* The rows never lag: after any sequence of the changes a HostState goes through
  (compute node and service updates, provider summaries, aggregates, instances,
  consumption and restore, failed builds, plain assignments), every column equals
  what the HostState's attributes say.
* The vectorised path picks what the per-host Python path picks: the same hosts
  (selected and alternates, in order) with the same weights to the last bit, over
  random host sets, filters, weighers and multipliers with many ties, and what the
  slow reference implementation picks.
"""

import copy
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nimbus.scheduler import (
    consumption,
    exception,
    host_table,
    reference,
    selection,
    testing,
)
from nimbus.scheduler.explain import Explanation
from nimbus.scheduler.filters import aggregate, capabilities, compute
from nimbus.scheduler.host_manager import HostManager
from nimbus.scheduler.weighers import all_weighers

from .conftest import host


def expected_row(hs):
    """The row as the HostState's attributes say it should be."""
    row = {c: float(getattr(hs, c)) for c in host_table.NUMERIC[:-1]}
    row['pci_free'] = float(hs.pci_device_count())
    row['ok'] = bool(hs.service_up and not hs.service_disabled)
    row['az'] = hs.availability_zone
    row['cell'] = hs.cell_uuid
    return row


def stored_row(table, hs):
    s = hs._slot
    row = {c: float(table.cols[c][s]) for c in host_table.NUMERIC}
    row['ok'] = bool(table.ok[s])
    row['az'] = table.values['az'][table.codes['az'][s]]
    row['cell'] = table.values['cell'][table.codes['cell'][s]]
    return row


def agg_key_counts(hosts):
    counts = {}
    for h in hosts:
        for k in h.aggregate_metadata:
            counts[k] = counts.get(k, 0) + 1
    return counts


PCI = {
    'vendor_id': '8086',
    'product_id': '154d',
    'dev_type': 'type-PF',
    'numa_node': 0,
}


def mutate(rng, hm, hs, conf):
    """One random change of the kinds the scheduler's host states go through."""
    kind = rng.randrange(11)
    if kind == 0:
        hm._update_compute_node(
            {
                'uuid': hs.uuid,
                'host': hs.host,
                'cell_uuid': rng.choice(['c1', 'c2', 'c3']),
                'vcpus': rng.choice([8, 16]),
                'memory_mb': rng.choice([16384, 65536]),
                'local_gb': 400,
                'hypervisor_version': rng.choice([6000000, 7001000]),
                'pci_stats': [dict(PCI, count=rng.randrange(4))],
                'failed_builds': rng.randrange(3),
                'hypervisor_type': rng.choice(['QEMU', 'xen']),
                'supported_instances': [
                    [rng.choice(['x86_64', 'aarch64']), 'qemu', 'hvm']
                ],
            }
        )
    elif kind == 1:
        hm._update_service(
            {
                'host': hs.host,
                'up': rng.random() < 0.8,
                'disabled': rng.random() < 0.2,
            }
        )
    elif kind == 2:
        hs.update_from_provider_summary(
            {
                'resources': {
                    'VCPU': {'capacity': 32, 'used': rng.randrange(32)},
                    'MEMORY_MB': {
                        'capacity': 65536,
                        'used': rng.randrange(65536),
                    },
                }
            }
        )
    elif kind == 3:
        meta = rng.choice(
            [
                {'availability_zone': rng.choice(['az1', 'az2'])},
                {'ram_weight_multiplier': '2'},
                {'max_io_ops_per_host': '3'},
                {},
            ]
        )
        hm._update_aggregates(
            [
                {
                    'uuid': f'agg-{rng.randrange(3)}',
                    'hosts': [hs.host],
                    'metadata': meta,
                }
            ]
        )
    elif kind == 4:
        hm._update_instance_info(hs.host, [{'uuid': f'i{rng.random()}'}])
    elif kind == 5 and hs.instances:
        hm._delete_instance_info(hs.host, next(iter(hs.instances)))
    elif kind == 6:
        snap = hs.snapshot()
        sp = testing.spec(vcpus=1, memory_mb=512, root_gb=1)
        consumption.consume(hs, sp, conf, f'u{rng.random()}')
        if rng.random() < 0.5:
            hs.restore(snap)
    elif kind == 7:
        hm._record_build_result(hs.host, rng.random() < 0.5)
    elif kind == 8:
        hs.pci_pools = [dict(PCI, count=rng.randrange(5))]
    elif kind == 9:
        hs.num_io_ops = rng.randrange(10)
        hs.service_disabled = rng.random() < 0.3
    elif rng.random() < 0.5:
        hm._remove_compute_node(hs.uuid)
    else:
        new = f'n{rng.random()}'
        hm._update_compute_node(
            {'uuid': new, 'host': new, 'cell_uuid': 'c4', 'vcpus': 4}
        )


STATIC_SPEC = dict(
    extra_specs={'capabilities:hypervisor_type': 's== QEMU'},
    image_props={'hw_architecture': 'x86_64'},
)


def static_masks(conf, table, hosts):
    """The capability and image filters' table verdicts, and their
    host_passes, over ``hosts``."""
    sp = testing.spec(**STATIC_SPEC)
    rows = table.rows(hosts)
    out = []
    for f in (
        capabilities.ComputeCapabilitiesFilter(conf),
        capabilities.ImagePropertiesFilter(conf),
    ):
        out.append(
            (
                f.mask(table, rows, sp).tolist(),
                [f.host_passes(h, sp) for h in hosts],
            )
        )
    return out


@pytest.mark.parametrize('seed', range(6))
def test_rows_follow_every_change(conf, seed):
    rng = random.Random(seed)
    src = testing.make_source(30, seed=seed, cells=2, az_every=4)
    hm = HostManager(conf, src)
    hm.refresh()
    for step in range(300):
        states = hm.all_host_states()
        if not states:
            break
        mutate(rng, hm, rng.choice(states), conf)
        if step % 50 == 0:  # remembered verdicts, forgotten on changes
            now = hm.all_host_states()
            for got, want in static_masks(conf, hm.table, now):
                assert got == want
    states = hm.all_host_states()
    assert states
    for hs in states:
        assert hs._table is hm.table
        assert stored_row(hm.table, hs) == expected_row(hs)
    assert dict(hm.table.agg_keys) == agg_key_counts(states)
    for got, want in static_masks(conf, hm.table, states):
        assert got == want
    assert len(hm.table) == len(states)
    # a full reload keeps the same rows current too
    hm.refresh()
    for hs in hm.all_host_states():
        assert stored_row(hm.table, hs) == expected_row(hs)


def test_copies_are_outside_the_table(conf):
    table = host_table.HostTable(capacity=2)
    hosts = [host(f'h{i}') for i in range(5)]  # past the capacity: it grows
    for h in hosts:
        table.attach(h)
    twin = copy.deepcopy(hosts[0])
    twin.free_ram_mb = 1.0
    shallow = copy.copy(hosts[1])
    shallow.num_io_ops = 99
    assert twin._table is None and shallow._table is None
    for h in hosts:
        assert stored_row(table, h) == expected_row(h)
    assert host_table.table_of([hosts[0], twin]) == (None, None)
    table.detach(hosts[2])
    assert host_table.table_of(hosts) == (None, None)
    got, slots = host_table.table_of([hosts[4], hosts[0]])
    assert got is table and slots.tolist() == [hosts[4]._slot, 0]


# ---------------------------------------------------------------- the oracle
FILTERS = (
    compute.ComputeFilter,
    compute.AvailabilityZoneFilter,
    compute.NumInstancesFilter,
    compute.IoOpsFilter,
    aggregate.AggregateNumInstancesFilter,
    aggregate.AggregateIoOpsFilter,
    aggregate.AggregateRamFilter,
)
MULTIPLIERS = (
    'ram_weight_multiplier',
    'cpu_weight_multiplier',
    'disk_weight_multiplier',
    'io_ops_weight_multiplier',
    'pci_weight_multiplier',
    'build_failure_weight_multiplier',
    'num_instances_weight_multiplier',
    'hypervisor_version_weight_multiplier',
)


def random_hosts(rng, n):
    """Hosts with few distinct values (many ties), a few aggregates."""
    hosts = []
    for i in range(n):
        meta = {}
        if rng.random() < 0.3:
            meta['availability_zone'] = rng.choice(['az1', 'az2'])
        if rng.random() < 0.1:
            meta[
                rng.choice(['ram_weight_multiplier', 'max_io_ops_per_host'])
            ] = rng.choice(['0', '2', '3'])
        hs = host(
            f'h{i}',
            cell_uuid=rng.choice(['cell-1', 'cell-2']),
            vcpus_used=rng.choice([0, 4, 8]),
            memory_mb_used=rng.choice([0, 8192, 30000]),
            local_gb_used=rng.choice([0, 100]),
            hypervisor_version=rng.choice([7000000, 7001000]),
            aggregates=[{'metadata': meta}] if meta else [],
            instances=[f'x{i}-{k}' for k in range(rng.choice([0, 0, 1, 3]))],
            pci_stats=[dict(PCI, count=rng.choice([0, 1, 2]))],
        )
        hs.num_io_ops = rng.choice([0, 1, 2, 3, 4])
        hs.failed_builds = rng.choice([0, 0, 0, 1])
        hs.service_up = rng.random() < 0.95
        hs.service_disabled = rng.random() < 0.05
        hosts.append(hs)
    return hosts


def run(conf, filters, hosts, sp, areqs):
    """The picks (or NoValidHost's reason), and what the explanation says:
    each filter's counts and the hosts rejected, with why."""
    sched = selection.FilterScheduler(
        conf, filters=filters, weighers=[w(conf) for w in all_weighers()]
    )
    spec = copy.deepcopy(sp)
    exp = Explanation(spec)
    try:
        res = sched.schedule(spec, hosts, areqs, explanation=exp)
    except exception.NoValidHost as exc:
        return 'NoValidHost', exc.reason
    picks = [[(s.service_host, s.cell_uuid) for s in r] for r in res]
    return picks, exp.filter_counts(), exp.rejected()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(1, 40),
    num=st.integers(1, 6),
    flags=st.lists(
        st.booleans(), min_size=len(FILTERS), max_size=len(FILTERS)
    ),
    mults=st.lists(
        st.sampled_from([0.0, 1.0, -1.0, 2.5]),
        min_size=len(MULTIPLIERS),
        max_size=len(MULTIPLIERS),
    ),
    az=st.sampled_from([None, 'az1', 'az1,az2', 'nova']),
)
def test_vectorised_path_picks_what_the_python_path_picks(
    conf, seed, n, num, flags, mults, az
):
    rng = random.Random(seed)
    for name, m in zip(MULTIPLIERS, mults, strict=True):
        if name == 'pci_weight_multiplier':
            m = abs(m)  # must not be negative
        conf.set_override(name, m, 'filter_scheduler')
    conf.set_override('max_io_ops_per_host', 3, 'filter_scheduler')
    conf.set_override('max_instances_per_host', 3, 'filter_scheduler')
    conf.set_override('alias', [PCI_ALIAS], 'pci')
    filters = [cls(conf) for cls, on in zip(FILTERS, flags, strict=True) if on]
    hosts = random_hosts(rng, n)
    extra = {'pci_passthrough:alias': 'nic:1'} if rng.random() < 0.3 else {}
    sp = testing.spec(
        vcpus=2, memory_mb=4096, root_gb=20, num=num, extra_specs=extra
    )
    sp.availability_zone = az
    sp.min_count = 1
    twins = copy.deepcopy(hosts)  # outside any table: the Python path
    table = host_table.HostTable(capacity=8)
    for h in hosts:
        table.attach(h)
    order = list(range(n))
    rng.shuffle(order)
    fast_hosts = [hosts[i] for i in order]
    slow_hosts = [twins[i] for i in order]
    assert host_table.table_of(fast_hosts)[0] is table
    assert host_table.table_of(slow_hosts) == (None, None)
    areqs = {h.uuid: None for h in fast_hosts if rng.random() < 0.9}
    fast = run(conf, filters, fast_hosts, sp, areqs or None)
    slow = run(conf, filters, slow_hosts, sp, areqs or None)
    assert fast == slow
    for h, t in zip(hosts, twins, strict=True):  # consumed alike
        assert expected_row(h) == expected_row(t)
        assert stored_row(table, h) == expected_row(h)


PCI_ALIAS = '{"name": "nic", "vendor_id": "8086", "product_id": "154d"}'


@pytest.mark.parametrize('seed', range(12))
def test_vectorised_path_matches_the_reference(conf, seed):
    """Default filters and all weighers over a host manager's table, instance by
    instance, against the slow reference on copies of the same hosts."""
    rng = random.Random(seed)
    src = testing.make_source(
        60, seed=seed, cells=2, az_every=3, disabled_every=9
    )
    hm = HostManager(conf, src)
    hm.refresh()
    sp = testing.spec(
        vcpus=rng.choice([1, 4]),
        memory_mb=rng.choice([2048, 16384]),
        root_gb=10,
        num=rng.choice([1, 4, 12]),
    )
    sp.min_count = 1
    body = testing.candidates_for(hm.all_host_states(), sp)
    order, areqs = [], {}
    for a in body['allocation_requests']:
        root = next(iter(a['allocations']))
        order.append(root)
        areqs[root] = a
    states = hm.host_states_for_candidates(body['provider_summaries'], order)
    assert states.table is hm.table and len(states.slots) == len(states)
    twins = copy.deepcopy(list(states))
    sched = selection.FilterScheduler(conf)
    want = reference.schedule(
        conf,
        sched.all_filters,
        sched.weighers,
        copy.deepcopy(sp),
        twins,
        areqs,
        body['provider_summaries'],
    )
    try:
        res = sched.schedule(
            copy.deepcopy(sp),
            states,
            areqs,
            return_alternates=False,
            provider_summaries=body['provider_summaries'],
        )
        got = [r[0].service_host for r in res]
    except exception.NoValidHost:
        got = []
    assert got == want and got


def test_candidates_list_carries_rows(conf):
    src = testing.make_source(10, seed=1, cells=2)
    hm = HostManager(conf, src)
    hm.refresh()
    hosts = hm.all_host_states()
    summaries = {h.uuid: {'resources': {}} for h in hosts}
    got = hm.host_states_for_candidates(summaries, [h.uuid for h in hosts])
    assert isinstance(got, host_table.Candidates)
    assert [hm.table.states[s] for s in got.slots] == list(got)
    assert np.array_equal(got.slots, hm.table.rows(got))


def test_candidates_drawn_from_the_requests_skip_no_host_without_one(conf):
    """Hosts looked up by the keys of the allocation requests remember that
    dict: the selection then trusts each has a request, but only for that
    dict unchanged; a request dropped since, or a host added, and each host
    is looked up again (the one without a request is left out)."""
    src = testing.make_source(12, seed=3, cells=2)
    hm = HostManager(conf, src)
    hm.refresh()
    sp = testing.spec(vcpus=1, memory_mb=1024, root_gb=10)
    body = testing.candidates_for(hm.all_host_states(), sp)
    areqs = {
        next(iter(a['allocations'])): a for a in body['allocation_requests']
    }
    summaries = body['provider_summaries']
    got = hm.host_states_for_candidates(summaries, areqs)
    assert [h.uuid for h in got] == list(areqs)
    assert got.drawn_from(areqs)
    assert not got.drawn_from(dict(areqs))
    listed = hm.host_states_for_candidates(summaries, list(areqs))
    assert not listed.drawn_from(areqs)
    sched = selection.FilterScheduler(conf)

    def pick(hosts, reqs):
        """Selected and alternates; the hosts are put back as they were."""
        touched = []

        def claim(h, areq, uuid):
            touched.append((h, h.snapshot()))
            return True

        res = sched.schedule(copy.deepcopy(sp), hosts, reqs, claim=claim)
        for h, snap in touched:
            h.restore(snap)
        return [s.service_host for s in res[0]]

    assert pick(got, areqs) == pick(listed, areqs)
    best = pick(got, areqs)[0]
    gone = next(h.uuid for h in got if h.host == best)
    del areqs[gone]
    assert not got.drawn_from(areqs)
    assert best not in pick(got, areqs)
    extra = host_table.Candidates(
        got, got.table, got.slots, got.uuids, requests=areqs
    )
    assert extra.drawn_from(areqs)
    extra.append(hm.host_state(gone))
    assert not extra.drawn_from(areqs)
