"""The selection loop: filter -> weigh -> pick -> claim -> consume, per instance.

Speed comes from doing per-host work once per request instead of once per instance:

* filters run over all candidates for the first instance only; afterwards only filters
  that declare ``depends_on_request_progress`` (server groups) run over all candidates, and
  the other per-instance filters run on the one host that just received an instance (its
  state is the only one that changed);
* weighers keep raw values per request (``ranking.py``).

Each placed instance consumes its allocation request per resource class and provider
(``consumption.py``), so the next instance and the alternates only go where placement's
summaries still leave room.

``reference.py`` implements the same rules the slow, obvious way; a test checks both pick
the same hosts.
"""

from __future__ import annotations

import random
from typing import Callable

import numpy as np

from nimbus.common.objects.selection import Selection
from nimbus.scheduler import (
    consumption,
    exception,
    host_prefilter,
    host_table,
    plugins,
    sampling,
)
from nimbus.scheduler import dry_run as dry_run_mod
from nimbus.scheduler import ranking as ranking_mod
from nimbus.scheduler.explain import Explanation
from nimbus.scheduler.filters import numa as numa_filter
from nimbus.scheduler.weighers import base as weigher_base

ALLOCATION_REQUEST_VERSION = '1.39'

Claim = Callable[..., bool]


def selection_limits(host, spec=None) -> dict:
    """The Selection's ``limits``, as Nova fills them today: only a request with a NUMA
    topology gets ``numa_topology`` (the host's CPU and RAM allocation ratios, which the
    compute's NUMA claim needs to fit shared CPUs and memory). Nova's old ``vcpu``,
    ``memory_mb`` and ``disk_gb`` limits died with the core/RAM/disk filters: placement's
    claim already bounds those, so Nimbus never sends them."""
    limits = dict(host.limits or {})
    if spec is not None and numa_filter.host_fit_wanted(spec):
        limits['numa_topology'] = {
            'cpu_allocation_ratio': host.cpu_allocation_ratio,
            'ram_allocation_ratio': host.ram_allocation_ratio,
        }
    return limits


def make_selection(host, alloc_req, spec=None) -> Selection:
    return Selection(
        service_host=host.host,
        nodename=host.nodename,
        compute_node_uuid=host.uuid,
        cell_uuid=host.cell_uuid,
        allocation_request=alloc_req,
        allocation_request_version=ALLOCATION_REQUEST_VERSION,
        limits=selection_limits(host, spec),
    )


def consume(host, spec, conf, instance_uuid, areq=None, usage=None):
    """Consume one instance of ``spec`` on ``host`` in memory (see consumption.py)."""
    consumption.consume(host, spec, conf, instance_uuid, areq, usage)


def areqs_of(alloc_reqs, host) -> list:
    """The host's allocation requests (``alloc_reqs`` values: one or a list)."""
    if alloc_reqs is None:
        return []
    return consumption.as_list(alloc_reqs.get(host.uuid))


