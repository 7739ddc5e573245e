"""Turning candidates into the JSON body of ``GET /allocation_candidates``.

Every dict and list returned is freshly built; nothing from the shared
snapshot is handed out (the snapshot stores tuples only).

Shapes by microversion:

* allocation_requests: before 1.12 a list form
  ``{"allocations": [{"resource_provider": {"uuid": U}, "resources": {..}}]}``;
  from 1.12 ``{"allocations": {U: {"resources": {..}}}}``; from 1.34 plus
  ``"mappings": {suffix: [U, ..]}``.
* provider_summaries: ``{U: {"resources": {RC: {"capacity", "used"}}}}``;
  before 1.27 only requested resource classes; ``traits`` from 1.17;
  ``parent_provider_uuid``/``root_provider_uuid`` from 1.29.  From 1.29
  every provider of each tree that supplies resources is listed; before,
  only the providers in the allocation requests.
"""

from __future__ import annotations

import orjson

from nimbus.placement.candidates.groups import remember


def allocation_requests(cands, mv):
    out = []
    append = out.append
    if mv >= (1, 12):
        with_mappings = mv >= (1, 34)
        for items, mappings in cands:
            if len(mappings) == 1 and len(mappings[0][1]) == 1:
                # one group on one provider: the common case
                allocs = {
                    mappings[0][1][0]: {
                        'resources': {rc: amt for _p, rc, amt in items}
                    }
                }
                if with_mappings:
                    append(
                        {
                            'allocations': allocs,
                            'mappings': {mappings[0][0]: [mappings[0][1][0]]},
                        }
                    )
                else:
                    append({'allocations': allocs})
                continue
            allocs = {}
            for p, rc, amt in items:
                entry = allocs.get(p)
                if entry is None:
                    allocs[p] = {'resources': {rc: amt}}
                else:
                    entry['resources'][rc] = amt
            if with_mappings:
                append(
                    {
                        'allocations': allocs,
                        'mappings': {s: list(ps) for s, ps in mappings},
                    }
                )
            else:
                append({'allocations': allocs})
    else:
        for items, _mappings in cands:
            per = {}
            for p, rc, amt in items:
                per.setdefault(p, {})[rc] = amt
            append(
                {
                    'allocations': [
                        {'resource_provider': {'uuid': p}, 'resources': res}
                        for p, res in per.items()
                    ]
                }
            )
    return out


def uuids_of(snap, cands, mv):
    """The providers to summarise, in response order."""
    rp_order = {}
    for items, _m in cands:
        for p, _rc, _a in items:
            rp_order[p] = None
    if mv >= (1, 29):
        roots = {}
        provs = snap.providers
        for p in rp_order:
            roots[provs[p].root_uuid] = None
        return [u for r in roots for u in snap.tree[r]]
    return list(rp_order)


def provider_summaries(snap, cands, mv, requested_rcs):
    return summaries_of(snap, uuids_of(snap, cands, mv), mv, requested_rcs)


def summaries_of(snap, uuids, mv, requested_rcs):
    """The provider summaries of ``uuids``, in that order."""
    all_rcs = mv >= (1, 27)
    with_traits = mv >= (1, 17)
    nested = mv >= (1, 29)
    summ_res = snap.summary_resources
    sorted_traits = snap.sorted_traits
    provs = snap.providers
    out = {}
    if all_rcs and with_traits and nested:
        # The shape of every current microversion, built with literals.
        for u in uuids:
            p = provs[u]
            out[u] = {
                'resources': {
                    rc: {'capacity': cap, 'used': used}
                    for rc, cap, used in summ_res[u]
                },
                'traits': list(sorted_traits[u]),
                'parent_provider_uuid': p.parent_uuid,
                'root_provider_uuid': p.root_uuid,
            }
        return out
    for u in uuids:
        if all_rcs:
            res = {
                rc: {'capacity': cap, 'used': used}
                for rc, cap, used in summ_res[u]
            }
        else:
            res = {
                rc: {'capacity': cap, 'used': used}
                for rc, cap, used in summ_res[u]
                if rc in requested_rcs
            }
        entry = {'resources': res}
        if with_traits:
            entry['traits'] = list(sorted_traits[u])
        if nested:
            p = provs[u]
            entry['parent_provider_uuid'] = p.parent_uuid
            entry['root_provider_uuid'] = p.root_uuid
        out[u] = entry
    return out


