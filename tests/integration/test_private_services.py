"""The private RabbitMQ node and MariaDB server (nimbus.testing): a restart
drops the connections to them and they serve again; stopping them leaves no
process and no directory behind. They need the installed rabbitmq-server and
mariadbd, not the machine's running services.
"""

import os
import time

import pytest

from nimbus.testing import private_mariadb
from nimbus.testing import private_rabbit
from nimbus.testing import rabbit_cluster

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
        # The connection the restart cut is gone (a socket or AMQP error).
        with pytest.raises(
            connection.connection_errors + connection.channel_errors
        ):
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


# The cluster of three is what the faults_full rows of make test-faults run
# on; it is tested beside them (make test-daemons-full), not in make test.
@pytest.mark.daemons_full
def test_rabbit_cluster_of_three_moves_leaders_rejoins_and_partitions():
    import kombu

    with rabbit_cluster.RabbitCluster() as cluster:
        names = {node.node for node in cluster.nodes}
        assert len(names) == 3
        assert all(name.startswith('nimbus-test-') for name in names)
        assert len({node.port for node in cluster.nodes} | {5672}) == 4
        assert len({node.cookie for node in cluster.nodes}) == 1
        assert cluster.running_nodes() == names
        url = cluster.vhost()
        assert url.count('127.0.0.1:') == 3
        vhost = url.rsplit('/', 1)[-1]
        # A quorum queue declared through the second node, its message
        # read through a surviving node after its leader is killed.
        second = cluster.nodes[1]
        amqp = 'amqp://guest:guest@127.0.0.1:%d/' + vhost
        with kombu.Connection(amqp % second.port) as connection:
            channel = connection.channel()
            channel.queue_declare(
                'probe',
                durable=True,
                auto_delete=False,
                arguments={'x-queue-type': 'quorum'},
            )
            producer = kombu.Producer(channel, routing_key='probe')
            producer.publish({'n': 1}, delivery_mode=2)
        leader, count = cluster.leading_node([url])
        assert count == 1 and leader.node in names
        pids = [node.process.pid for node in cluster.nodes]
        epmd_pid = cluster.epmd.process.pid
        base_dir = cluster.base_dir
        leader.kill9()
        survivors = [n for n in cluster.nodes if n is not leader]
        private_rabbit.wait_until(
            lambda: (
                cluster.queue_leaders(url).get('probe')
                in {n.node for n in survivors}
            ),
            60,
            'a new leader for the quorum queue',
        )
        reader = survivors[-1]
        with kombu.Connection(amqp % reader.port) as connection:
            channel = connection.channel()
            message = None
            for _ in range(60):
                message = channel.basic_get('probe', no_ack=True)
                if message is not None:
                    break
                time.sleep(0.5)
            assert message is not None and '"n": 1' in str(message.body)
        leader.start()
        cluster.wait_running(cluster.nodes)
        pids.append(leader.process.pid)
        # Cut off from the other two, a node pauses (pause_minority): it
        # stops serving AMQP while they see each other only; healed, it
        # serves again.
        cut, rest = cluster.nodes[0], cluster.nodes[1:]
        cluster.partition(cut)
        private_rabbit.wait_until(
            lambda: not cut.accepts_amqp(), 60, 'the cut node to pause'
        )
        assert cluster.running_nodes(rest[0]) == {n.node for n in rest}
        assert all(node.accepts_amqp() for node in rest)
        cluster.heal(cut)
        cut.wait_ready()
    assert not any(_alive(pid) for pid in pids + [epmd_pid])
    assert not os.path.exists(base_dir)
