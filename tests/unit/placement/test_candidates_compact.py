"""The compact body (``X-Nimbus-Candidates: compact-1``) says what the
standard body says.

Expanded by the scheduler's reader (:func:`compact_candidates.expand`),
the compact bytes give exactly the dict body of
:func:`get_allocation_candidates`: the allocation requests in the same
order, every provider summary, no more. The standard answer of the same
query stays as it was (the compact one is kept apart in the memo).
"""

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import orjson
import pytest

from nimbus.common.clients import compact_candidates
from nimbus.placement.candidates import (
    CandidatesQueryError,
    Snapshot,
    compact,
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

VERSIONS = [(1, m) for m in range(34, 40)]


def _expanded(snap, params, mv, options):
    body = compact_candidates.expand(
        orjson.loads(
            get_allocation_candidates_json(
                snap, params, mv, options, compact=True
            )
        )
    )
    summaries = body['provider_summaries']
    assert list(summaries) == list(dict(summaries.items()))
    return {
        'allocation_requests': compact_candidates.full_requests(body),
        'provider_summaries': dict(summaries.items()),
    }


@pytest.mark.slow
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.data())
def test_compact_body_expands_to_the_standard_body(data):
    b = data.draw(random_trees())
    snap = b.snapshot()
    params = data.draw(random_queries(sorted(b.provs)))
    mv = data.draw(st.sampled_from(VERSIONS))
    options = opts()
    try:
        expected = get_allocation_candidates(snap, params, mv, options)
    except CandidatesQueryError:
        with pytest.raises(CandidatesQueryError):
            _expanded(snap, params, mv, options)
        return
    got = _expanded(snap, params, mv, options)
    assert got == expected
    assert list(got['provider_summaries']) == list(
        expected['provider_summaries']
    )
    # the standard bytes of the same query are not the compact ones
    standard = orjson.loads(
        get_allocation_candidates_json(snap, params, mv, options)
    )
    assert standard == expected


def _env():
    b = TreeBuilder()
    b.add(1, inv={'VCPU': 8, 'MEMORY_MB': 1024}, traits={'T1'})
    b.add(2, parent=1, inv={'CUSTOM_PGPU': 2})
    b.add(3, inv={'VCPU': 4, 'MEMORY_MB': 512}, used={'VCPU': 1})
    b.add(4, inv={'VCPU': 4, 'MEMORY_MB': 512}, traits={'T1'})
    return b


@pytest.mark.parametrize(
    'params',
    [
        {'resources': ['VCPU:1,MEMORY_MB:128']},
        {
            'resources': ['VCPU:1'],
            'resources1': ['CUSTOM_PGPU:1'],
            'group_policy': ['none'],
        },
    ],
)
def test_compact_body_mixes_flat_and_full_requests(params):
    snap = _env().snapshot()
    mv = (1, 39)
    expected = get_allocation_candidates(snap, params, mv, opts())
    raw = orjson.loads(
        get_allocation_candidates_json(snap, params, mv, opts(), compact=True)
    )
    assert raw['compact'] == 1
    assert _expanded(snap, params, mv, opts()) == expected
    # a summary is built once and only when looked up
    summaries = compact_candidates.expand(raw)['provider_summaries']
    some = next(iter(summaries))
    assert summaries[some] is summaries.get(some)
    assert (
        summaries.root(some)
        == expected['provider_summaries'][some]['root_provider_uuid']
    )


def test_compact_is_asked_for_by_header_and_microversion():
    assert compact.wanted('compact-1', (1, 34))
    assert compact.wanted('compact-1', (1, 39))
    assert not compact.wanted('compact-1', (1, 33))
    assert not compact.wanted(None, (1, 39))
    assert not compact.wanted('compact-2', (1, 39))
    assert compact.HEADER == compact_candidates.HEADER
    assert compact.VERSION == compact_candidates.VERSION


def test_compact_rows_follow_usage_writes_and_rebuilds():
    """Rows are written once per snapshot: a usage write keeps the
    unchanged providers' rows, a rebuild (traits may have changed, and
    with them the trait table) writes them all again."""
    b = _env()
    snap = b.snapshot()
    params = {'resources': ['VCPU:1']}
    mv = (1, 39)
    assert _expanded(snap, params, mv, opts()) == get_allocation_candidates(
        snap, params, mv, opts()
    )
    assert snap.fragments['compact']
    moved = dataclasses.replace(b.provs[u(3)], usages={'VCPU': 3})
    after = snap.with_usages([moved])
    assert u(3) not in after.fragments['compact']
    assert after.fragments['compact'][u(1)] is snap.fragments['compact'][u(1)]
    got = _expanded(after, params, mv, opts())
    assert got == get_allocation_candidates(after, params, mv, opts())
    assert got['provider_summaries'][u(3)]['resources']['VCPU']['used'] == 3
    # A rebuild where provider 1 lost its trait: the table changes.
    provs = dict(b.provs)
    provs[u(1)] = dataclasses.replace(provs[u(1)], traits=frozenset())
    provs[u(3)] = moved
    rebuilt = Snapshot(list(provs.values()), RCS, TRAITS)
    rebuilt.inherit_fragments(after)
    assert 'compact' not in rebuilt.fragments
    got = _expanded(rebuilt, params, mv, opts())
    assert got == get_allocation_candidates(rebuilt, params, mv, opts())
    assert got['provider_summaries'][u(1)]['traits'] == []
