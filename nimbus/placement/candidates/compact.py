"""The compact body of ``GET /allocation_candidates`` (Nimbus's scheduler only).

A client that sends ``X-Nimbus-Candidates: compact-1`` at microversion 1.34
or later gets the same answer in fewer bytes and far fewer JSON objects,
and the response carries the same header to say so. Without the header
(every OpenStack client) the body is Placement's, unchanged. At 1000 hosts
the plain query's standard body is about 0.6 MB of small dicts, and
decoding it was the largest share of the scheduler's CPU per boot.

The compact body holds exactly the standard body's information::

    {"compact": 1,
     "flat": {"resources": {RC: amount}, "suffix": S} | null,
     "allocation_requests": [U | <standard allocation request>, ..],
     "resource_classes": [RC, ..],
     "trait_sets": [[trait, ..], ..],
     "provider_summaries": {U: [parent_uuid, root_uuid, trait_set_index,
                                [rc_index, capacity, used, ..]]}}

An allocation request written as a provider uuid ``U`` is
``{"allocations": {U: {"resources": flat.resources}}, "mappings":
{flat.suffix: [U]}}``; any other is written in full, in its place, so the
order is placement's. Summaries list the same providers in the same order,
their resource classes in the standard body's order.

``resource_classes`` is the snapshot's whole list and ``trait_sets`` every
distinct trait set of its providers, so a provider's summary row depends
on nothing but the provider and is written once per snapshot, as the
standard summaries are (render.py).
"""

from __future__ import annotations

import itertools

import orjson

from nimbus.placement.candidates import render
from nimbus.placement.candidates.groups import remember

HEADER = 'X-Nimbus-Candidates'
VERSION = 'compact-1'
# Mappings (1.34) and the full summaries (1.27 all classes, 1.29 trees)
# are what the compact form carries.
MIN_MICROVERSION = (1, 34)
# ``Snapshot.memo`` key of the trait table (kept by usage writes: see
# ``model.USAGE_FREE_MEMO``) and ``Snapshot.fragments`` key of the rows.
_TRAITS = ('compact-traits',)
_FRAGMENTS = 'compact'


def wanted(header_value, mv) -> bool:
    """True when a request asks for (and may have) the compact body."""
    return header_value == VERSION and tuple(mv) >= MIN_MICROVERSION


def body_json(snap, cands, mv) -> bytes:
    flat_key = flat_suffix = None
    requests = []
    append = requests.append
    full = render.allocation_requests
    seen = _seen_candidates(snap)
    provs = snap.providers
    roots = {}  # the summarised trees' roots, in response order
    for cand in cands:
        known = seen.get(id(cand))
        if known is None or known[0] is not cand:
            known = _shape(cand, provs)
            if len(seen) >= _SEEN_MAX:
                seen.clear()
            seen[id(cand)] = known
        _cand, p, key, suffix, cand_roots = known
        if p is not None:
            if flat_key is None:
                flat_key, flat_suffix = key, suffix
            if key == flat_key and suffix == flat_suffix:
                append(p)
                roots[cand_roots[0]] = None
                continue
        append(full((cand,), mv)[0])
        for r in cand_roots:
            roots[r] = None
    rc_index = {rc: i for i, rc in enumerate(snap.rc_sequence)}
    trait_sets, trait_of = _trait_table(snap)
    head = orjson.dumps(
        {
            'compact': 1,
            'flat': None
            if flat_key is None
            else {'resources': dict(flat_key), 'suffix': flat_suffix},
            'allocation_requests': requests,
            'resource_classes': list(snap.rc_sequence),
            'trait_sets': trait_sets,
        }
    )
    # the providers render.uuids_of lists (every tree of a provider the
    # requests use, in order of first use), at C speed
    uuids = list(
        itertools.chain.from_iterable(map(snap.tree.__getitem__, roots))
    )
    rows = _rows(snap, uuids, trait_of, rc_index)
    return b''.join((head[:-1], b',"provider_summaries":{', rows, b'}}'))


# ``Snapshot.memo`` key of what body_json learnt of each candidate it saw
# (``{id(candidate): (candidate, ..)}``, the candidate itself held so its
# id names no other object): the engine hands out the very same
# candidate objects again for hosts that supply a request alone (its
# ``('flat', ..)`` memo, kept across usage writes), and so is this.
_SEEN = ('compact-seen',)
_SEEN_MAX = 20_000


def _seen_candidates(snap):
    seen = snap.memo.get(_SEEN)
    if seen is None:
        seen = remember(snap, _SEEN, {})
    return seen


def _shape(cand, provs):
    """``(cand, provider, flat key, suffix, roots)``: ``provider`` the
    one provider of a single-provider candidate (with its resources as
    ``flat key`` and its group suffix), else None; ``roots`` the roots
    of the providers it uses, in order of first use (a tuple). A
    function of the candidate and the providers' trees alone."""
    items, mappings = cand
    roots = {}
    for u, _rc, _amt in items:
        roots[provs[u].root_uuid] = None
    if len(mappings) == 1 and len(mappings[0][1]) == 1:
        suffix, (p,) = mappings[0]
        key = tuple([(rc, amt) for _p, rc, amt in items])
        return cand, p, key, suffix, tuple(roots)
    return cand, None, None, None, tuple(roots)


def _trait_table(snap):
    """``(trait sets, {uuid: index})`` over every provider of ``snap``, in
    provider order: a function of the providers' traits alone, so every
    snapshot a usage write derives from this one has the same table (and
    a table built twice is the same table)."""
    table = snap.memo.get(_TRAITS)
    if table is None:
        index: dict = {}
        of = {}
        for u, traits in snap.sorted_traits.items():
            j = index.get(traits)
            if j is None:
                j = index[traits] = len(index)
            of[u] = j
        table = remember(snap, _TRAITS, ([list(t) for t in index], of))
    return table


def _rows(snap, uuids, trait_of, rc_at):
    """The summaries' JSON members, each provider's written once per
    snapshot (``Snapshot.fragments['compact']``; a usage write keeps the
    unchanged providers' ones). Resource classes are indexes into the
    snapshot's ``rc_sequence``, trait sets into :func:`_trait_table`."""
    frags = snap.fragments.get(_FRAGMENTS)
    if frags is None:
        frags = snap.fragments.setdefault(_FRAGMENTS, {})
    parts = list(map(frags.get, uuids))
    if None in parts:
        provs = snap.providers
        summ_res = snap.summary_resources
        for i, f in enumerate(parts):
            if f is not None:
                continue
            u = uuids[i]
            row = []
            for rc, cap, used in summ_res[u]:
                row += (rc_at[rc], cap, used)
            p = provs[u]
            f = frags[u] = (
                orjson.dumps(u)
                + b':'
                + orjson.dumps((p.parent_uuid, p.root_uuid, trait_of[u], row))
            )
            parts[i] = f
    return b','.join(parts)
