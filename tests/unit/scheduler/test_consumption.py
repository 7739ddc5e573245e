"""In-memory consumption per resource class and provider: custom resources on child
providers and PCPU are consumed, so the next instance of a multi-create and the
alternates only go where something is left."""

import copy

from nimbus.scheduler import consumption, reference, selection, testing

from .conftest import host


def gpu_cloud(names, pgpus=2):
    """Hosts with VCPU/RAM/disk on the root and ``pgpus`` child providers holding one
    CUSTOM_PGPU each; placement's answer for VCPU:1, MEMORY_MB:512, CUSTOM_PGPU:1."""
    hosts, areqs, summaries = [], {}, {}
    for name in names:
        h = host(name, vcpus=16, memory_mb=32768)
        hosts.append(h)
        summaries[h.uuid] = {
            'resources': {
                'VCPU': {'capacity': 16, 'used': 0},
                'MEMORY_MB': {'capacity': 32768, 'used': 0},
                'DISK_GB': {'capacity': 500, 'used': 0},
            },
            'root_provider_uuid': h.uuid,
            'parent_provider_uuid': None,
        }
        areqs[h.uuid] = []
        for g in range(pgpus):
            child = f'{h.uuid}-gpu{g}'
            summaries[child] = {
                'resources': {'CUSTOM_PGPU': {'capacity': 1, 'used': 0}},
                'root_provider_uuid': h.uuid,
                'parent_provider_uuid': h.uuid,
            }
            areqs[h.uuid].append(
                {
                    'allocations': {
                        h.uuid: {
                            'resources': {
                                'VCPU': 1,
                                'MEMORY_MB': 512,
                                'DISK_GB': 1,
                            }
                        },
                        child: {'resources': {'CUSTOM_PGPU': 1}},
                    },
                    'mappings': {'': [h.uuid, child]},
                }
            )
    return hosts, areqs, summaries


def capacity_claims(summaries):
    claims = testing.InMemoryClaims(
        {
            rp: {rc: r['capacity'] for rc, r in s['resources'].items()}
            for rp, s in summaries.items()
        }
    )
    return claims


def test_pgpu_multi_create_spreads_and_alternates_skip_drained_hosts(conf):
    # host a ranks first, then b, then c (more free RAM wins; nothing else counts).
    for name in ('cpu', 'disk', 'io_ops'):
        conf.set_override(f'{name}_weight_multiplier', 0.0, 'filter_scheduler')
    hosts, areqs, summaries = gpu_cloud(['a', 'b', 'c'])
    hosts[0].memory_mb_used, hosts[1].memory_mb_used = 0, 4096
    hosts[2].memory_mb_used = 8192
    for h in hosts:
        h._recompute()
    claims = capacity_claims(summaries)
    sp = testing.spec(
        vcpus=1,
        memory_mb=512,
        root_gb=1,
        num=3,
        extra_specs={'resources:CUSTOM_PGPU': '1'},
    )
    res = selection.FilterScheduler(conf).schedule(
        sp,
        hosts,
        areqs,
        claim=claims.claim,
        unclaim=claims.unclaim,
        provider_summaries=summaries,
    )
    chosen = [r[0].service_host for r in res]
    assert chosen == ['a', 'a', 'b']
    gpus = [
        next(
            rp for rp in r[0].allocation_request['allocations'] if 'gpu' in rp
        )
        for r in res
    ]
    assert gpus == ['uuid-a-gpu0', 'uuid-a-gpu1', 'uuid-b-gpu0']
    # every claim held: no child provider was asked for twice
    assert len(claims.claims) == 3
    assert all(
        used['CUSTOM_PGPU'] <= 1
        for rp, used in claims.used.items()
        if 'gpu' in rp
    )
    # host a's PGPUs all went to this request: it is nobody's alternate afterwards
    assert [s.service_host for s in res[2][1:]] == ['c']
    # and alternates name a free GPU of their host
    alt_gpu = [
        rp for rp in res[2][1].allocation_request['allocations'] if 'gpu' in rp
    ]
    assert alt_gpu == ['uuid-c-gpu0']
    assert [s.service_host for s in res[0][1:]] == ['b', 'c']
    alt_b = [
        rp for rp in res[1][1].allocation_request['allocations'] if 'gpu' in rp
    ]
    assert alt_b == ['uuid-b-gpu0']
    # host figures moved by what the allocation requests took in each tree
    assert hosts[0].vcpus_used == 2 and hosts[1].vcpus_used == 1


