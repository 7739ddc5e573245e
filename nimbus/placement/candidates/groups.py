"""Per-request-group matching: which providers can satisfy one group, and
for which anchor (root provider) tree.

A *piece* is how one group is satisfied: ``(alloc, providers)`` where
``alloc`` is a tuple of ``(provider_uuid, resource_class, amount)`` and
``providers`` the sorted tuple of provider uuids the group maps to (for
``mappings``; a resourceless group has an empty ``alloc``).

An *anchor* is the root of the tree an allocation request is built around.
A provider serves its own root; a sharing provider (MISC_SHARES_VIA_AGGREGATE)
also serves the roots of every tree that has a provider in one of its
aggregates.  Every group of one allocation request must use the same anchor.

Rules (Placement 1.39 semantics):

* Suffixed (granular) group: one provider supplies all its resources and
  itself has the required traits (AND of any-of sets), none of the forbidden
  traits, is itself in the member_of aggregates and in no forbidden
  aggregate; with ``in_tree`` it is in that tree.
* Unnumbered group: each resource class comes from one provider of the anchor
  tree or a sharing provider serving it; different classes may come from
  different providers.  The union of the traits of the providers used must
  satisfy ``required``; none of them may have a forbidden trait.  member_of
  is met when the provider or its root (the anchor, for a sharing provider
  that is itself a member) is in the aggregates; forbidden aggregates must
  be on neither the provider nor the anchor.  With ``in_tree`` only
  providers of that tree are used, sharing providers of other trees not.
"""

from __future__ import annotations

import itertools

from nimbus.placement.candidates.model import Snapshot


def _union(index, names):
    out = set()
    for n in names:
        s = index.get(n)
        if s:
            out |= s
    return out


def providers_in_aggs(snap: Snapshot, member_of) -> set[str]:
    """Providers meeting every any-of set of aggregates."""
    result = None
    for any_of in member_of:
        s = _union(snap.by_agg, any_of)
        result = s if result is None else result & s
        if not result:
            return set()
    return result if result is not None else set()


def roots_with_traits(snap: Snapshot, required, forbidden):
    """Root uuids that have all ``required`` and none of ``forbidden``, or
    None when that is every root: no filter at all, which spares the
    groups a membership test per provider (a request that forbids
    ``COMPUTE_STATUS_DISABLED`` while no host is disabled, the common
    case)."""
    if not required:
        # only forbidden traits: look at their holders, not every root
        provs = snap.providers
        bad = {
            u
            for u in _union(snap.by_trait, forbidden)
            if provs[u].parent_uuid is None
        }
        if not bad:
            return None
        return set(snap.roots) - bad
    roots = set(snap.roots)
    for t in required:
        roots &= snap.by_trait.get(t, frozenset())
    for t in forbidden:
        roots -= snap.by_trait.get(t, frozenset())
    if len(roots) == len(snap.roots):
        return None
    return roots


def _tree_root(snap, in_tree):
    if in_tree is None:
        return None, True
    p = snap.providers.get(in_tree)
    if p is None:
        return None, False
    return p.root_uuid, True


def granular_options(snap: Snapshot, g, anchor_ok) -> dict[str, list]:
    """anchor -> list of pieces for a suffixed group (one provider each)."""
    tree_root, ok = _tree_root(snap, g.in_tree)
    if not ok:
        return {}
    cand = None
    for rc, amt in sorted(
        g.resources.items(), key=lambda kv: len(snap.by_rc.get(kv[0], ()))
    ):
        s = {
            u
            for (u, _r, free, mn, mx, st) in snap.by_rc.get(rc, ())
            if amt <= free and mn <= amt <= mx and amt % st == 0
        }
        cand = s if cand is None else cand & s
        if not cand:
            return {}
    for any_of in g.required:
        s = _union(snap.by_trait, any_of)
        cand = s if cand is None else cand & s
        if not cand:
            return {}
    if g.member_of:
        s = providers_in_aggs(snap, g.member_of)
        cand = s if cand is None else cand & s
        if not cand:
            return {}
    if cand is None:
        cand = set(snap.providers)
    if g.forbidden:
        cand -= _union(snap.by_trait, g.forbidden)
    if g.forbidden_aggs:
        cand -= _union(snap.by_agg, g.forbidden_aggs)
    provs = snap.providers
    if tree_root is not None:
        cand = {u for u in cand if provs[u].root_uuid == tree_root}
    items = sorted(g.resources.items())
    options: dict[str, list] = {}
    sharing = snap.sharing
    for u in sorted(cand):
        piece = (tuple((u, rc, amt) for rc, amt in items), (u,))
        root = provs[u].root_uuid
        if anchor_ok is None or root in anchor_ok:
            options.setdefault(root, []).append(piece)
        if u in sharing:
            for a in snap.anchors[u]:
                if a != root and (anchor_ok is None or a in anchor_ok):
                    options.setdefault(a, []).append(piece)
    return options


