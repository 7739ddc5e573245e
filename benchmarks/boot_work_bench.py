"""CPU per boot on an in-process cloud, in total and by service.

One process runs the whole cloud (``nimbus.allinone.cloud.Cloud``: the API,
the super and cell conductors, the scheduler, placement and the computes on
the in-process bus, SQLite), quiet as ``tests/functional/test_boot_budget.py``
makes it (``nimbus.testing.quiet``: periodic work pushed out). It boots
``--boots`` servers one after the other, each counted done when the
compute's second compare-and-swap (ACTIVE) is answered (no polling of the
API meanwhile), and prints:

- the process CPU (``time.process_time``) per boot, and the wall time;
- the CPU of the threads while they run the entry points of each service
  (``time.thread_time`` around them: the API's ``POST /servers`` handler,
  the super conductor's ``schedule_and_build_instances``, the scheduler's
  ``select_destinations``, the cell conductor's ``instance_update``, the
  compute's build), per boot; what the services do on other threads
  (placement's HTTP handlers, the bus) is in the total only;
- the database transactions per boot, by database.

``--quota limited`` (the default) gives the project limits high enough for
every boot, so that the quota check counts for real (cells included), as
with Nova's defaults; ``--quota unlimited`` is the all-in-one's default.

    nice -n 10 .venv/bin/python benchmarks/boot_work_bench.py \\
        [--boots 200] [--hosts 4] [--quota limited|unlimited] [--json out]

A benchmark, not a test: on a loaded machine the figures move; the work
(transactions, messages) does not, and ``test_boot_budget.py`` pins it.
"""

import argparse
import collections
import contextlib
import functools
import json
import os
import sys
import tempfile
import threading
import time

from oslo_messaging.rpc import client as rpc_client
import sqlalchemy as sa

from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus import services
from nimbus.db import cell_mappings
from nimbus.testing import quiet


# (module path, attribute path, service): entry points timed per thread.
ENTRY_POINTS = (
    ('nimbus.api.handlers.server_create', 'create', 'api'),
    (
        'nimbus.conductor.super_conductor',
        'SuperConductor.schedule_and_build_instances',
        'super-conductor',
    ),
    (
        'nimbus.scheduler.manager',
        'SchedulerManager.select_destinations',
        'scheduler',
    ),
    (
        'nimbus.conductor.manager',
        'CellConductorManager.instance_update',
        'cell-conductor',
    ),
    (
        'nimbus.compute.manager',
        'ComputeManager.build_and_run_instance',
        'compute',
    ),
    ('nimbus.compute.build', 'BuildRunner.build', 'compute'),
)


class Meter:
    def __init__(self):
        self.lock = threading.Lock()
        self.cpu = collections.Counter()
        self.transactions = collections.Counter()
        # The compute's two compare-and-swaps a boot ends with (spawning,
        # ACTIVE): counted once answered.
        self.updates = 0
        self.local = threading.local()

    def wrap(self, service, func):
        @functools.wraps(func)
        def timed(*args, **kwargs):
            # Nested entry points (a cell conductor called from a thread
            # already timed) are counted once, by the outer one.
            if getattr(self.local, 'depth', 0):
                return func(*args, **kwargs)
            self.local.depth = 1
            start = time.thread_time()
            try:
                return func(*args, **kwargs)
            finally:
                spent = time.thread_time() - start
                self.local.depth = 0
                with self.lock:
                    self.cpu[service] += spent

        return timed


def _resolve(module_path, attr_path):
    module = __import__(module_path, fromlist=['_'])
    owner = module
    parts = attr_path.split('.')
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return None, None
    if not hasattr(owner, parts[-1]):
        return None, None
    return owner, parts[-1]


