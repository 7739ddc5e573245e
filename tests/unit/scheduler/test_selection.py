import copy
import random

import pytest

from nimbus.scheduler import exception, reference, selection, testing
from nimbus.scheduler.filters import all_filters
from nimbus.scheduler.host_manager import HostManager

from .conftest import host


def states(n, conf, seed=0, **kw):
    hm = HostManager(conf, testing.make_source(n, seed=seed, **kw))
    hm.refresh()
    return hm.all_host_states()


def areqs_for(hosts, spec):
    body = testing.candidates_for(hosts, spec)
    return {
        next(iter(a['allocations'])): a for a in body['allocation_requests']
    }


def test_picks_best_and_returns_alternates_same_cell(conf):
    hs = [
        host('a', vcpus=4, cell_uuid='c1'),
        host('b', vcpus=16, cell_uuid='c2'),
        host('c', vcpus=8, cell_uuid='c2'),
        host('d', vcpus=2, cell_uuid='c2'),
        host('e', vcpus=12, cell_uuid='c1'),
    ]
    sched = selection.FilterScheduler(conf)
    sp = testing.spec(vcpus=1, memory_mb=128, root_gb=1)
    res = sched.schedule(sp, hs, areqs_for(hs, sp))
    assert len(res) == 1
    assert [s.service_host for s in res[0]] == ['b', 'c', 'd']
    assert {s.cell_uuid for s in res[0]} == {'c2'}
    assert res[0][0].allocation_request['allocations'] == {
        'uuid-b': {'resources': {'VCPU': 1, 'MEMORY_MB': 128, 'DISK_GB': 1}}
    }
    assert res[0][0].allocation_request_version == '1.39'
    no_alts = sched.schedule(
        sp, hs, areqs_for(hs, sp), return_alternates=False
    )
    assert len(no_alts[0]) == 1


def test_lost_race_tries_next_host(conf):
    hs = [host('a', vcpus=4), host('b', vcpus=16)]
    claims = testing.InMemoryClaims(fail_hosts={'b'})
    sp = testing.spec(vcpus=1)
    res = selection.FilterScheduler(conf).schedule(
        sp, hs, areqs_for(hs, sp), claim=claims.claim
    )
    assert res[0][0].service_host == 'a'


def test_host_subset_size_randomises(conf):
    conf.set_override('host_subset_size', 3, 'filter_scheduler')
    picked = set()
    for seed in range(30):
        hs = [host(f'h{i}', vcpus=4 + i) for i in range(6)]
        sched = selection.FilterScheduler(conf, rng=random.Random(seed))
        picked.add(
            sched.schedule(testing.spec(vcpus=1), hs)[0][0].service_host
        )
    assert picked == {'h5', 'h4', 'h3'}


def test_subset_below_one_means_one(conf):
    conf.set_override('host_subset_size', 0, 'filter_scheduler')
    hs = [host(f'h{i}', vcpus=4 + i) for i in range(4)]
    assert (
        selection.FilterScheduler(conf)
        .schedule(testing.spec(vcpus=1), hs)[0][0]
        .service_host
        == 'h3'
    )


def test_shuffle_best_same_weighed(conf):
    conf.set_override(
        'shuffle_best_same_weighed_hosts', True, 'filter_scheduler'
    )
    picked = set()
    for seed in range(20):
        hs = [host(f'h{i}') for i in range(4)]
        sched = selection.FilterScheduler(conf, rng=random.Random(seed))
        picked.add(
            sched.schedule(testing.spec(vcpus=1), hs)[0][0].service_host
        )
    assert len(picked) > 1


def test_multi_create_consumes_in_memory(conf):
    hs = [
        host('big', vcpus=8, memory_mb=8192),
        host('small', vcpus=4, memory_mb=4096),
    ]
    sp = testing.spec(vcpus=2, memory_mb=2048, root_gb=1, num=6)
    res = selection.FilterScheduler(conf).schedule(sp, hs, areqs_for(hs, sp))
    chosen = [r[0].service_host for r in res]
    assert sorted(chosen) == ['big'] * 4 + ['small'] * 2
    assert hs[0].free_vcpus == 0 and hs[1].free_vcpus == 0
    assert hs[0].num_instances == 4


