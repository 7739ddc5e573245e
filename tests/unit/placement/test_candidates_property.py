"""Property tests: the candidate engine against an independent oracle.

The oracle below is a slow, obviously-correct model of
GET /allocation_candidates. It shares nothing with the engine: it reads the
raw query pairs with its own small parser, works on plain dicts, and
enumerates every choice of provider for every resource of every request
group, straight from the rules OpenStack Placement documents (checked
against 16.0.0 by tests/integration/test_placement_conformance.py where the
words leave room):

* A candidate is built around one root provider, its *anchor*. A provider
  serves its own tree; a sharing provider (trait MISC_SHARES_VIA_AGGREGATE,
  anywhere) also serves every tree with a provider in one of its
  aggregates.
* A suffixed group is satisfied by one provider serving the anchor, which
  itself fits every requested amount, has the required traits (each any-of
  set met), none of the forbidden ones, is in the member_of aggregates (each
  any-of set met) and in no forbidden aggregate, and with ``in_tree`` is in
  that tree. A suffixed group without resources (1.36) is the same with no
  amounts.
* The unnumbered group takes each resource class from one provider (several
  providers may be used): of the anchor's tree, or a sharing provider
  serving it (not with ``in_tree``, which keeps the group inside that tree).
  The union of the traits of the providers used meets ``required``; none
  has a forbidden trait. Each provider used meets member_of itself or, when
  it is in the anchor's tree, through that root; neither it nor the anchor
  is in a forbidden aggregate. Suffixed groups inherit none of this.
* ``root_required``: the anchor's own traits. ``group_policy=isolate``:
  suffixed groups on pairwise different providers (the unnumbered group
  may share). ``same_subtree``: among the providers of the listed groups,
  one is an ancestor-or-self of all of them.
* Amounts of one class on one provider from several groups are added; the
  sum must fit the free capacity and max_unit.
* Below 1.29 a candidate may not use two providers of one tree; below 1.34
  candidates are told apart by their allocations only (no mappings).
* ``limit``: any subset of the full answer of size min(limit, all).

World: ``{uuid: {'parent': uuid | None, 'inv': {rc: {'total', 'reserved',
'min_unit', 'max_unit', 'step_size', 'allocation_ratio'}}, 'used': {rc: n},
'traits': set, 'aggs': set}}``.

Three properties: the engine on a snapshot built from the world (many
examples, every microversion that changes the answer), the whole API
(``PlacementDirect`` on SQLite: REST writes, the snapshot cache, the HTTP
layer; fewer examples), and the snapshot after usage changes.
"""
import itertools
import random
import re
import tempfile
import types
import uuid as uuidlib

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

SHARING = 'MISC_SHARES_VIA_AGGREGATE'
_KEY = re.compile(r'^(resources|required|member_of|in_tree)(.*)$')


# ------------------------------------------------------------- parsing ---

def _any_of_list(values):
    """``required``/``member_of`` values -> (list of sets, forbidden set)."""
    need, banned = [], set()
    for value in values:
        if value.startswith('!in:'):
            banned |= set(value[4:].split(','))
        elif value.startswith('in:'):
            need.append(set(value[3:].split(',')))
        else:
            for name in value.split(','):
                if name.startswith('!'):
                    banned.add(name[1:])
                else:
                    need.append({name})
    return need, banned


def parse(pairs):
    """Raw query pairs -> request dict (only valid queries are given)."""
    groups = {}
    req = {'groups': groups, 'policy': None, 'limit': None,
           'root_need': set(), 'root_ban': set(), 'subtrees': []}
    raw = {}
    for key, value in pairs:
        m = _KEY.match(key)
        if m:
            raw.setdefault(m.group(2), {}).setdefault(
                m.group(1), []).append(value)
        elif key == 'group_policy':
            req['policy'] = value
        elif key == 'limit':
            req['limit'] = int(value)
        elif key == 'root_required':
            need, ban = _any_of_list([value])
            req['root_need'] = set().union(*need) if need else set()
            req['root_ban'] = ban
        elif key == 'same_subtree':
            req['subtrees'].append(set(value.split(',')))
    for suffix, parts in raw.items():
        res = {}
        for item in ','.join(parts.get('resources', [])).split(','):
            if item:
                rc, amount = item.split(':')
                res[rc] = int(amount)
        traits, no_traits = _any_of_list(parts.get('required', []))
        aggs, no_aggs = _any_of_list(parts.get('member_of', []))
        groups[suffix] = {'res': res, 'traits': traits,
                          'no_traits': no_traits, 'aggs': aggs,
                          'no_aggs': no_aggs,
                          'in_tree': (parts.get('in_tree') or [None])[0]}
    return req


