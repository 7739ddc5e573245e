"""Real services for integration tests: RabbitMQ, MariaDB, PostgreSQL.

Each helper either returns something usable (a URL of a fresh vhost or
database) or calls :func:`unavailable`, which skips the test with a
one-line reason, or fails it when ``CI=true`` (CI machines have these
services, so a missing one is a broken run, not a reason to skip).
"""

import os
import shutil
import socket
import subprocess
import uuid

RABBIT_HOST = os.environ.get('NIMBUS_TEST_RABBIT_HOST', '127.0.0.1')
RABBIT_PORT = int(os.environ.get('NIMBUS_TEST_RABBIT_PORT', '5672'))
MYSQL_URL = os.environ.get('NIMBUS_TEST_MYSQL_URL',
                           'mysql+pymysql://root@127.0.0.1:3306')
PG_URL = os.environ.get('NIMBUS_TEST_PG_URL',
                        'postgresql+psycopg://postgres@127.0.0.1:5432')


def in_ci():
    return os.environ.get('CI', '').lower() in ('1', 'true', 'yes')


def unavailable(reason):
    """Skip (fail in CI) because a service the test needs is missing."""
    import pytest
    if in_ci():
        pytest.fail('CI=true and %s' % reason, pytrace=False)
    pytest.skip(reason)


def port_open(host, port, timeout=1.0):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def rabbit_vhost():
    """Create a fresh RabbitMQ vhost; returns (url, cleanup)."""
    if not port_open(RABBIT_HOST, RABBIT_PORT):
        unavailable('RabbitMQ is not listening on %s:%d'
                    % (RABBIT_HOST, RABBIT_PORT))
    ctl = shutil.which('rabbitmqctl')
    if ctl is None:
        unavailable('rabbitmqctl is not installed (needed for a fresh vhost)')
    vhost = 'nimbus-test-%s' % uuid.uuid4().hex[:10]
    for args in (['add_vhost', vhost],
                 ['set_permissions', '-p', vhost, 'guest', '.*', '.*',
                  '.*']):
        result = subprocess.run([ctl] + args, capture_output=True, text=True,
                                timeout=60)
        if result.returncode != 0:
            unavailable('rabbitmqctl %s failed: %s'
                        % (args[0], result.stderr.strip()[:200]))
    url = 'rabbit://guest:guest@%s:%d/%s' % (RABBIT_HOST, RABBIT_PORT, vhost)

    def cleanup():
        subprocess.run([ctl, 'delete_vhost', vhost], capture_output=True,
                       timeout=60)
    return url, cleanup


def _fresh_database(server_url, kind):
    import sqlalchemy as sa
    name = 'nimbus_test_%s' % uuid.uuid4().hex[:10]
    admin_url = server_url + ('/postgres' if kind == 'postgresql' else '/')
    try:
        engine = sa.create_engine(admin_url, isolation_level='AUTOCOMMIT')
        with engine.connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % name)
    except Exception as exc:  # the server is down or refuses us
        unavailable('%s is not reachable at %s: %s'
                    % (kind, server_url, str(exc).splitlines()[0][:150]))

    def cleanup():
        try:
            with engine.connect() as conn:
                if kind == 'postgresql':
                    conn.exec_driver_sql(
                        'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name)
                else:
                    conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
        finally:
            engine.dispose()
    suffix = '?charset=utf8mb4' if kind == 'mysql' else ''
    return '%s/%s%s' % (server_url, name, suffix), cleanup


def mysql_database():
    """A fresh MariaDB/MySQL database; returns (url, cleanup)."""
    return _fresh_database(MYSQL_URL, 'mysql')


def postgresql_database():
    """A fresh PostgreSQL database; returns (url, cleanup)."""
    return _fresh_database(PG_URL, 'postgresql')


def database(kind):
    if kind == 'sqlite':
        raise ValueError('make SQLite URLs from a tmp_path')
    return {'mysql': mysql_database,
            'postgresql': postgresql_database}[kind]()
