"""A suffixed group's pieces follow an allocation write.

``Snapshot.with_usages`` keeps the engine's ``('granular', ..)`` memo
entry of a group asking for resources alone, with each changed provider's
piece added or removed as it now has room or not, instead of searching
every provider again. Oracle: the followed entry equals the one a
snapshot built from scratch computes, and the answers are the same.
"""

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import orjson

from nimbus.placement.candidates import get_allocation_candidates_json
from nimbus.placement.candidates import groups

from tests.unit.placement.test_candidates_support import (
    TreeBuilder,
    opts,
    random_trees,
    u,
)

SHARES = 'MISC_SHARES_VIA_AGGREGATE'


def _granular(snap):
    return {k: v for k, v in snap.memo.items() if k[0] == 'granular'}


def _answer(snap, params):
    return orjson.loads(
        get_allocation_candidates_json(snap, params, (1, 39), opts())
    )


def _used(b, n, usages):
    p = b.provs[u(n)]
    b.provs[u(n)] = dataclasses.replace(
        p, usages=usages, generation=p.generation + 1
    )
    return b.provs[u(n)]


def test_a_device_that_fills_up_and_frees_again_is_followed():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 8})
    b.add(2, parent=1, inv={'CUSTOM_PGPU': 2})
    b.add(3, parent=1, inv={'CUSTOM_PGPU': 2})
    b.add(4, inv={'VCPU': 8}, aggs={'a'})
    b.add(5, inv={'CUSTOM_PGPU': 1}, traits={SHARES}, aggs={'a'})
    params = {'resources1': ['CUSTOM_PGPU:2'], 'limit': ['5']}
    snap = b.snapshot()
    _answer(snap, params)
    (key,) = _granular(snap)
    # device 2 full, the sharing device 5 gains room it lacked
    b.add(5, inv={'CUSTOM_PGPU': 3}, traits={SHARES}, aggs={'a'})
    snap = b.snapshot()
    _answer(snap, params)
    steps = [
        {2: {'CUSTOM_PGPU': 2}},
        {5: {'CUSTOM_PGPU': 1}},
        {2: {}, 5: {'CUSTOM_PGPU': 2}},
    ]
    for step in steps:
        changed = [_used(b, n, usages) for n, usages in step.items()]
        kept = snap.memo[key]
        was = {a: list(pieces) for a, pieces in kept.items()}
        snap = snap.with_usages(changed)
        assert key in snap.memo  # followed, not dropped
        fresh = b.snapshot()
        assert snap.memo[key] == groups.granular_options(
            fresh, _group(params), None
        )
        assert _answer(snap, params) == _answer(fresh, params)
        assert kept == was  # the old snapshot's entry is left as it was


def test_the_last_piece_removed_then_another_added_in_one_write():
    # One write takes the only piece away (the entry is empty for a
    # moment) and gives another provider room: the followed entry holds
    # the new piece alone, not the old one back.
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 4})
    b.add(2, parent=1, inv={'VCPU': 2})
    b.add(3, parent=1, inv={'VCPU': 2})
    b.provs[u(3)] = dataclasses.replace(b.provs[u(3)], usages={'VCPU': 1})
    params = {'resources1': ['VCPU:2']}
    snap = b.snapshot()
    _answer(snap, params)
    changed = [_used(b, 1, {'VCPU': 4}), _used(b, 2, {'VCPU': 1})]
    changed.append(_used(b, 3, {}))
    snap = snap.with_usages(changed)
    fresh = b.snapshot()
    (key,) = _granular(snap)
    assert snap.memo[key] == groups.granular_options(
        fresh, _group(params), None
    )
    assert _answer(snap, params) == _answer(fresh, params)


def _group(params):
    from nimbus.placement.candidates import params as params_mod

    req = params_mod.parse_request(params, (1, 39))
    return req.groups['1']


def test_a_group_with_traits_is_searched_again():
    b = TreeBuilder()
    b.add(1, inv={'CUSTOM_PGPU': 2}, traits={'T1'})
    params = {'resources1': ['CUSTOM_PGPU:1'], 'required1': ['T1']}
    snap = b.snapshot()
    _answer(snap, params)
    assert _granular(snap)
    new = snap.with_usages([_used(b, 1, {'CUSTOM_PGPU': 2})])
    assert not _granular(new)
    assert _answer(new, params) == _answer(b.snapshot(), params)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.data())
def test_followed_pieces_equal_fresh_ones(data):
    b = data.draw(random_trees())
    classes = sorted({rc for p in b.provs.values() for rc in p.inventories})
    if not classes:
        return
    rcs = data.draw(
        st.lists(st.sampled_from(classes), min_size=1, max_size=2, unique=True)
    )
    params = {
        'resources1': [
            ','.join(
                '%s:%d' % (rc, data.draw(st.integers(1, 2))) for rc in rcs
            )
        ]
    }
    snap = b.snapshot()
    _answer(snap, params)
    for _round in range(2):
        changed = []
        for uuid in data.draw(st.sets(st.sampled_from(sorted(b.provs)))):
            p = b.provs[uuid]
            usages = {
                rc: data.draw(st.integers(0, inv.total))
                for rc, inv in p.inventories.items()
            }
            b.provs[uuid] = dataclasses.replace(
                p, usages=usages, generation=p.generation + 1
            )
            changed.append(b.provs[uuid])
        snap = snap.with_usages(changed)
        fresh = b.snapshot()
        for _key, value in _granular(snap).items():
            assert value == groups.granular_options(
                fresh, _group(params), None
            )
        assert _answer(snap, params) == _answer(fresh, params)
