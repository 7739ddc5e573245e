"""Semantics of the candidate engine and the response shapes."""

import random

import pytest

from nimbus.placement.candidates import Inventory, get_allocation_candidates

from tests.unit.placement.test_candidates_support import (
    AGG1,
    AGG2,
    AGG3,
    TreeBuilder,
    opts,
    u,
)

SHARE = 'MISC_SHARES_VIA_AGGREGATE'


def call(snap, params, mv=(1, 39), options=None):
    params = {k: v if isinstance(v, list) else [v] for k, v in params.items()}
    return get_allocation_candidates(snap, params, mv, options or opts())


def allocs(body):
    """Allocation requests as sorted tuples of (rp, rc, amount)."""
    out = []
    for ar in body['allocation_requests']:
        out.append(
            tuple(
                sorted(
                    (rp, rc, amt)
                    for rp, v in ar['allocations'].items()
                    for rc, amt in v['resources'].items()
                )
            )
        )
    return out


@pytest.fixture
def compute():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 8, 'MEMORY_MB': 2048}, traits={'T1'})
    b.add(2, inv={'VCPU': 4, 'MEMORY_MB': 1024})
    return b


# ------------------------------------------------------------- shapes ---


def test_shape_1_10_list_form(compute):
    body = call(compute.snapshot(), {'resources': 'VCPU:1'}, (1, 10))
    assert body['allocation_requests'][0] == {
        'allocations': [
            {'resource_provider': {'uuid': u(1)}, 'resources': {'VCPU': 1}}
        ]
    }
    # only requested classes before 1.27, no traits before 1.17
    assert body['provider_summaries'][u(1)] == {
        'resources': {'VCPU': {'capacity': 8, 'used': 0}}
    }


def test_shape_1_12_dict_form_and_1_17_traits(compute):
    body = call(compute.snapshot(), {'resources': 'VCPU:1'}, (1, 12))
    assert body['allocation_requests'][0] == {
        'allocations': {u(1): {'resources': {'VCPU': 1}}}
    }
    body = call(compute.snapshot(), {'resources': 'VCPU:1'}, (1, 17))
    assert body['provider_summaries'][u(1)]['traits'] == ['T1']


def test_shape_1_27_all_resources_1_29_tree_1_34_mappings(compute):
    snap = compute.snapshot()
    body = call(snap, {'resources': 'VCPU:1'}, (1, 26))
    assert set(body['provider_summaries'][u(1)]['resources']) == {'VCPU'}
    body = call(snap, {'resources': 'VCPU:1'}, (1, 27))
    assert set(body['provider_summaries'][u(1)]['resources']) == {
        'VCPU',
        'MEMORY_MB',
    }
    assert 'root_provider_uuid' not in body['provider_summaries'][u(1)]
    body = call(snap, {'resources': 'VCPU:1'}, (1, 29))
    assert body['provider_summaries'][u(1)]['parent_provider_uuid'] is None
    assert body['provider_summaries'][u(1)]['root_provider_uuid'] == u(1)
    assert 'mappings' not in body['allocation_requests'][0]
    body = call(snap, {'resources': 'VCPU:1'}, (1, 34))
    assert body['allocation_requests'][0]['mappings'] == {'': [u(1)]}


def test_empty_result(compute):
    body = call(compute.snapshot(), {'resources': 'VCPU:100'})
    assert body == {'allocation_requests': [], 'provider_summaries': {}}


def test_response_is_fresh(compute):
    snap = compute.snapshot()
    body = call(snap, {'resources': 'VCPU:1'})
    body['provider_summaries'][u(1)]['resources']['VCPU']['used'] = 99
    body['provider_summaries'][u(1)]['traits'].append('X')
    again = call(snap, {'resources': 'VCPU:1'})
    assert again['provider_summaries'][u(1)]['resources']['VCPU']['used'] == 0
    assert again['provider_summaries'][u(1)]['traits'] == ['T1']


# ----------------------------------------------------------- capacity ---