# --------------------------------------------------------------- world ---

def root(world, u):
    while world[u]['parent'] is not None:
        u = world[u]['parent']
    return u


def ancestors(world, u):
    out = {u}
    while world[u]['parent'] is not None:
        u = world[u]['parent']
        out.add(u)
    return out


def capacity(inv):
    return int((inv['total'] - inv['reserved']) * inv['allocation_ratio'])


def fits(world, u, rc, amount):
    inv = world[u]['inv'].get(rc)
    if inv is None:
        return False
    return (world[u]['used'].get(rc, 0) + amount <= capacity(inv)
            and inv['min_unit'] <= amount <= inv['max_unit']
            and amount % inv['step_size'] == 0)


def served_roots(world, u):
    """Roots of the trees ``u`` can serve."""
    out = {root(world, u)}
    if SHARING in world[u]['traits']:
        for v, p in world.items():
            if p['aggs'] & world[u]['aggs']:
                out.add(root(world, v))
    return out


def _meets(have, any_of_sets):
    return all(have & s for s in any_of_sets)


# ----------------------------------------------------------- candidates ---

def _suffixed_pieces(world, g, anchor):
    tree = root(world, g['in_tree']) if g['in_tree'] else None
    for u, p in sorted(world.items()):
        if anchor not in served_roots(world, u):
            continue
        if tree is not None and root(world, u) != tree:
            continue
        if not all(fits(world, u, rc, a) for rc, a in g['res'].items()):
            continue
        if not _meets(p['traits'], g['traits']) or p['traits'] & g[
                'no_traits']:
            continue
        if not _meets(p['aggs'], g['aggs']) or p['aggs'] & g['no_aggs']:
            continue
        yield {(u, rc): a for rc, a in g['res'].items()}, {u}


def _unnumbered_pieces(world, g, anchor):
    if g['in_tree'] and root(world, g['in_tree']) != anchor:
        return
    anchor_aggs = world[anchor]['aggs']
    if anchor_aggs & g['no_aggs']:
        return

    def usable(u, rc):
        p = world[u]
        own_tree = root(world, u) == anchor
        if not own_tree and (g['in_tree'] or SHARING not in p['traits']
                             or anchor not in served_roots(world, u)):
            return False
        if not fits(world, u, rc, g['res'][rc]):
            return False
        if p['traits'] & g['no_traits'] or p['aggs'] & g['no_aggs']:
            return False
        return (_meets(p['aggs'], g['aggs'])
                or (own_tree and _meets(anchor_aggs, g['aggs'])))

    rcs = sorted(g['res'])
    choices = [[u for u in sorted(world) if usable(u, rc)] for rc in rcs]
    for combo in itertools.product(*choices):
        used = set(combo)
        traits = set().union(*(world[u]['traits'] for u in used))
        if _meets(traits, g['traits']):
            yield ({(u, rc): g['res'][rc] for u, rc in zip(combo, rcs)},
                   used)


