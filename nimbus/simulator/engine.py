"""Replays an arrival trace through the real scheduler in process.

Each arrival becomes a RequestSpec handed to
:class:`nimbus.scheduler.driver.Scheduler` - request filters, host states
from placement's provider summaries, filters, weighers, selection and a
claim - exactly as ``select_destinations`` runs; no RPC. Placement is
:class:`SimPlacement`: an in-memory table of inventories (with allocation
ratios) and allocations that answers candidates and claims the way
placement does for a flat tree. Departures remove the allocation and the
instance from the host state. Deterministic for a given trace and seed.
"""

import heapq
import random
import statistics

from nimbus.common import context
from nimbus.common.objects.request_spec import InstanceGroup, RequestSpec
from nimbus.scheduler import conf as sched_conf
from nimbus.scheduler import driver as driver_mod
from nimbus.scheduler import exception
from nimbus.scheduler import host_manager
from nimbus.scheduler import testing
from nimbus.simulator import trace as trace_mod

RCS = ('VCPU', 'MEMORY_MB', 'DISK_GB')

PRESETS = {
    'spread': {},
    'stack': {
        'filter_scheduler.ram_weight_multiplier': -1.0,
        'filter_scheduler.cpu_weight_multiplier': -1.0,
        'filter_scheduler.disk_weight_multiplier': -1.0,
    },
}


def weigher_settings(text):
    """A preset name (spread, stack) or ``group.option=value;...``."""
    if text in PRESETS:
        return dict(PRESETS[text])
    out = {}
    for item in text.split(';'):
        key, sep, value = item.partition('=')
        if not sep or '.' not in key:
            raise ValueError(
                'weigher setting %r: use spread, stack or '
                'group.option=value;...' % item
            )
        out[key.strip()] = float(value)
    return out


class SimPlacement:
    def __init__(self, capacity):
        self.capacity = capacity  # rp -> {rc: capacity}
        self.used = {rp: dict.fromkeys(RCS, 0) for rp in capacity}
        self.allocations = {}  # consumer -> (rp, resources)
        self.want = None
        self.order = list(capacity)
        self.offset = 0

    def get_allocation_candidates(self, ctxt, params):
        """Like placement: at most ``limit`` candidates, starting at a
        point that moves every call (placement's order is not the hosts'
        order either)."""
        want = self.want
        limit = int(dict(params).get('limit') or 0) or len(self.order)
        areqs, summaries = [], {}
        n = len(self.order)
        start, self.offset = self.offset, (self.offset + 7919) % max(n, 1)
        for k in range(n):
            if len(areqs) >= limit:
                break
            rp = self.order[(start + k) % n]
            cap = self.capacity[rp]
            used = self.used[rp]
            if any(used[rc] + n > cap[rc] for rc, n in want.items()):
                continue
            areqs.append({'allocations': {rp: {'resources': dict(want)}}})
            summaries[rp] = {
                'root_provider_uuid': rp,
                'traits': [],
                'resources': {
                    rc: {'capacity': cap[rc], 'used': used[rc]} for rc in RCS
                },
            }
        return {'allocation_requests': areqs, 'provider_summaries': summaries}

    def claim_resources(self, ctxt, consumer, areq, project_id, user_id):
        ((rp, body),) = areq['allocations'].items()
        res = body['resources']
        if any(
            self.used[rp][rc] + n > self.capacity[rp][rc]
            for rc, n in res.items()
        ):
            return False
        for rc, n in res.items():
            self.used[rp][rc] += n
        self.allocations[consumer] = (rp, res)
        return True

    def remove_allocations(self, ctxt, consumer):
        rp, res = self.allocations.pop(consumer, (None, {}))
        for rc, n in res.items():
            self.used[rp][rc] -= n


def _want(flavor):
    vcpus, mem, disk = trace_mod.FLAVORS[flavor]
    return {'VCPU': vcpus, 'MEMORY_MB': mem, 'DISK_GB': disk}


