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


def allocation_requests(cands, mv):
    out = []
    append = out.append
    if mv >= (1, 12):
        with_mappings = mv >= (1, 34)
        for items, mappings in cands:
            if len(mappings) == 1 and len(mappings[0][1]) == 1:
                # one group on one provider: the common case
                allocs = {mappings[0][1][0]: {'resources': {
                    rc: amt for _p, rc, amt in items}}}
                if with_mappings:
                    append({'allocations': allocs,
                            'mappings': {mappings[0][0]: [
                                mappings[0][1][0]]}})
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
                append({'allocations': allocs,
                        'mappings': {s: list(ps) for s, ps in mappings}})
            else:
                append({'allocations': allocs})
    else:
        for items, _mappings in cands:
            per = {}
            for p, rc, amt in items:
                per.setdefault(p, {})[rc] = amt
            append({'allocations': [
                {'resource_provider': {'uuid': p}, 'resources': res}
                for p, res in per.items()]})
    return out


def provider_summaries(snap, cands, mv, requested_rcs):
    rp_order = {}
    for items, _m in cands:
        for p, _rc, _a in items:
            rp_order[p] = None
    if mv >= (1, 29):
        roots = {}
        provs = snap.providers
        for p in rp_order:
            roots[provs[p].root_uuid] = None
        uuids = [u for r in roots for u in snap.tree[r]]
    else:
        uuids = list(rp_order)
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
                'resources': {rc: {'capacity': cap, 'used': used}
                              for rc, cap, used in summ_res[u]},
                'traits': list(sorted_traits[u]),
                'parent_provider_uuid': p.parent_uuid,
                'root_provider_uuid': p.root_uuid}
        return out
    for u in uuids:
        if all_rcs:
            res = {rc: {'capacity': cap, 'used': used}
                   for rc, cap, used in summ_res[u]}
        else:
            res = {rc: {'capacity': cap, 'used': used}
                   for rc, cap, used in summ_res[u] if rc in requested_rcs}
        entry = {'resources': res}
        if with_traits:
            entry['traits'] = list(sorted_traits[u])
        if nested:
            p = provs[u]
            entry['parent_provider_uuid'] = p.parent_uuid
            entry['root_provider_uuid'] = p.root_uuid
        out[u] = entry
    return out