# -- The body as JSON bytes ------------------------------------------------
#
# Building the response as dicts and then serialising them costs more than
# the search itself for thousands of candidates: tens of thousands of small
# dicts are allocated, traversed by orjson and freed again.  From 1.27 a
# provider summary depends on nothing but the provider (and the 1.29 shape
# flag), so each one is serialised once per snapshot and the bytes are
# reused by every response (``Snapshot.fragments``).  Allocation requests
# on a single provider (the common case) are written from a template; any
# other candidate goes through orjson.


def _summary_fragment(snap, u, nested):
    p = snap.providers[u]
    entry = {
        'resources': {
            rc: {'capacity': cap, 'used': used}
            for rc, cap, used in snap.summary_resources[u]
        },
        'traits': list(snap.sorted_traits[u]),
    }
    if nested:
        entry['parent_provider_uuid'] = p.parent_uuid
        entry['root_provider_uuid'] = p.root_uuid
    return orjson.dumps(u) + b':' + orjson.dumps(entry)


def _summaries_json(snap, uuids, nested):
    frags = snap.fragments[nested]
    parts = []
    append = parts.append
    for u in uuids:
        f = frags.get(u)
        if f is None:
            f = frags[u] = _summary_fragment(snap, u, nested)
        append(f)
    return b','.join(parts)


def _texts(snap, with_mappings):
    """The snapshot's memo of single-provider allocation requests as JSON
    text: ``id(candidate) -> (candidate, text)``. The engine hands out
    the very same candidate objects for anchors that supply a request on
    their own (``('flat', ..)`` memo, kept across allocation writes), so
    their text is written once; the entry holds its candidate, so an id
    is never reused while its entry exists. Cleared when it outgrows the
    providers (candidates built afresh by each request land here too)."""
    key = ('texts', with_mappings)
    texts = snap.memo.get(key)
    if texts is None or len(texts) > 2 * len(snap.providers) + 64:
        texts = remember(snap, key, {})
    return texts


def _requests_json(cands, mv, texts=None):
    with_mappings = mv >= (1, 34)
    resources = {}  # ((rc, amount), ..) -> JSON text
    suffixes = {}  # suffix -> JSON text
    if texts is None:
        texts = {}
    known = texts.get
    out = []
    append = out.append
    for cand in cands:
        entry = known(id(cand))
        if entry is not None and entry[0] is cand:
            append(entry[1])
            continue
        items, mappings = cand
        if len(mappings) == 1 and len(mappings[0][1]) == 1:
            suffix, (p,) = mappings[0]
            key = tuple([(rc, amt) for _p, rc, amt in items])
            res = resources.get(key)
            if res is None:
                res = resources[key] = orjson.dumps(dict(key)).decode()
            if with_mappings:
                s = suffixes.get(suffix)
                if s is None:
                    s = suffixes[suffix] = orjson.dumps(suffix).decode()
                text = (
                    '{"allocations":{"%s":{"resources":%s}},'
                    '"mappings":{%s:["%s"]}}' % (p, res, s, p)
                )
            else:
                text = '{"allocations":{"%s":{"resources":%s}}}' % (p, res)
            texts[id(cand)] = (cand, text)
            append(text)
        else:
            append(orjson.dumps(allocation_requests((cand,), mv)[0]).decode())
    return ','.join(out).encode()


def body_json(snap, cands, mv, requested_rcs):
    """The whole response body as JSON bytes (same content as the dicts)."""
    if mv < (1, 27) or not snap.plain_uuids:
        # Older shapes depend on the requested classes: the dict path.
        return orjson.dumps(
            {
                'allocation_requests': allocation_requests(cands, mv),
                'provider_summaries': provider_summaries(
                    snap, cands, mv, requested_rcs
                ),
            }
        )
    return b''.join(
        (
            b'{"allocation_requests":[',
            _requests_json(cands, mv, _texts(snap, mv >= (1, 34))),
            b'],"provider_summaries":{',
            _summaries_json(snap, uuids_of(snap, cands, mv), mv >= (1, 29)),
            b'}}',
        )
    )
