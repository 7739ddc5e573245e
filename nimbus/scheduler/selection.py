"""The selection loop: filter -> weigh -> pick -> claim -> consume, per instance.

Speed comes from doing per-host work once per request instead of once per instance:

* filters run over all candidates for the first instance only; afterwards only filters
  that declare ``depends_on_request_progress`` (server groups) run over all candidates, and
  the other per-instance filters run on the one host that just received an instance (its
  state is the only one that changed);
* weighers produce a raw value list per request; after a placement only the chosen host's
  raw values are recomputed, and totals are recomputed for every host only when a
  weigher's min or max moved (normalisation changed), else for that host alone;
* weighers with nothing to do (``is_enabled_for`` False, or multiplier 0 with no aggregate
  override) are skipped.

``reference.py`` implements the same rules the slow, obvious way; a test checks both pick
the same hosts.
"""

from __future__ import annotations

import heapq
import random
from typing import Callable

from nimbus.scheduler import exception, plugins
from nimbus.scheduler.explain import Explanation
from nimbus.scheduler.filters import numa as numa_filter
from nimbus.scheduler.filters import pci as pci_filter
from nimbus.scheduler.weighers import base as weigher_base

ALLOCATION_REQUEST_VERSION = "1.39"

Claim = Callable[..., bool]


def selection_limits(host, spec=None) -> dict:
    """The Selection's ``limits``, as Nova fills them today: only a request with a NUMA
    topology gets ``numa_topology`` (the host's CPU and RAM allocation ratios, which the
    compute's NUMA claim needs to fit shared CPUs and memory). Nova's old ``vcpu``,
    ``memory_mb`` and ``disk_gb`` limits died with the core/RAM/disk filters: placement's
    claim already bounds those, so Nimbus never sends them."""
    limits = dict(host.limits or {})
    if spec is not None and numa_filter.host_fit_wanted(spec):
        limits["numa_topology"] = {"cpu_allocation_ratio": host.cpu_allocation_ratio,
                                   "ram_allocation_ratio": host.ram_allocation_ratio}
    return limits


def make_selection(host, alloc_req, spec=None) -> dict:
    return {"service_host": host.host, "nodename": host.nodename,
            "compute_node_uuid": host.uuid, "cell_uuid": host.cell_uuid,
            "allocation_request": alloc_req,
            "allocation_request_version": ALLOCATION_REQUEST_VERSION,
            "limits": selection_limits(host, spec)}


def pre_filter_hosts(hosts, spec, alloc_reqs, explanation=None):
    """ignore_hosts / force_hosts / force_nodes and 'has an allocation candidate'."""
    out = hosts
    if alloc_reqs is not None:
        new = [h for h in out if h.uuid in alloc_reqs]
        if explanation:
            explanation.record_pre("AllocationCandidates", out, new,
                                   "no allocation candidate from placement")
        out = new
    if spec.ignore_hosts:
        ignore = set(spec.ignore_hosts)
        new = [h for h in out if h.host not in ignore]
        if explanation:
            explanation.record_pre("IgnoreHosts", out, new, "host is in ignore_hosts")
        out = new
    if spec.force_hosts or spec.force_nodes:
        fh, fn = set(spec.force_hosts), set(spec.force_nodes)
        new = [h for h in out if (not fh or h.host in fh) and (not fn or h.nodename in fn)]
        if explanation:
            explanation.record_pre("ForceHosts", out, new, "host is not in force_hosts/nodes")
        out = new
    return out


def instance_resources(spec):
    f = spec.flavor
    disk = 0 if spec.is_bfv else f.root_gb
    return f.vcpus, f.memory_mb, disk + f.ephemeral_gb + (f.swap + 1023) // 1024


def consume(host, spec, conf, instance_uuid):
    """Consume one instance of ``spec`` on ``host`` in memory (NUMA, PCI included)."""
    fit = numa_filter.host_fit(host, spec)
    take = None
    try:
        reqs = pci_filter.pci_requests(spec, conf)
    except pci_filter.InvalidPciAlias:
        reqs = []
    if reqs:
        take = pci_filter.plan(host.pci_pools, reqs)
    host.consume_from_request(spec, instance_uuid, numa_fit=fit, pci_take=take)
    group = spec.instance_group
    if group is not None:
        if instance_uuid and instance_uuid not in group.members:
            group.members.append(instance_uuid)
        group.hosts.append(host.host)