@pytest.mark.parametrize(
    'inv,used,amount,ok',
    [
        (Inventory(10, reserved=2), 0, 8, True),
        (Inventory(10, reserved=2), 1, 8, False),
        (Inventory(10, allocation_ratio=1.5), 10, 5, True),
        (Inventory(10, allocation_ratio=1.5), 11, 5, False),
        (Inventory(10, min_unit=2), 0, 1, False),
        (Inventory(10, max_unit=3), 0, 4, False),
        (Inventory(10, step_size=2), 0, 3, False),
        (Inventory(10, step_size=2), 0, 4, True),
    ],
)
def test_capacity_rules(inv, used, amount, ok):
    b = TreeBuilder()
    b.add(1, inv={'VCPU': inv}, used={'VCPU': used})
    body = call(b.snapshot(), {'resources': 'VCPU:%d' % amount})
    assert bool(body['allocation_requests']) is ok
    if ok:
        summary = body['provider_summaries'][u(1)]['resources']['VCPU']
        assert summary == {'capacity': inv.capacity, 'used': used}


def test_summed_amounts_of_two_groups_respect_capacity():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': Inventory(4, max_unit=3)})
    snap = b.snapshot()
    body = call(snap, {'resources': 'VCPU:2', 'resources1': 'VCPU:1'})
    assert allocs(body) == [((u(1), 'VCPU', 3),)]
    assert body['allocation_requests'][0]['mappings'] == {
        '': [u(1)],
        '1': [u(1)],
    }
    # 2 + 2 exceeds max_unit 3 although capacity 4 would allow it
    assert (
        call(snap, {'resources': 'VCPU:2', 'resources1': 'VCPU:2'})[
            'allocation_requests'
        ]
        == []
    )


# -------------------------------------------------------------- trees ---


@pytest.fixture
def nic_tree():
    """cn1 -> pf1 (VF:2), pf2 (VF:1, GENEVE-like trait T2)."""
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4})
    b.add(2, parent=1, inv={'SRIOV_NET_VF': 2})
    b.add(3, parent=1, inv={'SRIOV_NET_VF': 1}, traits={'T2'})
    return b


def test_unnumbered_spreads_over_tree(nic_tree):
    body = call(nic_tree.snapshot(), {'resources': 'VCPU:1,SRIOV_NET_VF:1'})
    assert allocs(body) == [
        ((u(1), 'VCPU', 1), (u(2), 'SRIOV_NET_VF', 1)),
        ((u(1), 'VCPU', 1), (u(3), 'SRIOV_NET_VF', 1)),
    ]
    # whole tree in summaries from 1.29
    assert set(body['provider_summaries']) == {u(1), u(2), u(3)}


def test_unnumbered_traits_come_from_providers_in_the_request(nic_tree):
    snap = nic_tree.snapshot()
    body = call(snap, {'resources': 'SRIOV_NET_VF:2', 'required': 'T2'})
    assert body['allocation_requests'] == []
    body = call(snap, {'resources': 'SRIOV_NET_VF:1', 'required': 'T2'})
    assert allocs(body) == [((u(3), 'SRIOV_NET_VF', 1),)]
    body = call(snap, {'resources': 'SRIOV_NET_VF:1', 'required': '!T2'})
    assert allocs(body) == [((u(2), 'SRIOV_NET_VF', 1),)]


def test_old_microversion_hides_multi_provider_candidates(nic_tree):
    snap = nic_tree.snapshot()
    body = call(snap, {'resources': 'VCPU:1,SRIOV_NET_VF:1'}, (1, 28))
    assert body == {'allocation_requests': [], 'provider_summaries': {}}
    body = call(snap, {'resources': 'SRIOV_NET_VF:1'}, (1, 28))
    assert len(body['allocation_requests']) == 2
    assert set(body['provider_summaries']) == {u(2), u(3)}


