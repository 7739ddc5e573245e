"""The private RabbitMQ node and MariaDB server (nimbus.testing): a restart
drops the connections to them and they serve again; stopping them leaves no
process and no directory behind. They need the installed rabbitmq-server and
mariadbd, not the machine's running services.
"""

import os

import pytest

from nimbus.testing import private_mariadb
from nimbus.testing import private_rabbit

pytestmark = pytest.mark.integration


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is gone too.
    with open('/proc/%d/stat' % pid) as f:
        return f.read().split(') ')[1][0] != 'Z'


def test_rabbit_node_restarts_and_cleans_up():
    import kombu

    with private_rabbit.RabbitNode() as node:
        assert node.port != 5672
        assert node.node.startswith('nimbus-test-')
        url = node.vhost().replace('rabbit://', 'amqp://')
        connection = kombu.Connection(url)
        connection.connect()
        pids = (node.process.pid, node.epmd.process.pid)
        base_dir = node.base_dir
        assert node.ctl('list_connections', '-q', '--no-table-headers')
        node.restart_app(down_s=1)
        with pytest.raises(Exception):
            connection.default_channel.queue_declare('after-restart')
        assert node.accepts_amqp()
    assert not any(_alive(pid) for pid in pids)
    assert not os.path.exists(base_dir)


def test_mariadb_server_restarts_and_cleans_up():
    import sqlalchemy as sa

    with private_mariadb.MariaDBServer() as server:
        assert server.port != 3306
        url, cleanup = server.database()
        engine = sa.create_engine(url, pool_pre_ping=True)
        with engine.begin() as conn:
            conn.exec_driver_sql('CREATE TABLE kept (n INT)')
            conn.exec_driver_sql('INSERT INTO kept VALUES (7)')
        first = server.process.pid
        server.restart(down_s=1)
        assert server.process.pid != first and not _alive(first)
        with engine.connect() as conn:
            assert conn.exec_driver_sql('SELECT n FROM kept').all() == [(7,)]
        engine.dispose()
        cleanup()
        pid, base_dir = server.process.pid, server.base_dir
    assert not _alive(pid)
    assert not os.path.exists(base_dir)