def fitting(snap: Snapshot, rc, amt):
    """``(pairs, by_anchor)``: the ``(root, uuid)`` of every provider that
    can take ``amt`` of ``rc`` (free capacity, min/max unit, step size) and
    ``dict(pairs)``.  Memoised per snapshot: both are shared, read-only."""
    key = ('fit', rc, amt)
    hit = snap.memo.get(key)
    if hit is None:
        pairs = [
            (root, u)
            for (u, root, free, mn, mx, st) in snap.by_rc.get(rc, ())
            if amt <= free and mn <= amt <= mx and not amt % st
        ]
        hit = remember(snap, key, (pairs, dict(pairs)))
    return hit


def remember(snap: Snapshot, key, value):
    """Store ``value`` in the snapshot's bounded memo; returns it."""
    memo = snap.memo
    if len(memo) >= MEMO_SIZE:
        memo.clear()
    memo[key] = value
    return value


MEMO_SIZE = 256
# request shapes whose flat anchors' candidates a snapshot keeps (each at
# most one per root: about 5 MB at 10,000 hosts)
FLAT_SHAPES = 16


class UnnumberedOptions:
    """Lazy options of the unnumbered group: per anchor, the product of the
    candidate providers of each resource class, filtered by traits.

    ``per_rc`` holds one dict per requested resource class (sorted by name):
    anchor -> provider uuid when ``singles[i]`` is True (each anchor has one
    candidate, the common case, built at C speed with ``dict()``), else
    anchor -> sorted list of provider uuids. ``ordered`` holds per class
    the ``(root, uuid)`` pairs behind that dict, sorted, or None when
    sharing providers added pairs out of order.

    ``anchors`` (the set of anchors every class can use) is computed on
    first use; :meth:`ordered_anchors` yields them sorted without building
    it, so a request that stops at its ``limit`` pays for the anchors it
    visits, not for every provider.
    """

    __slots__ = (
        'snap',
        'group',
        'rcs',
        'amounts',
        'per_rc',
        'singles',
        'ordered',
        '_anchors',
    )

    def __init__(self, snap: Snapshot, g, anchor_ok):
        self.snap = snap
        self.group = g
        self.rcs = sorted(g.resources)
        self.amounts = [g.resources[rc] for rc in self.rcs]
        self.per_rc: list[dict] = []
        self.singles: list[bool] = []
        self.ordered: list = []
        self._anchors = None
        tree_root, ok = _tree_root(snap, g.in_tree)
        if not ok:
            return
        local_ok = anchor_ok
        if g.required:
            # Prefilter anchors: each any-of set needs a provider with one of
            # its traits in the tree or among sharing providers serving it.
            provs = snap.providers
            for any_of in g.required:
                holders = _union(snap.by_trait, any_of)
                roots = {provs[u].root_uuid for u in holders}
                for u in holders & snap.sharing:
                    roots.update(snap.anchors[u])
                local_ok = roots if local_ok is None else (local_ok & roots)
                if not local_ok:
                    return
        in_aggs = None
        if g.member_of:
            in_aggs = providers_in_aggs(snap, g.member_of)
            if not in_aggs:
                return
        bad = set()
        if g.forbidden:
            bad |= _union(snap.by_trait, g.forbidden)
        bad_aggs = _union(snap.by_agg, g.forbidden_aggs)
        bad |= bad_aggs
        filtered = bool(
            tree_root is not None
            or local_ok is not None
            or in_aggs is not None
            or bad
        )
        sharing = snap.sharing
        for rc, amt in zip(self.rcs, self.amounts, strict=False):
            pairs, plain_by_anchor = fitting(snap, rc, amt)
            extra = []
            if sharing and tree_root is None:
                for root, u in pairs:
                    if (
                        u not in sharing
                        or u in bad
                        or (in_aggs is not None and u not in in_aggs)
                    ):
                        continue
                    for a in snap.anchors[u]:
                        if (
                            a != root
                            and a not in bad_aggs
                            and (local_ok is None or a in local_ok)
                        ):
                            extra.append((a, u))
            if filtered:
                pairs = [
                    (root, u)
                    for root, u in pairs
                    if u not in bad
                    and (tree_root is None or root == tree_root)
                    and (local_ok is None or root in local_ok)
                    and root not in bad_aggs
                    and (in_aggs is None or u in in_aggs or root in in_aggs)
                ]
            if extra:
                pairs = pairs + extra
            if not filtered and not extra:
                by_anchor = plain_by_anchor
            else:
                by_anchor = dict(pairs)
            single = len(by_anchor) == len(pairs)
            if not single:
                by_anchor = {}
                for root, u in pairs:
                    lst = by_anchor.get(root)
                    if lst is None:
                        by_anchor[root] = [u]
                    else:
                        lst.append(u)
                if extra:
                    for lst in by_anchor.values():
                        lst.sort()
            if not by_anchor:
                self.per_rc = []
                return
            self.per_rc.append(by_anchor)
            self.singles.append(single)
            self.ordered.append(None if extra else pairs)

    @property
    def anchors(self) -> set[str]:
        """The anchors every requested class can use."""
        if self._anchors is None:
            common = None
            for by_anchor in self.per_rc:
                common = (
                    set(by_anchor)
                    if common is None
                    else common & by_anchor.keys()
                )
                if not common:
                    break
            self._anchors = common or set()
        return self._anchors

    def ordered_anchors(self):
        """Yield :attr:`anchors` in sorted order: the sorted pairs of the
        class with the fewest, each root once, if every other class can
        use it too (a sort of all anchors when sharing providers added
        pairs)."""
        if not self.per_rc:
            return
        if self._anchors is not None or any(p is None for p in self.ordered):
            yield from sorted(self.anchors)
            return
        k = min(range(len(self.ordered)), key=lambda i: len(self.ordered[i]))
        others = [d for i, d in enumerate(self.per_rc) if i != k]
        last = None
        for root, _u in self.ordered[k]:
            if root == last:
                continue
            last = root
            for d in others:
                if root not in d:
                    break
            else:
                yield root

    def head(self, stop_at):
        """``list(islice(iter_anchors(ordered_anchors()), stop_at))`` in
        one loop, without a generator per step: the common request (this
        group alone, one provider per class and anchor, ``singles``).

        An anchor that supplies every class itself (a flat host) always
        has the same candidate for this group, whatever its usage: it is
        built once per snapshot (memo ``('flat', ...)``, root -> the
        candidate, filled as anchors are visited) and handed out again."""
        if not self.per_rc:
            return []
        if not all(self.singles) or any(p is None for p in self.ordered):
            stream = self.iter_anchors(self.ordered_anchors())
            return list(itertools.islice(stream, stop_at))
        k = min(range(len(self.ordered)), key=lambda i: len(self.ordered[i]))
        dicts = self.per_rc
        required = self.group.required
        provs = self.snap.providers
        key = ('flat', tuple(self.rcs), tuple(self.amounts), required)
        memo = self.snap.memo
        flat = memo.get(key)
        if flat is None:
            # list(): a copy taken at once, while other request threads
            # may add to the shared memo
            shapes = sum(1 for m in list(memo) if m[0] == 'flat')
            # past FLAT_SHAPES request shapes, this one's are not kept
            flat = remember(self.snap, key, {}) if shapes < FLAT_SHAPES else {}
        out = []
        last = None
        for root, _u in self.ordered[k]:
            if root == last:
                continue
            last = root
            own = True
            for d in dicts:
                u = d.get(root)
                if u is None:
                    break
                if u != root:
                    own = False
            else:
                cand = flat.get(root) if own else None
                if cand is None:
                    cand = self._candidate(root, required, provs)
                    if cand is None:
                        continue
                    if own:
                        flat[root] = cand
                out.append(cand)
                if len(out) == stop_at:
                    break
        return out

    def _candidate(self, anchor, required, provs):
        """The anchor's candidate (``singles``), or None when the
        providers it uses lack a required trait."""
        combo = [d[anchor] for d in self.per_rc]
        u0 = combo[0]
        if combo.count(u0) == len(combo):
            used = (u0,)
        else:
            used = tuple(sorted(set(combo)))
        if required:
            traits = set()
            for u in used:
                traits |= provs[u].traits
            if any(s.isdisjoint(traits) for s in required):
                return None
        return tuple(zip(combo, self.rcs, self.amounts, strict=False)), (
            ('', used),
        )

    def _lists(self, anchor):
        return [
            d[anchor] if not single else [d[anchor]]
            for d, single in zip(self.per_rc, self.singles, strict=False)
        ]

    def options(self, anchor: str):
        """Yield the pieces of this group for one anchor, in stable order."""
        rcs = self.rcs
        amounts = self.amounts
        required = self.group.required
        provs = self.snap.providers
        for combo in itertools.product(*self._lists(anchor)):
            used = sorted(set(combo))
            if required:
                traits = set()
                for u in used:
                    traits |= provs[u].traits
                if any(any_of.isdisjoint(traits) for any_of in required):
                    continue
            yield tuple(zip(combo, rcs, amounts, strict=False)), tuple(used)

    def iter_anchors(self, anchors):
        """Yield ``(alloc, mappings)`` for every anchor in order: the fast
        path used when the unnumbered group is the only group."""
        if not all(self.singles):
            for a in anchors:
                for alloc, used in self.options(a):
                    yield alloc, (('', used),)
            return
        rcs = self.rcs
        amounts = self.amounts
        dicts = self.per_rc
        required = self.group.required
        provs = self.snap.providers
        k = len(rcs)
        # Deliberately like _candidate and options: the same trait check,
        # inlined because this loop runs once per anchor on the hot path.
        for a in anchors:
            combo = [d[a] for d in dicts]
            u0 = combo[0]
            if combo.count(u0) == k:
                used = (u0,)
                if required:
                    traits = provs[u0].traits
                    if any(s.isdisjoint(traits) for s in required):
                        continue
            else:
                used = tuple(sorted(set(combo)))
                if required:
                    traits = set()
                    for u in used:
                        traits |= provs[u].traits
                    if any(s.isdisjoint(traits) for s in required):
                        continue
            yield tuple(zip(combo, rcs, amounts, strict=False)), (('', used),)
