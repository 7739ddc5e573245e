"""Opt-in sampling of the candidates, as the Kubernetes scheduler's
``percentageOfNodesToScore``: ``[filter_scheduler]
hosts_to_score_percentage`` below 100.

A decision then runs the filters over the candidates (what is left after
the pre-filters) in windows, from a start that rotates between decisions,
and stops once ``want`` hosts passed (:func:`wanted`) or every candidate
was examined; only the hosts that passed are weighed. The start advances
by what each decision examined, wrapping, so consecutive (and racing)
decisions look at different hosts. The selection loop (``selection.py``)
decides again over every candidate when a sample runs out of hosts before
every instance has one, so sampling costs quality, never a placement.

Off (100, the default), nothing here runs: every candidate is examined.
"""

from __future__ import annotations

import math

import numpy as np

from nimbus.scheduler.explain import Explanation, WindowedStep


def wanted(conf, candidates: int, instances: int) -> int | None:
    """How many hosts a sampled decision wants to pass the filters, or None
    when it examines every candidate (sampling off, or no fewer candidates
    than it would want anyway)."""
    fs = conf.filter_scheduler
    pct = fs.hosts_to_score_percentage
    if pct >= 100:
        return None
    want = max(
        fs.min_hosts_to_score, math.ceil(candidates * pct / 100), instances
    )
    return want if want < candidates else None


def _take(seq, start: int, size: int):
    """``size`` items of ``seq`` from ``start``, wrapping around its end."""
    end = start + size
    if end <= len(seq):
        return seq[start:end]
    if isinstance(seq, np.ndarray):
        return np.concatenate((seq[start:], seq[: end - len(seq)]))
    return list(seq[start:]) + list(seq[: end - len(seq)])


class Sample:
    """What a sampled decision examined (for the explanation)."""

    __slots__ = ('examined', 'candidates', 'want', 'start', 'fell_back')

    def __init__(self, examined, candidates, want, start, fell_back=False):
        self.examined = examined
        self.candidates = candidates
        self.want = want
        self.start = start
        self.fell_back = fell_back

    @property
    def partial(self) -> bool:
        """True when some candidates were left unexamined."""
        return self.examined < self.candidates

    def to_dict(self) -> dict:
        return {
            'examined': self.examined,
            'candidates': self.candidates,
            'wanted': self.want,
            'start': self.start,
            'fell_back': self.fell_back,
        }

    def text(self) -> str:
        if self.fell_back:
            return (
                f'sampling: the sample ran out of hosts, every one of '
                f'{self.candidates} candidates examined'
            )
        return (
            f'sampling: examined {self.examined} of {self.candidates} '
            f'candidates (wanted {self.want} passing)'
        )


def judge(sched, cands, slots, table, spec, filters, exp, want):
    """Run ``filters`` over windows of ``cands`` (and their ``slots`` in
    ``table``, when there is one) from ``sched.next_start`` until ``want``
    hosts passed or every candidate was examined. Returns what
    ``FilterScheduler._filtered`` returns: the hosts that passed (None when
    only their rows say which), the table and their rows. Records the
    filter steps (one per filter, over every window) and the
    :class:`Sample` in ``exp``, and advances ``sched.next_start``."""
    m = len(cands)
    start = sched.next_start % m
    examined = found = 0
    # a quarter more than wanted, so that one window does when nearly
    # every candidate passes (each window costs a run of the filters)
    size = want + (want + 3) // 4
    hosts_out, rows_out, windows = [], [], []
    while examined < m and found < want:
        size = min(size, m - examined)
        at = (start + examined) % m
        w_hosts = _take(cands, at, size)
        w_exp = Explanation(spec)
        if table is None:
            passed = sched.run_filters(w_hosts, spec, filters, w_exp)
            hosts_out.append(passed)
            n_passed = len(passed)
        else:
            passed, rows = sched.run_filters_table(
                w_hosts, _take(slots, at, size), table, spec, filters, w_exp
            )
            hosts_out.append(passed)
            rows_out.append(rows)
            n_passed = len(rows)
        windows.append(w_exp.steps)
        examined += size
        found += n_passed
        need = want - found
        # the next window: what the pass rate so far says is needed, and a
        # fifth more so that one more window usually does (twice as much
        # as examined when nothing passed yet)
        size = math.ceil(1.2 * need * examined / found) if found else examined
    sched.next_start = (start + examined) % m
    _merge_steps(exp, windows)
    exp.sample = Sample(examined, m, want, start)
    if table is None:
        return [h for part in hosts_out for h in part], None, None
    rows = np.concatenate(rows_out) if rows_out else slots[:0]
    if any(part is None for part in hosts_out):
        return None, table, rows
    return [h for part in hosts_out for h in part], table, rows


def _merge_steps(exp, windows) -> None:
    """One step per filter in ``exp``, over every window's steps (a filter
    that had no host left to judge in a window has no step there)."""
    by_filter: dict = {}
    for steps in windows:
        for step in steps:
            by_filter.setdefault(id(step.filter), []).append(step)
    for parts in by_filter.values():
        exp.steps.append(parts[0] if len(parts) == 1 else WindowedStep(parts))


def describe(conf, candidates: int, instances: int) -> dict | None:
    """For the dry run: how a decision on these candidates would sample
    them, or None when it would examine every one."""
    want = wanted(conf, candidates, instances)
    if want is None:
        return None
    return {
        'hosts_to_score_percentage': (
            conf.filter_scheduler.hosts_to_score_percentage
        ),
        'candidates': candidates,
        'wanted': want,
        'note': (
            'a decision examines the candidates from a rotating start '
            'until this many pass the filters, and weighs only those; '
            '"ranked" lists every candidate that passes'
        ),
    }
