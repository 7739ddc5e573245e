"""How a snapshot's indexes and memo entries follow a usage change.

:meth:`Snapshot.with_usages <nimbus.placement.candidates.model.Snapshot.
with_usages>` derives the snapshot after an allocation write from the one
before; these copy what it keeps with the changed providers' entries
swapped, added or removed, instead of building them from every provider.
"""

from __future__ import annotations

import bisect


def fit(key, value, free, snap):
    """The engine's ``('fit', rc, amount)`` memo entry (``(pairs,
    by_anchor)``: the sorted ``(root, uuid)`` of the providers that can
    take ``amount`` of ``rc``, and ``dict(pairs)``) after the providers in
    ``free`` (``{(rc, uuid): free}``) changed usage: copied, with each of
    them added or removed, instead of filtered again from every
    provider."""
    _fit, rc, amount = key
    pairs, by_anchor = value
    moved = [(u, f) for (c, u), f in free.items() if c == rc]
    if not moved:
        return value
    pairs = list(pairs)
    for u, now in moved:
        _f, lo, hi, step, _cap, _used = snap.fit[u][rc]
        entry = (snap.providers[u].root_uuid, u)
        at = bisect.bisect_left(pairs, entry)
        there = at < len(pairs) and pairs[at] == entry
        fits = amount <= now and lo <= amount <= hi and not amount % step
        if fits and not there:
            pairs.insert(at, entry)
        elif there and not fits:
            del pairs[at]
    return pairs, dict(pairs)


def granular(key, options, changed, snap):
    """The engine's ``('granular', ..)`` memo entry (``{anchor: [piece]}``,
    each list ordered by provider uuid, see ``groups.granular_options``)
    after the providers of ``changed`` (uuids) changed usage, or None when
    it must be built again. Followed only for a group that asks for
    resources alone (no traits, aggregates, tree or root filter: those
    would need the whole search again): each changed provider with an
    inventory of a requested class gains or loses its piece, as it now
    has room or not; the lists touched are copies."""
    _g, items, required, forbidden, member_of, no_aggs, in_tree = key[:7]
    if required or forbidden or member_of or no_aggs or in_tree:
        return None
    if any(key[7:]):  # root_required, root_forbidden
        return None
    rcs = {rc for rc, _amt in items}
    new = None
    for u in changed:
        pfit = snap.fit[u]
        if not rcs.intersection(pfit):
            continue
        fits = all(
            rc in pfit
            and amt <= pfit[rc][0]
            and pfit[rc][1] <= amt <= pfit[rc][2]
            and amt % pfit[rc][3] == 0
            for rc, amt in items
        )
        root = snap.providers[u].root_uuid
        anchors = [root]
        if u in snap.sharing:
            anchors += [a for a in snap.anchors[u] if a != root]
        piece = (tuple((u, rc, amt) for rc, amt in items), (u,))
        for a in anchors:
            # ``new`` may be empty (every piece removed so far): it is
            # still the entry to follow, not ``options``
            pieces = (options if new is None else new).get(a, [])
            at = bisect.bisect_left([q[1][0] for q in pieces], u)
            there = at < len(pieces) and pieces[at][1][0] == u
            if fits == there:
                continue
            if new is None:
                new = dict(options)
            pieces = list(pieces)
            if fits:
                pieces.insert(at, piece)
            else:
                del pieces[at]
            if pieces:
                new[a] = pieces
            else:
                new.pop(a, None)
    return options if new is None else new


def _by_rc_key(entry):
    return entry[1], entry[0]


def by_rc_replaced(entries, replace):
    """``entries`` (a ``by_rc`` tuple, sorted by (root, uuid)) with the
    entry of each uuid of ``replace`` (``{uuid: new entry}``) swapped for
    the new one: found by bisection, the rest copied as is."""
    out = None
    for uuid, entry in replace.items():
        at = bisect.bisect_left(entries, (entry[1], uuid), key=_by_rc_key)
        if at == len(entries) or entries[at][0] != uuid:
            # not where the order puts it: the linear way
            return tuple(replace.get(e[0], e) for e in entries)
        if out is None:
            out = list(entries)
        out[at] = entry
    return entries if out is None else tuple(out)
