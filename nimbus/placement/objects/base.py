"""Database access shared by the object modules.

:class:`PlacementDB` owns the engines for one placement database. Writes
run in :meth:`PlacementDB.write`: one transaction that bumps the
``placement_state`` counters (cache invalidation for every process, and a
row lock that serialises writers so capacity checks cannot race), retried on
deadlocks (provider, inventory, trait and aggregate writes bump just
before their first locking statement, see :func:`take_counter_lock`). Since every
write transaction takes that one row lock, writers are serial from there
on; on SQLite they queue on a ``threading.Lock`` first, so at most one
thread per process waits on the database (SQLite's busy handler sleeps 1,
2, 5, 10.. ms between retries and leaves the lock idle meanwhile; a woken
Python waiter starts at once). Reads run in
:meth:`PlacementDB.read`; on SQLite they use a second engine whose
transactions start with a deferred ``BEGIN`` so readers never wait for the
write lock.
"""

import contextlib
import datetime
import threading
import time
import weakref

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc

from nimbus.common import db as common_db
from nimbus.placement.db import models as m
from nimbus.placement.objects import statements


# Write connections kept idle between transactions, and for how long.
IDLE_WRITERS = 4
IDLE_MAX_S = 30.0


_NOW = (None, None)


def utcnow():
    """Naive UTC now at second precision (what every engine stores alike);
    made once per second (datetimes are immutable)."""
    global _NOW
    sec = int(time.time())
    last = _NOW
    if last[0] == sec:
        return last[1]
    now = datetime.datetime.fromtimestamp(sec, datetime.timezone.utc).replace(
        tzinfo=None
    )
    _NOW = (sec, now)
    return now


