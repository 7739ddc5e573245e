#!/usr/bin/env python
"""The decision stream's cost on the scheduler's hot path, side by side.

    .venv/bin/python benchmarks/decision_stream_bench.py --hosts 1000 10000
    .venv/bin/python benchmarks/scheduler_bench.py --notifications ...

Times ``driver.Scheduler.select_destinations`` (one instance: request
filters, placement's answer - synthesised once, untimed to build - host
states, filters, weighers, selection with alternates, an in-memory claim)
with the decision notifier off and on, alternating per repeat so that drift
hits both. "on" publishes on the in-process bus (JSON-encoded like on a
broker) with a listener draining it in another thread. Prints the median
and p95 of each and the difference.
"""

import argparse
import json
import queue
import statistics
import sys
import time

from oslo_config import cfg
import oslo_messaging as messaging

from nimbus.common import context
from nimbus.messaging_internals import inproc
from nimbus.scheduler import conf as sched_conf
from nimbus.scheduler import driver as driver_mod
from nimbus.scheduler import notifications
from nimbus.scheduler import testing


class _Placement:
    def __init__(self, body):
        self.body = body

    def get_allocation_candidates(self, ctxt, params):
        return self.body

    def claim_resources(self, ctxt, uuid, areq, project_id, user_id):
        return True

    def remove_allocations(self, ctxt, uuid):
        pass


def _p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def bench(n_hosts, repeat):
    conf = sched_conf.make_conf()
    hm = testing.manager_with(n_hosts, conf, seed=7)
    spec0 = testing.spec(vcpus=1, memory_mb=1024, root_gb=10)
    placement = _Placement(testing.candidates_for(hm.all_host_states(), spec0))
    inproc.reset_buses()
    transport = messaging.get_notification_transport(
        cfg.ConfigOpts(), url='inproc:///decision-bench'
    )
    drained = queue.Queue()
    listener = notifications.listen(transport, drained.put)
    scheds = {
        'off': driver_mod.Scheduler(conf, placement, hm),
        'on': driver_mod.Scheduler(
            conf,
            placement,
            hm,
            notifier=notifications.make_notifier(transport, 'bench'),
        ),
    }
    times = {'off': [], 'on': []}
    ctxt = context.get_admin_context()
    try:
        for r in range(repeat + 1):
            for name in ('off', 'on') if r % 2 else ('on', 'off'):
                spec = testing.spec(vcpus=1, memory_mb=1024, root_gb=10)
                t = time.perf_counter()
                scheds[name].select_destinations(ctxt, spec)
                if r:  # the first round warms up
                    times[name].append(time.perf_counter() - t)
    finally:
        listener.stop()
        listener.wait()
    out = {'hosts': n_hosts, 'repeat': repeat, 'notified': drained.qsize()}
    for name, values in times.items():
        out[name] = {
            'median_ms': round(statistics.median(values) * 1e3, 3),
            'p95_ms': round(_p95(values) * 1e3, 3),
        }
    out['delta_ms'] = round(
        out['on']['median_ms'] - out['off']['median_ms'], 3
    )
    out['delta_pct'] = round(
        100.0 * out['delta_ms'] / out['off']['median_ms'], 1
    )
    print(
        'decision stream, %d hosts, %d repeats: off median %.2f ms '
        '(p95 %.2f), on median %.2f ms (p95 %.2f): %+.2f ms (%+.1f%%)'
        % (
            n_hosts,
            repeat,
            out['off']['median_ms'],
            out['off']['p95_ms'],
            out['on']['median_ms'],
            out['on']['p95_ms'],
            out['delta_ms'],
            out['delta_pct'],
        ),
        flush=True,
    )
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--hosts', type=int, nargs='+', default=[1000, 10000])
    p.add_argument('--repeat', type=int, default=21)
    p.add_argument('--json', metavar='FILE')
    args = p.parse_args(argv)
    out = [bench(n, args.repeat) for n in args.hosts]
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