def test_multi_create_min_count_fails_and_unclaims(conf):
    hs = [host('a', vcpus=4, memory_mb=4096)]
    sp = testing.spec(vcpus=2, memory_mb=2048, root_gb=1, num=3, min_count=3)
    claims = testing.InMemoryClaims()
    with pytest.raises(exception.NoValidHost) as err:
        selection.FilterScheduler(conf).schedule(
            sp,
            hs,
            areqs_for(hs, sp),
            claim=claims.claim,
            unclaim=claims.unclaim,
        )
    assert claims.claims == {}
    assert (
        hs[0].free_vcpus == 4 and hs[0].num_instances == 0
    )  # in-memory state restored
    assert 'placed 2 of 3 instances' in err.value.reason
    # min_count 2 succeeds with 2 instances
    sp = testing.spec(vcpus=2, memory_mb=2048, root_gb=1, num=3, min_count=2)
    res = selection.FilterScheduler(conf).schedule(
        sp, hs, areqs_for(hs, sp), claim=claims.claim, unclaim=claims.unclaim
    )
    assert len(res) == 2 and len(claims.claims) == 2


def test_anti_affinity_multi_create(conf):
    hs = [host(f'h{i}') for i in range(3)]
    grp = {
        'uuid': 'g',
        'name': 'g',
        'policy': 'anti-affinity',
        'rules': {},
        'members': [],
        'hosts': [],
    }
    sp = testing.spec(vcpus=1, num=3, instance_group=grp)
    res = selection.FilterScheduler(conf).schedule(sp, hs)
    assert sorted(r[0].service_host for r in res) == ['h0', 'h1', 'h2']
    sp = testing.spec(
        vcpus=1, num=4, instance_group=dict(grp, members=[], hosts=[])
    )
    with pytest.raises(exception.NoValidHost) as err:
        selection.FilterScheduler(conf).schedule(
            sp, [host(f'h{i}') for i in range(3)]
        )
    assert sp.instance_group.members == [] and sp.instance_group.hosts == []
    assert 'ServerGroupAntiAffinityFilter' in err.value.reason


def test_affinity_multi_create_sticks_together(conf):
    hs = [host(f'h{i}', vcpus=4 + i) for i in range(3)]
    grp = {
        'uuid': 'g',
        'name': 'g',
        'policy': 'affinity',
        'members': [],
        'hosts': [],
    }
    sp = testing.spec(vcpus=1, num=3, instance_group=grp)
    res = selection.FilterScheduler(conf).schedule(sp, hs)
    assert {r[0].service_host for r in res} == {'h2'}
    assert all(len(r) == 1 for r in res)  # no alternates satisfy affinity


def test_explain_names_counts_and_reasons(conf):
    conf.set_override(
        'enabled_filters',
        ['ComputeFilter', 'NUMATopologyFilter'],
        'filter_scheduler',
    )
    topo = {
        'cells': [
            {'id': 0, 'cpuset': [0], 'pcpuset': [1, 2, 3], 'memory': 4096},
            {'id': 1, 'cpuset': [4], 'pcpuset': [5, 6, 7], 'memory': 4096},
        ]
    }
    hs = [host(f'host-{i}', numa_topology=topo) for i in range(8)]
    hs[0].service_disabled = True
    sp = testing.spec(
        vcpus=8,
        memory_mb=2048,
        extra_specs={'hw:numa_nodes': '2', 'hw:cpu_policy': 'dedicated'},
    )
    with pytest.raises(exception.NoValidHost) as err:
        selection.FilterScheduler(conf).schedule(sp, hs)
    msg = err.value.reason
    assert 'placement returned 8 hosts' in msg
    assert (
        'ComputeFilter: 8 in, 7 out' in msg
        and 'NUMATopologyFilter: 7 in, 0 out' in msg
    )
    assert (
        'host-1: NUMATopologyFilter: needs 2 cells of 4 pinned CPUs, host cells have 3, 3 free'
        in msg
    )
    detail = err.value.explanation
    assert detail['filters'][1] == {
        'name': 'NUMATopologyFilter',
        'in': 7,
        'out': 0,
    }
    assert detail['rejected'][0]['reason'].startswith(
        'compute service is disabled'
    )


def test_dry_run_claims_nothing(conf):
    hs = [
        host('a', vcpus=4),
        host('b', vcpus=16),
        host('c', service_disabled=True),
    ]
    sp = testing.spec(vcpus=1)
    out = selection.FilterScheduler(conf).dry_run(sp, hs)
    assert [r['host'] for r in out['ranked']] == ['b', 'a']
    cpu = out['ranked'][0]['weighers']['CPUWeigher']
    assert (
        cpu['raw'] == 16
        and cpu['normalized'] == 1.0
        and cpu['weighted'] == 1.0
    )
    assert out['rejected'] == [
        {
            'host': 'c',
            'nodename': 'c',
            'filter': 'ComputeFilter',
            'reason': 'compute service is disabled (no reason)',
        }
    ]
    assert hs[1].num_instances == 0
    import json

    json.dumps(out)


