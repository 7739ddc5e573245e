"""Database access shared by the object modules.

:class:`PlacementDB` owns the engines for one placement database. Writes
run in :meth:`PlacementDB.write`: one transaction that first bumps the
``placement_state`` counters (cache invalidation for every process, and a
row lock that serialises writers so capacity checks cannot race), retried on
deadlocks. Reads run in :meth:`PlacementDB.read`; on SQLite they use a
second engine whose transactions start with a deferred ``BEGIN`` so readers
never wait for the write lock.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy import event

from nimbus.common import db as common_db
from nimbus.placement.db import models as m


def utcnow():
    """Naive UTC now at second precision (what every engine stores alike)."""
    return datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, microsecond=0)


class PlacementDB:
    """Engines for one placement database URL."""

    def __init__(self, url):
        self.database = common_db.get_database(url)
        self.engine = self.database.engine
        self.dialect = self.engine.dialect.name
        self.read_engine = self.engine
        if self.dialect == 'sqlite':
            self.read_engine = _sqlite_read_engine(self.database.url)

    def write(self, fn, *args, structure=True, usage=False, **kwargs):
        """Run ``fn(conn, *args, **kwargs)`` in a write transaction."""

        @common_db.retry_on_deadlock
        def run():
            with self.engine.begin() as conn:
                bump(conn, structure, usage)
                return fn(conn, *args, **kwargs)
        return run()

    def read(self, fn, *args, **kwargs):
        """Run ``fn(conn, *args, **kwargs)`` in a read transaction."""
        with self.read_engine.connect() as conn:
            return fn(conn, *args, **kwargs)


def _sqlite_read_engine(url):
    engine = sa.create_engine(url, connect_args={'check_same_thread': False,
                                                 'timeout': 30},
                              pool_size=20, max_overflow=20)

    @event.listens_for(engine, 'connect')
    def _connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute('PRAGMA busy_timeout=30000')
        cur.close()

    @event.listens_for(engine, 'begin')
    def _begin(conn):
        conn.exec_driver_sql('BEGIN')
    return engine


def bump(conn, structure=True, usage=False):
    """Move the change counters; takes the writers' row lock."""
    values = {}
    if structure:
        values['structure'] = m.STATE.c.structure + 1
    if usage:
        values['usage'] = m.STATE.c.usage + 1
    if not values:
        values['usage'] = m.STATE.c.usage
    conn.execute(m.STATE.update().where(m.STATE.c.id == 1).values(**values))


def read_state(conn):
    return tuple(conn.execute(sa.select(m.STATE.c.structure,
                                        m.STATE.c.usage)
                              .where(m.STATE.c.id == 1)).one())


def name_ids(conn, table, names):
    """``{name: id}`` for the given names of a name table (rc or trait)."""
    names = list(names)
    if not names:
        return {}
    rows = conn.execute(sa.select(table.c.name, table.c.id)
                        .where(table.c.name.in_(names)))
    return dict(rows.all())


def provider_ids(conn, uuids):
    """``{uuid: (id, generation)}`` for the given provider uuids."""
    uuids = list(uuids)
    if not uuids:
        return {}
    rows = conn.execute(sa.select(m.RP.c.uuid, m.RP.c.id, m.RP.c.generation)
                        .where(m.RP.c.uuid.in_(uuids)))
    return {r[0]: (r[1], r[2]) for r in rows}


def increment_generation(conn, rp_id, expected, what='resource provider'):
    """Compare-and-swap the provider generation; 409 on a lost race."""
    from nimbus.placement import exception
    res = conn.execute(m.RP.update()
                       .where(m.RP.c.id == rp_id)
                       .where(m.RP.c.generation == expected)
                       .values(generation=expected + 1))
    if res.rowcount != 1:
        raise exception.ConcurrentUpdate(what=what)
    return expected + 1