def candidates(world, req):
    """Every candidate: a set of ``(frozenset((uuid, rc, amount)),
    mappings)`` with mappings a sorted tuple of ``(suffix, (uuids,))``."""
    for g in req['groups'].values():
        if g['in_tree'] and g['in_tree'] not in world:
            return set()
    out = set()
    suffixes = sorted(req['groups'])
    for anchor in sorted(u for u in world if world[u]['parent'] is None):
        traits = world[anchor]['traits']
        if not req['root_need'] <= traits or traits & req['root_ban']:
            continue
        per_group = []
        for s in suffixes:
            g = req['groups'][s]
            maker = _suffixed_pieces if s else _unnumbered_pieces
            per_group.append(list(maker(world, g, anchor)))
        for choice in itertools.product(*per_group):
            mapping = dict(zip(suffixes, (used for _a, used in choice)))
            if not _policy_ok(req, mapping) or not _subtrees_ok(
                    world, req, mapping):
                continue
            total = {}
            for alloc, _used in choice:
                for key, a in alloc.items():
                    total[key] = total.get(key, 0) + a
            if all(world[u]['used'].get(rc, 0) + a
                   <= capacity(world[u]['inv'][rc])
                   and a <= world[u]['inv'][rc]['max_unit']
                   for (u, rc), a in total.items()):
                out.add((frozenset((u, rc, a) for (u, rc), a in
                                   total.items()),
                         tuple(sorted((s, tuple(sorted(v)))
                                      for s, v in mapping.items()))))
    return out


def _policy_ok(req, mapping):
    if req['policy'] != 'isolate':
        return True
    chosen = [next(iter(v)) for s, v in mapping.items() if s]
    return len(chosen) == len(set(chosen))


def _subtrees_ok(world, req, mapping):
    for names in req['subtrees']:
        rps = set().union(*(mapping[s] for s in names))
        if not any(rps <= {v for v in world
                           if top in ancestors(world, v)} for top in rps):
            return False
    return True


def expected(world, req, mv):
    """The answer at microversion ``mv`` as a set of comparable keys."""
    full = candidates(world, req)
    if mv < (1, 29):
        full = {c for c in full
                if len({root(world, u) for u, _rc, _a in c[0]})
                == len({u for u, _rc, _a in c[0]})}
    if mv < (1, 34):
        full = {(items, None) for items, _m in full}
    return full


def summaries(world, req, mv, answer):
    """The provider_summaries expected for the candidates ``answer``."""
    used = {u for items, _m in answer for u, _rc, _a in items}
    if mv >= (1, 29):
        roots = {root(world, u) for u in used}
        shown = {u for u in world if root(world, u) in roots}
    else:
        shown = used
    asked = {rc for g in req['groups'].values() for rc in g['res']}
    out = {}
    for u in shown:
        p = world[u]
        entry = {'resources': {
            rc: {'capacity': capacity(inv), 'used': p['used'].get(rc, 0)}
            for rc, inv in p['inv'].items()
            if mv >= (1, 27) or rc in asked}}
        if mv >= (1, 17):
            entry['traits'] = sorted(p['traits'])
        if mv >= (1, 29):
            entry['parent_provider_uuid'] = p['parent']
            entry['root_provider_uuid'] = root(world, u)
        out[u] = entry
    return out


def answer_of(body, mv):
    """A response body -> (set of candidate keys, list of them, summaries
    with sorted traits)."""
    keys = []
    for ar in body['allocation_requests']:
        allocs = ar['allocations']
        if isinstance(allocs, list):
            items = frozenset((a['resource_provider']['uuid'], rc, n)
                              for a in allocs
                              for rc, n in a['resources'].items())
        else:
            items = frozenset((u, rc, n) for u, v in allocs.items()
                              for rc, n in v['resources'].items())
        mappings = None
        if mv >= (1, 34):
            mappings = tuple(sorted((s, tuple(sorted(v)))
                                    for s, v in ar['mappings'].items()))
        keys.append((items, mappings))
    summ = {}
    for u, s in body['provider_summaries'].items():
        s = dict(s)
        if 'traits' in s:
            s['traits'] = sorted(s['traits'])
        summ[u] = s
    return set(keys), keys, summ


# ---------------------------------------------------------- strategies ---

RCS = ('VCPU', 'MEMORY_MB', 'DISK_GB')
TRAITS = ('CUSTOM_T1', 'CUSTOM_T2', 'CUSTOM_T3')
AGGS = tuple(str(uuidlib.UUID(int=0xA1 + i)) for i in range(3))
MICROVERSIONS = ((1, 10), (1, 17), (1, 25), (1, 28), (1, 29), (1, 33),
                 (1, 34), (1, 36), (1, 39))


