"""Property tests: the candidate engine against an independent oracle
(:mod:`tests.unit.placement.candidate_oracle`, which states the rules it
enumerates).

Three properties: the engine on a snapshot built from the world (many
examples, every microversion that changes the answer), the whole API
(``PlacementDirect`` on SQLite: REST writes, the snapshot cache, the HTTP
layer; fewer examples), and the snapshot after usage changes.
"""

import random
import tempfile
import types
import uuid as uuidlib

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
import pytest

from tests.unit.placement.candidate_oracle import (
    SHARING,
    ancestors,
    answer_of,
    capacity,
    expected,
    parse,
    root,
    summaries,
)

# ---------------------------------------------------------- strategies ---

RCS = ('VCPU', 'MEMORY_MB', 'DISK_GB')
TRAITS = ('CUSTOM_T1', 'CUSTOM_T2', 'CUSTOM_T3')
AGGS = tuple(str(uuidlib.UUID(int=0xA1 + i)) for i in range(3))
MICROVERSIONS = (
    (1, 10),
    (1, 17),
    (1, 25),
    (1, 28),
    (1, 29),
    (1, 33),
    (1, 34),
    (1, 36),
    (1, 39),
)


def _uuid(n):
    return str(uuidlib.UUID(int=n))


@st.composite
def inventory(draw):
    total = draw(st.integers(2, 8))
    min_unit = draw(st.sampled_from((1, 1, 1, 2)))
    inv = {
        'total': total,
        'reserved': draw(st.sampled_from((0, 0, 1))),
        'min_unit': min_unit,
        'max_unit': draw(
            st.sampled_from(
                (total, total, min_unit, max(min_unit, total // 2))
            )
        ),
        'step_size': draw(st.sampled_from((1, 1, 1, 2))),
        'allocation_ratio': draw(st.sampled_from((1.0, 1.0, 1.5, 2.0))),
    }
    # a usage Placement itself would have accepted
    ok = [
        a
        for a in range(inv['min_unit'], inv['max_unit'] + 1)
        if a % inv['step_size'] == 0 and a <= capacity(inv)
    ]
    used = draw(st.sampled_from([0, 0, 0] + ok))
    return inv, used


@st.composite
def worlds(draw):
    """1-3 trees, at most 8 providers; sharing providers anywhere."""
    world = {}
    budget = 8
    n = 1
    for _ in range(draw(st.integers(1, 3))):
        frontier = [(None, 0)]
        while frontier and budget:
            parent, depth = frontier.pop(0)
            for _ in range(1 if parent is None else draw(st.integers(0, 2))):
                if not budget:
                    break
                inv, used = {}, {}
                for rc in draw(
                    st.sets(
                        st.sampled_from(RCS),
                        min_size=int(draw(st.integers(0, 4)) > 0),
                    )
                ):
                    inv[rc], amount = draw(inventory())
                    if amount:
                        used[rc] = amount
                traits = set(
                    draw(st.sets(st.sampled_from(TRAITS), max_size=2))
                )
                if draw(st.integers(0, 5)) == 0:
                    traits.add(SHARING)
                world[_uuid(n)] = {
                    'parent': parent,
                    'inv': inv,
                    'used': used,
                    'traits': traits,
                    'aggs': set(
                        draw(st.sets(st.sampled_from(AGGS), max_size=2))
                    ),
                }
                if depth < 2:
                    frontier.append((_uuid(n), depth + 1))
                n += 1
                budget -= 1
    return world


@st.composite
def roomy_worlds(draw):
    """1-2 compute-like trees (root with VCPU, 1-3 children, some
    grandchildren) with room to spare, and maybe a sharing provider:
    multi-group requests have many answers here."""
    world = {}
    n = iter(range(1, 100))

    def add(parent, rcs, sharing=False):
        u = _uuid(next(n))
        traits = set(draw(st.sets(st.sampled_from(TRAITS), max_size=2)))
        if sharing:
            traits.add(SHARING)
        world[u] = {
            'parent': parent,
            'used': {},
            'traits': traits,
            'aggs': set(draw(st.sets(st.sampled_from(AGGS), max_size=1))),
            'inv': {
                rc: {
                    'total': draw(st.integers(2, 4)),
                    'reserved': 0,
                    'min_unit': 1,
                    'max_unit': draw(st.sampled_from((1, 2, 4))),
                    'step_size': 1,
                    'allocation_ratio': 1.0,
                }
                for rc in rcs
            },
        }
        return u

    for _ in range(draw(st.integers(1, 2))):
        r = add(None, ['VCPU'])
        for _ in range(draw(st.integers(1, 3))):
            c = add(
                r, draw(st.sets(st.sampled_from(RCS), min_size=1, max_size=2))
            )
            for _ in range(draw(st.integers(0, 2))):
                add(
                    c,
                    draw(
                        st.sets(st.sampled_from(RCS), min_size=1, max_size=1)
                    ),
                )
    if draw(st.booleans()):
        add(None, ['DISK_GB'], sharing=True)
    return world


@st.composite
def queries(draw, world, mv):
    """Valid query pairs at ``mv`` (only what it offers)."""
    pairs = []

    def traits():
        if mv < (1, 17) or draw(st.integers(0, 3)):
            return
        # two names to require, the third to forbid: never both
        need_a, need_b, ban = draw(st.permutations(TRAITS))
        for _ in range(draw(st.integers(1, 2)) if mv >= (1, 39) else 1):
            names = draw(
                st.sampled_from(([need_a], [need_b], [need_a, need_b]))
            )
            if mv >= (1, 39) and len(names) == 2 and draw(st.booleans()):
                yield 'in:' + ','.join(names)
            elif mv >= (1, 22) and draw(st.booleans()):
                yield ','.join(names + ['!' + ban])
            else:
                yield ','.join(names)

    def member_of():
        if mv < (1, 21) or draw(st.integers(0, 3)):
            return
        for _ in range(draw(st.integers(1, 2)) if mv >= (1, 24) else 1):
            aggs = draw(
                st.lists(
                    st.sampled_from(AGGS), min_size=1, max_size=2, unique=True
                )
            )
            neg = '!' if mv >= (1, 32) and draw(st.booleans()) else ''
            yield neg + ('in:' + ','.join(aggs) if len(aggs) > 1 else aggs[0])

    def group(suffix, max_rcs, resourceless=False):
        if not resourceless:
            rcs = draw(
                st.lists(
                    st.sampled_from(RCS),
                    min_size=1,
                    max_size=max_rcs,
                    unique=True,
                )
            )
            pairs.append(
                (
                    'resources' + suffix,
                    ','.join(
                        '%s:%d' % (rc, draw(st.sampled_from((1, 1, 2))))
                        for rc in rcs
                    ),
                )
            )
        required = list(traits())
        if resourceless and not required:
            required = [draw(st.sampled_from(TRAITS))]
        pairs.extend(('required' + suffix, v) for v in required)
        pairs.extend(('member_of' + suffix, v) for v in member_of())
        if mv >= (1, 31) and draw(st.integers(0, 6)) == 0:
            pairs.append(
                (
                    'in_tree' + suffix,
                    draw(st.sampled_from(sorted(world) + [_uuid(999)])),
                )
            )

    n_suffixed = draw(st.integers(0, 2)) if mv >= (1, 25) else 0
    if not n_suffixed or draw(st.booleans()):
        group('', 2 if n_suffixed else 3)
    names = (
        ['_A', '_B'] if mv >= (1, 33) and draw(st.booleans()) else ['1', '2']
    )[:n_suffixed]
    resourceless = (
        mv >= (1, 36) and n_suffixed == 2 and draw(st.integers(0, 2)) == 0
    )
    for i, s in enumerate(names):
        group(s, 2, resourceless=resourceless and i == 1)
    if n_suffixed:
        pairs.append(
            ('group_policy', draw(st.sampled_from(('none', 'isolate'))))
        )
    if (
        mv >= (1, 36)
        and n_suffixed == 2
        and (resourceless or draw(st.booleans()))
    ):
        pairs.append(('same_subtree', ','.join(names)))
    if mv >= (1, 35) and draw(st.integers(0, 5)) == 0:
        a, b = draw(
            st.lists(
                st.sampled_from(TRAITS), min_size=2, max_size=2, unique=True
            )
        )
        pairs.append(
            (
                'root_required',
                draw(st.sampled_from((a, '!' + a, '%s,!%s' % (a, b)))),
            )
        )
    return pairs


# -------------------------------------------------------------- checks ---


def check_answer(world, pairs, mv, body, limit=None):
    """Assert ``body`` is what the oracle allows for ``pairs`` at ``mv``."""
    req = parse(pairs)
    want = expected(world, req, mv)
    got, listed, summ = answer_of(body, mv)
    assert len(listed) == len(got), 'an allocation request is repeated'
    if limit is None:
        assert got == want, pairs
    else:
        assert len(got) == min(limit, len(want)), pairs
        assert got <= want, pairs
    assert summ == summaries(world, req, mv, got), pairs
    return want


def _snapshot(world):
    from nimbus.placement.candidates import Inventory, Provider, Snapshot

    provs = [
        Provider(
            uuid=u,
            name=u,
            generation=0,
            parent_uuid=p['parent'],
            root_uuid=root(world, u),
            inventories={rc: Inventory(**inv) for rc, inv in p['inv'].items()},
            usages=dict(p['used']),
            traits=frozenset(p['traits']),
            aggregates=frozenset(p['aggs']),
        )
        for u, p in world.items()
    ]
    return Snapshot(provs, RCS, TRAITS + (SHARING,))


def _params(pairs):
    params = {}
    for k, v in pairs:
        params.setdefault(k, []).append(v)
    return params


def _options(strategy='depth-first', randomize=False, seed=0):
    return types.SimpleNamespace(
        max_allocation_candidates=-1,
        randomize_allocation_candidates=randomize,
        allocation_candidates_generation_strategy=strategy,
        rng=random.Random(seed),
    )


@pytest.mark.slow
@settings(
    max_examples=700,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_engine_matches_oracle(data):
    from nimbus.placement.candidates import get_allocation_candidates

    world = data.draw(st.one_of(worlds(), roomy_worlds()))
    mv = data.draw(st.sampled_from(MICROVERSIONS))
    pairs = data.draw(queries(world, mv))
    snap = _snapshot(world)
    strategy = data.draw(st.sampled_from(('depth-first', 'breadth-first')))
    body = get_allocation_candidates(
        snap, _params(pairs), mv, _options(strategy)
    )
    want = check_answer(world, pairs, mv, body)
    event(
        'candidates: %s'
        % (
            'none'
            if not want
            else '1'
            if len(want) == 1
            else '2-5'
            if len(want) <= 5
            else 'more'
        )
    )
    if mv >= (1, 16) and want:
        limit = data.draw(st.integers(1, len(want) + 1))
        limited = pairs + [('limit', str(limit))]
        body = get_allocation_candidates(
            snap,
            _params(limited),
            mv,
            _options(
                strategy,
                randomize=data.draw(st.booleans()),
                seed=data.draw(st.integers(0, 99)),
            ),
        )
        check_answer(world, limited, mv, body, limit)


@pytest.mark.slow
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_a_limit_answers_the_head_of_the_full_answer(data):
    """Without randomisation the engine visits the anchors in sorted order
    (read lazily, only as far as the limit, when the unnumbered group is
    the only one), and a limited answer is the first candidates of the
    full one, in the same order: the oracle above compares sets only."""
    from nimbus.placement.candidates import find_candidates, parse_request
    from nimbus.placement.candidates.engine import _Search

    world = data.draw(st.one_of(worlds(), roomy_worlds()))
    mv = data.draw(st.sampled_from([v for v in MICROVERSIONS if v >= (1, 16)]))
    pairs = data.draw(queries(world, mv))
    snap = _snapshot(world)
    req = parse_request(_params(pairs), mv)
    search = _Search(snap, req, mv >= (1, 29), mv >= (1, 34))
    if search.granular:
        every = set(search.anchors)
    elif search.unnumbered.per_rc:
        every = set.intersection(*map(set, search.unnumbered.per_rc))
    else:
        every = set()
    assert list(search.ordered_anchors()) == sorted(every)
    strategy = data.draw(st.sampled_from(('depth-first', 'breadth-first')))
    full = find_candidates(snap, req, mv, _options(strategy))
    if not full:
        return
    limit = data.draw(st.integers(1, len(full)))
    limited = find_candidates(
        snap,
        parse_request(_params(pairs + [('limit', str(limit))]), mv),
        mv,
        _options(strategy),
    )
    assert limited == full[:limit], pairs


# ------------------------------------------------- through the real API ---


def _populate(client, world):
    for t in TRAITS:
        assert client.put('/traits/%s' % t).status_code in (201, 204)
    for u in sorted(world, key=lambda v: len(ancestors(world, v))):
        p = world[u]
        body = {'uuid': u, 'name': 'rp-' + u[-4:]}
        if p['parent']:
            body['parent_provider_uuid'] = p['parent']
        assert client.post('/resource_providers', json=body).status_code == 200
        gen = 0
        for what, payload in (
            ('inventories', p['inv']),
            ('traits', sorted(p['traits'])),
            ('aggregates', sorted(p['aggs'])),
        ):
            if not payload:
                continue
            r = client.put(
                '/resource_providers/%s/%s' % (u, what),
                json={'resource_provider_generation': gen, what: payload},
            )
            assert r.status_code == 200, r.text
            gen = r.json()['resource_provider_generation']
        if p['used']:
            _claim(client, u, p['used'])


def _claim(client, u, resources):
    r = client.put(
        '/allocations/%s' % uuidlib.uuid4(),
        json={
            'allocations': {u: {'resources': resources}},
            'project_id': 'p',
            'user_id': 'u',
            'consumer_generation': None,
            'consumer_type': 'INSTANCE',
        },
    )
    assert r.status_code == 204, r.text


def _ask(client, pairs, mv):
    r = client.get(
        '/allocation_candidates',
        params=pairs,
        headers={'openstack-api-version': 'placement %d.%d' % mv},
    )
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_api_on_sqlite_matches_oracle(data):
    """REST writes, the database, the snapshot cache and the HTTP layer:
    the same answers. Then a claim changes a usage (the cache refreshes
    usages only) and the answer follows."""
    from nimbus.common import db as common_db
    from nimbus.placement import direct
    from tests.functional.placement import fixtures

    world = data.draw(st.one_of(worlds(), roomy_worlds()))
    mv = data.draw(st.sampled_from(MICROVERSIONS))
    pairs = data.draw(queries(world, mv))
    with tempfile.TemporaryDirectory() as tmp:
        url = 'sqlite:///%s/placement.sqlite' % tmp
        conf = fixtures.make_conf(url)
        try:
            with direct.PlacementDirect(conf) as client:
                client.headers['openstack-api-version'] = 'placement latest'
                _populate(client, world)
                want = check_answer(world, pairs, mv, _ask(client, pairs, mv))
                if mv >= (1, 16) and want:
                    limited = pairs + [('limit', '1')]
                    check_answer(
                        world, limited, mv, _ask(client, limited, mv), 1
                    )
                if want:
                    # take what the first candidate asks for, for real
                    items = sorted(next(iter(want))[0])
                    u, rc, amount = items[0]
                    _claim(client, u, {rc: amount})
                    world[u]['used'][rc] = world[u]['used'].get(rc, 0) + amount
                    check_answer(world, pairs, mv, _ask(client, pairs, mv))
        finally:
            common_db.get_database(url).dispose()
