"""Answers kept with the snapshot.

``get_allocation_candidates_json`` keeps the bytes of a deterministic
answer in the snapshot's memo and hands them out again for the same query
on the same snapshot; a new snapshot (any write) answers afresh, a
randomised or failing query is never kept, and the kept answers stay
within their bounds.
"""

import dataclasses
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import orjson
import pytest

from nimbus.placement import candidates
from nimbus.placement.candidates import (
    CandidatesQueryError,
    get_allocation_candidates,
    get_allocation_candidates_json,
)

from tests.unit.placement.test_candidates_support import (
    TreeBuilder,
    opts,
    random_queries,
    random_trees,
    u,
)

PARAMS = {'resources': ['VCPU:1']}


def _env():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 8, 'MEMORY_MB': 1024}, traits={'T1'})
    b.add(2, inv={'VCPU': 4, 'MEMORY_MB': 512}, used={'VCPU': 1})
    return b


def _kept(snap):
    return [k for k in snap.memo if k[0] == 'answer']


def test_same_query_same_snapshot_gets_the_same_bytes():
    snap = _env().snapshot()
    first = get_allocation_candidates_json(snap, PARAMS, (1, 39), opts())
    again = get_allocation_candidates_json(
        snap, {'resources': ['VCPU:1']}, (1, 39), opts()
    )
    assert again is first
    assert orjson.loads(first) == get_allocation_candidates(
        snap, PARAMS, (1, 39), opts()
    )
    assert len(_kept(snap)) == 1


def test_microversion_options_and_parameters_are_part_of_the_key():
    snap = _env().snapshot()
    a = get_allocation_candidates_json(snap, PARAMS, (1, 39), opts())
    b = get_allocation_candidates_json(snap, PARAMS, (1, 33), opts())
    c = get_allocation_candidates_json(snap, PARAMS, (1, 39), opts(max_ac=1))
    d = get_allocation_candidates_json(
        snap, {'resources': ['VCPU:1'], 'limit': ['1']}, (1, 39), opts()
    )
    assert b'mappings' in a and b'mappings' not in b
    assert len(orjson.loads(a)['allocation_requests']) == 2
    assert len(orjson.loads(c)['allocation_requests']) == 1
    assert len(orjson.loads(d)['allocation_requests']) == 1
    assert len(_kept(snap)) == 4


def test_a_new_snapshot_answers_afresh():
    b = _env()
    snap = b.snapshot()
    before = orjson.loads(
        get_allocation_candidates_json(snap, PARAMS, (1, 39), opts())
    )
    changed = dataclasses.replace(
        b.provs[u(2)], usages={'VCPU': 3}, generation=9
    )
    new = snap.with_usages([changed])
    assert not _kept(new)
    after = orjson.loads(
        get_allocation_candidates_json(new, PARAMS, (1, 39), opts())
    )
    used = after['provider_summaries'][u(2)]['resources']['VCPU']['used']
    assert used == 3
    was = before['provider_summaries'][u(2)]['resources']['VCPU']['used']
    assert was == 1


def test_randomised_answers_are_not_kept():
    snap = _env().snapshot()
    options = opts(randomize=True, rng=random.Random(3))
    get_allocation_candidates_json(snap, PARAMS, (1, 39), options)
    assert not _kept(snap)


def test_a_failing_query_is_not_kept_and_fails_again():
    snap = _env().snapshot()
    bad = {'resources': ['NOT_A_CLASS:1']}
    for _ in range(2):
        with pytest.raises(CandidatesQueryError):
            get_allocation_candidates_json(snap, bad, (1, 39), opts())
    assert not _kept(snap)


def test_kept_answers_stay_within_their_bounds(monkeypatch):
    snap = _env().snapshot()
    monkeypatch.setattr(candidates, 'ANSWERS', 3)
    for limit in range(1, 8):
        params = {'resources': ['VCPU:1'], 'limit': [str(limit)]}
        get_allocation_candidates_json(snap, params, (1, 39), opts())
        assert len(_kept(snap)) <= 3
    monkeypatch.setattr(candidates, 'ANSWER_BYTES', 10)
    get_allocation_candidates_json(snap, PARAMS, (1, 39), opts())
    assert not _kept(snap)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data())
