"""Database engines, transactions and migrations.

One :class:`Database` per database URL: an engine and a session factory.
SQLite (the embedded default), MariaDB/MySQL (PyMySQL) and PostgreSQL
(psycopg 3) are supported; the URL decides. Migrations are alembic, one
script directory per database (see :func:`sync`).

oslo.db does the generic parts: :func:`retry_on_deadlock` is its
``wrap_db_retry``, and the engines of the API, cell and accelerator
databases raise its exceptions (``DBDuplicateEntry``, ``DBDeadlock``,
``DBConnectionError``...) through its exception filters. The engines
themselves stay Nimbus's (pooled SQLite in WAL mode with ``BEGIN
IMMEDIATE``; no ping on the placement engine): see
docs/results/2026-11-29-oslo-db.md for what oslo.db's engine facade costs.
"""

import contextlib
import os
import threading

from alembic import command as alembic_command
from alembic.config import Config as AlembicConfig
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import exc_filters
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from nimbus.common.db.options import PoolOptions

LOG = logging.getLogger(__name__)

_DATABASES = {}
_DATABASES_LOCK = threading.Lock()


def normalize_url(url):
    """Accept the URLs operators write and pick the drivers we ship.

    ``mysql://`` becomes ``mysql+pymysql://`` and ``postgresql://`` becomes
    ``postgresql+psycopg://``.
    """
    if url.startswith('mysql://') or url.startswith('mariadb://'):
        url = 'mysql+pymysql://' + url.split('://', 1)[1]
    elif url.startswith('postgresql://') or url.startswith('postgres://'):
        url = 'postgresql+psycopg://' + url.split('://', 1)[1]
    return url


def _sqlite_on_connect(dbapi_conn, _record):
    cursor = dbapi_conn.cursor()
    cursor.execute('PRAGMA journal_mode=WAL')
    cursor.execute('PRAGMA synchronous=NORMAL')
    cursor.execute('PRAGMA foreign_keys=ON')
    cursor.execute('PRAGMA busy_timeout=30000')
    cursor.close()


def begin_with(engine, sql):
    """Every transaction of ``engine`` (a SQLite one) starts with ``sql``
    on the DBAPI connection, where SQLAlchemy begins it (its dialect's
    ``do_begin``, a no-op for pysqlite): a failure is wrapped and handled
    as any error of a BEGIN, and no per-transaction event is dispatched
    (a ``begin`` listener running the statement through
    ``exec_driver_sql`` cost about 40 us of Python per transaction)."""

    def do_begin(dbapi_conn):
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute(sql)
        finally:
            cursor.close()

    # The engine's own dialect instance: no other engine is affected.
    engine.dialect.do_begin = do_begin


def create_engine(url, hot_path=False, pool=None):
    """An engine for ``url``, raising oslo.db's exceptions unless
    ``hot_path``; ``pool`` (:class:`PoolOptions`, the options' defaults
    when None) sizes a server database's pool (a SQLite one has its own).

    No engine's pool sends a ROLLBACK when a connection goes back to it
    (SQLAlchemy's default ``reset_on_return``): every use of an engine
    here goes through SQLAlchemy's ``Connection`` (a :class:`Database`
    session, ``engine.connect()`` / ``begin()``), which ends whatever
    transaction it has open when it is closed, so that ROLLBACK, sent
    after a COMMIT, was a round trip for nothing: one of the four of a
    one-statement transaction (ping, statement, COMMIT, ROLLBACK).

    ``hot_path``: for a database every request writes to (placement). Its
    connections also skip the ping before each checkout. That is safe when
    every use of the engine retries a transaction that finds its
    connection lost (:func:`retry_on_deadlock`: a lost connection
    invalidates the pool, so the retry gets a fresh one). Other databases
    keep the ping.

    The placement engine keeps SQLAlchemy's exception types: its write
    statements mostly run on the DBAPI cursor and raise SQLAlchemy's
    types themselves (:mod:`nimbus.placement.objects.statements`), so one
    family is seen whichever path a statement took.
    """
    engine = _create_engine(
        normalize_url(url), hot_path, pool or PoolOptions()
    )
    if not hot_path:
        exc_filters.register_engine(engine)
    return engine


def _create_engine(url, hot_path, pool):
    if url.startswith('sqlite'):
        path = url.split(':///', 1)[-1]
        if path and path != ':memory:' and not url.endswith(':memory:'):
            os.makedirs(
                os.path.dirname(os.path.abspath(path)) or '.', exist_ok=True
            )
        engine = sa.create_engine(
            url,
            connect_args={'check_same_thread': False, 'timeout': 30},
            pool_size=20,
            max_overflow=20,
        )
        event.listen(engine, 'connect', _sqlite_on_connect)

        # pysqlite's own transaction handling defers BEGIN; take the write
        # lock at BEGIN so two writers never deadlock on lock upgrades.
        @event.listens_for(engine, 'connect')
        def _no_autobegin(dbapi_conn, _record):
            dbapi_conn.isolation_level = None

        begin_with(engine, 'BEGIN IMMEDIATE')
        return engine
    # By default up to 10 connections kept, 20 more opened under a burst.
    # Keeping all 30 (no overflow) gave no CPU per boot that a benchmark
    # could see (docs/results/2026-11-29-boot-cpu.md), and would hold each
    # engine's peak open on a MariaDB of 151 connections (its default),
    # which this machine's concurrent benchmarks had used up to 98 of.
    kwargs = {
        'pool_pre_ping': not hot_path,
        'pool_recycle': pool.recycle,
        'pool_size': pool.size,
        'max_overflow': pool.overflow,
        'pool_timeout': pool.timeout,
        # See create_engine: a Connection ends its own transaction.
        'pool_reset_on_return': None,
    }
    if url.startswith('mysql'):
        kwargs['isolation_level'] = 'READ COMMITTED'
    return sa.create_engine(url, **kwargs)