@contextlib.contextmanager
def instrumented(meter, databases):
    undo = []
    for module_path, attr_path, service in ENTRY_POINTS:
        owner, name = _resolve(module_path, attr_path)
        if owner is None:
            print('not timed (not found): %s.%s' % (module_path, attr_path))
            continue
        original = getattr(owner, name)
        setattr(owner, name, meter.wrap(service, original))
        undo.append((owner, name, original))
    base = rpc_client._BaseCallContext
    call = base.call

    def counting_call(client, ctxt, method, **kwargs):
        result = call(client, ctxt, method, **kwargs)
        if method == 'instance_update':
            with meter.lock:
                meter.updates += 1
        return result

    base.call = counting_call
    undo.append((base, 'call', call))

    def on_commit(connection):
        url = connection.engine.url.render_as_string(hide_password=False)
        for known, name in databases.items():
            if url.endswith(known.split('///', 1)[-1]):
                with meter.lock:
                    meter.transactions[name] += 1
                return

    sa.event.listen(sa.engine.Engine, 'commit', on_commit)
    try:
        yield
    finally:
        sa.event.remove(sa.engine.Engine, 'commit', on_commit)
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


def _wait(predicate, timeout):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError('timed out')
        time.sleep(0.002)


def run(boots, hosts, quota, warmup=5):
    overrides = quiet.quiet_overrides()
    if quota == 'limited':
        overrides['quota'] = {
            'instances': boots + warmup + 10,
            'cores': 10 * (boots + warmup + 10),
            'ram': 1024 * (boots + warmup + 10),
        }
    tmp = tempfile.mkdtemp(prefix='boot-work-')
    name = os.path.basename(tmp)
    cloud = cloud_mod.Cloud(
        os.path.join(tmp, 'cloud'),
        hosts=hosts,
        transport_url='inproc:///%s-api' % name,
        cell_transport_url='inproc:///%s-cell1' % name,
        overrides=overrides,
        discover_interval=0,
    )
    cloud.start()
    try:
        api_db = services.api_db(cloud.conf)

        def every_host_mapped():
            cell_mappings.discover_hosts(api_db)
            with api_db.session() as session:
                counts = cell_mappings.host_counts(session)
                return sum(counts.values()) >= hosts

        cloud_mod.wait_for(every_host_mapped, timeout=60, what='the hosts')
        databases = {url: n for n, url in cloud.db_urls.items()}
        api = client_mod.ComputeClient(cloud.api_url)
        flavor = api.create_flavor('m1.bench', 1, 256, 1)
        image = api.create_image('bench-image')
        meter = Meter()
        with instrumented(meter, databases):

            def boot(index, label):
                target = meter.updates + 2
                api.create_server(
                    '%s-%d' % (label, index), flavor['id'], image['id']
                )
                _wait(lambda: meter.updates >= target, 60)

            for index in range(warmup):
                boot(index, 'warm')
            time.sleep(0.5)
            with meter.lock:
                meter.cpu.clear()
                meter.transactions.clear()
            wall, cpu = time.monotonic(), time.process_time()
            for index in range(boots):
                boot(index, 'bench')
            cpu = time.process_time() - cpu
            wall = time.monotonic() - wall
            with meter.lock:
                services_cpu = dict(meter.cpu)
                transactions = dict(meter.transactions)
        statuses = collections.Counter(
            s['status'] for s in api.servers() if s['name'].startswith('bench')
        )
    finally:
        cloud.stop()
    return {
        'boots': boots,
        'hosts': hosts,
        'quota': quota,
        'cpu_ms_per_boot': round(1000 * cpu / boots, 2),
        'wall_ms_per_boot': round(1000 * wall / boots, 2),
        'service_cpu_ms_per_boot': {
            k: round(1000 * v / boots, 2)
            for k, v in sorted(services_cpu.items())
        },
        'transactions_per_boot': {
            k: round(v / boots, 2) for k, v in sorted(transactions.items())
        },
        'statuses': dict(statuses),
        'loadavg': os.getloadavg(),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--boots', type=int, default=200)
    parser.add_argument('--hosts', type=int, default=4)
    parser.add_argument(
        '--quota', choices=('limited', 'unlimited'), default='limited'
    )
    parser.add_argument('--json')
    args = parser.parse_args(argv)
    result = run(args.boots, args.hosts, args.quota)
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, 'w') as out:
            json.dump(result, out, indent=2)
    return 0


if __name__ == '__main__':
    sys.exit(main())
