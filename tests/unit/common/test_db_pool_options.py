"""A server database's pool follows its group's options
(``max_pool_size``, ``max_overflow``, ``pool_timeout``,
``connection_recycle_time``) in each of the four database groups, and a
process that has used up its pool waits ``pool_timeout`` and fails.

The last test runs on MariaDB and PostgreSQL (skipped, or failed in CI,
without them)."""

import pytest
import sqlalchemy as sa

from nimbus import services
from nimbus.common import config
from nimbus.common import db as common_db
from nimbus.common.db import options as db_options
from nimbus.db import cells as cells_mod
from nimbus.testing import infra

GROUPS = [
    'api_database',
    'database',
    'placement_database',
    'accelerator_database',
]


def _conf(**groups):
    conf = config.build_conf([])
    for group, values in groups.items():
        for name, value in values.items():
            conf.set_override(name, value, group=group)
    return conf


@pytest.mark.parametrize('group', GROUPS)
def test_every_database_group_has_the_pool_options(group):
    conf = _conf(
        **{
            group: {
                'max_pool_size': 3,
                'max_overflow': 1,
                'pool_timeout': 7,
                'connection_recycle_time': 600,
            }
        }
    )
    assert db_options.pool_options(getattr(conf, group)) == (
        db_options.PoolOptions(size=3, overflow=1, timeout=7, recycle=600)
    )


def test_the_defaults_are_the_pool_options_defaults():
    conf = _conf()
    for group in GROUPS:
        assert db_options.pool_options(getattr(conf, group)) == (
            db_options.PoolOptions()
        )
    assert db_options.PoolOptions() == (10, 20, 30, 3600)


@pytest.mark.parametrize(
    'url',
    [
        'mysql+pymysql://u:p@db.invalid/nimbus',
        'postgresql+psycopg://u:p@db.invalid/nimbus',
    ],
)
def test_a_server_engine_is_sized_by_its_options(url):
    # No connection is opened: the pool is configured at creation.
    pool = db_options.PoolOptions(size=3, overflow=1, timeout=7, recycle=60)
    engine = common_db.create_engine(url, pool=pool)
    try:
        assert engine.pool.size() == 3
        assert engine.pool._max_overflow == 1
        assert engine.pool._timeout == 7
        assert engine.pool._recycle == 60
    finally:
        engine.dispose()
    default = common_db.create_engine(url)
    try:
        assert default.pool.size() == 10
        assert default.pool._max_overflow == 20
    finally:
        default.dispose()


def test_sqlite_keeps_its_own_pool(tmp_path):
    pool = db_options.PoolOptions(size=2, overflow=0, timeout=1, recycle=60)
    engine = common_db.create_engine(
        'sqlite:///%s' % (tmp_path / 'x.sqlite'), pool=pool
    )
    try:
        assert engine.pool.size() == 20
    finally:
        engine.dispose()


def test_services_and_the_cell_directory_pass_their_groups_pools(monkeypatch):
    seen = {}

    def get_database(url, hot_path=False, pool=None):
        seen[url] = pool
        return object()

    monkeypatch.setattr(common_db, 'get_database', get_database)
    conf = _conf(
        api_database={
            'connection': 'mysql+pymysql://u:p@api.invalid/api',
            'max_pool_size': 4,
        },
        database={'max_pool_size': 6, 'pool_timeout': 9},
    )
    services.api_db(conf)
    assert seen['mysql+pymysql://u:p@api.invalid/api'].size == 4
    directory = cells_mod.CellDirectory(conf, api_db=None)
    cell = cells_mod.Cell(
        id=2,
        uuid='c',
        name='cell1',
        transport_url='fake:/',
        database_connection='mysql+pymysql://u:p@cell.invalid/cell1',
        disabled=False,
    )
    directory.db(cell)
    assert seen['mysql+pymysql://u:p@cell.invalid/cell1'] == (
        db_options.PoolOptions(size=6, timeout=9)
    )


@pytest.mark.parametrize('kind', ['mysql', 'postgresql'])
def test_a_full_pool_waits_pool_timeout_then_fails(kind):
    url, cleanup = infra.database(kind)
    database = common_db.Database(
        url,
        pool=db_options.PoolOptions(size=1, overflow=0, timeout=1, recycle=60),
    )
    try:
        held = database.engine.connect()
        try:
            held.execute(sa.text('SELECT 1'))
            with pytest.raises(sa.exc.TimeoutError):
                with database.session() as session:
                    session.execute(sa.text('SELECT 1'))
        finally:
            held.close()
        with database.session() as session:
            assert session.execute(sa.text('SELECT 1')).scalar() == 1
    finally:
        database.dispose()
        cleanup()
