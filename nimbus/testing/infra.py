"""Real services for integration tests: RabbitMQ, MariaDB, PostgreSQL.

Each helper either returns something usable (a URL of a fresh vhost or
database) or calls :func:`unavailable`, which skips the test with a
one-line reason, or fails it when ``CI`` is set to ``1``, ``true`` or
``yes`` (CI machines have these services, so a missing one is a broken
run, not a reason to skip). Use :func:`unavailable` for anything else a
test needs from the machine, and :func:`require_module` instead of
``pytest.importorskip``, so CI fails there too.

Where the services are (environment variables, read at each call):

- ``NIMBUS_TEST_RABBIT_HOST`` / ``NIMBUS_TEST_RABBIT_PORT``
  (default ``127.0.0.1`` / ``5672``; user guest/guest, ``rabbitmqctl``
  on the PATH for fresh vhosts);
- ``NIMBUS_TEST_MYSQL_URL`` (default ``mysql+pymysql://root@127.0.0.1:3306``);
- ``NIMBUS_TEST_POSTGRESQL_URL`` (default
  ``postgresql+psycopg://postgres@127.0.0.1:5432``). This is the canonical
  name; the older ``NIMBUS_TEST_PG_URL`` is still read when the canonical
  one is unset.

Server URLs name no database; :func:`server_url` returns them.
"""

import atexit
import importlib
import json
import os
import shutil
import socket
import subprocess
import time
import uuid

_DEFAULTS = {
    'mysql': (
        ('NIMBUS_TEST_MYSQL_URL',),
        'mysql+pymysql://root@127.0.0.1:3306',
    ),
    'postgresql': (
        ('NIMBUS_TEST_POSTGRESQL_URL', 'NIMBUS_TEST_PG_URL'),
        'postgresql+psycopg://postgres@127.0.0.1:5432',
    ),
}


def rabbit_address():
    """``(host, port)`` of the RabbitMQ the tests use."""
    return (
        os.environ.get('NIMBUS_TEST_RABBIT_HOST', '127.0.0.1'),
        int(os.environ.get('NIMBUS_TEST_RABBIT_PORT', '5672')),
    )


def server_url(kind):
    """The database server URL (no database name) for ``mysql`` or
    ``postgresql``, from the environment or the default."""
    names, default = _DEFAULTS[kind]
    for name in names:
        if os.environ.get(name):
            return os.environ[name].rstrip('/')
    return default


# Import-time values, kept for callers that read them as constants.
RABBIT_HOST, RABBIT_PORT = rabbit_address()
MYSQL_URL = server_url('mysql')
PG_URL = server_url('postgresql')


def in_ci():
    """True when ``CI`` is ``1``, ``true`` or ``yes`` (any case)."""
    return os.environ.get('CI', '').strip().lower() in ('1', 'true', 'yes')


def _one_line(reason):
    text = ' '.join(str(reason).split())
    return text if len(text) <= 300 else text[:297] + '...'


def unavailable(reason):
    """Skip, or fail under CI, because something the test needs from the
    machine is missing. ``reason`` is reduced to one line. Works inside a
    test, a fixture, or at module level (collection then fails in CI)."""
    import pytest

    reason = _one_line(reason)
    if in_ci():
        pytest.fail(
            'CI=%s and %s' % (os.environ.get('CI'), reason), pytrace=False
        )
    pytest.skip(reason, allow_module_level=True)