PCI_ALIAS = '{"name": "nic", "vendor_id": "8086", "product_id": "154d"}'


def _reference_case(conf, seed):
    """A random request over 40 synthetic hosts with aggregates, instances and PCI
    devices, exercising every built-in filter."""
    rng = random.Random(seed)
    conf.set_override(
        'enabled_filters',
        [cls.__name__ for cls in all_filters()],
        'filter_scheduler',
    )
    conf.set_override(
        'available_filters',
        ['nimbus.scheduler.filters.all_filters'],
        'filter_scheduler',
    )
    conf.set_override('alias', [PCI_ALIAS], 'pci')
    conf.set_override(
        'num_instances_weight_multiplier', -0.5, 'filter_scheduler'
    )
    # stacking (negative RAM) makes per-instance limits bite within the request
    conf.set_override(
        'ram_weight_multiplier',
        rng.choice([1.0, -1.0, -3.0]),
        'filter_scheduler',
    )
    conf.set_override('weight_setting', ['cpu.percent=-1.0'], 'metrics')
    extra = rng.choice(
        [
            {},
            {'capabilities:cpu_info:features': '<in> aes'},
            {'hw:cpu_policy': 'dedicated'},
            {'pci_passthrough:alias': 'nic:1'},
            {'aggregate_instance_extra_specs:ssd': 'true'},
            {'free_ram_mb': '>= 40000'},
            {'capabilities:num_instances': '<= 2'},
        ]
    )
    hints = rng.choice(
        [
            {},
            {'query': '["<", "$num_instances", 2]'},
            {
                'query': '["and", [">=", "$free_ram_mb", 60000], ["<", "$num_io_ops", 5]]'
            },
            {'same_host': ['inst-a', 'inst-b', 'inst-c']},
            {'different_host': ['inst-a', 'inst-b']},
            {'build_near_host_ip': '10.0.0.0', 'cidr': '/27'},
        ]
    )
    grp = rng.choice(
        [
            None,
            {
                'uuid': 'g',
                'policy': 'anti-affinity',
                'members': [],
                'hosts': [],
                'rules': {'max_server_per_host': 2},
            },
            {
                'uuid': 'g',
                'policy': 'soft-affinity',
                'members': [],
                'hosts': [],
            },
            {'uuid': 'g', 'policy': 'affinity', 'members': [], 'hosts': []},
        ]
    )
    num = rng.choice([1, 5, 20])
    sp = testing.spec(
        vcpus=rng.choice([1, 2, 4]),
        memory_mb=2048,
        root_gb=10,
        num=num,
        extra_specs=extra,
        instance_group=grp,
        min_count=1,
        scheduler_hints=hints,
        image_props={'os_distro': 'ubuntu'},
        project_id=rng.choice(['p1', 'p2']),
    )
    src = testing.make_source(
        40, seed=seed, cells=2, az_every=4, disabled_every=7
    )
    for i in range(0, 40, 3):  # every third host gets a PCI device pool
        src._nodes[i]['pci_stats'] = [
            {
                'vendor_id': '8086',
                'product_id': '154d',
                'dev_type': 'type-PF',
                'count': 1 + i % 3,
                'numa_node': 0,
            }
        ]
    src._instances = {
        'host-3': [{'uuid': 'inst-a'}],
        'host-8': [{'uuid': 'inst-b'}],
        'host-11': [{'uuid': 'inst-c'}, {'uuid': 'inst-d'}],
    }
    aggs = src._aggregates
    aggs.append(
        {
            'uuid': 'w',
            'name': 'w',
            'hosts': ['host-1', 'host-5', 'host-9'],
            'metadata': {'ram_weight_multiplier': '3.0'},
        }
    )
    aggs.append(
        {
            'uuid': 'ssd',
            'name': 'ssd',
            'hosts': [f'host-{i}' for i in range(0, 40, 2)],
            'metadata': {
                'ssd': 'true',
                'cpu_allocation_ratio': '0.5',
                'max_instances_per_host': '3',
            },
        }
    )
    aggs.append(
        {
            'uuid': 'slow',
            'name': 'slow',
            'hosts': [f'host-{i}' for i in range(1, 40, 5)],
            'metadata': {
                'max_io_ops_per_host': '4',
                'ram_allocation_ratio': '0.6',
                'disk_allocation_ratio': '0.4',
            },
        }
    )
    aggs.append(
        {
            'uuid': 'types',
            'name': 'types',
            'hosts': ['host-2', 'host-6', 'host-14'],
            'metadata': {'instance_type': 'm1.other'},
        }
    )
    aggs.append(
        {
            'uuid': 'tenant',
            'name': 'tenant',
            'hosts': ['host-10', 'host-12'],
            'metadata': {'filter_tenant_id': 'p2'},
        }
    )
    aggs.append(
        {
            'uuid': 'win',
            'name': 'win',
            'hosts': ['host-16', 'host-18'],
            'metadata': {'os_distro': 'windows'},
        }
    )
    return sp, src


