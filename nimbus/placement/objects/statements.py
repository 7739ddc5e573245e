"""The write paths' statements run straight on the DBAPI cursor.

SQLAlchemy Core costs about 25 us of Python per ``Connection.execute`` of
a statement it has already compiled (cache key, execution context, events,
result wrapping); a placement write runs three to five of them, and the
database itself needs a few microseconds for each. The statements of the
hot write paths are built once as module constants; :func:`fast` marks
one, and :class:`Connection` (what :meth:`PlacementDB.write
<nimbus.placement.objects.base.PlacementDB.write>` hands the write
functions) runs a marked statement from its compiled form, kept per
dialect: the same SQL text, the same parameters through the same bind
processors, on the transaction's own DBAPI connection.

Only what needs nothing more of SQLAlchemy takes that path: SQLite and
MariaDB/MySQL (positional ``format``/``qmark`` or PyMySQL's named
``pyformat`` parameters) (PostgreSQL inserts read their id back with
RETURNING), no expanding ``IN`` parameter, no result column whose values
SQLAlchemy converts except a plain float one (MySQL's ``FLOAT``, through
``to_float``: it is converted here by the same processor). Anything else,
and every unmarked statement, goes through SQLAlchemy as before; so does
an error, wrapped in SQLAlchemy's exception types (and a lost connection
invalidated) exactly as SQLAlchemy does, so the callers' handling (a
clash, a deadlock retry) is unchanged.
"""

import threading

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

_DIALECTS = ('sqlite', 'mysql')
_MARKED = set()
_PLANS = {}
_LOCK = threading.Lock()
_SLOW = object()
# Marked statements, kept alive for good: an id must never name another.
_KEEP = []


def fast(stmt):
    """Mark a module-level statement for the direct path; returns it."""
    _MARKED.add(id(stmt))
    _KEEP.append(stmt)
    return stmt


class _Plan:
    __slots__ = (
        'sql',
        'names',
        'named',
        'processors',
        'fixed',
        'keys',
        'converters',
    )

    def __init__(self, compiled):
        self.sql = compiled.string
        # ``format`` (SQLite's qmark, MySQLdb) takes a list in the order
        # of the text; ``pyformat`` (PyMySQL) a dict of the names.
        self.named = not compiled.positional
        self.names = tuple(
            dict.fromkeys(compiled.bind_names.values())
            if self.named
            else compiled.positiontup
        )
        self.processors = compiled._bind_processors or {}
        # Values the statement fixes itself (``id == 1``, ``usage + 1``).
        self.fixed = {}
        for name in self.names:
            bind = compiled.binds[name]
            if not bind.required and bind.callable is None:
                self.fixed[name] = bind.value
        self.keys = tuple(col[0] for col in compiled._result_columns)
        # (position, processor) of the result columns SQLAlchemy converts.
        self.converters = tuple(
            (i, proc)
            for i, proc in enumerate(
                col[3]._cached_result_processor(compiled.dialect, None)
                for col in compiled._result_columns
            )
            if proc is not None
        )


def _plan(stmt, dialect, keys):
    # ``keys`` in the caller's order (a call site passes its parameters
    # in the same order each time): no sort per execution; another order
    # of the same names gets an entry of its own, the same plan.
    key = (id(stmt), dialect.name, keys)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _build(stmt, dialect, tuple(sorted(keys)))
        with _LOCK:
            _PLANS[key] = plan
    return plan


def _build(stmt, dialect, keys):
    compiled = stmt.compile(
        dialect=dialect, column_keys=list(keys) if keys else None
    )
    if (
        (not compiled.positional and dialect.paramstyle != 'pyformat')
        or compiled.post_compile_params
        or compiled.literal_execute_params
        or compiled.escaped_bind_names
        or 'RETURNING' in compiled.string.upper()
    ):
        return _SLOW
    for col in compiled._result_columns:
        # A result processor is run here only for a plain float column,
        # whose processor does not depend on the cursor's column type.
        if col[3]._cached_result_processor(dialect, None) is not None and (
            not isinstance(col[3], sa.Float) or col[3].asdecimal
        ):
            return _SLOW
    return _Plan(compiled)


