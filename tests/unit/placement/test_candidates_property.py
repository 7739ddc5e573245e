"""Property test: the engine against a brute-force oracle.

The oracle enumerates, for every root (anchor), every assignment of every
resource of every group to every provider, keeps the valid ones and merges
them, straight from the rules, without any index or pruning.
"""
import itertools
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nimbus.placement.candidates import (
    Inventory, find_candidates, get_allocation_candidates, parse_request)
from nimbus.placement.candidates.model import SHARING_TRAIT

from tests.unit.placement.test_candidates_support import (
    AGG1, AGG2, TreeBuilder, opts, u)

RCS3 = ['VCPU', 'MEMORY_MB', 'DISK_GB']
PTRAITS = ['T1', 'T2', 'T3']
AGGS = [AGG1, AGG2]


# --------------------------------------------------------------- oracle ---

def _fits(p, rc, amt):
    inv = p.inventories.get(rc)
    if inv is None:
        return False
    cap = int((inv.total - inv.reserved) * inv.allocation_ratio)
    return (p.usages.get(rc, 0) + amt <= cap and inv.min_unit <= amt
            <= inv.max_unit and amt % inv.step_size == 0)


def _in_aggs(p, member_of):
    return all(any(a in p.aggregates for a in any_of) for any_of in member_of)


def _traits_ok(traits, required):
    return all(any(t in traits for t in any_of) for any_of in required)


def oracle(provs, req, nested_aware=True):
    roots = sorted(p.uuid for p in provs.values() if p.parent_uuid is None)

    def anchors_of(p):
        out = {p.root_uuid}
        if SHARING_TRAIT in p.traits:
            for q in provs.values():
                if p.aggregates & q.aggregates:
                    out.add(q.root_uuid)
        return out

    def ancestors(uuid):
        out = {uuid}
        while provs[uuid].parent_uuid:
            uuid = provs[uuid].parent_uuid
            out.add(uuid)
        return out

    def bad_agg(p, g):
        return bool(p.aggregates & g.forbidden_aggs)

    results = set()
    groups = list(req.groups.values())
    for anchor in roots:
        at = provs[anchor].traits
        if not req.root_required <= at or req.root_forbidden & at:
            continue
        per_group = []
        for g in groups:
            tree_root = None
            if g.in_tree is not None:
                if g.in_tree not in provs:
                    return set()
                tree_root = provs[g.in_tree].root_uuid
            pieces = []
            if g.granular:
                for p in provs.values():
                    if anchor not in anchors_of(p):
                        continue
                    if tree_root is not None and p.root_uuid != tree_root:
                        continue
                    if not all(_fits(p, rc, a) for rc, a in
                               g.resources.items()):
                        continue
                    if not _traits_ok(p.traits, g.required):
                        continue
                    if p.traits & g.forbidden:
                        continue
                    if not _in_aggs(p, g.member_of) or bad_agg(p, g):
                        continue
                    alloc = tuple((p.uuid, rc, a) for rc, a in
                                  sorted(g.resources.items()))
                    pieces.append((alloc, (p.uuid,)))
            else:
                rcs = sorted(g.resources)

                def usable(p, rc):
                    if not _fits(p, rc, g.resources[rc]):
                        return False
                    if p.traits & g.forbidden:
                        return False
                    if tree_root is not None and p.root_uuid != tree_root:
                        return False
                    if bad_agg(p, g):
                        return False
                    if p.root_uuid == anchor:
                        root = provs[anchor]
                        if g.member_of and not (
                                _in_aggs(p, g.member_of)
                                or _in_aggs(root, g.member_of)):
                            return False
                        return not bad_agg(root, g)
                    if (SHARING_TRAIT in p.traits and g.in_tree is None
                            and anchor in anchors_of(p)):
                        if not _in_aggs(p, g.member_of):
                            return False
                        return not bad_agg(provs[anchor], g)
                    return False

                choices = [[p.uuid for p in provs.values() if usable(p, rc)]
                           for rc in rcs]
                for combo in itertools.product(*choices):
                    traits = set()
                    for x in combo:
                        traits |= provs[x].traits
                    if not _traits_ok(traits, g.required):
                        continue
                    alloc = tuple(zip(combo, rcs,
                                      [g.resources[rc] for rc in rcs]))
                    pieces.append((alloc, tuple(sorted(set(combo)))))
            per_group.append(pieces)
        for choice in itertools.product(*per_group):
            gran = [provs_[0] for g, (_a, provs_) in zip(groups, choice)
                    if g.granular]
            if req.group_policy == 'isolate' and len(set(gran)) != len(gran):
                continue
            by_suffix = {g.suffix: pv for g, (_a, pv) in zip(groups, choice)}
            ok = True
            for sset in req.same_subtrees:
                rps = set()
                for s in sset:
                    rps.update(by_suffix[s])
                if len(rps) > 1:
                    common = set.intersection(*(ancestors(r) for r in rps))
                    if not common & rps:
                        ok = False
            if not ok:
                continue
            merged = {}
            for alloc, _pv in choice:
                for x, rc, a in alloc:
                    merged[(x, rc)] = merged.get((x, rc), 0) + a
            for (x, rc), a in merged.items():
                inv = provs[x].inventories[rc]
                cap = int((inv.total - inv.reserved) * inv.allocation_ratio)
                if provs[x].usages.get(rc, 0) + a > cap or a > inv.max_unit:
                    ok = False
            if not ok:
                continue
            if not nested_aware:
                rps = {x for x, _rc in merged}
                if len({provs[x].root_uuid for x in rps}) != len(rps):
                    continue
            items = frozenset((x, rc, a) for (x, rc), a in merged.items())
            mappings = tuple(sorted(by_suffix.items()))
            results.add((items, mappings))
    return results