def test_granular_isolate_and_none():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4})
    b.add(2, parent=1, inv={'SRIOV_NET_VF': 4})
    b.add(3, parent=1, inv={'SRIOV_NET_VF': 4})
    snap = b.snapshot()
    params = {'resources1': 'SRIOV_NET_VF:1', 'resources2': 'SRIOV_NET_VF:1'}
    iso = call(snap, dict(params, group_policy='isolate'))
    assert len(iso['allocation_requests']) == 2
    for ar in iso['allocation_requests']:
        assert ar['mappings']['1'] != ar['mappings']['2']
    none = call(snap, dict(params, group_policy='none'))
    assert len(none['allocation_requests']) == 4
    same = [
        ar
        for ar in none['allocation_requests']
        if ar['mappings']['1'] == ar['mappings']['2']
    ]
    for ar in same:
        (rp,) = ar['allocations']
        assert ar['allocations'][rp]['resources'] == {'SRIOV_NET_VF': 2}


def test_no_visible_duplicates_before_mappings():
    """Groups swapping providers differ only in mappings (1.34+)."""
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4})
    b.add(2, parent=1, inv={'SRIOV_NET_VF': 4})
    b.add(3, parent=1, inv={'SRIOV_NET_VF': 4})
    snap = b.snapshot()
    params = {
        'resources1': 'SRIOV_NET_VF:1',
        'resources2': 'SRIOV_NET_VF:1',
        'group_policy': 'isolate',
    }
    assert len(call(snap, params, (1, 34))['allocation_requests']) == 2
    assert len(call(snap, params, (1, 33))['allocation_requests']) == 1
    params['limit'] = '1'
    assert len(call(snap, params, (1, 33))['allocation_requests']) == 1


def test_same_subtree_with_resourceless_group():
    """Two NUMA nodes; the VF must come from the NUMA node's own NIC."""
    b = TreeBuilder()
    b.add(1)
    b.add(2, parent=1, inv={'VCPU': 4}, traits={'HW_NUMA_ROOT'})
    b.add(3, parent=1, inv={'VCPU': 4}, traits={'HW_NUMA_ROOT'})
    b.add(4, parent=2, inv={'SRIOV_NET_VF': 2})
    snap = b.snapshot()
    params = {
        'resources_CPU': 'VCPU:1',
        'resources_NET': 'SRIOV_NET_VF:1',
        'required_NUMA': 'HW_NUMA_ROOT',
        'group_policy': 'none',
        'same_subtree': '_NUMA,_CPU,_NET',
    }
    body = call(snap, params)
    assert [ar['mappings'] for ar in body['allocation_requests']] == [
        {'_CPU': [u(2)], '_NET': [u(4)], '_NUMA': [u(2)]}
    ]
    # without the constraint the second NUMA node's CPUs are usable too
    del params['same_subtree'], params['required_NUMA']
    assert len(call(snap, params)['allocation_requests']) == 2


def test_root_required_applies_to_root_only(nic_tree):
    snap = nic_tree.snapshot()
    assert (
        call(snap, {'resources': 'SRIOV_NET_VF:1', 'root_required': 'T2'})[
            'allocation_requests'
        ]
        == []
    )
    assert (
        len(
            call(
                snap, {'resources': 'SRIOV_NET_VF:1', 'root_required': '!T2'}
            )['allocation_requests']
        )
        == 2
    )


def test_in_tree():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4})
    b.add(2, inv={'VCPU': 4})
    b.add(3, parent=2, inv={'CUSTOM_PGPU': 1})
    snap = b.snapshot()
    body = call(snap, {'resources': 'VCPU:1', 'in_tree': u(3)})
    assert allocs(body) == [((u(2), 'VCPU', 1),)]
    body = call(
        snap,
        {
            'resources': 'VCPU:1',
            'resources1': 'CUSTOM_PGPU:1',
            'in_tree1': u(1),
        },
    )
    assert body['allocation_requests'] == []


# ---------------------------------------------------------- aggregates ---


def test_member_of_on_root_spans_the_tree_for_unnumbered_group():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4}, aggs={AGG1})
    b.add(2, parent=1, inv={'CUSTOM_PGPU': 1})
    snap = b.snapshot()
    body = call(snap, {'resources': 'CUSTOM_PGPU:1', 'member_of': AGG1})
    assert allocs(body) == [((u(2), 'CUSTOM_PGPU', 1),)]
    # a suffixed group needs the provider itself in the aggregate
    body = call(snap, {'resources1': 'CUSTOM_PGPU:1', 'member_of1': AGG1})
    assert body['allocation_requests'] == []
    # forbidden aggregate on the root excludes the whole tree
    body = call(snap, {'resources': 'CUSTOM_PGPU:1', 'member_of': '!' + AGG1})
    assert body['allocation_requests'] == []