class Result:
    """What the write functions read of a result (SQLAlchemy's shape)."""

    __slots__ = ('_rows', 'rowcount', '_lastrowid', '_keys')

    def __init__(self, rows, rowcount, lastrowid, keys):
        self._rows = rows
        self.rowcount = rowcount
        self._lastrowid = lastrowid
        self._keys = keys

    @property
    def inserted_primary_key(self):
        return (self._lastrowid,)

    def __iter__(self):
        return iter(self._rows)

    def all(self):
        return list(self._rows)

    def first(self):
        return self._rows[0] if self._rows else None

    def one(self):
        if len(self._rows) != 1:
            raise sa_exc.NoResultFound(
                'expected one row, got %d' % len(self._rows)
            )
        return self._rows[0]

    def scalar(self):
        return self._rows[0][0] if self._rows else None

    def mappings(self):
        return Result(
            [dict(zip(self._keys, r, strict=False)) for r in self._rows],
            self.rowcount,
            self._lastrowid,
            self._keys,
        )


class Connection:
    """A SQLAlchemy ``Connection`` in a transaction, running marked
    statements directly (see the module docstring); everything else is
    the wrapped connection's."""

    def __init__(self, conn):
        self._conn = conn
        self._dialect = self.dialect = conn.dialect
        self._direct = conn.dialect.name in _DIALECTS

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def execute(self, stmt, params=None, *args, **kwargs):
        if not self._direct or args or kwargs or id(stmt) not in _MARKED:
            return self._conn.execute(stmt, params, *args, **kwargs)
        many = isinstance(params, list)
        first = (params[0] if params else {}) if many else (params or {})
        plan = _plan(stmt, self._dialect, tuple(first))
        if plan is _SLOW:
            return self._conn.execute(stmt, params)
        return self._run(stmt, plan, params, many)

    def _run(self, stmt, plan, params, many):
        rows = (
            [_values(plan, p) for p in params]
            if many
            else _values(plan, params or {})
        )
        fairy = self._conn.connection
        cursor = fairy.dbapi_connection.cursor()
        try:
            if many:
                cursor.executemany(plan.sql, rows)
            else:
                cursor.execute(plan.sql, rows)
            fetched = cursor.fetchall() if plan.keys else []
            return Result(
                _converted(plan, fetched),
                cursor.rowcount,
                cursor.lastrowid,
                plan.keys,
            )
        except self._conn.dialect.loaded_dbapi.Error as exc:
            raise self._wrapped(exc, plan, rows, cursor) from exc
        finally:
            cursor.close()

    def _wrapped(self, exc, plan, params, cursor):
        """``exc`` as SQLAlchemy raises it; a lost connection is
        invalidated, as SQLAlchemy does, so a retry gets a fresh one."""
        dialect = self._conn.dialect
        dbapi_conn = self._conn.connection.dbapi_connection
        disconnect = dialect.is_disconnect(exc, dbapi_conn, cursor)
        if disconnect:
            self._conn.invalidate(exc)
        return sa_exc.DBAPIError.instance(
            plan.sql,
            params,
            exc,
            dialect.loaded_dbapi.Error,
            dialect=dialect,
            connection_invalidated=disconnect,
        )


def _converted(plan, fetched):
    """The fetched rows as tuples, each column through the result
    processor SQLAlchemy would run on it (if any)."""
    if not plan.converters:
        return [tuple(r) for r in fetched]
    out = []
    for r in fetched:
        r = list(r)
        for i, proc in plan.converters:
            r[i] = proc(r[i])
        out.append(tuple(r))
    return out


def _values(plan, params):
    """The parameters of one execution, as SQLAlchemy would pass them
    (a list, or a dict for a named paramstyle): the caller's value (else
    the statement's own), through the type's bind processor."""
    values = []
    fixed = plan.fixed
    processors = plan.processors
    for name in plan.names:
        if name in params:
            value = params[name]
        elif name in fixed:
            value = fixed[name]
        else:
            raise sa_exc.StatementError(
                'A value is required for bind parameter %r' % name,
                plan.sql,
                params,
                None,
            )
        proc = processors.get(name)
        values.append(proc(value) if proc is not None else value)
    if plan.named:
        return dict(zip(plan.names, values, strict=True))
    return values