# ------------------------------------------------------------ strategies ---

@st.composite
def inventories(draw):
    inv = {}
    for rc in RCS3:
        if draw(st.integers(0, 2)):
            inv[rc] = Inventory(
                total=draw(st.sampled_from([0, 2, 3, 4, 6, 8])),
                reserved=draw(st.sampled_from([0, 0, 0, 1, 2])),
                min_unit=draw(st.sampled_from([1, 1, 1, 2])),
                max_unit=draw(st.sampled_from([8, 8, 2, 3])),
                step_size=draw(st.sampled_from([1, 1, 1, 2])),
                allocation_ratio=draw(st.sampled_from([1.0, 1.0, 1.5, 2.0])))
    used = {rc: draw(st.integers(0, 2)) for rc in inv if draw(st.booleans())}
    return inv, used


@st.composite
def environments(draw):
    b = TreeBuilder()
    n = 1
    n_roots = draw(st.integers(1, 3))
    budget = 7
    for _ in range(n_roots):
        frontier = [(None, 0)]
        while frontier and budget > 0:
            parent, depth = frontier.pop(0)
            count = 1 if parent is None else draw(st.integers(0, 2))
            for _ in range(count):
                if budget <= 0:
                    break
                inv, used = draw(inventories())
                traits = set(draw(st.sets(st.sampled_from(PTRAITS))))
                if parent is None and draw(st.integers(0, 4)) == 0:
                    traits.add(SHARING_TRAIT)
                aggs = draw(st.sets(st.sampled_from(AGGS)))
                b.add(n, parent=parent, inv=inv, used=used, traits=traits,
                      aggs=aggs)
                budget -= 1
                if depth < 2:
                    frontier.append((n, depth + 1))
                n += 1
    return b


@st.composite
def trait_expr(draw):
    if draw(st.integers(0, 2)) == 0:
        return []
    required = draw(st.lists(st.sets(st.sampled_from(PTRAITS), min_size=1,
                                     max_size=2), max_size=2))
    forbidden = draw(st.sets(st.sampled_from(PTRAITS), max_size=1))
    required = [r for r in required if not r <= forbidden]
    values = []
    for r in required:
        if len(r) == 1:
            values.append(next(iter(r)))
        else:
            values.append('in:' + ','.join(sorted(r)))
    values += ['!' + t for t in sorted(forbidden)]
    return values


@st.composite
def requests(draw, provider_uuids):
    params = {}
    has_unnumbered = draw(st.booleans())
    n_gran = draw(st.integers(0 if has_unnumbered else 1, 2))
    suffixes = ['_A', '_B'][:n_gran]
    resourceless = set()
    if n_gran == 2 and draw(st.integers(0, 2)) == 0:
        resourceless.add('_B')

    def group(suffix, max_rcs):
        if suffix not in resourceless:
            rcs = draw(st.lists(st.sampled_from(RCS3), min_size=1,
                                max_size=max_rcs, unique=True))
            params['resources' + suffix] = [
                ','.join('%s:%d' % (rc, draw(st.integers(1, 2)))
                         for rc in rcs)]
        tr = draw(trait_expr())
        if suffix in resourceless and not tr:
            tr = [draw(st.sampled_from(PTRAITS))]
        for value in tr:
            params.setdefault('required' + suffix, []).append(value)
        mo = draw(st.sampled_from(
            [[], [], [], [], [AGG1], ['in:%s,%s' % (AGG1, AGG2)],
             ['!' + AGG2], [AGG1, '!' + AGG2]]))
        if mo:
            params['member_of' + suffix] = mo
        if draw(st.integers(0, 7)) == 0:
            params['in_tree' + suffix] = [draw(st.sampled_from(
                provider_uuids + [u(999)]))]

    if has_unnumbered:
        group('', 2 if n_gran else 3)
    for s in suffixes:
        group(s, 2)
    if n_gran >= 1:
        params['group_policy'] = [draw(st.sampled_from(['none', 'isolate']))]
    if n_gran == 2 and (resourceless or draw(st.booleans())):
        params['same_subtree'] = ['_A,_B']
    if draw(st.integers(0, 5)) == 0:
        rr = draw(st.sampled_from(['T1', '!T2', 'T1,!T3']))
        params['root_required'] = [rr]
    return params