def _uuid(n):
    return str(uuidlib.UUID(int=n))


@st.composite
def inventory(draw):
    total = draw(st.integers(2, 8))
    min_unit = draw(st.sampled_from((1, 1, 1, 2)))
    inv = {'total': total, 'reserved': draw(st.sampled_from((0, 0, 1))),
           'min_unit': min_unit,
           'max_unit': draw(st.sampled_from((total, total, min_unit,
                                             max(min_unit, total // 2)))),
           'step_size': draw(st.sampled_from((1, 1, 1, 2))),
           'allocation_ratio': draw(st.sampled_from((1.0, 1.0, 1.5, 2.0)))}
    # a usage Placement itself would have accepted
    ok = [a for a in range(inv['min_unit'], inv['max_unit'] + 1)
          if a % inv['step_size'] == 0 and a <= capacity(inv)]
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
                for rc in draw(st.sets(st.sampled_from(RCS), min_size=int(
                        draw(st.integers(0, 4)) > 0))):
                    inv[rc], amount = draw(inventory())
                    if amount:
                        used[rc] = amount
                traits = set(draw(st.sets(st.sampled_from(TRAITS),
                                          max_size=2)))
                if draw(st.integers(0, 5)) == 0:
                    traits.add(SHARING)
                world[_uuid(n)] = {
                    'parent': parent, 'inv': inv, 'used': used,
                    'traits': traits,
                    'aggs': set(draw(st.sets(st.sampled_from(AGGS),
                                             max_size=2)))}
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
        world[u] = {'parent': parent, 'used': {}, 'traits': traits,
                    'aggs': set(draw(st.sets(st.sampled_from(AGGS),
                                             max_size=1))),
                    'inv': {rc: {'total': draw(st.integers(2, 4)),
                                 'reserved': 0, 'min_unit': 1,
                                 'max_unit': draw(st.sampled_from((1, 2, 4))),
                                 'step_size': 1, 'allocation_ratio': 1.0}
                            for rc in rcs}}
        return u

    for _ in range(draw(st.integers(1, 2))):
        r = add(None, ['VCPU'])
        for _ in range(draw(st.integers(1, 3))):
            c = add(r, draw(st.sets(st.sampled_from(RCS), min_size=1,
                                    max_size=2)))
            for _ in range(draw(st.integers(0, 2))):
                add(c, draw(st.sets(st.sampled_from(RCS), min_size=1,
                                    max_size=1)))
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
            names = draw(st.sampled_from(([need_a], [need_b],
                                          [need_a, need_b])))
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
            aggs = draw(st.lists(st.sampled_from(AGGS), min_size=1,
                                 max_size=2, unique=True))
            neg = '!' if mv >= (1, 32) and draw(st.booleans()) else ''
            yield neg + ('in:' + ','.join(aggs) if len(aggs) > 1
                         else aggs[0])

    def group(suffix, max_rcs, resourceless=False):
        if not resourceless:
            rcs = draw(st.lists(st.sampled_from(RCS), min_size=1,
                                max_size=max_rcs, unique=True))
            pairs.append(('resources' + suffix, ','.join(
                '%s:%d' % (rc, draw(st.sampled_from((1, 1, 2))))
                for rc in rcs)))
        required = list(traits())
        if resourceless and not required:
            required = [draw(st.sampled_from(TRAITS))]
        pairs.extend(('required' + suffix, v) for v in required)
        pairs.extend(('member_of' + suffix, v) for v in member_of())
        if mv >= (1, 31) and draw(st.integers(0, 6)) == 0:
            pairs.append(('in_tree' + suffix, draw(st.sampled_from(
                sorted(world) + [_uuid(999)]))))

    n_suffixed = draw(st.integers(0, 2)) if mv >= (1, 25) else 0
    if not n_suffixed or draw(st.booleans()):
        group('', 2 if n_suffixed else 3)
    names = (['_A', '_B'] if mv >= (1, 33) and draw(st.booleans())
             else ['1', '2'])[:n_suffixed]
    resourceless = (mv >= (1, 36) and n_suffixed == 2
                    and draw(st.integers(0, 2)) == 0)
    for i, s in enumerate(names):
        group(s, 2, resourceless=resourceless and i == 1)
    if n_suffixed:
        pairs.append(('group_policy', draw(st.sampled_from(
            ('none', 'isolate')))))
    if mv >= (1, 36) and n_suffixed == 2 and (resourceless
                                              or draw(st.booleans())):
        pairs.append(('same_subtree', ','.join(names)))
    if mv >= (1, 35) and draw(st.integers(0, 5)) == 0:
        a, b = draw(st.lists(st.sampled_from(TRAITS), min_size=2,
                             max_size=2, unique=True))
        pairs.append(('root_required', draw(st.sampled_from(
            (a, '!' + a, '%s,!%s' % (a, b))))))
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
    provs = [Provider(uuid=u, name=u, generation=0, parent_uuid=p['parent'],
                      root_uuid=root(world, u),
                      inventories={rc: Inventory(**inv)
                                   for rc, inv in p['inv'].items()},
                      usages=dict(p['used']), traits=frozenset(p['traits']),
                      aggregates=frozenset(p['aggs']))
             for u, p in world.items()]
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
        rng=random.Random(seed))


@settings(max_examples=700, deadline=None,
          suppress_health_check=[HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(st.data())
def test_engine_matches_oracle(data):
    from nimbus.placement.candidates import get_allocation_candidates
    world = data.draw(st.one_of(worlds(), roomy_worlds()))
    mv = data.draw(st.sampled_from(MICROVERSIONS))
    pairs = data.draw(queries(world, mv))
    snap = _snapshot(world)
    strategy = data.draw(st.sampled_from(('depth-first', 'breadth-first')))
    body = get_allocation_candidates(snap, _params(pairs), mv,
                                     _options(strategy))
    want = check_answer(world, pairs, mv, body)
    event('candidates: %s' % ('none' if not want else '1' if len(want) == 1
                              else '2-5' if len(want) <= 5 else 'more'))
    if mv >= (1, 16) and want:
        limit = data.draw(st.integers(1, len(want) + 1))
        limited = pairs + [('limit', str(limit))]
        body = get_allocation_candidates(
            snap, _params(limited), mv, _options(
                strategy, randomize=data.draw(st.booleans()),
                seed=data.draw(st.integers(0, 99))))
        check_answer(world, limited, mv, body, limit)


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
        for what, payload in (('inventories', p['inv']),
                              ('traits', sorted(p['traits'])),
                              ('aggregates', sorted(p['aggs']))):
            if not payload:
                continue
            r = client.put('/resource_providers/%s/%s' % (u, what), json={
                'resource_provider_generation': gen, what: payload})
            assert r.status_code == 200, r.text
            gen = r.json()['resource_provider_generation']
        if p['used']:
            _claim(client, u, p['used'])


def _claim(client, u, resources):
    r = client.put('/allocations/%s' % uuidlib.uuid4(), json={
        'allocations': {u: {'resources': resources}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    assert r.status_code == 204, r.text


def _ask(client, pairs, mv):
    r = client.get('/allocation_candidates', params=pairs, headers={
        'openstack-api-version': 'placement %d.%d' % mv})
    assert r.status_code == 200, r.text
    return r.json()


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
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
                want = check_answer(world, pairs, mv,
                                    _ask(client, pairs, mv))
                if mv >= (1, 16) and want:
                    limited = pairs + [('limit', '1')]
                    check_answer(world, limited, mv,
                                 _ask(client, limited, mv), 1)
                if want:
                    # take what the first candidate asks for, for real
                    items = sorted(next(iter(want))[0])
                    u, rc, amount = items[0]
                    _claim(client, u, {rc: amount})
                    world[u]['used'][rc] = world[u]['used'].get(
                        rc, 0) + amount
                    check_answer(world, pairs, mv, _ask(client, pairs, mv))
        finally:
            common_db.get_database(url).dispose()
