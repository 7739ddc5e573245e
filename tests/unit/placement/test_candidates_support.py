"""Builders shared by the candidate engine tests."""

import types
import uuid as uuidlib

from nimbus.placement.candidates import Inventory, Provider, Snapshot

RCS = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_PGPU', 'SRIOV_NET_VF']
TRAITS = [
    'T1',
    'T2',
    'T3',
    'HW_CPU_X86_AVX2',
    'CUSTOM_FAST',
    'MISC_SHARES_VIA_AGGREGATE',
    'HW_NUMA_ROOT',
]
AGG1 = str(uuidlib.UUID(int=0xA1))
AGG2 = str(uuidlib.UUID(int=0xA2))
AGG3 = str(uuidlib.UUID(int=0xA3))


def u(n):
    """A readable deterministic uuid."""
    return str(uuidlib.UUID(int=n))


def opts(strategy='depth-first', max_ac=-1, randomize=False, rng=None):
    return types.SimpleNamespace(
        max_allocation_candidates=max_ac,
        randomize_allocation_candidates=randomize,
        allocation_candidates_generation_strategy=strategy,
        rng=rng,
    )


class TreeBuilder:
    """Small DSL: ``b.add(1, inv={'VCPU': 4}, parent=None, traits=...)``."""

    def __init__(self):
        self.provs = {}

    def add(
        self, n, parent=None, inv=None, used=None, traits=(), aggs=(), **_
    ):
        uuid = u(n)
        root = uuid if parent is None else self.provs[u(parent)].root_uuid
        inventories = {}
        for rc, spec in (inv or {}).items():
            if isinstance(spec, Inventory):
                inventories[rc] = spec
            else:
                inventories[rc] = Inventory(spec)
        self.provs[uuid] = Provider(
            uuid=uuid,
            name='rp%d' % n,
            generation=0,
            parent_uuid=None if parent is None else u(parent),
            root_uuid=root,
            inventories=inventories,
            usages=dict(used or {}),
            traits=frozenset(traits),
            aggregates=frozenset(aggs),
        )
        return uuid

    def snapshot(self):
        return Snapshot(list(self.provs.values()), RCS, TRAITS)


# -- hypothesis strategies: small random trees and queries over them -------


def _strategies():
    from hypothesis import strategies as st

    classes = ['VCPU', 'MEMORY_MB', 'CUSTOM_PGPU']
    plain_traits = ['T1', 'T2', 'T3']

    @st.composite
    def one_inventory(draw):
        inv = {}
        for rc in draw(st.sets(st.sampled_from(classes))):
            inv[rc] = Inventory(
                total=draw(st.sampled_from([0, 2, 4, 8])),
                reserved=draw(st.sampled_from([0, 0, 1])),
                min_unit=draw(st.sampled_from([1, 1, 2])),
                max_unit=draw(st.sampled_from([8, 2, 3])),
                step_size=draw(st.sampled_from([1, 1, 2])),
                allocation_ratio=draw(st.sampled_from([1.0, 2.0])),
            )
        used = {
            rc: draw(st.integers(0, 2)) for rc in inv if draw(st.booleans())
        }
        return inv, used

    @st.composite
    def trees(draw, max_providers=7):
        """A TreeBuilder with 1-3 roots, up to two levels of children,
        some sharing roots, random traits and aggregates."""
        b = TreeBuilder()
        parents = [None] * draw(st.integers(1, 3))
        n = 0
        while parents and n < max_providers:
            parent = parents.pop(0)
            n += 1
            inv, used = draw(one_inventory())
            traits = set(draw(st.sets(st.sampled_from(plain_traits))))
            if parent is None and draw(st.integers(0, 4)) == 0:
                traits.add('MISC_SHARES_VIA_AGGREGATE')
            b.add(
                n,
                parent=parent,
                inv=inv,
                used=used,
                traits=traits,
                aggs=draw(st.sets(st.sampled_from([AGG1, AGG2]))),
            )
            depth = 0 if parent is None else 1
            if depth < 2:
                parents += [n] * draw(st.integers(0, 2))
        return b

    @st.composite
    def queries(draw, provider_uuids):
        """Query parameters ``{name: [values]}`` valid at 1.39."""
        params = {}
        suffixes = draw(
            st.sampled_from([[''], ['_A'], ['', '_A'], ['_A', '_B']])
        )
        for s in suffixes:
            rcs = draw(
                st.lists(
                    st.sampled_from(classes),
                    min_size=1,
                    max_size=2,
                    unique=True,
                )
            )
            params['resources' + s] = [
                ','.join('%s:%d' % (rc, draw(st.integers(1, 2))) for rc in rcs)
            ]
            traits = draw(
                st.sampled_from(
                    [[], [], ['T1'], ['!T2'], ['in:T1,T3'], ['T1', '!T3']]
                )
            )
            if traits:
                params['required' + s] = traits
            aggs = draw(
                st.sampled_from(
                    [[], [], [AGG1], ['in:%s,%s' % (AGG1, AGG2)], ['!' + AGG2]]
                )
            )
            if aggs:
                params['member_of' + s] = aggs
            if draw(st.integers(0, 6)) == 0:
                params['in_tree' + s] = [
                    draw(st.sampled_from(list(provider_uuids) + [u(999)]))
                ]
        if any(suffixes):
            params['group_policy'] = [
                draw(st.sampled_from(['none', 'isolate']))
            ]
        if draw(st.integers(0, 4)) == 0:
            params['root_required'] = [draw(st.sampled_from(['T1', '!T2']))]
        if draw(st.integers(0, 3)) == 0:
            params['limit'] = [str(draw(st.integers(1, 3)))]
        return params

    return trees, queries


random_trees, random_queries = _strategies()
