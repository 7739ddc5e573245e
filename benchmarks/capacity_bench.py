#!/usr/bin/env python
"""Capacity answer benchmark: how long ``Scheduler.capacity`` takes for N
hosts.

    .venv/bin/python benchmarks/capacity_bench.py --hosts 1000 10000

Placement's answer (every host with room for one instance, with provider
summaries) is synthesised once and handed back by a stub, so the figure is
the scheduler's side: request filters, host states from the summaries,
pre-filters and filters once, the per-host count and the per aggregate,
zone and cell totals. Placement's own GET /allocation_candidates for the
same hosts is timed by scheduler_bench.py --multi-create. Prints the median
of ``--repeat`` runs.

``--real-placement`` also times it end to end with a real Nimbus placement
in process (``scheduler_bench_placement``: SQLite, the candidate engine,
populated first, untimed): placement's GET /allocation_candidates without a
limit plus the scheduler's side.
"""

import argparse
import json
import statistics
import sys
import time

from nimbus.common import context
from nimbus.scheduler import conf as sched_conf
from nimbus.scheduler import driver as driver_mod
from nimbus.scheduler import testing


class _Placement:
    def __init__(self, body):
        self.body = body

    def get_allocation_candidates(self, ctxt, params):
        return self.body


def bench(n_hosts, repeat):
    conf = sched_conf.make_conf()
    hm = testing.manager_with(n_hosts, conf, seed=7, cells=2, az_every=3)
    spec = testing.spec(vcpus=2, memory_mb=4096, root_gb=20)
    body = testing.candidates_for(hm.all_host_states(), spec)
    sched = driver_mod.Scheduler(conf, _Placement(body), hm)
    ctxt = context.get_admin_context()
    times, answer = [], None
    for _ in range(repeat + 1):
        t = time.perf_counter()
        answer = sched.capacity(ctxt, spec)
        times.append(time.perf_counter() - t)
    times = times[1:]  # the first warms up
    out = {
        'hosts': n_hosts,
        'repeat': repeat,
        'median_ms': round(statistics.median(times) * 1e3, 1),
        'max_ms': round(max(times) * 1e3, 1),
        'total_fit': answer['total'],
        'hosts_with_room': answer['hosts_with_room'],
        'runs_out_first': answer['runs_out_first'],
    }
    print(
        'capacity, %d hosts: median %.1f ms, max %.1f ms over %d runs '
        '(%d more of a 2 VCPU / 4 GiB / 20 GB flavor on %d hosts; runs '
        'out first: %s)'
        % (
            n_hosts,
            out['median_ms'],
            out['max_ms'],
            repeat,
            out['total_fit'],
            out['hosts_with_room'],
            out['runs_out_first'],
        ),
        flush=True,
    )
    return out


def bench_real(n_hosts, repeat):
    from scheduler_bench_placement import RealClaims

    conf = sched_conf.make_conf()
    hm = testing.manager_with(n_hosts, conf, seed=7, cells=2, az_every=3)
    placement = RealClaims(hm.all_host_states())
    try:
        spec = testing.spec(vcpus=2, memory_mb=4096, root_gb=20)
        sched = driver_mod.Scheduler(conf, placement.client, hm)
        ctxt = context.get_admin_context()
        times = []
        for _ in range(repeat + 1):
            t = time.perf_counter()
            answer = sched.capacity(ctxt, spec)
            times.append(time.perf_counter() - t)
        times = times[1:]
    finally:
        placement.close()
    out = {
        'hosts': n_hosts,
        'path': 'real placement',
        'median_ms': round(statistics.median(times) * 1e3, 1),
        'total_fit': answer['total'],
        'populate_s': round(placement.populate_s, 1),
    }
    print(
        'capacity with real placement, %d hosts: median %.1f ms over %d '
        'runs (%d fit; placement populated in %.1f s, untimed)'
        % (
            n_hosts,
            out['median_ms'],
            repeat,
            out['total_fit'],
            out['populate_s'],
        ),
        flush=True,
    )
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--hosts', type=int, nargs='+', default=[1000, 10000])
    p.add_argument('--repeat', type=int, default=5)
    p.add_argument('--json', metavar='FILE')
    p.add_argument('--real-placement', action='store_true')
    args = p.parse_args(argv)
    out = [bench(n, args.repeat) for n in args.hosts]
    if args.real_placement:
        out += [bench_real(n, args.repeat) for n in args.hosts]
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