class FilterScheduler:
    """Filters, weighs and selects hosts for a RequestSpec. Stateless between requests
    except for the host states it is handed (which it updates as it consumes)."""

    def __init__(self, conf, filters=None, weighers=None, rng=None):
        self.conf = conf
        self.filters = (
            plugins.load_filters(conf) if filters is None else list(filters)
        )
        self.weighers = (
            plugins.load_weighers(conf) if weighers is None else list(weighers)
        )
        # Weighers that cannot weigh some hosts (MetricsWeigher with [metrics] required)
        # reject them after the configured filters, with a reason.
        self.weigher_filters = weigher_base.requirements_of(self.weighers)
        self.rng = rng or random.Random()
        # sampling (off by default): where the next decision's first window
        # of candidates starts (``sampling.py``)
        self.next_start = 0

    @property
    def all_filters(self):
        """The configured filters, then the weighers' requirements."""
        return self.filters + self.weigher_filters

    # ---------------------------------------------------------------- filtering
    def enabled_filters(self, spec):
        return [f for f in self.all_filters if f.is_enabled_for(spec)]

    def run_filters(self, hosts, spec, filters, explanation=None):
        current = hosts
        for f in filters:
            if not current:
                break
            passed = f.filter_all(current, spec)
            if explanation is not None:
                explanation.record_filter(f, current, passed)
            current = passed
        return current

    def run_filters_table(self, hosts, slots, table, spec, filters, exp):
        """:meth:`run_filters` over hosts that have rows (``slots``) in
        ``table``: a filter with a :meth:`mask` judges all of them as one array
        operation, the others run ``filter_all`` on what the earlier ones left.
        Returns the hosts that pass and their rows; the hosts are None when
        they were not needed as a list (a mask narrowed them last): the rows
        say which they are (``table.hosts_at(rows)``). A mask's step records
        the hosts it rejected, not the lists."""
        current, rows = hosts, slots
        for f in filters:
            if not len(rows):
                break
            mask = getattr(f, 'mask', None)
            verdict = mask(table, rows, spec) if mask is not None else None
            if verdict is None:
                if current is None:
                    current = table.hosts_at(rows)
                passed = f.filter_all(current, spec)
                if len(passed) != len(current):
                    rows = table.rows(passed)
                exp.record_filter(f, current, passed)
                current = passed
            elif verdict.all():
                exp.record_rejected(f, len(rows), [])
            else:
                verdict = np.asarray(verdict, dtype=bool)
                exp.record_rejected(
                    f, len(rows), table.hosts_at(rows[~verdict])
                )
                rows = rows[verdict]
                current = None
        return current, rows

    def _filtered(self, hosts, spec, alloc_reqs, filters, exp, want=None):
        """The candidates that pass the pre-filters and ``filters``, and
        their table and rows ((None, None) when they have no table). The
        candidates are None when only the rows say which they are (see
        :meth:`run_filters_table`). ``want``: the number of instances when
        the candidates may be sampled (``sampling.py``), None when every
        one is examined."""
        table, slots = host_table.table_of(hosts)
        uuids = getattr(hosts, 'uuids', None)
        drawn = getattr(hosts, 'drawn_from', None)
        cands = host_prefilter.pre_filter_hosts(
            hosts if isinstance(hosts, list) else list(hosts),
            spec,
            alloc_reqs,
            exp,
            uuids=uuids,
            drawn=drawn is not None and drawn(alloc_reqs),
        )
        if table is not None and len(cands) != len(slots):
            slots = table.rows(cands)
        if want is not None:
            want = sampling.wanted(self.conf, len(cands), want)
        if want is not None:
            return sampling.judge(
                self, cands, slots, table, spec, filters, exp, want
            )
        if table is None:
            return self.run_filters(cands, spec, filters, exp), None, None
        cands, slots = self.run_filters_table(
            cands, slots, table, spec, filters, exp
        )
        return cands, table, slots

    def _still_passes(self, host, spec, per_instance, areqs=(), usage=None):
        if not consumption.host_fits(host, spec, areqs, usage):
            return 'ResourceCapacity', 'no capacity left for another instance'
        for f in per_instance:
            if not f.host_passes(host, spec):
                return f.name, f.reject_reason(host, spec)
        return None

    # ---------------------------------------------------------------- selection
    def _pick(self, ranking: ranking_mod.Ranking):
        fs = self.conf.filter_scheduler
        k = max(1, fs.host_subset_size)
        shuffle = fs.shuffle_best_same_weighed_hosts
        if k == 1 and not shuffle:
            return ranking.ranked(1)[0]
        top = ranking.ranked(k)
        if shuffle and top:
            best = ranking.totals[top[0]]
            ties = np.flatnonzero(ranking.totals == best).tolist()
            self.rng.shuffle(ties)
            top = (ties + [i for i in top if ranking.totals[i] != best])[:k]
        return self.rng.choice(top) if k > 1 else top[0]

    def schedule(
        self,
        spec,
        hosts,
        alloc_reqs=None,
        claim: Claim | None = None,
        unclaim: Callable | None = None,
        return_alternates: bool = True,
        explanation: Explanation | None = None,
        provider_summaries: dict | None = None,
        _record: tuple | None = None,
        _sample: bool = True,
    ) -> list[list[dict]]:
        """Place every instance of ``spec``. ``hosts`` are HostStates in placement's
        candidate order; ``alloc_reqs`` maps compute node uuid -> its allocation request
        or list of them, in placement's order (None: no placement, e.g. unit tests);
        ``provider_summaries`` is placement's, to consume against per resource class and
        provider. ``claim(host, alloc_req, instance_uuid) -> bool`` (False: lost a race,
        the next host is tried; raising InstanceClaimFailed fails that instance alone,
        which then gets an empty list) and ``unclaim(host, alloc_req, instance_uuid)``
        are injected. Returns, per instance, ``[selected, *alternates]`` Selection dicts.
        Raises NoValidHost (with ``explanation``) when fewer than ``min_count`` instances
        fit; every claim of the request is then released and the host states restored.
        With sampling on (``sampling.py``), a sample that runs out of hosts
        before every instance has one is undone and the request decided again
        over every candidate (``_sample=False``)."""
        exp = explanation or Explanation(
            spec, self.conf.scheduler.explain_sample_size
        )
        n = max(spec.num_instances, len(spec.instance_uuids), 1)
        uuids = list(spec.instance_uuids) + [None] * (
            n - len(spec.instance_uuids)
        )
        min_count = min(max(spec.min_count, 1), n)
        exp.requested, exp.min_count = n, min_count
        exp.placement_candidates = len(hosts)
        max_alts = (
            max(self.conf.scheduler.max_attempts - 1, 0)
            if return_alternates
            else 0
        )

        filters = self.enabled_filters(spec)
        progressive = [f for f in filters if f.depends_on_request_progress]
        per_instance = [
            f
            for f in filters
            if not f.run_filter_once_per_request
            and not f.depends_on_request_progress
        ]
        cands, table, slots = self._filtered(
            hosts, spec, alloc_reqs, filters, exp, n if _sample else None
        )
        ranking = ranking_mod.Ranking(cands, self.weighers, spec, table, slots)
        usage = consumption.ProviderUsage(provider_summaries)

        # ``_record``: the dry run's (claims, snapshots), undone by it afterwards
        claims, snapshots = _record if _record is not None else ([], {})
        results = []
        try:
            for num, uuid in enumerate(uuids):
                chosen, failure = None, None
                while len(ranking):
                    i = self._pick(ranking)
                    host = ranking.host(i)
                    areqs = areqs_of(alloc_reqs, host)
                    areq = (
                        consumption.fitting_request(host, areqs, usage)
                        if areqs
                        else None
                    )
                    if areqs and areq is None:
                        # e.g. a sharing provider another host of this request drained
                        exp.record_later(
                            host.host,
                            'ResourceCapacity',
                            'no allocation candidate left',
                        )
                        ranking.remove(i)
                        continue
                    try:
                        if claim is None or claim(host, areq, uuid):
                            chosen = (i, host, areqs, areq)
                            break
                    except exception.InstanceClaimFailed as exc:
                        # Not the host's fault: this instance cannot be claimed
                        # anywhere. It fails alone; the others go on.
                        failure = (host.host, exc.reason)
                        break
                    exp.record_later(
                        host.host, 'claim', 'lost a race for its resources'
                    )
                    ranking.remove(i)
                if failure is not None:
                    exp.record_instance_failure(uuid, *failure)
                    exp.record_choice([])
                    results.append([])
                    continue
                if chosen is None:
                    break
                i, host, areqs, areq = chosen
                weights = [ranking.total(i)]
                claims.append((host, areq, uuid))
                if id(host) not in snapshots:
                    snapshots[id(host)] = (host, host.snapshot())
                consumption.consume(host, spec, self.conf, uuid, areq, usage)
                why = (
                    self._still_passes(host, spec, per_instance, areqs, usage)
                    if num + 1 < n
                    else None
                )
                if why is not None:
                    exp.record_later(host.host, why[0], why[1])
                    ranking.remove(i)
                    excl = None
                else:
                    ranking.update(i)
                    excl = i
                if progressive and num + 1 < n:
                    after = self.run_filters(ranking.hosts, spec, progressive)
                    if len(after) != len(ranking.hosts):
                        ranking.keep(after)
                        excl = next(
                            (
                                j
                                for j, h in enumerate(ranking.hosts)
                                if h is host
                            ),
                            None,
                        )
                selection = [make_selection(host, areq, spec)]
                if max_alts:
                    selection += self._alternates(
                        ranking,
                        host,
                        excl,
                        spec,
                        alloc_reqs,
                        usage,
                        max_alts,
                        weights,
                    )
                exp.record_choice(weights)
                results.append(selection)
            if len(results) < n and exp.sample is not None:
                if exp.sample.partial:
                    return self._again(
                        spec,
                        hosts,
                        alloc_reqs,
                        claim,
                        unclaim,
                        return_alternates,
                        exp,
                        provider_summaries,
                        (claims, snapshots),
                        _record is not None,
                    )
            exp.placed = sum(1 for r in results if r)
            if exp.placed < min_count:
                raise exception.NoValidHost(exp.message(), exp.to_dict())
        except BaseException:
            if _record is None:
                self._undo(spec, claims, snapshots, unclaim)
            raise
        return results

    def _again(
        self,
        spec,
        hosts,
        alloc_reqs,
        claim,
        unclaim,
        alts,
        exp,
        summaries,
        record,
        recorded,
    ):
        """The sample ran out of hosts with candidates left unexamined:
        undo what it placed and decide again over every candidate."""
        claims, snapshots = record
        sample = exp.sample
        self._undo(spec, claims, snapshots, unclaim)
        del claims[:]
        snapshots.clear()
        exp.restart()
        exp.sample = sampling.Sample(
            sample.candidates,
            sample.candidates,
            sample.want,
            sample.start,
            fell_back=True,
        )
        return self.schedule(
            spec,
            hosts,
            alloc_reqs,
            claim=claim,
            unclaim=unclaim,
            return_alternates=alts,
            explanation=exp,
            provider_summaries=summaries,
            _record=record if recorded else None,
            _sample=False,
        )

    def _alternates(
        self, ranking, chosen, excl, spec, alloc_reqs, usage, k, weights=None
    ) -> list:
        """Up to ``k`` Selections of the best other hosts in ``chosen``'s cell that still
        have an allocation request with room left (after this request's consumption)."""
        want = k
        while True:
            idx = ranking.ranked(want, exclude=excl, cell=chosen.cell_uuid)
            out, ws = [], []
            for j in idx:
                alt = ranking.host(j)
                areqs = areqs_of(alloc_reqs, alt)
                if areqs:
                    areq = consumption.fitting_request(alt, areqs, usage)
                    if areq is None:
                        continue
                else:
                    if not consumption.host_fits(alt, spec, (), usage):
                        continue
                    areq = None
                out.append(make_selection(alt, areq, spec))
                ws.append(ranking.total(j))
                if len(out) == k:
                    break
            if len(out) == k or len(idx) < want:
                if weights is not None:
                    weights.extend(ws)
                return out
            want *= 2

    @classmethod
    def undo(cls, spec, record, unclaim=None) -> None:
        """Undo a :meth:`schedule` run given ``_record=record``: release
        its claims (with ``unclaim``) and restore the host states."""
        cls._undo(spec, record[0], record[1], unclaim)

    @staticmethod
    def _undo(spec, claims, snapshots, unclaim) -> None:
        """Release every claim of the request and restore what it consumed."""
        for host, areq, uuid in claims:
            if unclaim is not None:
                try:
                    unclaim(host, areq, uuid)
                except Exception:  # noqa: BLE001 - keep releasing the others
                    pass
        for host, snap in snapshots.values():
            host.restore(snap)
        if spec.instance_group is not None:
            group = spec.instance_group
            placed = {u for _h, _a, u in claims if u}
            group.members[:] = [m for m in group.members if m not in placed]
            for h, _a, _u in claims:
                if h.host in group.hosts:
                    group.hosts.remove(h.host)

    # ---------------------------------------------------------------- dry run
    def dry_run(
        self, spec, hosts, alloc_reqs=None, provider_summaries=None
    ) -> dict:
        """Rank hosts without claiming anything (``dry_run.py``)."""
        return dry_run_mod.answer(
            self, spec, hosts, alloc_reqs, provider_summaries
        )
