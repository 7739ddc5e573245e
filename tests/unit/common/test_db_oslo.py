"""The database layer's oslo.db parts: ``retry_on_deadlock`` is oslo.db's
``wrap_db_retry`` with Nimbus's bounds, and the engines of the API, cell
and accelerator databases raise oslo.db's exceptions, while placement's
(hot path) keeps SQLAlchemy's."""

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from nimbus.common import db as common_db
from nimbus.common.wsgi import app as wsgi_app


def _locked():
    return sa_exc.OperationalError(
        'UPDATE', {}, Exception('database is locked')
    )


def _failing(errors):
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return 'done'

    return fn, calls


@pytest.mark.parametrize(
    'error',
    [
        db_exc.DBDeadlock(),
        db_exc.DBConnectionError(),
        _locked(),
        sa_exc.DBAPIError(
            'SELECT', {}, Exception('gone'), connection_invalidated=True
        ),
        db_exc.DBError(
            sa_exc.OperationalError(
                'UPDATE', {}, type('E', (Exception,), {'sqlstate': '40001'})()
            )
        ),
    ],
)
def test_retried_until_it_succeeds(error):
    fn, calls = _failing([error, error])
    assert common_db.retry_on_deadlock(fn, attempts=3)() == 'done'
    assert len(calls) == 3


def test_gives_up_after_attempts_with_the_last_error():
    fn, calls = _failing([db_exc.DBDeadlock()] * 5)
    with pytest.raises(db_exc.DBDeadlock):
        common_db.retry_on_deadlock(fn, attempts=3)()
    assert len(calls) == 3


@pytest.mark.parametrize(
    'error',
    [
        ValueError('not a database error'),
        db_exc.DBDuplicateEntry(columns=['name']),
        sa_exc.IntegrityError('INSERT', {}, Exception('UNIQUE')),
    ],
)
def test_other_errors_are_not_retried(error):
    fn, calls = _failing([error])
    with pytest.raises(type(error)):
        common_db.retry_on_deadlock(fn, attempts=3)()
    assert len(calls) == 1


def test_default_bounds_are_ten_attempts():
    decorator = common_db.retry_on_deadlock()
    assert decorator.max_retries == 9
    assert decorator.retry_interval == 0.01
    assert decorator.max_retry_interval == 0.5


def _table_engine(tmp_path, hot_path):
    engine = common_db.create_engine(
        'sqlite:///%s/t.db' % tmp_path, hot_path=hot_path
    )
    with engine.begin() as conn:
        conn.exec_driver_sql('CREATE TABLE t (name VARCHAR(8) UNIQUE)')
        conn.exec_driver_sql("INSERT INTO t VALUES ('a')")
    return engine


def test_api_engine_raises_duplicate_entry(tmp_path):
    engine = _table_engine(tmp_path, hot_path=False)
    try:
        with pytest.raises(db_exc.DBDuplicateEntry):
            with engine.begin() as conn:
                conn.exec_driver_sql("INSERT INTO t VALUES ('a')")
        # Still pooled and usable after the translated error.
        with engine.connect() as conn:
            assert conn.execute(sa.text('SELECT count(*) FROM t')).scalar()
    finally:
        engine.dispose()


def test_hot_path_engine_keeps_sqlalchemy_errors(tmp_path):
    engine = _table_engine(tmp_path, hot_path=True)
    try:
        with pytest.raises(sa_exc.IntegrityError):
            with engine.begin() as conn:
                conn.exec_driver_sql("INSERT INTO t VALUES ('a')")
    finally:
        engine.dispose()


def test_api_engine_keeps_nimbus_sqlite_pooling(tmp_path):
    engine = _table_engine(tmp_path, hot_path=False)
    try:
        assert isinstance(engine.pool, sa.pool.QueuePool)
        with engine.connect() as conn:
            mode = conn.exec_driver_sql('PRAGMA journal_mode').scalar()
        assert mode == 'wal'
    finally:
        engine.dispose()


def test_translated_errors_count_as_outage_or_data_error():
    assert wsgi_app._is_outage(db_exc.DBConnectionError())
    assert wsgi_app._is_outage(db_exc.DBDeadlock())
    assert not wsgi_app._is_outage(
        db_exc.DBNonExistentTable(
            sa_exc.OperationalError('SELECT', {}, Exception('no such table'))
        )
    )
    assert wsgi_app._is_data_error(db_exc.DBDataError())


@pytest.mark.parametrize('kind', ['mysql', 'postgresql'])
def test_server_api_engine_translates_a_duplicate_key_pair(kind):
    from nimbus.api.objects import keypairs
    from nimbus.db import sync_api
    from nimbus.testing import infra

    url, cleanup = infra.database(kind)
    try:
        sync_api(url)
        db = common_db.get_database(url)
        values = {
            'user_id': 'u1',
            'name': 'k1',
            'public_key': 'ssh-rsa x',
            'fingerprint': 'f',
            'type': 'ssh',
        }
        keypairs.create(db, dict(values))
        with pytest.raises(db_exc.DBDuplicateEntry):
            with db.session() as session:
                session.add(keypairs.models.KeyPair(**values))
        with pytest.raises(keypairs.KeyPairExists):
            keypairs.create(db, dict(values))
    finally:
        try:
            common_db.get_database(url).dispose()
        finally:
            cleanup()
