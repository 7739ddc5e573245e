"""Fresh placement databases for tests, on SQLite, MariaDB or PostgreSQL.

``NIMBUS_TEST_DB`` picks the engine: ``sqlite`` (default), ``mysql`` or
``postgresql``. ``NIMBUS_TEST_MYSQL_URL`` / ``NIMBUS_TEST_POSTGRESQL_URL``
override the server (defaults ``mysql+pymysql://root@127.0.0.1`` and
``postgresql+psycopg://postgres@127.0.0.1``). Each call creates a database
with a random name and drops it afterwards. An unreachable server skips the
test with a one-line reason, except under ``CI=true`` where it fails.
"""

import contextlib
import os
import uuid

from oslo_policy import opts as policy_opts
import pytest
import sqlalchemy as sa

from nimbus.common import config
from nimbus.common import db as common_db

SERVERS = {
    'mysql': ('NIMBUS_TEST_MYSQL_URL', 'mysql+pymysql://root@127.0.0.1'),
    'postgresql': ('NIMBUS_TEST_POSTGRESQL_URL',
                   'postgresql+psycopg://postgres@127.0.0.1'),
}


def backend():
    return os.environ.get('NIMBUS_TEST_DB', 'sqlite')


def _unreachable(reason):
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail('database server unreachable: %s' % reason)
    pytest.skip('database server unreachable: %s' % reason)


@contextlib.contextmanager
def fresh_database(tmp_path):
    """Yield the URL of a new empty database; drop it afterwards."""
    kind = backend()
    if kind == 'sqlite':
        yield 'sqlite:///%s' % (tmp_path / 'placement.sqlite')
        return
    env, default = SERVERS[kind]
    server = os.environ.get(env, default).rstrip('/')
    name = 'nimbus_pl_%s' % uuid.uuid4().hex[:12]
    admin_url = server + ('/postgres' if kind == 'postgresql' else '/')
    try:
        engine = sa.create_engine(admin_url, isolation_level='AUTOCOMMIT')
        with engine.connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % name)
    except Exception as exc:  # noqa: BLE001 - any connect failure
        _unreachable(str(exc).splitlines()[0][:200])
    url = '%s/%s' % (server, name)
    try:
        yield url
    finally:
        common_db.get_database(url).dispose()
        with engine.connect() as conn:
            if kind == 'postgresql':
                conn.exec_driver_sql(
                    'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name)
            else:
                conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
        engine.dispose()


def make_conf(url, **overrides):
    """A registered ConfigOpts for placement on ``url``."""
    values = {'placement_database': {'connection': url},
              'api': {'auth_strategy': 'noauth2'}}
    for group, opts in overrides.items():
        values.setdefault(group, {}).update(opts)
    conf = config.build_conf([])
    policy_opts._register(conf)  # [oslo_policy] exists before Enforcer
    for group, opts in values.items():
        for name, value in opts.items():
            conf.set_override(name, value, group=group)
    return conf