class PlacementDB:
    """Engines for one placement database URL."""

    def __init__(self, url, pool=None):
        self.database = common_db.get_database(url, hot_path=True, pool=pool)
        self.engine = self.database.engine
        self.dialect = self.engine.dialect.name
        self.read_engine = self.engine
        if self.dialect == 'sqlite':
            self.read_engine = _sqlite_read_engine(self.database.url)
        # SQLite only: there the lock is the whole database and its busy
        # handler sleeps. A server database releases the row lock before
        # the log flush, so its writers must not queue on a process lock
        # held across COMMIT (that would serialise the flushes too).
        self._write_lock = (
            threading.Lock()
            if self.dialect == 'sqlite'
            else contextlib.nullcontext()
        )
        self._state_lock = threading.Lock()
        # Connections kept between write transactions (_keep_writer).
        self._idle_writers = (
            [] if self.dialect in ('sqlite', 'mysql', 'mariadb') else None
        )
        self._state_conn = None
        self._state_sql = str(
            _STATE.compile(
                dialect=self.read_engine.dialect,
                compile_kwargs={'literal_binds': True},
            )
        )

    def write(
        self, fn, *args, structure=True, usage=False, late_lock=False, **kwargs
    ):
        """Run ``fn(conn, *args, **kwargs)`` in a write transaction.

        ``late_lock``: ``fn`` calls :func:`take_counter_lock` before its
        first locking statement (and whatever it reads before needs no
        serialisation); otherwise the counters are bumped first.
        """

        def body(sa_conn):
            conn = statements.Connection(sa_conn)
            if not late_lock:
                bump(conn, structure, usage)
                return fn(conn, *args, **kwargs)
            # The reads before the counter row lock run outside the
            # section that all writers pass one at a time.
            conn.info[_PENDING] = (structure, usage)
            try:
                out = fn(conn, *args, **kwargs)
                take_counter_lock(conn)
                return out
            finally:
                # A lost connection is invalidated: touching its info
                # would raise PendingRollbackError and hide the
                # (retriable) disconnect behind it.
                if not conn.invalidated:
                    conn.info.pop(_PENDING, None)

        def run():
            with self._write_lock:
                sa_conn = self._take_writer()
                try:
                    with sa_conn.begin():
                        out = body(sa_conn)
                except BaseException:
                    # Rolled back (or lost): back to the pool, never kept.
                    sa_conn.close()
                    raise
                self._keep_writer(sa_conn)
                return out

        try:
            return run()
        except sa_exc.DBAPIError:
            # Deadlock, lock timeout or a lost connection: the retrying
            # path (whatever is not retriable is raised again from there).
            pass
        return common_db.retry_on_deadlock(run)()

    def _take_writer(self):
        """A connection for one write transaction: one kept from an
        earlier write (see :meth:`_keep_writer`), else the pool's."""
        idle = self._idle_writers
        while idle:
            try:
                conn, since = idle.pop()
            except IndexError:  # another thread took the last one
                break
            if not conn.invalidated and time.monotonic() - since < IDLE_MAX_S:
                return conn
            conn.close()
        return self.engine.connect()

    def _keep_writer(self, conn):
        """Keep ``conn`` (its transaction committed) for the next write:
        the pool's checkout and checkin, and SQLAlchemy's ``Connection``
        around them, cost about 60 us of Python per transaction. At most
        :data:`IDLE_WRITERS` are kept, each for at most
        :data:`IDLE_MAX_S` seconds of idleness; never on PostgreSQL, where
        an idle session would refuse a ``DROP DATABASE``."""
        idle = self._idle_writers
        if idle is not None and len(idle) < IDLE_WRITERS:
            idle.append((conn, time.monotonic()))
        else:
            conn.close()

    def read(self, fn, *args, **kwargs):
        """Run ``fn(conn, *args, **kwargs)`` in a read transaction, again
        on a fresh connection when the first one was lost (the engine does
        not ping before use, see :func:`nimbus.common.db.create_engine`)."""

        def run():
            with self.read_engine.connect() as conn:
                return fn(conn, *args, **kwargs)

        return common_db.retry_on_deadlock(run, attempts=3)()

    def state(self):
        """The ``placement_state`` counters ``(structure, usage)``.

        Asked before every request that uses the snapshot, so it is one
        statement on one connection kept for it in autocommit mode (no
        pool checkout, no transaction); any error drops that connection
        and answers through an ordinary read instead.
        """
        with self._state_lock:
            try:
                if self._state_conn is None:
                    raw = self.read_engine.raw_connection()
                    raw.detach()  # ours for good, not a pool slot
                    self.read_engine.dialect.set_isolation_level(
                        raw.dbapi_connection, 'AUTOCOMMIT'
                    )
                    self._state_conn = raw
                cur = self._state_conn.dbapi_connection.cursor()
                try:
                    cur.execute(self._state_sql)
                    row = cur.fetchone()
                finally:
                    cur.close()
                return tuple(row)
            except Exception:  # noqa: BLE001 - any DBAPI error
                self._drop_state_conn()
        return self.read(read_state)

    def _drop_state_conn(self):
        conn, self._state_conn = self._state_conn, None
        if conn is not None:
            try:
                conn.invalidate()
            except Exception:  # noqa: BLE001
                pass


def _sqlite_read_engine(url):
    engine = sa.create_engine(
        url,
        connect_args={'check_same_thread': False, 'timeout': 30},
        pool_size=20,
        max_overflow=20,
    )

    @event.listens_for(engine, 'connect')
    def _connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute('PRAGMA busy_timeout=30000')
        cur.close()

    common_db.begin_with(engine, 'BEGIN')
    return engine


# Statements of the hot paths are built once: SQLAlchemy then reuses their
# cache keys and compiled forms instead of rebuilding them per request.
def _bump_stmt(structure, usage):
    values = {}
    if structure:
        values['structure'] = m.STATE.c.structure + 1
    if usage:
        values['usage'] = m.STATE.c.usage + 1
    if not values:
        values['usage'] = m.STATE.c.usage
    return m.STATE.update().where(m.STATE.c.id == 1).values(**values)