@pytest.mark.parametrize('seed', range(24))
def test_fast_path_matches_reference(conf, seed):
    """The fast path and the slow reference pick the same hosts, instance by instance,
    with every built-in filter enabled (JsonFilter, PCI, the Aggregate* filters,
    SameHost/DifferentHost included) and multi-creates of up to 20 instances."""
    sp, src = _reference_case(conf, seed)
    fast_hm, ref_hm = (
        HostManager(conf, src),
        HostManager(conf, copy.deepcopy(src)),
    )
    fast_hm.refresh()
    ref_hm.refresh()
    fast_states, ref_states = (
        fast_hm.all_host_states(),
        ref_hm.all_host_states(),
    )
    sched = selection.FilterScheduler(conf)
    assert {f.name for f in sched.all_filters} >= {
        'JsonFilter',
        'PciPassthroughFilter',
        'AggregateCoreFilter',
        'SameHostFilter',
        'DifferentHostFilter',
        'AggregateInstanceExtraSpecsFilter',
    }
    sp_ref = copy.deepcopy(sp)
    body = testing.candidates_for(fast_states, sp)
    areqs = {
        next(iter(a['allocations'])): a for a in body['allocation_requests']
    }
    try:
        res = sched.schedule(
            sp,
            fast_states,
            areqs,
            return_alternates=False,
            provider_summaries=body['provider_summaries'],
        )
        fast = [r[0].service_host for r in res]
    except exception.NoValidHost:
        fast = []
    want = reference.schedule(
        conf,
        sched.all_filters,
        sched.weighers,
        sp_ref,
        ref_states,
        areqs_for(ref_states, sp_ref),
        body['provider_summaries'],
    )
    assert fast == want


def test_reference_cases_are_not_trivial(conf):
    """The generated cases place something in most seeds, and place fewer than asked in
    some (per-instance limits within a multi-create do bite)."""
    placed, short = 0, 0
    for seed in range(24):
        sp, src = _reference_case(conf, seed)
        hm = HostManager(conf, src)
        hm.refresh()
        states = hm.all_host_states()
        sched = selection.FilterScheduler(conf)
        want = reference.schedule(
            conf,
            sched.all_filters,
            sched.weighers,
            sp,
            states,
            areqs_for(states, sp),
        )
        placed += bool(want)
        short += bool(want) and len(want) < sp.num_instances
    assert placed >= 16 and short >= 2


def test_selection_limits_numa_only(conf):
    """Selections carry ``numa_topology`` limits (the host's allocation ratios) for a
    NUMA request, and no vcpu/memory/disk limits (placement bounds those)."""
    numa_topo = {
        'cells': [
            {
                'id': i,
                'cpuset': list(range(i * 8, i * 8 + 8)),
                'pcpuset': [],
                'memory_mb': 16384,
            }
            for i in range(2)
        ]
    }
    hs = [
        host(
            'a',
            numa_topology=numa_topo,
            cpu_allocation_ratio=4.0,
            ram_allocation_ratio=1.5,
        ),
        host('b', numa_topology=numa_topo, cpu_allocation_ratio=2.0),
    ]
    sched = selection.FilterScheduler(conf)
    plain = sched.schedule(
        testing.spec(vcpus=2), [copy.deepcopy(h) for h in hs]
    )
    assert all(s.limits == {} for s in plain[0])
    numa = sched.schedule(
        testing.spec(vcpus=4, extra_specs={'hw:numa_nodes': '2'}), hs
    )
    by_host = {s.service_host: s.limits for s in numa[0]}
    assert by_host['a'] == {
        'numa_topology': {
            'cpu_allocation_ratio': 4.0,
            'ram_allocation_ratio': 1.5,
        }
    }
    assert by_host['b']['numa_topology']['cpu_allocation_ratio'] == 2.0


