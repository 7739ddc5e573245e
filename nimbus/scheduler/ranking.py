"""Candidates of one request ranked by weight, kept current as instances land.

Weighers produce a raw value list per request; after a placement only the chosen host's
raw values are recomputed, and totals are recomputed for every host only when a weigher's
min or max moved (normalisation changed), else for that host alone. Weighers with nothing
to do (``is_enabled_for`` False, or multiplier 0 with no aggregate override) are skipped.

Raw values, multipliers and totals are float64 arrays: normalising and summing is one
array operation per weigher, done in the same order as the scalar rules
(``t + m * ((v - lo) / (hi - lo))`` weigher after weigher), so each total is the very
same double the scalar code computes and the picks do not move. Ties keep candidate
order (the first of equal totals wins), as a stable sort would.
"""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np


def top_indices(totals, idx, k) -> list:
    """The ``k`` entries of ``idx`` (an int array; None: every index of
    ``totals``) with the highest ``totals``, best first; equal totals keep
    the order of ``idx``."""
    vals = totals if idx is None else totals[idx]
    m = len(vals)
    if k <= 0 or not m:
        return []
    if k < m:
        # Keep only what can be in the top k (the k-th best value and above),
        # then sort those few stably.
        kth = np.partition(vals, m - k)[m - k]
        keep = np.flatnonzero(vals >= kth)
        idx = keep if idx is None else idx[keep]
        vals = vals[keep]
    elif idx is None:
        idx = np.arange(m)
    order = np.argsort(-vals, kind='stable')[:k]
    return idx[order].tolist()


def _is_plus_zero(x: float) -> bool:
    return x == 0.0 and math.copysign(1.0, x) > 0


