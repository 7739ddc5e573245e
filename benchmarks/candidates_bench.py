"""Benchmark of the allocation-candidate engine on a 6000-provider snapshot.

5000 roots with VCPU/MEMORY_MB/DISK_GB; every 10th root has two children
with CUSTOM_PGPU:4; 1/3 of roots have HW_CPU_X86_AVX2, 1/5 CUSTOM_FAST_DISK;
half the roots are in one of 10 aggregates.  Prints median and p95 ms per
query (engine only: parsing, search, building the response dicts), plus
the minimum and the median thread CPU time, which stay meaningful when other
processes load the machine.

    .venv/bin/python benchmarks/candidates_bench.py [--rounds N] [--roots N]

``--roots`` (default 5000) scales the snapshot, e.g. ``--roots 200
--rounds 3`` for a quick check that the engine still answers every query.
"""

from __future__ import annotations

import argparse
import statistics
import time
import types
import uuid

from nimbus.placement.candidates import (
    Inventory,
    Provider,
    Snapshot,
    get_allocation_candidates,
)

AGGS = [str(uuid.UUID(int=0xA000 + i)) for i in range(10)]


def build_providers(n_roots=5000):
    provs = []
    for i in range(n_roots):
        root = str(uuid.UUID(int=i + 1))
        traits = set()
        if i % 3 == 0:
            traits.add('HW_CPU_X86_AVX2')
        if i % 5 == 0:
            traits.add('CUSTOM_FAST_DISK')
        aggs = frozenset((AGGS[i % 10],)) if i % 2 == 0 else frozenset()
        provs.append(
            Provider(
                uuid=root,
                name='cn%d' % i,
                generation=1,
                parent_uuid=None,
                root_uuid=root,
                inventories={
                    'VCPU': Inventory(32, allocation_ratio=4.0),
                    'MEMORY_MB': Inventory(
                        131072, reserved=512, allocation_ratio=1.5
                    ),
                    'DISK_GB': Inventory(2000),
                },
                usages={'VCPU': i % 7, 'MEMORY_MB': 1024 * (i % 5)},
                traits=frozenset(traits),
                aggregates=aggs,
            )
        )
        if i % 10 == 0:
            for k in range(2):
                child = str(uuid.UUID(int=(1 << 64) + i * 2 + k))
                provs.append(
                    Provider(
                        uuid=child,
                        name='cn%d_gpu%d' % (i, k),
                        generation=1,
                        parent_uuid=root,
                        root_uuid=root,
                        inventories={'CUSTOM_PGPU': Inventory(4)},
                        usages={},
                        traits=frozenset(),
                        aggregates=frozenset(),
                    )
                )
    return provs


def build_snapshot(n_roots=5000):
    rcs = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_PGPU']
    traits = [
        'HW_CPU_X86_AVX2',
        'CUSTOM_FAST_DISK',
        'MISC_SHARES_VIA_AGGREGATE',
    ]
    return Snapshot(build_providers(n_roots), rcs, traits)


QUERIES = {
    'all 5000': {'resources': ['VCPU:2,MEMORY_MB:4096,DISK_GB:20']},
    'required traits': {
        'resources': ['VCPU:2,MEMORY_MB:4096,DISK_GB:20'],
        'required': ['HW_CPU_X86_AVX2,CUSTOM_FAST_DISK'],
    },
    'granular PGPU limit 50': {
        'resources1': ['CUSTOM_PGPU:1'],
        'limit': ['50'],
    },
    'member_of + forbidden': {
        'resources': ['VCPU:2,MEMORY_MB:4096,DISK_GB:20'],
        'member_of': ['in:%s,%s' % (AGGS[0], AGGS[2])],
        'required': ['!CUSTOM_FAST_DISK'],
    },
}


def options(strategy='depth-first', max_ac=-1):
    return types.SimpleNamespace(
        max_allocation_candidates=max_ac,
        randomize_allocation_candidates=False,
        allocation_candidates_generation_strategy=strategy,
        rng=None,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument(
        '--rounds',
        type=int,
        default=30,
        help='timed calls per query (default 30)',
    )
    ap.add_argument(
        '--roots',
        type=int,
        default=5000,
        help='compute nodes in the snapshot (default 5000)',
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    providers = build_providers(args.roots)
    t1 = time.perf_counter()
    snap = Snapshot(
        providers,
        ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_PGPU'],
        ['HW_CPU_X86_AVX2', 'CUSTOM_FAST_DISK', 'MISC_SHARES_VIA_AGGREGATE'],
    )
    t2 = time.perf_counter()
    print(
        'providers: %d, snapshot build: %.1f ms (objects: %.1f ms)'
        % (len(providers), (t2 - t1) * 1e3, (t1 - t0) * 1e3)
    )
    runs = [(name, params, options()) for name, params in QUERIES.items()]
    runs.append(
        (
            'all 5000 breadth-first',
            QUERIES['all 5000'],
            options('breadth-first'),
        )
    )
    runs.append(
        (
            'PGPU limit 50 breadth',
            QUERIES['granular PGPU limit 50'],
            options('breadth-first'),
        )
    )
    for name, params, opts in runs:
        times = []
        cpu = []
        body = None
        for _ in range(args.rounds):
            s = time.perf_counter()
            c = time.thread_time()
            body = get_allocation_candidates(snap, params, (1, 39), opts)
            cpu.append((time.thread_time() - c) * 1e3)
            times.append((time.perf_counter() - s) * 1e3)
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        print(
            '%-24s candidates=%5d summaries=%5d median=%6.2f ms '
            'p95=%6.2f ms min=%6.2f ms cpu-median=%6.2f ms'
            % (
                name,
                len(body['allocation_requests']),
                len(body['provider_summaries']),
                statistics.median(times),
                p95,
                times[0],
                statistics.median(cpu),
            )
        )


if __name__ == '__main__':
    main()