def test_pgpu_multi_create_fails_beyond_capacity(conf):
    hosts, areqs, summaries = gpu_cloud(['a', 'b'])
    sp = testing.spec(
        vcpus=1,
        memory_mb=512,
        root_gb=1,
        num=5,
        min_count=1,
        extra_specs={'resources:CUSTOM_PGPU': '1'},
    )
    res = selection.FilterScheduler(conf).schedule(
        sp, hosts, areqs, provider_summaries=summaries
    )
    assert len(res) == 4  # two GPUs on each of two hosts
    assert sorted(r[0].service_host for r in res) == ['a', 'a', 'b', 'b']


def test_reference_agrees_on_child_providers(conf):
    hosts, areqs, summaries = gpu_cloud(['a', 'b', 'c'], pgpus=3)
    sp = testing.spec(
        vcpus=1,
        memory_mb=512,
        root_gb=1,
        num=7,
        extra_specs={'resources:CUSTOM_PGPU': '1'},
    )
    ref_hosts = copy.deepcopy(hosts)
    sched = selection.FilterScheduler(conf)
    fast = [
        r[0].service_host
        for r in sched.schedule(
            copy.deepcopy(sp),
            hosts,
            areqs,
            return_alternates=False,
            provider_summaries=summaries,
        )
    ]
    ref_areqs = {h.uuid: areqs[h.uuid] for h in ref_hosts}
    want = reference.schedule(
        conf,
        sched.all_filters,
        sched.weighers,
        copy.deepcopy(sp),
        ref_hosts,
        ref_areqs,
        summaries,
    )
    assert fast == want and len(fast) == 7


def test_pcpu_is_consumed_as_pcpu(conf):
    """A dedicated-CPU request takes PCPU, not VCPU: the host's free vCPUs do not move
    and the host is full when its PCPUs are."""
    h = host('a', vcpus=16)
    summaries = {
        h.uuid: {
            'resources': {
                'VCPU': {'capacity': 16, 'used': 0},
                'PCPU': {'capacity': 4, 'used': 0},
                'MEMORY_MB': {'capacity': 32768, 'used': 0},
            },
            'root_provider_uuid': h.uuid,
        }
    }
    areq = {
        'allocations': {h.uuid: {'resources': {'PCPU': 2, 'MEMORY_MB': 512}}}
    }
    sp = testing.spec(
        vcpus=2,
        memory_mb=512,
        root_gb=0,
        num=3,
        min_count=1,
        extra_specs={'hw:cpu_policy': 'dedicated'},
    )
    res = selection.FilterScheduler(conf).schedule(
        sp, [h], {h.uuid: areq}, provider_summaries=summaries
    )
    assert len(res) == 2  # 4 PCPUs, 2 each
    assert h.vcpus_used == 0 and h.free_vcpus == 16


def test_root_resources_follow_the_placement_query(conf):
    sp = testing.spec(
        vcpus=4,
        memory_mb=1024,
        root_gb=10,
        extra_specs={'hw:cpu_policy': 'dedicated', 'resources:CUSTOM_X': '2'},
    )
    assert consumption.root_resources(sp) == {
        'PCPU': 4,
        'MEMORY_MB': 1024,
        'DISK_GB': 10,
        'CUSTOM_X': 2,
    }
    # without placement, a PCPU request leaves the vCPU figures alone
    h = host('a', vcpus=4)
    consumption.consume(h, sp, conf, 'i-1')
    assert (
        h.vcpus_used == 0
        and h.memory_mb_used == 1024
        and h.local_gb_used == 10
    )


def test_sharing_provider_is_shared_between_hosts(conf):
    """DISK_GB from a sharing provider: what one host's instance took is gone for the
    next host too, and the host's own disk figures do not move."""
    a, b = host('a'), host('b')
    share = 'shared-disk'
    summaries = {
        share: {
            'resources': {'DISK_GB': {'capacity': 30, 'used': 0}},
            'root_provider_uuid': share,
        }
    }
    for h in (a, b):
        summaries[h.uuid] = {
            'resources': {'VCPU': {'capacity': 16, 'used': 0}},
            'root_provider_uuid': h.uuid,
        }
    areqs = {
        h.uuid: {
            'allocations': {
                h.uuid: {'resources': {'VCPU': 1}},
                share: {'resources': {'DISK_GB': 20}},
            }
        }
        for h in (a, b)
    }
    sp = testing.spec(vcpus=1, memory_mb=512, root_gb=20, num=2, min_count=1)
    res = selection.FilterScheduler(conf).schedule(
        sp, [a, b], areqs, provider_summaries=summaries
    )
    assert (
        len(res) == 1 and len(res[0]) == 1
    )  # 30 GB shared: one fits, no alternate
    assert a.local_gb_used + b.local_gb_used == 0
