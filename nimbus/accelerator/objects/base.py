"""Transactions on the accelerator database.

:class:`AcceleratorDB` wraps one engine; :meth:`~AcceleratorDB.write` and
:meth:`~AcceleratorDB.read` run a function in one transaction, a write
retried whole on a deadlock or a lost connection.
"""

import datetime

import sqlalchemy as sa

from nimbus.common import db as common_db


def utcnow():
    """Naive UTC now at second precision (what every engine stores alike)."""
    return datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, microsecond=0
    )


def isotime(value):
    """A stored naive-UTC datetime as Cyborg renders it, or None."""
    if value is None:
        return None
    return value.replace(microsecond=0).isoformat() + '+00:00'


class AcceleratorDB:
    """``AcceleratorDB(url)``: the engine of one accelerator database."""

    def __init__(self, url, pool=None):
        self.database = common_db.get_database(url, pool=pool)
        self.engine = self.database.engine

    def write(self, fn, *args, **kwargs):
        """``fn(conn, *args, **kwargs)`` in one write transaction."""

        @common_db.retry_on_deadlock
        def run():
            with self.engine.begin() as conn:
                return fn(conn, *args, **kwargs)

        return run()

    def read(self, fn, *args, **kwargs):
        with self.engine.connect() as conn:
            return fn(conn, *args, **kwargs)

    def rows(self, query, to_dict=None):
        """The rows of ``query``, each ``to_dict(row)`` (by default a dict
        of its columns)."""
        to_dict = to_dict or _columns
        return self.read(
            lambda conn: [to_dict(r) for r in conn.execute(query)]
        )

    def first(self, query, missing, key):
        """The first row of ``query``; ``missing(key)`` (the object
        module's NotFound) raised when there is none."""
        row = self.read(lambda conn: conn.execute(query).first())
        if row is None:
            raise missing(key)
        return row


def listing(table, **given):
    """All rows of ``table`` in id order whose columns equal the ``given``
    values that are not None."""
    query = sa.select(table).order_by(table.c.id)
    for column, value in given.items():
        if value is not None:
            query = query.where(table.c[column] == value)
    return query


def _columns(row):
    return dict(row._mapping)