def require_module(name, reason=None):
    """Import and return module ``name``, or :func:`unavailable` (the CI
    aware ``pytest.importorskip``)."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        unavailable(
            reason or 'Python module %s is not importable: %s' % (name, exc)
        )


def port_open(host, port, timeout=1.0):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def free_port():
    """A TCP port of 127.0.0.1 free right now (the kernel's pick)."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


# ``rabbitmqctl delete_vhost`` runs started by a cleanup, reaped at exit.
_DELETIONS = []


def _reap_deletions(timeout=60):
    for process in _DELETIONS:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    del _DELETIONS[:]


atexit.register(_reap_deletions)


def _wait_for_vhost(url, timeout=30):
    """Connect to the vhost of ``url`` until it lets guest in (a
    definitions import may finish after rabbitmqctl returns)."""
    import kombu

    deadline = time.monotonic() + timeout
    while True:
        try:
            with kombu.Connection(
                'amqp://' + url.split('://', 1)[1], connect_timeout=5
            ) as connection:
                connection.connect()
            return
        except Exception as exc:  # noqa: BLE001 - not there yet, or refused
            if time.monotonic() > deadline:
                unavailable('vhost of %s never opened: %s' % (url, exc))
            time.sleep(0.1)


def rabbit_vhost():
    """Create a fresh RabbitMQ vhost; returns (url, cleanup).

    The vhost and guest's permissions on it are one definitions import
    (one ``rabbitmqctl`` run instead of two: each run starts an Erlang VM,
    a second or more of CPU); the cleanup starts ``rabbitmqctl
    delete_vhost`` and returns, the run is reaped at exit."""
    host, port = rabbit_address()
    if not port_open(host, port):
        unavailable('RabbitMQ is not listening on %s:%d' % (host, port))
    ctl = shutil.which('rabbitmqctl')
    if ctl is None:
        unavailable('rabbitmqctl is not installed (needed for a fresh vhost)')
    vhost = 'nimbus-test-%s' % uuid.uuid4().hex[:10]
    definitions = {
        'vhosts': [{'name': vhost}],
        'permissions': [
            {
                'user': 'guest',
                'vhost': vhost,
                'configure': '.*',
                'write': '.*',
                'read': '.*',
            }
        ],
    }
    result = subprocess.run(
        [ctl, 'import_definitions', '--format', 'json'],
        input=json.dumps(definitions),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode != 0:
        unavailable(
            'rabbitmqctl import_definitions failed: %s'
            % (result.stderr.strip() or result.stdout.strip())[:200]
        )
    url = 'rabbit://guest:guest@%s:%d/%s' % (host, port, vhost)
    _wait_for_vhost(url)

    def cleanup():
        _DELETIONS.append(
            subprocess.Popen(
                [ctl, 'delete_vhost', vhost],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )

    return url, cleanup


def fresh_database(server, kind):
    """A fresh database on ``server`` (a URL naming no database) of
    ``kind`` (``mysql`` or ``postgresql``); returns (url, cleanup)."""
    import sqlalchemy as sa

    name = 'nimbus_test_%s' % uuid.uuid4().hex[:10]
    admin_url = server + ('/postgres' if kind == 'postgresql' else '/')
    try:
        # pool_pre_ping: the cleanup's pooled connection may have died with
        # a database server restarted by a fault test in between.
        engine = sa.create_engine(
            admin_url, isolation_level='AUTOCOMMIT', pool_pre_ping=True
        )
        with engine.connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % name)
    except Exception as exc:  # noqa: BLE001 - the server is down or refuses us
        unavailable(
            '%s is not reachable at %s: %s'
            % (kind, server, str(exc).splitlines()[0][:150])
        )

    def cleanup():
        try:
            with engine.connect() as conn:
                if kind == 'postgresql':
                    conn.exec_driver_sql(
                        'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name
                    )
                else:
                    conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
        finally:
            engine.dispose()

    suffix = '?charset=utf8mb4' if kind == 'mysql' else ''
    return '%s/%s%s' % (server, name, suffix), cleanup


def mysql_database():
    """A fresh MariaDB/MySQL database; returns (url, cleanup)."""
    return fresh_database(server_url('mysql'), 'mysql')


def postgresql_database():
    """A fresh PostgreSQL database; returns (url, cleanup)."""
    return fresh_database(server_url('postgresql'), 'postgresql')


def database(kind):
    if kind == 'sqlite':
        raise ValueError('make SQLite URLs from a tmp_path')
    return {'mysql': mysql_database, 'postgresql': postgresql_database}[kind]()