@settings(max_examples=250, deadline=None,
          suppress_health_check=[HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
@given(st.data())
def test_engine_matches_oracle(data):
    b = data.draw(environments())
    snap = b.snapshot()
    params = data.draw(requests(sorted(b.provs)))
    req = parse_request(params, (1, 39))
    expected = oracle(b.provs, req)
    strategy = data.draw(st.sampled_from(['depth-first', 'breadth-first']))
    got = find_candidates(snap, req, (1, 39), opts(strategy))
    keys = [(frozenset(items), mappings) for items, mappings in got]
    assert len(keys) == len(set(keys)), 'duplicate candidates'
    assert set(keys) == expected, params

    limit = data.draw(st.integers(1, 4))
    params['limit'] = [str(limit)]
    req = parse_request(params, (1, 39))
    rng = random.Random(data.draw(st.integers(0, 1000)))
    randomize = data.draw(st.booleans())
    got = find_candidates(snap, req, (1, 39),
                          opts(strategy, randomize=randomize, rng=rng))
    keys = {(frozenset(items), mappings) for items, mappings in got}
    assert len(got) == min(limit, len(expected))
    assert keys <= expected

    # The rendered body agrees with the candidates.
    body = get_allocation_candidates(snap, params, (1, 39), opts(strategy))
    assert len(body['allocation_requests']) == min(limit, len(expected))
    for ar in body['allocation_requests']:
        for rp in ar['allocations']:
            assert rp in body['provider_summaries']


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_old_microversion_excludes_nested_candidates(data):
    """Below 1.29 a candidate may use only one provider per tree."""
    b = data.draw(environments())
    snap = b.snapshot()
    rcs = data.draw(st.lists(st.sampled_from(RCS3), min_size=1, max_size=3,
                             unique=True))
    params = {'resources': [','.join('%s:1' % rc for rc in rcs)]}
    req = parse_request(params, (1, 28))
    expected = oracle(b.provs, req, nested_aware=not snap.has_trees)
    got = find_candidates(snap, req, (1, 28), opts())
    assert {(frozenset(i), m) for i, m in got} == expected


@st.composite
def nested_environments(draw):
    """1-2 roots, each with 1-3 children, some with 1-2 grandchildren;
    generous inventories so that multi-group requests have answers."""
    b = TreeBuilder()
    n = 1
    for _ in range(draw(st.integers(1, 2))):
        root = n
        b.add(n, inv={'VCPU': 4}, traits=draw(st.sets(
            st.sampled_from(PTRAITS))), aggs=draw(st.sets(
                st.sampled_from(AGGS))))
        n += 1
        for _ in range(draw(st.integers(1, 3))):
            child = n
            inv = {rc: Inventory(draw(st.integers(1, 3)),
                                 max_unit=draw(st.sampled_from([1, 2, 3])))
                   for rc in draw(st.sets(st.sampled_from(RCS3)))}
            b.add(n, parent=root, inv=inv, traits=draw(st.sets(
                st.sampled_from(PTRAITS))))
            n += 1
            for _ in range(draw(st.integers(0, 2))):
                inv = {rc: Inventory(draw(st.integers(1, 2)))
                       for rc in draw(st.sets(st.sampled_from(RCS3),
                                              min_size=1))}
                b.add(n, parent=child, inv=inv, traits=draw(st.sets(
                    st.sampled_from(PTRAITS))))
                n += 1
    return b


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_nested_multi_group_matches_oracle(data):
    b = data.draw(nested_environments())
    snap = b.snapshot()
    params = {}
    suffixes = ['_A', '_B', '_C'][:data.draw(st.integers(1, 3))]
    for s in suffixes:
        rc = data.draw(st.sampled_from(RCS3))
        params['resources' + s] = ['%s:%d' % (rc, data.draw(
            st.integers(1, 2)))]
        if data.draw(st.integers(0, 3)) == 0:
            params['required' + s] = [data.draw(st.sampled_from(
                ['T1', '!T2', 'in:T1,T3']))]
    if data.draw(st.booleans()):
        params['resources'] = ['VCPU:1']
    if data.draw(st.booleans()):
        params['required_N'] = [data.draw(st.sampled_from(PTRAITS))]
        params['same_subtree'] = [','.join(['_N'] + suffixes[:2])]
    elif len(suffixes) > 1 and data.draw(st.booleans()):
        params['same_subtree'] = [','.join(suffixes[:2])]
    params['group_policy'] = [data.draw(st.sampled_from(['none',
                                                         'isolate']))]
    req = parse_request(params, (1, 39))
    expected = oracle(b.provs, req)
    strategy = data.draw(st.sampled_from(['depth-first', 'breadth-first']))
    got = find_candidates(snap, req, (1, 39), opts(strategy))
    keys = [(frozenset(items), mappings) for items, mappings in got]
    assert len(keys) == len(set(keys))
    assert set(keys) == expected, params
    limit = data.draw(st.integers(1, 5))
    got = find_candidates(snap, req, (1, 39), opts(strategy, max_ac=limit))
    assert len(got) == min(limit, len(expected))
    assert {(frozenset(i), m) for i, m in got} <= expected
