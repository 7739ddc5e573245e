"""The JSON-bytes body equals the dict body, in every microversion.

``get_allocation_candidates_json`` writes provider summaries from
per-snapshot serialised fragments and single-provider allocation requests
from a template; whatever the request, its bytes must decode to exactly the
dict :func:`get_allocation_candidates` builds (or both raise the same
error).
"""

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import orjson
import pytest

from nimbus.placement.candidates import (
    CandidatesQueryError,
    Snapshot,
    get_allocation_candidates,
    get_allocation_candidates_json,
)

from tests.unit.placement.test_candidates_support import (
    RCS,
    TRAITS,
    TreeBuilder,
    opts,
    random_queries,
    random_trees,
    u,
)

VERSIONS = [(1, m) for m in range(10, 40)]


def _both(snap, params, mv, options=None):
    options = options or opts()
    try:
        expected = get_allocation_candidates(snap, params, mv, options)
    except CandidatesQueryError as exc:
        expected = ('error', exc.code, exc.detail)
    try:
        got = orjson.loads(
            get_allocation_candidates_json(snap, params, mv, options)
        )
    except CandidatesQueryError as exc:
        got = ('error', exc.code, exc.detail)
    return expected, got


@pytest.mark.slow
@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data())
def test_json_body_equals_dict_body(data):
    b = data.draw(random_trees())
    snap = b.snapshot()
    params = data.draw(random_queries(sorted(b.provs)))
    mv = data.draw(st.sampled_from(VERSIONS))
    expected, got = _both(snap, params, mv)
    assert got == expected
    # Twice: the second answer comes from the cached fragments.
    assert _both(snap, params, mv)[1] == expected


def _env():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 8, 'MEMORY_MB': 1024}, traits={'T1'})
    b.add(2, parent=1, inv={'CUSTOM_PGPU': 2})
    b.add(3, inv={'VCPU': 4, 'MEMORY_MB': 512}, used={'VCPU': 1})
    return b


def test_fragments_follow_a_usage_refresh():
    b = _env()
    snap = b.snapshot()
    params = {'resources': ['VCPU:1']}
    first = orjson.loads(
        get_allocation_candidates_json(snap, params, (1, 39), opts())
    )
    assert snap.fragments[True]
    # A usage refresh replaces provider 3 and keeps 1 and 2 as they are.
    provs = dict(b.provs)
    provs[u(3)] = dataclasses.replace(provs[u(3)], usages={'VCPU': 3})
    new = Snapshot(list(provs.values()), RCS, TRAITS)
    new.inherit_fragments(snap)
    assert set(new.fragments[True]) == {u(1), u(2)}
    assert new.fragments[True][u(1)] is snap.fragments[True][u(1)]
    body = orjson.loads(
        get_allocation_candidates_json(new, params, (1, 39), opts())
    )
    assert body == get_allocation_candidates(new, params, (1, 39), opts())
    assert body['provider_summaries'][u(3)]['resources']['VCPU']['used'] == 3
    assert first['provider_summaries'][u(3)]['resources']['VCPU']['used'] == 1


def test_unusual_uuids_take_the_escaping_path():
    b = _env()
    odd = 'ab"c'
    p = b.provs[u(3)]
    b.provs[odd] = dataclasses.replace(p, uuid=odd, root_uuid=odd)
    del b.provs[u(3)]
    snap = b.snapshot()
    assert not snap.plain_uuids
    params = {'resources': ['VCPU:1']}
    for mv in ((1, 12), (1, 27), (1, 34), (1, 39)):
        expected, got = _both(snap, params, mv)
        assert got == expected
        assert odd in str(got)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data())
def test_memoised_search_matches_a_fresh_snapshot(data):
    """Requests answered on one snapshot (reusing its memo) get what a
    fresh snapshot answers."""
    b = data.draw(random_trees())
    shared = b.snapshot()
    for _ in range(4):
        params = data.draw(random_queries(sorted(b.provs)))
        expected, _got = _both(b.snapshot(), params, (1, 39))
        assert _both(shared, params, (1, 39)) == (expected, expected)


def test_summary_resources_come_in_placement_order():
    # Standard classes by their os-resource-classes id, then custom ones:
    # as OpenStack Placement (and so osc-placement) lists them.
    b = TreeBuilder()
    b.add(
        1,
        inv={
            'CUSTOM_ZED': 1,
            'DISK_GB': 100,
            'CUSTOM_ACME': 2,
            'MEMORY_MB': 2048,
            'PCI_DEVICE': 1,
            'VCPU': 8,
        },
    )
    snap = b.snapshot()
    want = [
        'VCPU',
        'MEMORY_MB',
        'DISK_GB',
        'PCI_DEVICE',
        'CUSTOM_ACME',
        'CUSTOM_ZED',
    ]
    params = {'resources': ['VCPU:1']}
    for mv in ((1, 12), (1, 27), (1, 29), (1, 39)):
        body = orjson.loads(
            get_allocation_candidates_json(snap, params, mv, opts())
        )
        dict_body = get_allocation_candidates(snap, params, mv, opts())
        for got in (body, dict_body):
            order = list(got['provider_summaries'][u(1)]['resources'])
            if mv < (1, 27):
                assert order == ['VCPU']
            else:
                assert order == want
