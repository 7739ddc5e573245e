"""Speed of ``nimbus simulate``: arrivals per second at 1,000 and 10,000
hosts, per placement backend, and the time a 100,000-arrival trace takes
(projected from the arrivals run, or measured with ``--arrivals 100000``).

Each run replays a generated trace (m1.small/medium/large, a tenth in
anti-affinity groups, Poisson arrivals at 20/s whose mean lifetime would
keep about eight instances per host once warm) through the real scheduler.
The cost of an arrival is mostly the ``limit`` (1000) candidates placement
returns and the scheduler weighs, so it varies little along a run. Prints wall
time and this thread's CPU time per arrival; on a shared, loaded machine
the CPU time is the steadier figure (the load average is printed too).

    .venv/bin/python benchmarks/simulator_bench.py [--hosts 1000 10000]
        [--arrivals 2000] [--backend engine memory]
"""

import argparse
import os
import time

from nimbus.simulator import engine
from nimbus.simulator import trace


def run(hosts, arrivals, backend):
    rate = 20.0
    lifetime = hosts * 8 / rate
    items = trace.generate(
        'arrivals=%d,rate=%g,lifetime=%g' % (arrivals, rate, lifetime), seed=1
    )
    t = time.perf_counter()
    sim = engine.Simulation(hosts, seed=1, samples=10, backend=backend)
    setup = time.perf_counter() - t
    wall, cpu = time.perf_counter(), time.thread_time()
    result = sim.run(items)
    wall = time.perf_counter() - wall
    cpu = time.thread_time() - cpu
    sim.close()
    return setup, wall, cpu, result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--hosts', type=int, nargs='+', default=[1000, 10000])
    ap.add_argument('--arrivals', type=int, default=2000)
    ap.add_argument(
        '--backend',
        nargs='+',
        default=['engine', 'memory'],
        choices=['engine', 'memory', 'api'],
    )
    args = ap.parse_args()
    print(
        'load average %s on %d cores (a shared machine: wall time '
        'includes waiting for the CPU)'
        % (' '.join('%.1f' % x for x in os.getloadavg()), os.cpu_count())
    )
    for hosts in args.hosts:
        for backend in args.backend:
            setup, wall, cpu, result = run(hosts, args.arrivals, backend)
            n = result['arrivals']
            print(
                '%6d hosts %-7s setup %5.1f s, %d arrivals in %6.1f s: '
                '%6.1f arrivals/s (wall), %5.2f ms CPU/arrival; '
                '100,000 arrivals: %5.1f min wall, %5.1f min CPU%s; '
                'rejected %d, instances %d'
                % (
                    hosts,
                    backend,
                    setup,
                    n,
                    wall,
                    n / wall,
                    1e3 * cpu / n,
                    1e5 * wall / n / 60,
                    1e5 * cpu / n / 60,
                    '' if n >= 100000 else ' (projected)',
                    result['rejected'],
                    result['timeline'][-1]['instances'],
                )
            )


if __name__ == '__main__':
    main()