def test_member_of_and_or():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4}, aggs={AGG1})
    b.add(2, inv={'VCPU': 4}, aggs={AGG2})
    b.add(3, inv={'VCPU': 4}, aggs={AGG1, AGG2})
    snap = b.snapshot()
    any_of = call(
        snap, {'resources': 'VCPU:1', 'member_of': 'in:%s,%s' % (AGG1, AGG2)}
    )
    assert len(any_of['allocation_requests']) == 3
    both = call(snap, {'resources': 'VCPU:1', 'member_of': [AGG1, AGG2]})
    assert allocs(both) == [((u(3), 'VCPU', 1),)]
    not2 = call(snap, {'resources': 'VCPU:1', 'member_of': '!' + AGG2})
    assert allocs(not2) == [((u(1), 'VCPU', 1),)]


def test_sharing_provider_supplies_disk():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4}, aggs={AGG1})
    b.add(2, inv={'VCPU': 4}, aggs={AGG2})
    b.add(9, inv={'DISK_GB': 100}, traits={SHARE}, aggs={AGG1})
    snap = b.snapshot()
    body = call(snap, {'resources': 'VCPU:1,DISK_GB:10'})
    assert allocs(body) == [((u(1), 'VCPU', 1), (u(9), 'DISK_GB', 10))]
    assert set(body['provider_summaries']) == {u(1), u(9)}
    # the sharing provider alone is a candidate for DISK only
    body = call(snap, {'resources': 'DISK_GB:10'})
    assert allocs(body) == [((u(9), 'DISK_GB', 10),)]
    # a granular group can use it for the anchored tree, too
    body = call(snap, {'resources': 'VCPU:1', 'resources1': 'DISK_GB:10'})
    assert allocs(body) == [((u(1), 'VCPU', 1), (u(9), 'DISK_GB', 10))]
    # in_tree keeps the unnumbered group inside the tree
    body = call(snap, {'resources': 'VCPU:1,DISK_GB:10', 'in_tree': u(1)})
    assert body['allocation_requests'] == []


def aggregate_world():
    """Trees 1 (in AGG1) > 2, 3 (in AGG2) > 4 (in AGG1), 5 (in AGG1 and
    AGG3); sharing 8 (DISK_GB, in AGG2 and AGG3) serves trees 3 and 5."""
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4, 'DISK_GB': 4}, aggs={AGG1})
    b.add(2, parent=1, inv={'CUSTOM_PGPU': 1})
    b.add(3, inv={'VCPU': 4}, aggs={AGG2})
    b.add(4, parent=3, inv={'CUSTOM_PGPU': 1}, aggs={AGG1})
    b.add(5, inv={'VCPU': 4}, aggs={AGG1, AGG3})
    b.add(8, inv={'DISK_GB': 100}, traits={SHARE}, aggs={AGG2, AGG3})
    return b.snapshot()


def providers_used(body):
    return {
        tuple(sorted(ar['allocations'])) for ar in body['allocation_requests']
    }


def test_suffixed_groups_inherit_no_member_of_from_unnumbered_group():
    """Checked against OpenStack Placement 16.0.0 (conformance test)."""
    snap = aggregate_world()
    body = call(
        snap,
        {
            'resources': 'CUSTOM_PGPU:1',
            'member_of': AGG1,
            'resources1': 'VCPU:1',
        },
    )
    # 3 (granular VCPU) is not in AGG1 and neither is its root
    assert providers_used(body) == {(u(1), u(2)), (u(3), u(4))}


