"""Combining request groups into allocation requests, with pruning.

For every anchor (root uuid) that all groups can use, a depth-first search
picks one piece per group.  A partial choice is abandoned as soon as it

* over-consumes a provider: summed amounts of one (provider, resource
  class) exceed the free capacity or max_unit,
* breaks ``group_policy=isolate`` (two suffixed groups on one provider), or
* breaks a ``same_subtree`` set whose groups are all chosen (some chosen
  provider of the set must be an ancestor-or-self of all the others).

Candidates are produced lazily: per anchor one generator; the anchors are
chained (depth-first) or visited round-robin (breadth-first), and generation
stops once ``limit`` / ``max_allocation_candidates`` candidates are found.
"""

from __future__ import annotations

import itertools
from collections import deque

from nimbus.placement.candidates import groups as groups_mod
from nimbus.placement.candidates.model import Snapshot


def _roundrobin(gens):
    active = deque(gens)
    while active:
        gen = active.popleft()
        for item in gen:
            yield item
            active.append(gen)
            break


def _rounds(suffix, lists):
    """Round-robin over materialized per-anchor option lists."""
    r = 0
    while lists:
        keep = []
        for lst in lists:
            alloc, provs = lst[r]
            yield alloc, ((suffix, provs),)
            if len(lst) > r + 1:
                keep.append(lst)
        lists = keep
        r += 1


