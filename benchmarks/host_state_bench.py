"""Host-state cache: a full reload from the databases vs. applying events.

The scheduler keeps host states in memory. They are reloaded from the API
and cell databases at start, every ``[scheduler]
host_state_refresh_interval`` seconds and when placement returns an unknown
provider; between reloads, events (an instance placed, an aggregate changed,
a service disabled) update them in place. This measures both, side by side,
on SQLite databases filled with N compute nodes, their services, 4
instances per host (from 10 images with properties) and 20 aggregates. An
instance event that carries only ``image_ref`` costs one images-table read
(timed separately); one with ``image_properties`` costs none.

    python benchmarks/host_state_bench.py [--hosts 1000 5000 10000] [--json F]
"""

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
import warnings

warnings.filterwarnings('ignore')

import sqlalchemy as sa  # noqa: E402

from nimbus.db import cells as cells_mod  # noqa: E402
from nimbus.common import config  # noqa: E402
from nimbus.common import db as common_db  # noqa: E402
from nimbus.common.db import types as db_types  # noqa: E402
from nimbus import db as nimbus_db  # noqa: E402
from nimbus.db.api import models as api_models  # noqa: E402
from nimbus.db import cell_mappings  # noqa: E402
from nimbus.db.cell import models as cell_models  # noqa: E402
from nimbus.scheduler import db_source  # noqa: E402
from nimbus.scheduler import host_manager  # noqa: E402


IMAGES = [str(uuid.UUID(int=n + 1)) for n in range(10)]


def populate(workdir, hosts):
    api_url = 'sqlite:///%s/api.sqlite' % workdir
    cell_url = 'sqlite:///%s/cell1.sqlite' % workdir
    nimbus_db.sync_api(api_url)
    nimbus_db.sync_cell(cell_url)
    api_db = common_db.get_database(api_url)
    cell_mappings.create_cell(api_db, 'cell1', 'inproc:///bench', cell_url)
    now = db_types.utcnow()
    cell_db = common_db.get_database(cell_url)
    with cell_db.engine.begin() as conn:
        conn.execute(
            sa.insert(cell_models.ComputeNode),
            [
                {
                    'uuid': str(uuid.uuid4()),
                    'host': 'host-%d' % i,
                    'hypervisor_hostname': 'host-%d' % i,
                    'hypervisor_type': 'QEMU',
                    'hypervisor_version': 8002000,
                    'vcpus': 32,
                    'memory_mb': 131072,
                    'local_gb': 2000,
                    'cpu_info': {'features': ['avx2']},
                    'numa_topology': {'cells': []},
                    'created_at': now,
                }
                for i in range(hosts)
            ],
        )
        conn.execute(
            sa.insert(cell_models.Service),
            [
                {
                    'uuid': str(uuid.uuid4()),
                    'host': 'host-%d' % i,
                    'binary': 'nimbus-compute',
                    'topic': 'compute',
                    'disabled': False,
                    'forced_down': False,
                    'report_count': 1,
                    'version': 1,
                    'last_seen_up': now,
                    'created_at': now,
                }
                for i in range(hosts)
            ],
        )
        conn.execute(
            sa.insert(cell_models.Instance),
            [
                {
                    'uuid': str(uuid.uuid4()),
                    'project_id': 'p',
                    'user_id': 'u',
                    'host': 'host-%d' % (i % hosts),
                    'node': 'host-%d' % (i % hosts),
                    'vm_state': 'active',
                    'power_state': 1,
                    'deleted': False,
                    'flavor': {'flavorid': '1', 'vcpus': 1},
                    'created_at': now,
                    'image_ref': IMAGES[i % len(IMAGES)],
                }
                for i in range(hosts * 4)
            ],
        )
    with api_db.session() as session:
        for n, image in enumerate(IMAGES):
            session.add(
                api_models.Image(
                    id=image,
                    name='img-%d' % n,
                    properties={
                        'os_distro': 'distro-%d' % n,
                        'hw_machine_type': 'q35',
                    },
                )
            )
        for a in range(20):
            agg = api_models.Aggregate(
                uuid=str(uuid.uuid4()), name='agg-%d' % a
            )
            agg.hosts = [
                api_models.AggregateHost(host='host-%d' % i)
                for i in range(a, hosts, 20)
            ]
            agg.metadata_items = [
                api_models.AggregateMetadata(
                    key='cpu_weight_multiplier', value='2.0'
                )
            ]
            session.add(agg)
    return api_db


def timed(func, repeat):
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def measure(hosts, repeat):
    with tempfile.TemporaryDirectory() as workdir:
        api_db = populate(workdir, hosts)
        conf = config.build_conf([])
        cells = cells_mod.CellDirectory(conf, api_db)
        source = db_source.DBHostInfoSource(api_db, cells)
        manager = host_manager.HostManager(conf, source)
        reload_ms = timed(manager.refresh, repeat)
        services_ms = timed(manager.refresh_services, repeat)
        counter = iter(range(10**9))

        def instance_event():
            manager.update_instance_info(
                'host-%d' % (next(counter) % hosts),
                [{'uuid': str(uuid.uuid4()), 'flavor_id': '1'}],
            )

        def instance_event_image_ref():
            # Only image_ref: its properties are read from the API database's
            # images table before the event is queued.
            manager.update_instance_info(
                'host-%d' % (next(counter) % hosts),
                [
                    {
                        'uuid': str(uuid.uuid4()),
                        'flavor_id': '1',
                        'image_ref': IMAGES[0],
                    }
                ],
            )

        def service_event():
            manager.update_service(
                {
                    'host': 'host-7',
                    'binary': 'nimbus-compute',
                    'disabled': True,
                    'forced_down': False,
                    'up': True,
                }
            )

        instance_ms = timed(instance_event, repeat * 50)
        service_ms = timed(service_event, repeat * 50)
        image_ref_ms = timed(instance_event_image_ref, repeat * 10)
        common_db.dispose_all()
    return {
        'hosts': hosts,
        'full_reload_ms': round(reload_ms, 1),
        'service_reload_ms': round(services_ms, 1),
        'instance_event_ms': round(instance_ms, 4),
        'service_event_ms': round(service_ms, 4),
        'instance_event_image_ref_ms': round(image_ref_ms, 4),
        'reload_over_event': round(reload_ms / max(instance_ms, 1e-6)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        '--hosts', type=int, nargs='+', default=[1000, 5000, 10000]
    )
    parser.add_argument('--repeat', type=int, default=5)
    parser.add_argument('--json')
    args = parser.parse_args()
    results = []
    print(
        '%8s %16s %19s %18s %17s %14s %22s'
        % (
            'hosts',
            'full reload ms',
            'service reload ms',
            'instance event ms',
            'service event ms',
            'reload/event',
            'event w/ image_ref ms',
        )
    )
    for hosts in args.hosts:
        r = measure(hosts, args.repeat)
        results.append(r)
        print(
            '%8d %16.1f %19.1f %18.4f %17.4f %13dx %22.4f'
            % (
                hosts,
                r['full_reload_ms'],
                r['service_reload_ms'],
                r['instance_event_ms'],
                r['service_event_ms'],
                r['reload_over_event'],
                r['instance_event_image_ref_ms'],
            )
        )
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(
                {'load_average': os.getloadavg(), 'results': results},
                f,
                indent=2,
            )


if __name__ == '__main__':
    main()