@pytest.mark.parametrize('max_attempts,alternates', [(1, 0), (2, 1), (5, 4)])
def test_max_attempts_sets_alternates(conf, max_attempts, alternates):
    conf.set_override('max_attempts', max_attempts, 'scheduler')
    hs = [host(f'h{i}', vcpus=4 + i) for i in range(8)]
    sp = testing.spec(vcpus=1, memory_mb=128, root_gb=1, num=2)
    res = selection.FilterScheduler(conf).schedule(sp, hs, areqs_for(hs, sp))
    for r in res:
        assert len(r) == 1 + alternates
        names = [s.service_host for s in r]
        assert len(set(names)) == len(
            names
        )  # the selected host is not its own
        assert all(s.allocation_request for s in r)
    # best-ranked first: h7 is picked, h6.. follow
    assert [s.service_host for s in res[0]] == [
        f'h{7 - k}' for k in range(1 + alternates)
    ]


def test_max_attempts_with_few_hosts_in_the_cell(conf):
    conf.set_override('max_attempts', 5, 'scheduler')
    hs = [
        host('a', cell_uuid='c1'),
        host('b', cell_uuid='c1'),
        host('c', cell_uuid='c2'),
        host('d', cell_uuid='c2', vcpus=32),
    ]
    sp = testing.spec(vcpus=1, memory_mb=128, root_gb=1)
    res = selection.FilterScheduler(conf).schedule(sp, hs, areqs_for(hs, sp))
    assert [s.service_host for s in res[0]] == [
        'd',
        'c',
    ]  # only c2's other host


def test_alternates_leave_out_hosts_filled_earlier(conf):
    """Hosts with room for exactly one instance: once one takes an instance of the
    request it is nobody's alternate."""
    conf.set_override('max_attempts', 10, 'scheduler')
    hs = [host(f'h{i}', vcpus=1, memory_mb=1024 * (i + 1)) for i in range(5)]
    sp = testing.spec(vcpus=1, memory_mb=512, root_gb=1, num=4)
    body = testing.candidates_for(hs, sp)
    areqs = {
        next(iter(a['allocations'])): a for a in body['allocation_requests']
    }
    res = selection.FilterScheduler(conf).schedule(
        sp, hs, areqs, provider_summaries=body['provider_summaries']
    )
    chosen = [r[0].service_host for r in res]
    assert chosen == ['h4', 'h3', 'h2', 'h1']  # most free RAM first, one each
    for k, r in enumerate(res):
        alternates = [s.service_host for s in r[1:]]
        assert not set(alternates) & set(chosen[: k + 1])
        assert alternates == [
            h
            for h in ('h4', 'h3', 'h2', 'h1', 'h0')
            if h not in chosen[: k + 1]
        ]


def test_dry_run_simulates_n_instances_and_restores(conf):
    hs = [
        host('a', vcpus=4, memory_mb=4096),
        host('b', vcpus=2, memory_mb=8192),
    ]
    sp = testing.spec(vcpus=2, memory_mb=1024, root_gb=1, num=4)
    before = [
        (h.vcpus_used, h.memory_mb_used, h.num_instances, dict(h.instances))
        for h in hs
    ]
    out = selection.FilterScheduler(conf).dry_run(sp, hs)
    assert out['instances'] == 4 and out['placed'] == 3
    assert sorted(p['host'] for p in out['placements']) == ['a', 'a', 'b']
    assert out['placements_message'].startswith(
        '3 of 4 instances would be placed'
    )
    assert [
        (h.vcpus_used, h.memory_mb_used, h.num_instances, dict(h.instances))
        for h in hs
    ] == before
    # one instance: ranked and placements agree, no message
    one = selection.FilterScheduler(conf).dry_run(testing.spec(vcpus=1), hs)
    assert one['placed'] == 1 and 'placements_message' not in one
    assert one['placements'][0]['host'] == one['ranked'][0]['host']
    import json

    json.dumps(out)


def test_requested_destination_narrows_to_the_host_and_still_filters(conf):
    """A move to a chosen host (2.68) or a create with a host (2.74): only
    that host is a candidate, and the filters still judge it."""
    hs = [host('a', vcpus=4), host('b', vcpus=16), host('small', vcpus=1)]
    sched = selection.FilterScheduler(conf)
    sp = testing.spec(vcpus=1, memory_mb=128, root_gb=1)
    sp.extra['requested_destination'] = {'host': 'a', 'node': None}
    res = sched.schedule(sp, hs, areqs_for(hs, sp))
    assert [s.service_host for s in res[0]] == ['a']
    big = testing.spec(vcpus=2, memory_mb=128, root_gb=1)
    big.extra['requested_destination'] = {'host': 'small'}
    with pytest.raises(exception.NoValidHost):
        sched.schedule(big, hs, areqs_for(hs, big))
    # Without a host or node it is no restriction.
    sp.extra['requested_destination'] = {'host': None}
    assert len(sched.schedule(sp, hs, areqs_for(hs, sp))[0]) == 3
