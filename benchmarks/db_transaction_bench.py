"""Time one database transaction, the way Nimbus runs it.

Three figures, each the median (and p95) of ``--repeat`` calls in a row,
in milliseconds, and the process CPU time per call (``cpu_ms``: on a
loaded machine the steadier of the two for SQLite, where the database
runs in the process):

``api_read``   ``keypairs.get``: one read transaction on the API database
               (an ORM session, a SELECT, COMMIT).
``api_write``  ``keypairs.create``: one write transaction on the API
               database (SELECT, INSERT, COMMIT).
``placement_write``  ``PlacementDB.write`` of a counter bump: the
               transaction every placement write runs (BEGIN, the
               ``placement_state`` UPDATE, COMMIT), with its retry wrapper.

With ``--enginefacade`` the API figures are also taken through an oslo.db
``enginefacade.transaction_context()`` configured with public options only
(``connection``, ``sqlite_fk``, ``max_pool_size``, ``max_overflow``,
``connection_recycle_time``), for comparison.

    db_transaction_bench.py [--db-url URL] [--repeat 2000] [--enginefacade]
        [--json out.json]

Without ``--db-url`` both databases are fresh SQLite files in a temporary
directory; a MariaDB/MySQL or PostgreSQL URL names a server database
prefix: ``<name>_api`` and ``<name>_placement`` are created and dropped.
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

import sqlalchemy as sa

from nimbus.api.objects import keypairs
from nimbus.common import db as common_db
from nimbus.db import sync_api
from nimbus.placement import db as placement_db
from nimbus.placement.objects import base as placement_base


def _server_db(url, suffix):
    """Create ``<db>_<suffix>`` on the server of ``url``; its URL."""
    parsed = sa.engine.make_url(common_db.normalize_url(url))
    name = '%s_%s' % (parsed.database, suffix)
    admin = parsed.set(
        database='postgres'
        if parsed.get_backend_name() == 'postgresql'
        else ''
    )
    engine = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
    with engine.connect() as conn:
        conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    engine.dispose()
    return parsed.set(database=name).render_as_string(hide_password=False)


def _drop_server_db(url):
    parsed = sa.engine.make_url(url)
    admin = parsed.set(
        database='postgres'
        if parsed.get_backend_name() == 'postgresql'
        else ''
    )
    engine = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
    with engine.connect() as conn:
        conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % parsed.database)
    engine.dispose()


def _timed(fn, repeat):
    for _ in range(min(50, repeat)):
        fn()
    samples = []
    cpu_start = time.process_time()
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000.0)
    cpu = (time.process_time() - cpu_start) * 1000.0 / repeat
    samples.sort()
    return {
        'median_ms': round(statistics.median(samples), 4),
        'p95_ms': round(samples[int(len(samples) * 0.95) - 1], 4),
        'cpu_ms': round(cpu, 4),
    }


class _FacadeDB:
    """``.session()`` as :class:`nimbus.common.db.Database` has it, on an
    oslo.db enginefacade writer (public options only)."""

    def __init__(self, url):
        from oslo_db.sqlalchemy import enginefacade

        self.facade = enginefacade.transaction_context()
        self.facade.configure(
            connection=url,
            sqlite_fk=True,
            max_pool_size=10,
            max_overflow=20,
            connection_recycle_time=3600,
        )

    @contextlib.contextmanager
    def session(self):
        class _Ctx:
            pass

        with self.facade.writer.using(_Ctx()) as session:
            yield session


def _api_figures(db, repeat):
    user = uuid.uuid4().hex
    keypairs.create(
        db,
        {
            'user_id': user,
            'name': 'k0',
            'public_key': 'ssh-rsa x',
            'fingerprint': 'f',
            'type': 'ssh',
        },
    )
    counter = iter(range(1, 10**9))

    def write():
        keypairs.create(
            db,
            {
                'user_id': user,
                'name': 'k%d' % next(counter),
                'public_key': 'ssh-rsa x',
                'fingerprint': 'f',
                'type': 'ssh',
            },
        )

    return {
        'api_read': _timed(lambda: keypairs.get(db, user, 'k0'), repeat),
        'api_write': _timed(write, repeat),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--db-url')
    p.add_argument('--repeat', type=int, default=2000)
    p.add_argument('--enginefacade', action='store_true')
    p.add_argument('--json')
    args = p.parse_args(argv)

    tmp = tempfile.mkdtemp(prefix='dbtx-')
    if args.db_url:
        api_url = _server_db(args.db_url, 'api')
        placement_url = _server_db(args.db_url, 'placement')
    else:
        api_url = 'sqlite:///' + os.path.join(tmp, 'api.db')
        placement_url = 'sqlite:///' + os.path.join(tmp, 'placement.db')
    try:
        sync_api(api_url)
        placement_db.sync(placement_url)
        out = {'engine': sa.engine.make_url(api_url).get_backend_name()}
        out['load_start'] = os.getloadavg()[0]
        out.update(_api_figures(common_db.get_database(api_url), args.repeat))
        pdb = placement_base.PlacementDB(placement_url)
        out['placement_write'] = _timed(
            lambda: pdb.write(lambda conn: None), args.repeat
        )
        if args.enginefacade:
            facade = _api_figures(_FacadeDB(api_url), args.repeat)
            out['enginefacade_api_read'] = facade['api_read']
            out['enginefacade_api_write'] = facade['api_write']
        out['load_end'] = os.getloadavg()[0]
    finally:
        common_db.dispose_all()
        if args.db_url:
            _drop_server_db(api_url)
            _drop_server_db(placement_url)
    json.dump(out, sys.stdout, indent=1)
    print()
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