def test_forbidden_aggregates_apply_to_every_provider_of_the_group():
    """Checked against OpenStack Placement 16.0.0 (conformance test)."""
    snap = aggregate_world()
    # 4 is a child in AGG1: its tree's candidate is refused too
    body = call(
        snap, {'resources': 'VCPU:1,CUSTOM_PGPU:1', 'member_of': '!' + AGG1}
    )
    assert body['allocation_requests'] == []
    # the sharing provider 8 is in AGG2 although tree 5 is not
    body = call(
        snap, {'resources': 'VCPU:1,DISK_GB:1', 'member_of': '!' + AGG2}
    )
    assert providers_used(body) == {(u(1),)}
    body = call(
        snap, {'resources': 'VCPU:1,DISK_GB:1', 'member_of': '!' + AGG1}
    )
    assert providers_used(body) == {(u(3), u(8))}
    # the tree a sharing provider serves counts as well: not tree 5
    body = call(
        snap,
        {
            'resources': 'DISK_GB:1',
            'resources1': 'VCPU:1',
            'member_of': '!' + AGG1,
        },
    )
    assert providers_used(body) == {(u(3), u(8))}
    # a suffixed group's forbidden aggregates are its provider's only
    body = call(
        snap,
        {
            'resources': 'VCPU:1',
            'resources1': 'DISK_GB:1',
            'member_of1': '!' + AGG1,
        },
    )
    assert providers_used(body) == {(u(3), u(8)), (u(5), u(8))}


def test_unnumbered_member_of_needs_the_sharing_provider_itself():
    snap = aggregate_world()
    # tree 5 and the sharing provider 8 are both in AGG3
    body = call(snap, {'resources': 'VCPU:1,DISK_GB:1', 'member_of': AGG3})
    assert providers_used(body) == {(u(5), u(8))}
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4}, aggs={AGG1, AGG2})
    b.add(8, inv={'DISK_GB': 100}, traits={SHARE}, aggs={AGG2})
    body = call(
        b.snapshot(), {'resources': 'VCPU:1,DISK_GB:1', 'member_of': AGG1}
    )
    assert body['allocation_requests'] == []


# --------------------------------------------------------- generation ---


@pytest.fixture
def many_roots():
    b = TreeBuilder()
    for r in range(1, 6):
        b.add(r, inv={'VCPU': 4})
        for k in range(4):
            b.add(100 * r + k, parent=r, inv={'CUSTOM_PGPU': 1})
    return b.snapshot()


def test_limit_depth_first_is_sorted_by_root(many_roots):
    body = call(
        many_roots, {'resources': 'VCPU:1,CUSTOM_PGPU:1', 'limit': '6'}
    )
    roots = [min(ar['allocations']) for ar in body['allocation_requests']]
    assert roots == sorted(roots)
    assert len(body['allocation_requests']) == 6
    # summaries limited to the trees used
    assert {
        s['root_provider_uuid'] for s in body['provider_summaries'].values()
    } == {u(1), u(2)}


def test_breadth_first_round_robins_roots(many_roots):
    body = call(
        many_roots,
        {'resources': 'VCPU:1,CUSTOM_PGPU:1', 'limit': '5'},
        options=opts('breadth-first'),
    )
    roots = {
        s['root_provider_uuid'] for s in body['provider_summaries'].values()
    }
    assert roots == {u(r) for r in range(1, 6)}


def test_max_allocation_candidates(many_roots):
    body = call(
        many_roots,
        {'resources': 'VCPU:1,CUSTOM_PGPU:1'},
        options=opts(max_ac=3),
    )
    assert len(body['allocation_requests']) == 3


def test_randomize_uses_rng(many_roots):
    params = {'resources': 'VCPU:1,CUSTOM_PGPU:1'}
    a = call(
        many_roots, params, options=opts(randomize=True, rng=random.Random(1))
    )
    b = call(
        many_roots, params, options=opts(randomize=True, rng=random.Random(1))
    )
    plain = call(many_roots, params)
    assert a == b
    assert a['allocation_requests'] != plain['allocation_requests']
    assert sorted(allocs(a)) == sorted(allocs(plain))


def test_deterministic_without_randomize(many_roots):
    params = {'resources': 'VCPU:1,CUSTOM_PGPU:1'}
    assert call(many_roots, params) == call(many_roots, params)