_BUMP = {
    (s, u): statements.fast(_bump_stmt(s, u))
    for s in (False, True)
    for u in (False, True)
}
_STATE = sa.select(m.STATE.c.structure, m.STATE.c.usage).where(
    m.STATE.c.id == 1
)
_NAME_IDS = {
    table.name: sa.select(table.c.name, table.c.id).where(
        table.c.name.in_(sa.bindparam('names', expanding=True))
    )
    for table in (m.RC, m.TRAIT)
}
# The same for 1 to _FEW_NAMES names, one bound parameter per name (an
# expanding ``IN`` cannot take the direct path, see objects.statements).
_FEW_NAMES = 4
_NAME_IDS_FEW = {
    (table.name, k): statements.fast(
        sa.select(table.c.name, table.c.id).where(
            table.c.name.in_([sa.bindparam('n%d' % i) for i in range(k)])
        )
    )
    for table in (m.RC, m.TRAIT)
    for k in range(1, _FEW_NAMES + 1)
}
_PROVIDER_IDS = sa.select(m.RP.c.uuid, m.RP.c.id, m.RP.c.generation).where(
    m.RP.c.uuid.in_(sa.bindparam('uuids', expanding=True))
)
_INCREMENT = statements.fast(
    m.RP.update()
    .where(m.RP.c.id == sa.bindparam('b_id'))
    .where(m.RP.c.generation == sa.bindparam('b_expected'))
    .values(generation=sa.bindparam('b_new'))
)


def bump(conn, structure=True, usage=False):
    """Move the change counters; takes the writers' row lock."""
    conn.execute(_BUMP[bool(structure), bool(usage)])


_PENDING = 'nimbus_placement_pending_bump'


def take_counter_lock(conn):
    """Bump the counters now if this structure write has not yet.

    Called before the first statement that locks a row (the generation
    compare-and-swap, an INSERT, UPDATE or DELETE of a provider): every
    writer then takes the counter row before any other row lock, so lock
    order is the same for all and no two writers deadlock, while the
    reads before it stay outside the serialised section. Whatever is left
    pending is bumped at the end of :meth:`PlacementDB.write`.
    """
    pending = conn.info.pop(_PENDING, None)
    if pending is not None:
        bump(conn, *pending)


def read_state(conn):
    return tuple(conn.execute(_STATE).one())


# Ids of standard resource classes and traits, per engine. Only CUSTOM_*
# names can be created or deleted through the API, so a standard name's id,
# once read, never changes; custom names are always read.
_STANDARD_IDS = weakref.WeakKeyDictionary()
_STANDARD_IDS_LOCK = threading.Lock()


def add_standard_names(conn, table, standard, custom_prefix):
    """Insert into ``table`` (resource classes or traits) the names of
    ``standard`` it lacks; the names it holds that are neither standard
    nor custom (``custom_prefix``): what the caller may drop."""
    have = {r[0] for r in conn.execute(sa.select(table.c.name))}
    now = utcnow()
    missing = [
        {'name': n, 'created_at': now} for n in standard if n not in have
    ]
    if missing:
        conn.execute(table.insert(), missing)
    std = set(standard)
    return [
        n for n in have if n not in std and not n.startswith(custom_prefix)
    ]


def name_ids(conn, table, names):
    """``{name: id}`` for the given names of a name table (rc or trait)."""
    names = list(names)
    if not names:
        return {}
    known = _STANDARD_IDS.get(conn.engine, {}).get(table.name, {})
    found = {n: known[n] for n in names if n in known}
    missing = [n for n in names if n not in found]
    if not missing:
        return found
    few = _NAME_IDS_FEW.get((table.name, len(missing)))
    if few is not None:
        rows = conn.execute(
            few, {'n%d' % i: n for i, n in enumerate(missing)}
        ).all()
    else:
        stmt = _NAME_IDS.get(table.name)
        if stmt is None:
            stmt = sa.select(table.c.name, table.c.id).where(
                table.c.name.in_(sa.bindparam('names', expanding=True))
            )
        rows = conn.execute(stmt, {'names': missing}).all()
    rows = dict(rows)
    standard = {n: i for n, i in rows.items() if not n.startswith('CUSTOM_')}
    if standard:
        with _STANDARD_IDS_LOCK:
            per_engine = _STANDARD_IDS.setdefault(conn.engine, {})
            per_engine[table.name] = dict(
                per_engine.get(table.name, {}), **standard
            )
    found.update(rows)
    return found