class _Ranking:
    """Candidates with their raw weigher values and total weights."""

    def __init__(self, hosts, weighers, spec):
        self.hosts = list(hosts)
        self.spec = spec
        with_aggs = [i for i, h in enumerate(self.hosts) if h.aggregate_metadata]
        self.active = []   # [weigher, multiplier (float or list), raw list, (lo, hi)]
        for w in weighers:
            if not w.is_enabled_for(spec):
                continue
            default = w.default_multiplier()
            key = w.override_key
            mult = default
            if key and with_aggs and any(key in self.hosts[i].aggregate_metadata
                                         for i in with_aggs):
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
                totals = [t + mm * ((v - lo) / span) for t, v, mm in zip(totals, raw, m)]
            elif m != 0.0:
                totals = [t + m * ((v - lo) / span) for t, v in zip(totals, raw)]
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
            idx = [i for i in idx if i != exclude and (cell is None or hosts[i].cell_uuid == cell)]
        if k == 1 and n and cell is None and exclude is None:
            best = max(self.totals)
            return [self.totals.index(best)]
        return heapq.nlargest(k, idx, key=self.totals.__getitem__)


class FilterScheduler:
    """Filters, weighs and selects hosts for a RequestSpec. Stateless between requests
    except for the host states it is handed (which it updates as it consumes)."""

    def __init__(self, conf, filters=None, weighers=None, rng=None):
        self.conf = conf
        self.filters = plugins.load_filters(conf) if filters is None else list(filters)
        self.weighers = plugins.load_weighers(conf) if weighers is None else list(weighers)
        # Weighers that cannot weigh some hosts (MetricsWeigher with [metrics] required)
        # reject them after the configured filters, with a reason.
        self.weigher_filters = weigher_base.requirements_of(self.weighers)
        self.rng = rng or random.Random()

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

    def _still_passes(self, host, spec, per_instance):
        vcpus, ram, disk = instance_resources(spec)
        if not host.fits(vcpus, ram, disk):
            return "ResourceCapacity", "no capacity left for another instance"
        for f in per_instance:
            if not f.host_passes(host, spec):
                return f.name, f.reject_reason(host, spec)
        return None

    # ---------------------------------------------------------------- selection
    def _pick(self, ranking: _Ranking):
        fs = self.conf.filter_scheduler
        k = max(1, fs.host_subset_size)
        shuffle = fs.shuffle_best_same_weighed_hosts
        if k == 1 and not shuffle:
            return ranking.ranked(1)[0]
        top = ranking.ranked(k)
        if shuffle and top:
            best = ranking.totals[top[0]]
            ties = [i for i, t in enumerate(ranking.totals) if t == best]
            self.rng.shuffle(ties)
            top = (ties + [i for i in top if ranking.totals[i] != best])[:k]
        return self.rng.choice(top) if k > 1 else top[0]

    def schedule(self, spec, hosts, alloc_reqs=None, claim: Claim | None = None,
                 unclaim: Callable | None = None, return_alternates: bool = True,
                 explanation: Explanation | None = None) -> list[list[dict]]:
        """Place every instance of ``spec``. ``hosts`` are HostStates in placement's
        candidate order; ``alloc_reqs`` maps compute node uuid -> allocation request (None:
        no placement, e.g. unit tests). ``claim(host, alloc_req, instance_uuid) -> bool``
        (False: lost a race, the next host is tried; raising InstanceClaimFailed fails
        that instance alone, which then gets an empty list) and ``unclaim(host,
        alloc_req, instance_uuid)`` are injected. Returns, per instance, ``[selected,
        *alternates]`` Selection dicts. Raises NoValidHost (with ``explanation``) when
        fewer than ``min_count`` instances fit; every claim of the request is then
        released."""
        exp = explanation or Explanation(spec, self.conf.scheduler.explain_sample_size)
        n = max(spec.num_instances, len(spec.instance_uuids), 1)
        uuids = list(spec.instance_uuids) + [None] * (n - len(spec.instance_uuids))
        min_count = min(max(spec.min_count, 1), n)
        exp.requested, exp.min_count = n, min_count
        exp.placement_candidates = len(hosts)
        max_alts = max(self.conf.scheduler.max_attempts - 1, 0) if return_alternates else 0

        filters = self.enabled_filters(spec)
        progressive = [f for f in filters if f.depends_on_request_progress]
        per_instance = [f for f in filters if not f.run_filter_once_per_request
                        and not f.depends_on_request_progress]
        cands = pre_filter_hosts(list(hosts), spec, alloc_reqs, exp)
        cands = self.run_filters(cands, spec, filters, exp)
        ranking = _Ranking(cands, self.weighers, spec)

        results, claims, snapshots = [], [], {}
        try:
            for num, uuid in enumerate(uuids):
                chosen, failure = None, None
                while len(ranking):
                    i = self._pick(ranking)
                    host = ranking.hosts[i]
                    areq = alloc_reqs.get(host.uuid) if alloc_reqs is not None else None
                    try:
                        if claim is None or claim(host, areq, uuid):
                            chosen = (i, host, areq)
                            break
                    except exception.InstanceClaimFailed as exc:
                        # Not the host's fault: this instance cannot be claimed
                        # anywhere. It fails alone; the others go on.
                        failure = (host.host, exc.reason)
                        break
                    exp.record_later(host.host, "claim", "lost a race for its resources")
                    ranking.remove(i)
                if failure is not None:
                    exp.record_instance_failure(uuid, *failure)
                    results.append([])
                    continue
                if chosen is None:
                    break
                i, host, areq = chosen
                claims.append((host, areq, uuid))
                if id(host) not in snapshots:
                    snapshots[id(host)] = (host, host.snapshot())
                consume(host, spec, self.conf, uuid)
                why = self._still_passes(host, spec, per_instance) if num + 1 < n else None
                if why is not None:
                    exp.record_later(host.host, why[0], why[1])
                    alts_pool_host = host
                    ranking.remove(i)
                else:
                    alts_pool_host = host
                    ranking.update(i)
                if progressive and num + 1 < n:
                    before = ranking.hosts
                    after = self.run_filters(before, spec, progressive)
                    ranking.keep(after)
                selection = [make_selection(host, areq, spec)]
                if max_alts:
                    try:
                        excl = ranking.hosts.index(alts_pool_host)
                    except ValueError:
                        excl = None
                    for j in ranking.ranked(max_alts, exclude=excl, cell=host.cell_uuid):
                        alt = ranking.hosts[j]
                        selection.append(make_selection(
                            alt, alloc_reqs.get(alt.uuid) if alloc_reqs is not None else None,
                            spec))
                results.append(selection)
            exp.placed = sum(1 for r in results if r)
            if exp.placed < min_count:
                raise exception.NoValidHost(exp.message(), exp.to_dict())
        except BaseException:
            for host, areq, uuid in claims:
                if unclaim is not None:
                    try:
                        unclaim(host, areq, uuid)
                    except Exception:  # keep releasing the others
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
            raise
        return results

    # ---------------------------------------------------------------- dry run
    def dry_run(self, spec, hosts, alloc_reqs=None) -> dict:
        """Rank hosts without claiming or consuming anything. JSON-able."""
        from nimbus.scheduler import reference
        exp = Explanation(spec, self.conf.scheduler.explain_sample_size)
        exp.placement_candidates = len(hosts)
        filters = self.enabled_filters(spec)
        cands = pre_filter_hosts(list(hosts), spec, alloc_reqs, exp)
        cands = self.run_filters(cands, spec, filters, exp)
        detail = reference.weigh_detail(cands, self.weighers, spec)
        order = sorted(range(len(cands)), key=lambda i: -detail[i]["weight"])
        return {
            "placement_candidates": len(hosts),
            "filters": exp.filter_counts(),
            "pre_filters": exp.to_dict()["pre_filters"],
            "ranked": [dict(detail[i], host=cands[i].host, nodename=cands[i].nodename,
                            compute_node_uuid=cands[i].uuid, cell_uuid=cands[i].cell_uuid)
                       for i in order],
            "rejected": exp.rejected(None),
            "message": None if cands else exp.message(),
        }
