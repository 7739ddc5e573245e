"""An independent oracle for GET /allocation_candidates.


This module is a slow, obviously-correct model of
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
"""

import itertools
import re

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
    req = {
        'groups': groups,
        'policy': None,
        'limit': None,
        'root_need': set(),
        'root_ban': set(),
        'subtrees': [],
    }
    raw = {}
    for key, value in pairs:
        m = _KEY.match(key)
        if m:
            raw.setdefault(m.group(2), {}).setdefault(m.group(1), []).append(
                value
            )
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
        groups[suffix] = {
            'res': res,
            'traits': traits,
            'no_traits': no_traits,
            'aggs': aggs,
            'no_aggs': no_aggs,
            'in_tree': (parts.get('in_tree') or [None])[0],
        }
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
    return (
        world[u]['used'].get(rc, 0) + amount <= capacity(inv)
        and inv['min_unit'] <= amount <= inv['max_unit']
        and amount % inv['step_size'] == 0
    )


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
        if (
            not _meets(p['traits'], g['traits'])
            or p['traits'] & g['no_traits']
        ):
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
        if not own_tree and (
            g['in_tree']
            or SHARING not in p['traits']
            or anchor not in served_roots(world, u)
        ):
            return False
        if not fits(world, u, rc, g['res'][rc]):
            return False
        if p['traits'] & g['no_traits'] or p['aggs'] & g['no_aggs']:
            return False
        return _meets(p['aggs'], g['aggs']) or (
            own_tree and _meets(anchor_aggs, g['aggs'])
        )

    rcs = sorted(g['res'])
    choices = [[u for u in sorted(world) if usable(u, rc)] for rc in rcs]
    for combo in itertools.product(*choices):
        used = set(combo)
        traits = set().union(*(world[u]['traits'] for u in used))
        if _meets(traits, g['traits']):
            yield (
                {
                    (u, rc): g['res'][rc]
                    for u, rc in zip(combo, rcs, strict=False)
                },
                used,
            )


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
            mapping = dict(
                zip(suffixes, (used for _a, used in choice), strict=False)
            )
            if not _policy_ok(req, mapping) or not _subtrees_ok(
                world, req, mapping
            ):
                continue
            total = {}
            for alloc, _used in choice:
                for key, a in alloc.items():
                    total[key] = total.get(key, 0) + a
            if all(
                world[u]['used'].get(rc, 0) + a
                <= capacity(world[u]['inv'][rc])
                and a <= world[u]['inv'][rc]['max_unit']
                for (u, rc), a in total.items()
            ):
                out.add(
                    (
                        frozenset((u, rc, a) for (u, rc), a in total.items()),
                        tuple(
                            sorted(
                                (s, tuple(sorted(v)))
                                for s, v in mapping.items()
                            )
                        ),
                    )
                )
    return out


def _policy_ok(req, mapping):
    if req['policy'] != 'isolate':
        return True
    chosen = [next(iter(v)) for s, v in mapping.items() if s]
    return len(chosen) == len(set(chosen))


def _subtrees_ok(world, req, mapping):
    for names in req['subtrees']:
        rps = set().union(*(mapping[s] for s in names))
        if not any(
            rps <= {v for v in world if top in ancestors(world, v)}
            for top in rps
        ):
            return False
    return True


def expected(world, req, mv):
    """The answer at microversion ``mv`` as a set of comparable keys."""
    full = candidates(world, req)
    if mv < (1, 29):
        full = {
            c
            for c in full
            if len({root(world, u) for u, _rc, _a in c[0]})
            == len({u for u, _rc, _a in c[0]})
        }
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
        entry = {
            'resources': {
                rc: {'capacity': capacity(inv), 'used': p['used'].get(rc, 0)}
                for rc, inv in p['inv'].items()
                if mv >= (1, 27) or rc in asked
            }
        }
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
            items = frozenset(
                (a['resource_provider']['uuid'], rc, n)
                for a in allocs
                for rc, n in a['resources'].items()
            )
        else:
            items = frozenset(
                (u, rc, n)
                for u, v in allocs.items()
                for rc, n in v['resources'].items()
            )
        mappings = None
        if mv >= (1, 34):
            mappings = tuple(
                sorted(
                    (s, tuple(sorted(v))) for s, v in ar['mappings'].items()
                )
            )
        keys.append((items, mappings))
    summ = {}
    for u, s in body['provider_summaries'].items():
        s = dict(s)
        if 'traits' in s:
            s['traits'] = sorted(s['traits'])
        summ[u] = s
    return set(keys), keys, summ