def provider_ids(conn, uuids):
    """``{uuid: (id, generation)}`` for the given provider uuids."""
    uuids = list(uuids)
    if not uuids:
        return {}
    rows = conn.execute(_PROVIDER_IDS, {'uuids': uuids})
    return {r[0]: (r[1], r[2]) for r in rows}


def bump_sets(structure, usage, state='s'):
    """The ``SET`` items of a counter bump, on the counter row's alias."""
    sets = []
    if structure:
        sets.append('%s.structure = %s.structure + 1' % (state, state))
    if usage:
        sets.append('%s.usage = %s.usage + 1' % (state, state))
    return sets or ['%s.usage = %s.usage' % (state, state)]


def _bump_increment_stmt(structure, usage):
    sets = bump_sets(structure, usage) + ['rp.generation = :b_new']
    return statements.fast(
        sa.text(
            'UPDATE %s AS s STRAIGHT_JOIN %s AS rp SET %s '
            'WHERE s.id = 1 AND rp.id = :b_id '
            'AND rp.generation = :b_expected'
            % (m.STATE.name, m.RP.name, ', '.join(sets))
        )
    )


# MariaDB/MySQL: the pending counter bump and the generation
# compare-and-swap in one multi-table UPDATE, one round trip instead of
# two. STRAIGHT_JOIN reads, and so locks, the counter row first, the lock
# order of every writer (see take_counter_lock). It changes both rows or
# neither: 2 rows (the dialect counts matched rows) or 0 on a lost race.
_BUMP_INCREMENT = {
    (s, u): _bump_increment_stmt(s, u)
    for s in (False, True)
    for u in (False, True)
}
_MULTI_TABLE_UPDATE = ('mysql', 'mariadb')


def pending_bump(conn):
    """The counter bump a MariaDB/MySQL write still owes, ``(structure,
    usage)``, that a caller may fold into a statement of its own (as
    :func:`increment_generation` does); None when there is none to fold
    (already taken, or another engine)."""
    if conn.dialect.name not in _MULTI_TABLE_UPDATE:
        return None
    return conn.info.get(_PENDING)


def bump_done(conn):
    """The pending bump :func:`pending_bump` gave was made."""
    conn.info.pop(_PENDING, None)


def increment_generation(conn, rp_id, expected, what='resource provider'):
    """Compare-and-swap the provider generation; 409 on a lost race."""
    from nimbus.placement import exception

    params = {'b_id': rp_id, 'b_expected': expected, 'b_new': expected + 1}
    pending = conn.info.get(_PENDING)
    if pending is not None and conn.dialect.name in _MULTI_TABLE_UPDATE:
        res = conn.execute(_BUMP_INCREMENT[pending], params)
        if res.rowcount != 2:
            # Nothing changed: the bump stays pending.
            raise exception.ConcurrentUpdate(what=what)
        conn.info.pop(_PENDING, None)
        return expected + 1
    take_counter_lock(conn)
    res = conn.execute(_INCREMENT, params)
    if res.rowcount != 1:
        raise exception.ConcurrentUpdate(what=what)
    return expected + 1


def members_query(column):
    """The statement (built once, by the module that owns the table)
    reading a provider's members, ``column`` of a membership table (its
    aggregate uuids, its trait ids), for the provider id ``b_rp``."""
    return statements.fast(
        sa.select(column).where(
            column.table.c.resource_provider_id == sa.bindparam('b_rp')
        )
    )


def replace_members(conn, insert, column, rp_id, have, want):
    """Make a provider's membership rows (its aggregates or its traits:
    ``column`` is the member's column, ``insert`` its table's prepared
    INSERT) go from the members ``have`` to ``want``: the gone ones
    deleted, the added ones inserted."""
    table = column.table
    gone = have - want
    if gone:
        conn.execute(
            table.delete()
            .where(table.c.resource_provider_id == rp_id)
            .where(column.in_(gone))
        )
    added = want - have
    if added:
        conn.execute(
            insert,
            [
                {'resource_provider_id': rp_id, column.name: member}
                for member in sorted(added)
            ],
        )
