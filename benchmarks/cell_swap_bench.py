"""A build's two compare-and-swaps in the cell conductor, on MariaDB:
process CPU per pair of ``instance_update`` calls made by ``--threads``
handlers at once (the RPC server's executor), and how many new database
connections they opened.

    cell_swap_bench.py [--count 1000] [--threads 64] [--no-slots] [--brief]

``--no-slots``: the handlers do not wait for one of the engine's kept
connections (:mod:`nimbus.conductor.db_slots`), as before issue 27's
multi-create work; ``--brief``: the last swap asks for a brief answer
(conductor RPC 1.16: the record is not read back). A fresh database of
the MariaDB that ``nimbus.testing.infra`` finds is created and dropped.
No RPC: the calls go to :class:`~nimbus.conductor.cell_conductor.
CellConductor` directly, so the figure is the database side of the swap.
"""

import argparse
import concurrent.futures
import contextlib
import time

import sqlalchemy as sa

from nimbus.common import db as common_db
from nimbus.common import instance_states as states
from nimbus.common.objects import BuildAttempt
from nimbus.common.objects import InstanceUpdate
from nimbus.conductor import cell_conductor
from nimbus.db import cell_instances as instances
from nimbus import db as nimbus_db
from nimbus.testing import infra


def _instances(db, count):
    with db.session() as session:
        for i in range(count):
            host = 'h%d' % i
            instances.create(
                session,
                {
                    'uuid': 'i-%d' % i,
                    'display_name': 'vm',
                    'project_id': 'p',
                    'user_id': 'u',
                    'host': host,
                    'node': host,
                    'vm_state': states.BUILDING,
                    'flavor': {'vcpus': 1, 'memory_mb': 64},
                    'image_ref': 'img',
                    # A multi-create's alternates ride on every row.
                    'build_alternates': {'host_list': [{'x': 'y' * 2000}]},
                },
            )


def run(count, threads, slots=True, brief=False):
    url, cleanup = infra.database('mysql')
    try:
        nimbus_db.sync_cell(url)
        db = common_db.get_database(url)
        _instances(db, count)
        connects = [0]

        def connected(*_args):
            connects[0] += 1

        sa.event.listen(db.engine, 'connect', connected)
        cond = cell_conductor.CellConductor(None, db, None, None)
        if not slots:
            cond._slots = contextlib.nullcontext()
        active = InstanceUpdate.from_primitive(
            {
                'vm_state': states.ACTIVE,
                'task_state': None,
                'power_state': 1,
                'launched_at': '2026-11-30T00:00:00',
            }
        )

        def build(i):
            host = 'h%d' % i
            spawning = InstanceUpdate.from_primitive(
                {
                    'task_state': states.SPAWNING,
                    'host': host,
                    'node': host,
                    'compute_node_uuid': 'rp-' + host,
                }
            )
            uuid = 'i-%d' % i
            cond.instance_update(None, uuid, [states.BUILDING], spawning, host)
            attempt = BuildAttempt(host=host, node=host, result='success')
            cond.instance_update(
                None,
                uuid,
                [states.BUILDING],
                active,
                host,
                attempt,
                None,
                brief,
            )

        connects[0] = 0
        cpu, wall = time.process_time(), time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(build, range(count)))
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        return {
            'cpu_ms_per_pair': cpu * 1000 / count,
            'wall_s': wall,
            'new_connections': connects[0],
        }
    finally:
        common_db.dispose_all()
        cleanup()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--count', type=int, default=1000)
    parser.add_argument('--threads', type=int, default=64)
    parser.add_argument('--no-slots', action='store_true')
    parser.add_argument('--brief', action='store_true')
    args = parser.parse_args(argv)
    result = run(args.count, args.threads, not args.no_slots, args.brief)
    print(
        'slots %s, brief %s, %d threads: %.2f ms CPU per swap pair, '
        '%.2f s, %d new connections'
        % (
            'on' if not args.no_slots else 'off',
            'on' if args.brief else 'off',
            args.threads,
            result['cpu_ms_per_pair'],
            result['wall_s'],
            result['new_connections'],
        )
    )


if __name__ == '__main__':
    main()
