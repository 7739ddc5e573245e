"""A slow, obviously-correct implementation of the scheduling rules.

Used by the dry run (which wants every weigher's numbers anyway), by the benchmark as a
baseline, and by tests to check that the fast path in ``selection.py`` picks the same
hosts: every instance re-runs every filter on every host and every weigher on every
candidate, exactly as the rules are written down.
"""

from __future__ import annotations

from nimbus.scheduler import consumption, host_prefilter, selection
from nimbus.scheduler.weighers.base import weigh_detail


def schedule(
    conf,
    filters,
    weighers,
    spec,
    hosts,
    alloc_reqs=None,
    provider_summaries=None,
) -> list[str]:
    """Hosts chosen per instance (host_subset_size 1, no shuffling, no claims)."""
    n = max(spec.num_instances, len(spec.instance_uuids), 1)
    uuids = list(spec.instance_uuids) + [None] * (n - len(spec.instance_uuids))
    pool = host_prefilter.pre_filter_hosts(list(hosts), spec, alloc_reqs)
    usage = consumption.ProviderUsage(provider_summaries)
    full = (
        set()
    )  # hosts that received an instance and have no room for another
    chosen = []
    for uuid in uuids:
        cands = []
        for h in pool:
            if h.host in full:
                continue
            if all(
                f.host_passes(h, spec)
                for f in filters
                if f.is_enabled_for(spec)
            ):
                cands.append(h)
        if not cands:
            break
        detail = weigh_detail(cands, weighers, spec)
        order = sorted(range(len(cands)), key=lambda i: -detail[i]['weight'])
        best = cands[order[0]]
        areqs = selection.areqs_of(alloc_reqs, best)
        areq = (
            consumption.fitting_request(best, areqs, usage) if areqs else None
        )
        chosen.append(best.host)
        consumption.consume(best, spec, conf, uuid, areq, usage)
        if not consumption.host_fits(best, spec, areqs, usage):
            full.add(best.host)
    return chosen
