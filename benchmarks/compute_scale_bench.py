"""How fast many simulated compute hosts start and report, and what they cost.

Starts a placement API and a cell conductor as daemons on RabbitMQ (fresh
vhost) and MariaDB (fresh databases), then ``nimbus-compute
--simulated-hosts N`` for each N given, one after the other, and prints per
N: seconds from the process start until every host's provider is in
placement with its inventory and every host's compute node record is
written (``time_to_all_reported_s``), and the compute process's RSS and
thread count then and after ``--settle`` seconds of heartbeats and
resource updates. The figures depend on how loaded the machine is.

    .venv/bin/python benchmarks/compute_scale_bench.py [--hosts 100 1000]
        [--settle 20] [--json FILE]

Needs RabbitMQ (rabbitmqctl for the vhost) and MariaDB on 127.0.0.1 (see
``nimbus.testing.infra`` for the environment variables).
"""

import argparse
import json
import os
import sys
import tempfile
import time

import psutil
import requests
import sqlalchemy as sa

from nimbus.testing import daemons
from nimbus.testing import infra


class _Unavailable(Exception):
    pass


def _resources(cleanups):
    def fresh(make):
        try:
            url, cleanup = make()
        except BaseException as exc:  # pytest's skip outside pytest
            raise _Unavailable(str(exc)) from exc
        cleanups.append(cleanup)
        return url

    buses = [fresh(infra.rabbit_vhost) for _ in range(2)]
    databases = {
        name: fresh(infra.mysql_database)
        for name in ('api', 'cell0', 'cell1', 'placement')
    }
    return buses, databases


def _placement_roots(cloud, base):
    """Roots named ``<base>-*`` that have a VCPU inventory."""
    response = requests.get(
        cloud.placement_url + '/resource_providers',
        params={'resources': 'VCPU:1'},
        headers={
            'X-Auth-Token': 'admin',
            'OpenStack-API-Version': 'placement 1.39',
        },
        timeout=60,
    )
    response.raise_for_status()
    return sum(
        1
        for rp in response.json()['resource_providers']
        if rp['name'].startswith(base + '-')
    )


def _nodes(engine, base):
    with engine.connect() as conn:
        return conn.execute(
            sa.text('SELECT COUNT(*) FROM compute_nodes WHERE host LIKE :p'),
            {'p': base + '-%'},
        ).scalar()


def _sample(process):
    proc = psutil.Process(process.pid)
    return {
        'rss_mib': round(proc.memory_info().rss / 2**20, 1),
        'threads': proc.num_threads(),
        'cpu_s': round(sum(proc.cpu_times()[:2]), 1),
    }


def run_one(cloud, cell_engine, count, settle, timeout, concurrency):
    base = 'sim%d' % count
    began = time.monotonic()
    daemon = cloud.start_simulated(
        base,
        count,
        {
            'DEFAULT': {'report_interval': 10, 'service_down_time': 60},
            'compute': {'update_resources_interval': 60},
            'simulated_hosts': {'start_concurrency': concurrency},
        },
    )
    reported = None
    while time.monotonic() - began < timeout:
        if not daemon.alive():
            raise RuntimeError('nimbus-compute exited:\n' + daemon.tail())
        # A host writes its compute node record after placement: the
        # cheap query first, placement (once) to confirm.
        if (
            _nodes(cell_engine, base) >= count
            and _placement_roots(cloud, base) >= count
        ):
            reported = time.monotonic() - began
            break
        time.sleep(0.5)
    result = {
        'hosts': count,
        'time_to_all_reported_s': (round(reported, 1) if reported else None),
        'at_reported': _sample(daemon.process),
    }
    time.sleep(settle)
    result['after_settle'] = dict(_sample(daemon.process), settle_s=settle)
    daemon.stop(timeout=60)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[100, 1000])
    parser.add_argument('--settle', type=float, default=20.0)
    parser.add_argument('--timeout', type=float, default=300.0)
    parser.add_argument(
        '--start-concurrency',
        type=int,
        default=16,
        help='[simulated_hosts] start_concurrency',
    )
    parser.add_argument('--json', help='also write the results here')
    args = parser.parse_args(argv)
    cleanups = []
    workdir = tempfile.mkdtemp(prefix='compute-scale-')
    cloud = None
    try:
        try:
            (api_bus, cell_bus), databases = _resources(cleanups)
        except _Unavailable as exc:
            print('compute_scale_bench: %s' % exc, file=sys.stderr)
            return 2
        cloud = daemons.DaemonCloud(
            workdir, api_bus, cell_bus, databases, hosts=0
        )
        cloud.prepare()
        cloud.start_placement()
        cloud.start_cell_conductor()
        # A call sent before the conductor's queue exists is lost.
        cloud.wait_log('cell1-conductor', 'Serving topic conductor')
        cell_engine = sa.create_engine(databases['cell1'])
        results = []
        for count in args.hosts:
            result = run_one(
                cloud,
                cell_engine,
                count,
                args.settle,
                args.timeout,
                args.start_concurrency,
            )
            results.append(result)
            print(json.dumps(result), flush=True)
        cell_engine.dispose()
        summary = {
            'benchmark': 'compute_scale',
            'cpus': os.cpu_count(),
            'load_avg_1m': round(os.getloadavg()[0], 1),
            'results': results,
        }
        print(json.dumps(summary, indent=2))
        if args.json:
            with open(args.json, 'w') as f:
                json.dump(summary, f, indent=2)
        return 0
    finally:
        if cloud is not None:
            cloud.stop()
        for cleanup in reversed(cleanups):
            try:
                cleanup()
            except Exception:
                pass


if __name__ == '__main__':
    sys.exit(main())