class _Search:
    """One request's search state (not shared between threads)."""

    def __init__(
        self,
        snap: Snapshot,
        req,
        nested_aware: bool,
        with_mappings: bool = True,
    ):
        self.snap = snap
        self.with_mappings = with_mappings
        self.req = req
        self.nested_aware = nested_aware
        self.isolate = req.group_policy == 'isolate'
        anchor_ok = None
        if req.root_required or req.root_forbidden:
            anchor_ok = groups_mod.roots_with_traits(
                snap, req.root_required, req.root_forbidden
            )
        self.unnumbered = None
        self.granular = []  # (group, {anchor: [pieces]})
        anchors = None
        lazy = bool(req.groups) and not any(
            g.granular for g in req.groups.values()
        )
        for _suffix, g in req.groups.items():
            if g.granular:
                # Pieces do not depend on the suffix: the same group asked
                # again on this snapshot reuses them (read-only).
                key = (
                    'granular',
                    tuple(sorted(g.resources.items())),
                    g.required,
                    g.forbidden,
                    g.member_of,
                    g.forbidden_aggs,
                    g.in_tree,
                    req.root_required,
                    req.root_forbidden,
                )
                opts = snap.memo.get(key)
                if opts is None:
                    opts = groups_mod.remember(
                        snap,
                        key,
                        groups_mod.granular_options(snap, g, anchor_ok),
                    )
                self.granular.append((g, opts))
                keys = opts.keys()
            else:
                self.unnumbered = groups_mod.UnnumberedOptions(
                    snap, g, anchor_ok
                )
                if lazy:
                    # the only group: its anchors are read in order, and
                    # only as far as the limit (``ordered_anchors``)
                    break
                keys = self.unnumbered.anchors
            anchors = set(keys) if anchors is None else anchors & keys
            if not anchors:
                break
        self._anchors = None if lazy else sorted(anchors or ())

    @property
    def anchors(self):
        """Every anchor all groups can use, sorted."""
        if self._anchors is None:
            self._anchors = sorted(self.unnumbered.anchors)
        return self._anchors

    def ordered_anchors(self):
        """The anchors in sorted order, as an iterable that computes no
        more of them than it is asked for when the unnumbered group is the
        only one."""
        if self._anchors is None:
            return self.unnumbered.ordered_anchors()
        return iter(self._anchors)

    def anchor_candidates(self, anchor):
        """Yield (alloc_items, mappings) for one anchor."""
        levels = []  # (suffix, granular?, options)
        if self.unnumbered is not None:
            levels.append(('', False, self.unnumbered.options(anchor)))
        gran = [(g.suffix, opts[anchor]) for g, opts in self.granular]
        gran.sort(key=lambda x: (len(x[1]), x[0]))
        for suffix, opts in gran:
            levels.append((suffix, True, opts))
        n = len(levels)
        suffix_level = {s: i for i, (s, _g, _o) in enumerate(levels)}
        checks = [[] for _ in range(n)]
        for sset in self.req.same_subtrees:
            last = max(suffix_level[s] for s in sset)
            checks[last].append([suffix_level[s] for s in sset])
        fit = self.snap.fit
        ancestors = self.snap.ancestors
        isolate = self.isolate
        used: dict = {}
        iso: set = set()
        chosen = [None] * n

        def subtree_ok(idx_list):
            rps = set()
            for i in idx_list:
                rps.update(chosen[i][1])
            if len(rps) <= 1:
                return True
            common = None
            for rp in rps:
                anc = ancestors[rp]
                common = set(anc) if common is None else common & anc
                if not common:
                    return False
            return not common.isdisjoint(rps)

        def rec(i):
            suffix, is_gran, opts = levels[i]
            level_checks = checks[i]
            last = i == n - 1
            for piece in opts:
                alloc, provs = piece
                if isolate and is_gran and provs[0] in iso:
                    continue
                ok = True
                for key in alloc:
                    prev = used.get((key[0], key[1]))
                    if prev is not None:
                        total = prev + key[2]
                        f = fit[key[0]][key[1]]
                        if total > f[0] or total > f[2]:
                            ok = False
                            break
                if not ok:
                    continue
                chosen[i] = piece
                if level_checks and not all(
                    subtree_ok(c) for c in level_checks
                ):
                    continue
                if last:
                    yield self._assemble(levels, chosen)
                    continue
                for p, rc, amt in alloc:
                    used[(p, rc)] = used.get((p, rc), 0) + amt
                if isolate and is_gran:
                    iso.add(provs[0])
                yield from rec(i + 1)
                for p, rc, amt in alloc:
                    left = used[(p, rc)] - amt
                    if left:
                        used[(p, rc)] = left
                    else:
                        del used[(p, rc)]
                if isolate and is_gran:
                    iso.discard(provs[0])

        if n == 1:
            suffix = levels[0][0]
            for alloc, provs in levels[0][2]:
                yield alloc, ((suffix, provs),)
            return
        yield from rec(0)

    @staticmethod
    def _assemble(levels, chosen):
        merged: dict = {}
        mappings = []
        for (suffix, _g, _o), (alloc, provs) in zip(
            levels, chosen, strict=False
        ):
            for p, rc, amt in alloc:
                key = (p, rc)
                merged[key] = merged.get(key, 0) + amt
            mappings.append((suffix, provs))
        items = tuple((p, rc, amt) for (p, rc), amt in merged.items())
        mappings.sort()
        return items, tuple(mappings)

    def _single_group_iter(self, anchor):
        if self.unnumbered is not None:
            return (c for c in self.unnumbered.iter_anchors((anchor,)))
        g, opts = self.granular[0]
        mapkey = g.suffix
        return ((alloc, ((mapkey, provs),)) for alloc, provs in opts[anchor])

    def _stream(self, anchors, strategy):
        single = (self.unnumbered is not None) + len(self.granular) == 1
        if strategy == 'breadth-first':
            if (
                single
                and self.unnumbered is not None
                and all(self.unnumbered.singles)
            ):
                # at most one candidate per anchor: round-robin is the
                # plain anchor order
                return self.unnumbered.iter_anchors(anchors)
            if single and self.unnumbered is None:
                g, opts = self.granular[0]
                return _rounds(g.suffix, [opts[a] for a in anchors])
            if single:
                return _roundrobin(
                    [self._single_group_iter(a) for a in anchors]
                )
            return _roundrobin([self.anchor_candidates(a) for a in anchors])
        if single:
            if self.unnumbered is not None:
                return self.unnumbered.iter_anchors(anchors)
            g, opts = self.granular[0]
            mapkey = g.suffix
            return (
                (alloc, ((mapkey, provs),))
                for a in anchors
                for alloc, provs in opts[a]
            )
        return (c for a in anchors for c in self.anchor_candidates(a))

    def generate(self, strategy, rng, randomize, stop_at):
        """Return the list of unique candidates, at most ``stop_at``."""
        sharing = self.snap.sharing
        provs = self.snap.providers
        exclude_nested = not self.nested_aware and self.snap.has_trees
        if randomize and rng is not None:
            anchors = list(self.anchors)
            rng.shuffle(anchors)
        elif (
            self._anchors is None
            and not (exclude_nested or sharing)
            and all(self.unnumbered.singles)
        ):
            # the unnumbered group alone, one provider per class and
            # anchor, nothing to skip: one candidate per anchor in anchor
            # order (either strategy), to the limit
            return self.unnumbered.head(stop_at)
        else:
            anchors = self.ordered_anchors()
        stream = self._stream(anchors, strategy)
        # Without mappings in the output (< 1.34) two candidates that differ
        # only in which group used which provider look identical: keep one.
        alloc_only_key = not self.with_mappings and len(self.req.groups) > 1
        if not (exclude_nested or alloc_only_key or sharing):
            # nothing to skip: every candidate counts, up to the limit
            return list(itertools.islice(stream, stop_at))
        seen = set()
        out = []
        for cand in stream:
            items, mappings = cand
            if exclude_nested:
                rps = {p for p, _rc, _a in items}
                if len({provs[p].root_uuid for p in rps}) != len(rps):
                    continue
            if alloc_only_key:
                key = frozenset(items)
                if key in seen:
                    continue
                seen.add(key)
            elif sharing and (
                any(p in sharing for p, _r, _a in items)
                or any(p in sharing for _s, ps in mappings for p in ps)
            ):
                key = (frozenset(items), mappings)
                if key in seen:
                    continue
                seen.add(key)
            out.append(cand)
            if stop_at is not None and len(out) >= stop_at:
                break
        return out