def test_a_usage_change_answers_as_a_fresh_snapshot(data):
    """After answers on one snapshot (memo and kept answers filled), the
    snapshot an allocation write leads to (``with_usages``, which keeps
    the usage-independent memo) answers what a snapshot built from
    scratch answers."""
    b = data.draw(random_trees())
    snap = b.snapshot()
    queries = [data.draw(random_queries(sorted(b.provs))) for _ in range(3)]
    for params in queries:
        _answer(snap, params)
    uuids = sorted(b.provs)
    changed = []
    for uuid in data.draw(st.sets(st.sampled_from(uuids), min_size=1)):
        p = b.provs[uuid]
        usages = {
            rc: data.draw(st.integers(0, inv.total))
            for rc, inv in p.inventories.items()
        }
        b.provs[uuid] = dataclasses.replace(
            p, usages=usages, generation=p.generation + 1
        )
        changed.append(b.provs[uuid])
    new = snap.with_usages(changed)
    fresh = b.snapshot()
    for params in queries:
        assert _answer(new, params) == _answer(fresh, params)


def _answer(snap, params):
    try:
        return orjson.loads(
            get_allocation_candidates_json(snap, params, (1, 39), opts())
        )
    except CandidatesQueryError as exc:
        return ('error', exc.code, exc.detail)


def test_an_answer_no_moved_usage_touches_is_kept_across_a_write():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 8})
    b.add(2, parent=1, inv={'CUSTOM_PGPU': 2})
    b.add(3, inv={'VCPU': 8, 'MEMORY_MB': 1024})
    b.add(4, inv={'VCPU': 8})
    snap = b.snapshot()
    gpu = {'resources1': ['CUSTOM_PGPU:1']}
    body = get_allocation_candidates_json(snap, gpu, (1, 39), opts())
    (key,) = _kept(snap)
    # provider 3 is outside the answer and moved VCPU, not asked for
    moved = dataclasses.replace(b.provs[u(3)], usages={'VCPU': 2})
    new = snap.with_usages([moved])
    assert new.memo[key] is body
    # provider 1 is listed in the answer (the device's root): dropped
    moved = dataclasses.replace(b.provs[u(1)], usages={'VCPU': 2})
    assert key not in snap.with_usages([moved]).memo
    # provider 4 is outside, but moved VCPU, which this query asks for
    vcpu = {'resources': ['VCPU:1'], 'limit': ['1']}
    get_allocation_candidates_json(snap, vcpu, (1, 39), opts())
    keys = [k for k in _kept(snap) if k != key]
    moved = dataclasses.replace(b.provs[u(4)], usages={'VCPU': 8})
    after = snap.with_usages([moved])
    assert not [k for k in keys if k in after.memo]
    assert after.memo[key] is body


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data())
def test_followed_answers_are_the_bytes_of_a_fresh_snapshot(data):
    """Through several allocation writes, each snapshot's answers (kept
    across the writes where no moved usage touches them) are byte for byte
    what a snapshot built from scratch answers, at several microversions."""
    b = data.draw(random_trees())
    snap = b.snapshot()
    uuids = sorted(b.provs)
    queries = [
        (
            data.draw(random_queries(uuids)),
            data.draw(st.sampled_from([(1, 10), (1, 26), (1, 29), (1, 39)])),
        )
        for _ in range(3)
    ]
    for _round in range(3):
        for params, mv in queries:
            _bytes(snap, params, mv)
        changed = []
        for uuid in data.draw(st.sets(st.sampled_from(uuids), max_size=2)):
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
        for params, mv in queries:
            assert _bytes(snap, params, mv) == _bytes(fresh, params, mv)


def _bytes(snap, params, mv):
    try:
        return get_allocation_candidates_json(snap, params, mv, opts())
    except CandidatesQueryError as exc:
        return ('error', exc.code, exc.detail)