@pytest.mark.timeout(120)
def test_wide_tree_many_groups_does_not_explode():
    """8 children x 8 groups: the Cartesian product is 8**8; with a limit
    we stop early, and capacity pruning keeps the full answer small. (An
    unpruned walk of 16.7 million combinations would outlive the test's
    timeout; no wall-clock bound is asserted.)"""
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4})
    for k in range(8):
        b.add(10 + k, parent=1, inv={'CUSTOM_PGPU': 1})
    snap = b.snapshot()
    params = {'resources%d' % i: 'CUSTOM_PGPU:1' for i in range(1, 9)}
    params['group_policy'] = 'none'
    params['limit'] = '10'
    body = call(snap, params)
    assert len(body['allocation_requests']) == 10
    # Each child has 1 unit, so every group lands on a different child.
    for ar in body['allocation_requests']:
        assert len(ar['allocations']) == 8
    params['group_policy'] = 'isolate'
    body = call(snap, params)
    assert len(body['allocation_requests']) == 10


@pytest.mark.timeout(120)
def test_impossible_wide_request_is_pruned_fast():
    """9 groups on 8 single-unit children: no answer, found without
    walking the 8**9 combinations (which would outlive the timeout)."""
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4})
    for k in range(8):
        b.add(10 + k, parent=1, inv={'CUSTOM_PGPU': 1})
    snap = b.snapshot()
    params = {'resources%d' % i: 'CUSTOM_PGPU:1' for i in range(1, 10)}
    params['group_policy'] = 'isolate'
    assert call(snap, params)['allocation_requests'] == []


def test_gc_state_is_restored(compute):
    import gc

    snap = compute.snapshot()
    assert gc.isenabled()
    call(snap, {'resources': 'VCPU:1'})
    assert gc.isenabled()
    gc.disable()
    try:
        call(snap, {'resources': 'VCPU:1'})
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_large_snapshot_sanity():
    """6000 providers: every count matches (the speed is
    benchmarks/candidates_bench.py's and placement_bench.py's business)."""
    import importlib.util
    import pathlib

    path = (
        pathlib.Path(__file__).resolve().parents[3]
        / 'benchmarks'
        / 'candidates_bench.py'
    )
    spec = importlib.util.spec_from_file_location('candidates_bench', path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    snap = bench.build_snapshot()
    body = call(snap, {'resources': 'VCPU:2,MEMORY_MB:4096,DISK_GB:20'})
    assert len(body['allocation_requests']) == 5000
    assert len(body['provider_summaries']) == 6000
    body = call(
        snap,
        {
            'resources': 'VCPU:2,MEMORY_MB:4096,DISK_GB:20',
            'required': 'HW_CPU_X86_AVX2,CUSTOM_FAST_DISK',
        },
    )
    assert len(body['allocation_requests']) == 334
    body = call(snap, {'resources1': 'CUSTOM_PGPU:1', 'limit': '50'})
    assert len(body['allocation_requests']) == 50


def test_flat_candidates_are_kept_for_a_bounded_number_of_shapes(compute):
    """A flat host's candidate is built once per snapshot and request
    shape and handed out again; past FLAT_SHAPES shapes the snapshot keeps
    no more of them, and the answers stay the same."""
    from nimbus.placement.candidates import groups

    snap = compute.snapshot()
    first = call(snap, {'resources': 'VCPU:1,MEMORY_MB:64'})
    assert call(snap, {'resources': 'VCPU:1,MEMORY_MB:64'}) == first
    shapes = groups.FLAT_SHAPES + 4
    for n in range(1, shapes + 1):
        body = call(snap, {'resources': 'VCPU:1,MEMORY_MB:%d' % n})
        assert allocs(body) == [
            ((u(1), 'MEMORY_MB', n), (u(1), 'VCPU', 1)),
            ((u(2), 'MEMORY_MB', n), (u(2), 'VCPU', 1)),
        ]
    kept = [k for k in snap.memo if k[0] == 'flat']
    assert len(kept) == groups.FLAT_SHAPES
    assert call(snap, {'resources': 'VCPU:1,MEMORY_MB:64'}) == first
