"""A placement snapshot kept current in place as allocations come and go.

Placement's :class:`~nimbus.placement.candidates.model.Snapshot` is
immutable: the API rebuilds it (re-indexing every provider) whenever usage
moved, 40-80 ms for 10,000 hosts. The simulator owns its snapshot alone
(one thread, no other reader), so after each claim or release it patches
just what depends on the usage of the providers involved: the provider's
usages, ``fit``, its entries of ``by_rc``, its summary's resources, its
serialised summaries, and the search memo: the engine's lists of
providers with room for an amount of a class (``('fit', rc, amount)``)
gain or lose this provider, the candidates of flat anchors
(``('flat', ...)``) stay, every other memo entry is dropped. The result
equals a
snapshot built afresh from the same providers
(tests/unit/simulator/test_live.py checks it field by field and by the
candidates it answers).
"""

import bisect
import dataclasses

from nimbus.placement.candidates import model

# memo entries still true after usage moved: the lists of providers with
# room (patched below) and the candidates of anchors that supply a group
# on their own (they do not depend on usage)
KEPT = ('fit', 'flat')


class LiveSnapshot:
    def __init__(self, providers, resource_classes, traits):
        snap = model.Snapshot(providers, resource_classes, traits)
        self.snapshot = snap
        self._pos = {}
        for rc, entries in snap.by_rc.items():
            rows = list(entries)
            snap.by_rc[rc] = rows
            for i, row in enumerate(rows):
                self._pos[row[0], rc] = i

    def free(self, rp, rc):
        """``(free, min_unit, max_unit, step_size)`` of ``rc`` on ``rp``,
        or None when ``rp`` has no such inventory."""
        fit = self.snapshot.fit.get(rp, {}).get(rc)
        return None if fit is None else fit[:4]

    def change(self, rp, deltas):
        """Add ``deltas`` (``{rc: amount}``, negative to release) to the
        usage of provider ``rp``."""
        snap = self.snapshot
        old = snap.providers[rp]
        usages = dict(old.usages)
        for rc, amount in deltas.items():
            used = usages.get(rc, 0) + amount
            if used:
                usages[rc] = used
            else:
                usages.pop(rc, None)
        snap.providers[rp] = dataclasses.replace(old, usages=usages)
        fit = dict(snap.fit[rp])
        for rc in deltas:
            free, lo, hi, step, cap, _used = fit[rc]
            self._memo_fit(
                rp, old.root_uuid, rc, free, cap - usages.get(rc, 0)
            )
            used = usages.get(rc, 0)
            fit[rc] = (cap - used, lo, hi, step, cap, used)
            rows = snap.by_rc[rc]
            i = self._pos[rp, rc]
            row = rows[i]
            rows[i] = (row[0], row[1], cap - used) + row[3:]
        snap.fit[rp] = fit
        snap.summary_resources[rp] = tuple(
            (rc, cap, usages.get(rc, 0))
            for rc, cap, _used in snap.summary_resources[rp]
        )
        for frags in snap.fragments.values():
            frags.pop(rp, None)
        memo = snap.memo
        for key in [k for k in memo if k[0] not in KEPT]:
            del memo[key]

    def _memo_fit(self, rp, root, rc, was_free, now_free):
        """Keep the memo's ``('fit', rc, amount)`` entries - ``(pairs,
        by_anchor)``: the sorted ``(root, uuid)`` of the providers with
        room, and ``dict(pairs)`` - true to ``rp``'s new free amount."""
        snap = self.snapshot
        _free, lo, hi, step, _cap, _used = snap.fit[rp][rc]
        for key, value in snap.memo.items():
            if key[0] != 'fit' or key[1] != rc:
                continue
            pairs, by_anchor = value
            amount = key[2]
            if not lo <= amount <= hi or amount % step:
                continue
            was, now = amount <= was_free, amount <= now_free
            if was == now:
                continue
            entry = (root, rp)
            at = bisect.bisect_left(pairs, entry)
            if now:
                pairs.insert(at, entry)
            else:
                del pairs[at]
            # dict(pairs): each root maps to its last provider with room
            first = bisect.bisect_left(pairs, (root,))
            last = None
            for r, u in pairs[first:]:
                if r != root:
                    break
                last = u
            if last is None:
                by_anchor.pop(root, None)
            else:
                by_anchor[root] = last