class Simulation:
    def __init__(self, hosts, seed=0, settings=None, samples=20):
        self.conf = sched_conf.make_conf(**(settings or {}))
        self.conf.set_override('emit_decisions', False, group='scheduler')
        rng = random.Random(seed)
        nodes, services, capacity = [], [], {}
        for i in range(hosts):
            node = testing.compute_node(
                i,
                rng,
                vcpus=32,
                memory_mb=131072,
                local_gb=2000,
                vcpus_used=0,
                memory_mb_used=0,
                local_gb_used=0,
                pci_stats=[],
                num_io_ops=0,
                failed_builds=0,
                metrics={},
                cell_uuid='cell-%d' % (i % 2 + 1),
            )
            nodes.append(node)
            services.append(
                {
                    'host': node['host'],
                    'binary': 'nimbus-compute',
                    'disabled': False,
                    'up': True,
                }
            )
            capacity[node['uuid']] = {
                'VCPU': int(node['vcpus'] * node['cpu_allocation_ratio']),
                'MEMORY_MB': int(
                    node['memory_mb'] * node['ram_allocation_ratio']
                ),
                'DISK_GB': int(
                    node['local_gb'] * node['disk_allocation_ratio']
                ),
            }
        self.hm = host_manager.HostManager(
            self.conf,
            host_manager.InMemoryHostInfoSource(nodes, services, [], {}, []),
        )
        self.hm.refresh()
        self.placement = SimPlacement(capacity)
        self.scheduler = driver_mod.Scheduler(
            self.conf, self.placement, self.hm
        )
        self.scheduler.engine.rng = random.Random(seed)
        self.samples = max(samples, 1)
        self.host_of_rp = {n['uuid']: n['host'] for n in nodes}

    def _spec(self, n, item, groups):
        vcpus, mem, disk = trace_mod.FLAVORS[item['flavor']]
        spec = RequestSpec.from_primitive(
            {
                'flavor': {
                    'name': item['flavor'],
                    'flavorid': item['flavor'],
                    'vcpus': vcpus,
                    'memory_mb': mem,
                    'root_gb': disk,
                    'ephemeral_gb': 0,
                    'swap': 0,
                    'extra_specs': {},
                },
                'instance_uuids': ['sim-%08d' % n],
                'num_instances': 1,
                'project_id': 'sim',
                'user_id': 'sim',
            }
        )
        if item.get('group'):
            group = groups.get(item['group'])
            if group is None:
                group = groups[item['group']] = InstanceGroup(
                    uuid='sim-%s' % item['group'],
                    policy=item.get('policy') or 'anti-affinity',
                )
            spec.instance_group = group
        return spec

    def sample(self, t, placed, rejected, window):
        used = dict.fromkeys(RCS, 0)
        total = dict.fromkeys(RCS, 0)
        per_host = []
        for rp, cap in self.placement.capacity.items():
            for rc in RCS:
                used[rc] += self.placement.used[rp][rc]
                total[rc] += cap[rc]
        counts = {}
        for rp, _res in self.placement.allocations.values():
            counts[rp] = counts.get(rp, 0) + 1
        per_host = [counts.get(rp, 0) for rp in self.placement.capacity]
        fits = {}
        for name in trace_mod.FLAVORS:
            want = _want(name)
            fits[name] = sum(
                min(
                    (cap[rc] - self.placement.used[rp][rc]) // want[rc]
                    for rc in RCS
                )
                for rp, cap in self.placement.capacity.items()
            )
        return {
            't': round(t, 3),
            'utilisation': {
                rc: round(used[rc] / total[rc], 4) for rc in RCS if total[rc]
            },
            'fits': fits,
            'instances': len(self.placement.allocations),
            'placed': placed,
            'rejected': rejected,
            'rejection_rate': round(window[1] / window[0], 4)
            if window[0]
            else 0.0,
            'per_host': {
                'min': min(per_host),
                'max': max(per_host),
                'mean': round(statistics.fmean(per_host), 3),
                'stdev': round(statistics.pstdev(per_host), 3),
                'empty': per_host.count(0),
            },
        }

    def run(self, arrivals):
        ctxt = context.get_admin_context()
        end = float(arrivals[-1]['t']) if arrivals else 0.0
        step = end / self.samples if end > 0 else 1.0
        next_sample = step
        departures = []  # (time, n, consumer, group)
        groups, timeline = {}, []
        placed = rejected = 0
        window = [0, 0]
        for n, item in enumerate(arrivals):
            t = float(item['t'])
            while departures and departures[0][0] <= t:
                _, _, consumer, host, group = heapq.heappop(departures)
                self.placement.remove_allocations(ctxt, consumer)
                self.hm.delete_instance_info(host, consumer)
                if group is not None:
                    if consumer in group.members:
                        group.members.remove(consumer)
                    if host in group.hosts:
                        group.hosts.remove(host)
            while t > next_sample:
                timeline.append(
                    self.sample(next_sample, placed, rejected, window)
                )
                window = [0, 0]
                next_sample += step
            spec = self._spec(n, item, groups)
            self.placement.want = _want(item['flavor'])
            window[0] += 1
            try:
                result = self.scheduler.select_destinations(
                    ctxt, spec, return_alternates=False
                )
            except exception.NoValidHost:
                rejected += 1
                window[1] += 1
                continue
            placed += 1
            if item.get('lifetime') is not None:
                heapq.heappush(
                    departures,
                    (
                        t + float(item['lifetime']),
                        n,
                        spec.instance_uuids[0],
                        result[0][0].service_host,
                        spec.instance_group,
                    ),
                )
        timeline.append(self.sample(end, placed, rejected, window))
        return {
            'arrivals': len(arrivals),
            'placed': placed,
            'rejected': rejected,
            'rejection_rate': round(rejected / len(arrivals), 4)
            if arrivals
            else 0.0,
            'timeline': timeline,
        }