class Database:
    """An engine and a session factory for one database URL."""

    def __init__(self, url, hot_path=False, pool=None):
        self.url = normalize_url(url)
        self.engine = create_engine(self.url, hot_path=hot_path, pool=pool)
        self.sessionmaker = orm.sessionmaker(
            bind=self.engine, expire_on_commit=False
        )
        self._shared = threading.local()

    @property
    def dialect(self):
        return self.engine.dialect.name

    @contextlib.contextmanager
    def session(self):
        """A session in a transaction: commit on success, roll back on error.
        Inside :meth:`reads` of this thread: that one's session."""
        shared = getattr(self._shared, 'session', None)
        if shared is not None:
            yield shared
            return
        with self.sessionmaker() as session:
            with session.begin():
                yield session

    @contextlib.contextmanager
    def reads(self):
        """One transaction for the reads of this thread inside: every
        :meth:`session` opened meanwhile is this one (one begin and commit
        for reads that belong together, e.g. what a request checks before
        it writes, instead of one each). Only for reads: a write inside
        would be committed with the reads, whatever its own block says.
        Reentrant (an inner one is the outer)."""
        if getattr(self._shared, 'session', None) is not None:
            yield self._shared.session
            return
        with self.session() as session:
            self._shared.session = session
            try:
                yield session
            finally:
                self._shared.session = None

    def dispose(self):
        self.engine.dispose()


def get_database(url, hot_path=False, pool=None):
    """The process-wide :class:`Database` for ``url`` (``hot_path`` and
    ``pool``: see :func:`create_engine`; they apply when this call
    creates it)."""
    url = normalize_url(url)
    with _DATABASES_LOCK:
        db = _DATABASES.get(url)
        if db is None:
            db = _DATABASES[url] = Database(url, hot_path=hot_path, pool=pool)
        return db


def dispose_all():
    with _DATABASES_LOCK:
        for db in _DATABASES.values():
            db.dispose()
        _DATABASES.clear()


def _is_retriable(exc):
    """SQLAlchemy's errors that oslo.db's filters leave untranslated (or
    that never met them: the placement engine and its direct statements)
    but a retry cures: a deadlock, a lock wait timeout, a lost connection,
    SQLite's "database is locked"; also inside oslo.db's generic
    ``DBError`` (e.g. PostgreSQL's serialization failure)."""
    if isinstance(exc, db_exc.DBError) and exc.inner_exception is not None:
        exc = exc.inner_exception
    if isinstance(exc, sa_exc.DBAPIError):
        if exc.connection_invalidated:
            return True
        text = str(exc.orig).lower() if exc.orig is not None else ''
        # MySQL 1213 deadlock / 1205 lock wait; PostgreSQL 40001/40P01;
        # SQLite "database is locked".
        code = (getattr(exc.orig, 'args', None) or (None,))[0]
        if code in (1213, 1205):
            return True
        sqlstate = getattr(exc.orig, 'sqlstate', None)
        if sqlstate in ('40001', '40P01'):
            return True
        return 'database is locked' in text
    return False


def retry_on_deadlock(func=None, attempts=10):
    """Retry a whole transaction function on deadlock or lost connection.

    oslo.db's ``wrap_db_retry``: ``attempts`` in all (``attempts - 1``
    retries), on its ``DBDeadlock`` and ``DBConnectionError`` and on the
    SQLAlchemy errors of :func:`_is_retriable`; the first wait 10 ms, then
    a random wait up to twice the previous bound, never more than 0.5 s.
    """
    decorator = oslo_db_api.wrap_db_retry(
        retry_interval=0.01,
        max_retries=max(0, attempts - 1),
        inc_retry_interval=True,
        max_retry_interval=0.5,
        jitter=True,
        retry_on_deadlock=True,
        retry_on_disconnect=True,
        exception_checker=_is_retriable,
    )
    if func is None:
        return decorator
    return decorator(func)


def sync(url, script_location, revision='head'):
    """Upgrade the database at ``url`` with the alembic scripts given.

    ``script_location`` is a directory or ``package:dir`` spec.
    """
    config = AlembicConfig()
    config.set_main_option('script_location', script_location)
    config.attributes['nimbus_url'] = normalize_url(url)
    alembic_command.upgrade(config, revision)


def run_alembic_env(target_metadata):
    """The body of every ``env.py``: online migrations on the given URL."""
    from alembic import context as alembic_context

    config = alembic_context.config
    url = config.attributes.get('nimbus_url') or config.get_main_option(
        'sqlalchemy.url'
    )
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            alembic_context.configure(
                connection=connection,
                target_metadata=target_metadata,
                render_as_batch=True,
            )
            with alembic_context.begin_transaction():
                alembic_context.run_migrations()
            connection.commit()
    finally:
        engine.dispose()