class Ranking:
    """Candidates with their raw weigher values and total weights."""

    def __init__(self, hosts, weighers, spec, table=None, slots=None):
        """``table`` and ``slots`` (the hosts' rows, see host_table.py): raw
        values come from the table's columns where the weigher can read them
        there (``raw_column``), from ``raw_values`` otherwise. With a table,
        ``hosts`` may be None: the list of HostStates is then built from the
        rows only if asked for (:attr:`hosts`); :meth:`host` reads one."""
        # The caller's list is not changed: ``remove`` copies it first.
        if hosts is not None and type(hosts) is not list:
            hosts = list(hosts)
        self._hosts = hosts
        self._own_hosts = False
        self.table = table
        self.rows = slots if table is not None else None
        self.spec = spec
        if table is not None:
            # Keys no host of the table has cannot be on these hosts.
            agg_keys = table.agg_keys
        else:
            agg_keys = set().union(
                *[m for m in [h.aggregate_metadata for h in self.hosts] if m]
            )
        # [weigher, multiplier (float or array), raw array, (lo, hi)]
        self.active = []
        columns = (
            {}
            if table is not None
            else self._attribute_columns(weighers, spec)
        )
        for w in weighers:
            if not w.is_enabled_for(spec):
                continue
            default = w.default_multiplier()
            key = w.override_key
            mult = default
            if key and key in agg_keys:
                mult = np.array(
                    [w.weight_multiplier(h) for h in self.hosts],
                    dtype=np.float64,
                )
            elif default == 0.0:
                continue
            if table is not None:
                raw = w.raw_column(table, slots, spec)
            else:
                raw = columns.get(id(w))
            if raw is None:
                raw = np.array(
                    w.raw_values(self.hosts, spec), dtype=np.float64
                )
            self.active.append([w, mult, raw, None])
        self._cells = None  # cell uuids as a string array, built when asked
        self._buf = None  # scratch array of _totals
        self.recompute()

    def _attribute_columns(self, weighers, spec) -> dict:
        """Raw values of the weighers that read one host attribute as it is
        (``raw_attribute``), gathered in one pass over the hosts: id(weigher)
        -> float64 array."""
        plain = [
            w
            for w in weighers
            if w.raw_attribute
            and w.is_enabled_for(spec)
            and w.default_multiplier() != 0.0
        ]
        if len(plain) < 2 or not self.hosts:
            return {}
        get = operator.attrgetter(*(w.raw_attribute for w in plain))
        n, k = len(self.hosts), len(plain)
        flat = itertools.chain.from_iterable(map(get, self.hosts))
        table = np.fromiter(flat, dtype=np.float64, count=n * k).reshape(n, k)
        return {
            id(w): np.ascontiguousarray(table[:, j])
            for j, w in enumerate(plain)
        }

    @property
    def hosts(self) -> list:
        """The candidates' HostStates, in ranking index order."""
        if self._hosts is None:
            self._hosts = self.table.hosts_at(self.rows)
            self._own_hosts = True
        return self._hosts

    def host(self, i):
        """The HostState at index ``i``."""
        if self._hosts is not None:
            return self._hosts[i]
        return self.table.objs[self.rows[i]]

    def __len__(self):
        if self.rows is not None:
            return len(self.rows)
        return len(self._hosts)

    def total(self, i) -> float:
        """Host ``i``'s total weight as a Python float."""
        return float(self.totals[i])

    def _bounds(self):
        changed = False
        for entry in self.active:
            raw = entry[2]
            b = (float(raw.min()), float(raw.max())) if len(raw) else (0, 0)
            if b != entry[3]:
                entry[3] = b
                changed = True
        return changed

    def recompute(self):
        self._bounds()
        self._totals()

    def _totals(self):
        """``t + m * ((raw - lo) / span)`` weigher after weigher, into one
        scratch array: the same operations on the same doubles, so the same
        totals, without a temporary array per step. Steps that cannot change
        a double are left out: ``x - (+0.0)`` and ``1.0 * x`` are ``x``, and
        ``t + (-1.0 * x)`` is ``t - x`` (IEEE 754 defines the one as the
        other)."""
        n = len(self)
        totals = np.zeros(n, dtype=np.float64)
        buf = self._buf
        if buf is None or len(buf) != n:
            buf = self._buf = np.empty(n, dtype=np.float64)
        for _w, m, raw, (lo, hi) in self.active:
            if hi == lo:
                continue
            per_host = isinstance(m, np.ndarray)
            if not per_host and m == 0.0:
                continue
            span = hi - lo
            if _is_plus_zero(lo):
                np.divide(raw, span, out=buf)
            else:
                np.subtract(raw, lo, out=buf)
                np.divide(buf, span, out=buf)
            if per_host or m not in (1.0, -1.0):
                np.multiply(m, buf, out=buf)
            elif m == -1.0:
                np.subtract(totals, buf, out=totals)
                continue
            np.add(totals, buf, out=totals)
        self.totals = totals

    def _total_of(self, i):
        t = 0.0
        for _w, m, raw, (lo, hi) in self.active:
            if hi == lo:
                continue
            per_host = isinstance(m, np.ndarray)
            mm = float(m[i]) if per_host else m
            if per_host or mm != 0.0:
                t = t + mm * ((float(raw[i]) - lo) / (hi - lo))
        return t

    def update(self, i):
        """The host at index i changed: refresh its raw values and the totals.
        A weigher's bounds are found again from all hosts only when the host's
        old value was one of them (or is unordered); otherwise the new value
        can only widen them."""
        h = self.host(i)
        changed = False
        for entry in self.active:
            raw = entry[2]
            old = float(raw[i])
            new = float(entry[0].raw_values([h], self.spec)[0])
            raw[i] = new
            lo, hi = entry[3]
            if lo < old < hi and new == new:
                if new < lo or new > hi:
                    entry[3] = (min(lo, new), max(hi, new))
                    changed = True
            else:
                b = (float(raw.min()), float(raw.max()))
                if b != entry[3]:
                    entry[3] = b
                    changed = True
        if changed:
            self._totals()
        else:
            self.totals[i] = self._total_of(i)

    def _select(self, idx):
        """Keep only the hosts at these indices (ascending)."""
        if self._hosts is not None:
            self._hosts = [self._hosts[i] for i in idx]
            self._own_hosts = True
        if self.rows is not None:
            self.rows = self.rows[idx]
        self._cells = None
        for entry in self.active:
            entry[2] = entry[2][idx]
            if isinstance(entry[1], np.ndarray):
                entry[1] = entry[1][idx]

    def keep(self, keep_hosts):
        """Keep only these hosts (a subset, any order)."""
        if len(keep_hosts) == len(self.hosts):
            return
        kept = {id(h) for h in keep_hosts}
        idx = np.array(
            [i for i, h in enumerate(self.hosts) if id(h) in kept],
            dtype=np.int64,
        )
        self._select(idx)
        self.recompute()

    def remove(self, i):
        if self._hosts is not None:
            if not self._own_hosts:
                self._hosts = list(self._hosts)
                self._own_hosts = True
            del self._hosts[i]
        if self.rows is not None:
            self.rows = np.delete(self.rows, i)
        self.totals = np.delete(self.totals, i)
        if self._cells is not None:
            self._cells = np.delete(self._cells, i)
        for entry in self.active:
            entry[2] = np.delete(entry[2], i)
            if isinstance(entry[1], np.ndarray):
                entry[1] = np.delete(entry[1], i)
        if self._bounds():
            self._totals()

    def _cell_mask(self, cell):
        want = str(cell)
        if self.rows is not None:
            # judged once per distinct cell of the table
            return self.table.code_mask(
                'cell', self.rows, lambda c: str(c) == want
            )
        if self._cells is None:
            self._cells = np.array([str(h.cell_uuid) for h in self.hosts])
        return self._cells == want

    def ranked(self, k, exclude=None, cell=None):
        """Indices of the k best hosts, best first (ties keep candidate order)."""
        n = len(self)
        if k == 1 and n and cell is None and exclude is None:
            return [int(np.argmax(self.totals))]
        if cell is not None and k < n // 8:
            # The best hosts overall are a prefix of the full order: when k of
            # the cell are among them, they are the cell's k best.
            host = self.host
            best = top_indices(self.totals, None, 4 * k + 2)
            got = [
                i for i in best if i != exclude and host(i).cell_uuid == cell
            ]
            if len(got) >= k:
                return got[:k]
        mask = (
            np.ones(n, dtype=bool) if cell is None else self._cell_mask(cell)
        )
        if exclude is not None and 0 <= exclude < n:
            mask[exclude] = False
        return top_indices(self.totals, np.flatnonzero(mask), k)
