"""Candidates of one request ranked by weight, kept current as instances land.

Weighers produce a raw value list per request; after a placement only the chosen host's
raw values are recomputed, and totals are recomputed for every host only when a weigher's
min or max moved (normalisation changed), else for that host alone. Weighers with nothing
to do (``is_enabled_for`` False, or multiplier 0 with no aggregate override) are skipped.
"""

from __future__ import annotations

import heapq


class Ranking:
    """Candidates with their raw weigher values and total weights."""

    def __init__(self, hosts, weighers, spec):
        self.hosts = list(hosts)
        self.spec = spec
        with_aggs = [
            i for i, h in enumerate(self.hosts) if h.aggregate_metadata
        ]
        self.active = []  # [weigher, multiplier (float or list), raw list, (lo, hi)]
        for w in weighers:
            if not w.is_enabled_for(spec):
                continue
            default = w.default_multiplier()
            key = w.override_key
            mult = default
            if (
                key
                and with_aggs
                and any(
                    key in self.hosts[i].aggregate_metadata for i in with_aggs
                )
            ):
                mult = [w.weight_multiplier(h) for h in self.hosts]
            elif default == 0.0:
                continue
            raw = w.raw_values(self.hosts, spec)
            self.active.append([w, mult, raw, None])
        self.recompute()

    def __len__(self):
        return len(self.hosts)

    def _bounds(self):
        changed = False
        for entry in self.active:
            raw = entry[2]
            b = (min(raw), max(raw)) if raw else (0, 0)
            if b != entry[3]:
                entry[3] = b
                changed = True
        return changed

    def recompute(self):
        self._bounds()
        totals = [0.0] * len(self.hosts)
        for _w, m, raw, (lo, hi) in self.active:
            if hi == lo:
                continue
            span = hi - lo
            if isinstance(m, list):
                totals = [
                    t + mm * ((v - lo) / span)
                    for t, v, mm in zip(totals, raw, m, strict=False)
                ]
            elif m != 0.0:
                totals = [
                    t + m * ((v - lo) / span)
                    for t, v in zip(totals, raw, strict=False)
                ]
        self.totals = totals

    def _total_of(self, i):
        t = 0.0
        for _w, m, raw, (lo, hi) in self.active:
            if hi == lo:
                continue
            mm = m[i] if isinstance(m, list) else m
            if isinstance(m, list) or mm != 0.0:
                t = t + mm * ((raw[i] - lo) / (hi - lo))
        return t

    def update(self, i):
        """The host at index i changed: refresh its raw values and the totals."""
        h = self.hosts[i]
        for entry in self.active:
            entry[2][i] = entry[0].raw_values([h], self.spec)[0]
        if self._bounds():
            self.recompute()
        else:
            self.totals[i] = self._total_of(i)

    def keep(self, keep_hosts):
        """Keep only these hosts (a subset, any order)."""
        if len(keep_hosts) == len(self.hosts):
            return
        kept = {id(h) for h in keep_hosts}
        idx = [i for i, h in enumerate(self.hosts) if id(h) in kept]
        self.hosts = [self.hosts[i] for i in idx]
        for entry in self.active:
            entry[2] = [entry[2][i] for i in idx]
            if isinstance(entry[1], list):
                entry[1] = [entry[1][i] for i in idx]
        self.recompute()

    def remove(self, i):
        del self.hosts[i]
        del self.totals[i]
        for entry in self.active:
            del entry[2][i]
            if isinstance(entry[1], list):
                del entry[1][i]
        if self._bounds():
            self.recompute()

    def ranked(self, k, exclude=None, cell=None):
        """Indices of the k best hosts, best first (ties keep candidate order)."""
        n = len(self.hosts)
        idx = range(n)
        if cell is not None or exclude is not None:
            hosts = self.hosts
            idx = [
                i
                for i in idx
                if i != exclude
                and (cell is None or hosts[i].cell_uuid == cell)
            ]
        if k == 1 and n and cell is None and exclude is None:
            best = max(self.totals)
            return [self.totals.index(best)]
        return heapq.nlargest(k, idx, key=self.totals.__getitem__)
