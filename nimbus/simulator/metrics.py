"""What the simulator reports at each sample of simulated time.

``utilisation``: used / capacity per resource class over every provider
(accelerator classes included); ``fits``: how many more of each standard
flavor fit (summed over hosts: fragmentation shows as fewer than the free
totals suggest) and, per accelerator class, how many devices are free and
on how many hosts (``<RC>_hosts``); ``per_host``: instances per host.
"""

import statistics

from nimbus.simulator import hosts as hosts_mod
from nimbus.simulator import trace as trace_mod


class Metrics:
    def __init__(self, placement, roots):
        self.placement = placement
        self.roots = roots
        caps = placement.capacity
        self.rcs = sorted(
            {rc for cap in caps.values() for rc in cap},
            key=lambda rc: (rc not in hosts_mod.BASE_RCS, rc),
        )
        self.total = {
            rc: sum(cap.get(rc, 0) for cap in caps.values()) for rc in self.rcs
        }
        self.devices = {}  # rc -> [(root, provider)]
        for rp, cap in caps.items():
            for rc in cap:
                if rc not in hosts_mod.BASE_RCS:
                    self.devices.setdefault(rc, []).append(
                        (placement.root[rp], rp)
                    )

    def sample(self, t, placed, rejected, window):
        placement = self.placement
        caps, usage = placement.capacity, placement.usage()
        used = dict.fromkeys(self.rcs, 0)
        for rp_usage in usage.values():
            for rc, n in rp_usage.items():
                used[rc] += n
        counts = dict.fromkeys(self.roots, 0)
        root = placement.root
        for allocs in placement.allocations.values():
            counts[root[next(iter(allocs))]] += 1
        per_host = list(counts.values())
        free = []
        for rp in self.roots:
            cap, got = caps[rp], usage.get(rp) or {}
            free.append(
                [cap[rc] - got.get(rc, 0) for rc in hosts_mod.BASE_RCS]
            )
        fits = {}
        for name, want in trace_mod.FLAVORS.items():
            fits[name] = sum(
                min(f // w for f, w in zip(room, want, strict=False) if w)
                for room in free
            )
        for rc, where in self.devices.items():
            left = [
                (r, caps[rp][rc] - (usage.get(rp) or {}).get(rc, 0))
                for r, rp in where
            ]
            fits[rc] = sum(n for _r, n in left)
            fits[rc + '_hosts'] = len({r for r, n in left if n > 0})
        return {
            't': round(t, 3),
            'utilisation': {
                rc: round(used[rc] / self.total[rc], 4)
                for rc in self.rcs
                if self.total[rc]
            },
            'fits': fits,
            'instances': len(placement.allocations),
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


def timing(wall, cpu=(), fallbacks=0) -> dict:
    """Decision times (s, wall and CPU) as ms: median, mean, p95."""
    out = {'decisions': len(wall), 'fallbacks': fallbacks}
    for prefix, seconds in (('', wall), ('cpu_', cpu)):
        ms = sorted(1e3 * x for x in seconds)
        if ms:
            out[prefix + 'median_ms'] = round(statistics.median(ms), 3)
            out[prefix + 'mean_ms'] = round(statistics.fmean(ms), 3)
            out[prefix + 'p95_ms'] = round(ms[int(0.95 * (len(ms) - 1))], 3)
    return out


def quality(result) -> dict:
    """One run's placement quality: its rejections, the mean utilisation
    of the base classes over the timeline's samples, and at the last
    sample how many m1.xlarge still fit (packing leaves room for big
    flavors) and the instances per host (spread)."""
    timeline = result['timeline']
    last = timeline[-1] if timeline else {}
    out = {'rejection_rate': result['rejection_rate']}
    for rc in hosts_mod.BASE_RCS:
        values = [s['utilisation'].get(rc, 0.0) for s in timeline]
        out[rc] = round(statistics.fmean(values), 4) if values else 0.0
    out['xlarge_fit'] = last.get('fits', {}).get('m1.xlarge', 0)
    out['per_host'] = dict(last.get('per_host', {}))
    return out
