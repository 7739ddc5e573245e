"""The server databases' pools send no ROLLBACK when a connection comes
back (``reset_on_return``): a committed session costs no round trip more,
while work a connection leaves uncommitted is still rolled back (by
SQLAlchemy's ``Connection``, which ends its own transaction when closed).

Runs on MariaDB and PostgreSQL (skipped, or failed in CI, without them)."""

import pytest
import sqlalchemy as sa

from nimbus.common import db as common_db
from nimbus.testing import infra

KINDS = ['mysql', 'postgresql']


@pytest.fixture(params=KINDS)
def database(request):
    url, cleanup = infra.database(request.param)
    database = common_db.Database(url)
    with database.engine.begin() as conn:
        conn.exec_driver_sql('CREATE TABLE notes (n INTEGER)')
    rollbacks = []
    dialect = database.engine.dialect
    real = dialect.do_rollback

    def counting(dbapi_connection):
        rollbacks.append(1)
        return real(dbapi_connection)

    # This engine's dialect instance only.
    dialect.do_rollback = counting
    database.rollbacks = rollbacks
    try:
        yield database
    finally:
        database.dispose()
        cleanup()


def _count(database):
    with database.session() as session:
        return session.execute(sa.text('SELECT COUNT(*) FROM notes')).scalar()


def test_a_committed_session_sends_no_rollback(database):
    for n in range(3):
        with database.session() as session:
            session.execute(sa.text('INSERT INTO notes VALUES (%d)' % n))
    assert database.rollbacks == []
    assert _count(database) == 3


def test_a_failed_session_is_rolled_back(database):
    with pytest.raises(RuntimeError):
        with database.session() as session:
            session.execute(sa.text('INSERT INTO notes VALUES (1)'))
            raise RuntimeError('boom')
    assert len(database.rollbacks) == 1
    assert _count(database) == 0


def test_a_connection_closed_mid_transaction_leaves_nothing_behind(database):
    # One pooled connection: the next checkout is the same one.
    database.engine.dispose()
    with database.engine.connect() as conn:
        conn.execute(sa.text('INSERT INTO notes VALUES (1)'))
        # Closed without a commit.
    assert len(database.rollbacks) == 1
    assert _count(database) == 0
    with database.engine.connect() as conn:
        conn.execute(sa.text('INSERT INTO notes VALUES (2)'))
        conn.commit()
    assert _count(database) == 1
