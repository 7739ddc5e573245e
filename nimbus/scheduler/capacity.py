"""How many more of a flavor fit, and where, without claiming anything.

The same path as a decision up to the filters: the request filters build
placement's query (aggregates, availability zone, traits, accelerators'
resource groups), placement answers with every host that holds at least one
(no ``limit``), the scheduler's pre-filters and filters run once over them
(server group policies, capabilities, image properties, AZ...). Then, per
passing host, placement's own figures - capacity is ``(total - reserved) *
allocation_ratio`` and usage, per resource provider of the host's tree -
give how many instances fit and which resource class runs out first.

Per-host caps the filters would apply as instances land are honoured for
the server group policies (anti-affinity: one per host, or
``max_server_per_host``; affinity: the single host the group is on, or the
best single host) and for NumInstancesFilter when it is enabled; other
filters are judged for the first instance only (documented in
docs/insight.md).
"""

import math

from nimbus.scheduler import host_prefilter, selection

UNLIMITED = None


def _amounts(areq):
    """``{rp: {rc: amount}}`` of one allocation request."""
    return {
        rp: dict(body.get('resources') or {})
        for rp, body in (areq.get('allocations') or {}).items()
    }


def _free(summary, rc):
    res = (summary or {}).get('resources', {}).get(rc)
    if res is None:
        return None
    return res.get('capacity', 0) - res.get('used', 0)


def fit_count(areqs, summaries):
    """``(count, limiting_rc, {rc: count})`` for one host: how many
    instances its allocation requests leave room for.

    A resource class provided by several providers of the tree (e.g. one
    GPU per child provider) counts, per provider, how many whole requests
    it holds; a request takes each class from one provider.
    """
    by_rc = {}
    for areq in areqs:
        for rp, resources in _amounts(areq).items():
            for rc, amount in resources.items():
                if amount <= 0:
                    continue
                by_rc.setdefault(rc, {})[rp] = amount
    counts = {}
    for rc, providers in by_rc.items():
        total = 0
        for rp, amount in providers.items():
            free = _free(summaries.get(rp), rc)
            if free is not None and free > 0:
                total += int(math.floor(free / amount + 1e-9))
        counts[rc] = total
    if not counts:
        return UNLIMITED, None, counts
    limiting = min(sorted(counts), key=lambda rc: counts[rc])
    return counts[limiting], limiting, counts


class Capacity:
    """``Capacity(conf, engine)``: ``engine`` is the scheduler's
    :class:`~nimbus.scheduler.selection.FilterScheduler`."""

    def __init__(self, conf, engine):
        self.conf = conf
        self.engine = engine

    def _filter_caps(self, spec, filters):
        names = {f.name for f in filters}
        cap = None
        if 'NumInstancesFilter' in names:
            cap = self.conf.filter_scheduler.max_instances_per_host
        return cap

    def count(self, spec, hosts, alloc_reqs, summaries, per_host=True):
        """The answer for ``spec`` over placement's candidates: ``hosts``
        (HostStates in placement's order), ``alloc_reqs`` (compute node
        uuid -> allocation requests) and ``summaries``."""
        filters = self.engine.enabled_filters(spec)
        cands = host_prefilter.pre_filter_hosts(list(hosts), spec, alloc_reqs)
        passing = self.engine.run_filters(cands, spec, filters)
        cap = self._filter_caps(spec, filters)
        group = spec.instance_group
        policy = group.policy if group is not None else None
        per_group_host = None
        if policy == 'anti-affinity':
            per_group_host = int(
                (group.rules or {}).get('max_server_per_host', 1)
            )
        rows = []
        for host in passing:
            areqs = selection.areqs_of(alloc_reqs, host)
            n, limiting, counts = fit_count(areqs, summaries)
            if n is UNLIMITED:
                n = 0
            if cap is not None:
                room = max(cap - host.num_instances, 0)
                if room < n:
                    n, limiting = room, 'max_instances_per_host'
            if per_group_host is not None:
                mine = sum(1 for h in group.hosts if h == host.host)
                room = max(per_group_host - mine, 0)
                if room < n:
                    n, limiting = room, 'server_group'
            if n <= 0:
                continue
            rows.append(
                {
                    'host': host.host,
                    'nodename': host.nodename,
                    'uuid': host.uuid,
                    'cell_uuid': host.cell_uuid,
                    'availability_zone': host.availability_zone,
                    'aggregates': sorted(
                        a.get('name') or str(a.get('id'))
                        for a in host.aggregates
                    ),
                    'fits': n,
                    'limited_by': limiting,
                    'by_resource_class': counts,
                }
            )
        if policy == 'affinity' and rows:
            # Every member on one host: the group's, or the best single one.
            best = max(rows, key=lambda r: r['fits'])
            rows = [best]
        return summarise(
            rows,
            placement_candidates=len(hosts),
            passing_filters=len(passing),
            per_host=per_host,
        )


def summarise(rows, placement_candidates=0, passing_filters=0, per_host=True):
    """Totals per aggregate, availability zone and cell, and how often each
    resource class runs out first."""
    total = 0
    by = {'aggregate': {}, 'availability_zone': {}, 'cell': {}}
    limiting = {}
    for row in rows:
        total += row['fits']
        for agg in row['aggregates']:
            by['aggregate'][agg] = by['aggregate'].get(agg, 0) + row['fits']
        az = row['availability_zone'] or ''
        by['availability_zone'][az] = (
            by['availability_zone'].get(az, 0) + row['fits']
        )
        cell = row['cell_uuid'] or ''
        by['cell'][cell] = by['cell'].get(cell, 0) + row['fits']
        lim = row['limited_by'] or ''
        limiting[lim] = limiting.get(lim, 0) + 1
    out = {
        'total': total,
        'hosts_with_room': len(rows),
        'placement_candidates': placement_candidates,
        'passing_filters': passing_filters,
        'per_aggregate': by['aggregate'],
        'per_availability_zone': by['availability_zone'],
        'per_cell': by['cell'],
        'limited_by': limiting,
        'runs_out_first': (
            max(sorted(limiting), key=limiting.get) if limiting else None
        ),
    }
    if per_host:
        out['hosts'] = sorted(rows, key=lambda r: (-r['fits'], r['host']))
    return out
