"""A placement snapshot kept current in place as allocations come and go.

Placement's :class:`~nimbus.placement.candidates.model.Snapshot` is
immutable: the API rebuilds it (re-indexing every provider) whenever usage
moved, 40-80 ms for 10,000 hosts. The simulator owns its snapshot alone
(one thread, no other reader), so after each claim or release it patches
just what depends on the usage of the providers involved: the provider's
usages, ``fit``, its entries of ``by_rc``, its summary's resources, its
serialised summaries, and the search memo (cleared). The result equals a
snapshot built afresh from the same providers
(tests/unit/simulator/test_live.py checks it field by field and by the
candidates it answers).
"""

import dataclasses

from nimbus.placement.candidates import model


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
        snap.memo.clear()
