"""RabbitMQ restarts under a running cloud: nothing is lost.

The broker's application is stopped and started again (every connection of
every daemon drops). The daemons reconnect on their own, the servers booted
before stay ACTIVE, and servers booted after the restart build normally.

The broker is a private RabbitMQ node of this test
(:class:`nimbus.testing.private_rabbit.RabbitNode`: own node name, ports,
epmd and data directory); the machine's RabbitMQ is never stopped, so the
test runs in the parallel run with the others. Marked ``broker_restart`` to
select it.
"""

import pytest

from nimbus.testing import private_rabbit
from tests.integration import test_daemons as helpers

pytestmark = [pytest.mark.integration, pytest.mark.broker_restart]


@pytest.fixture
def rabbit(tmp_path):
    # Under tmp_path: the node's logs stay behind for a failed run.
    with private_rabbit.RabbitNode(base_dir=str(tmp_path / 'rabbit')) as node:
        yield node


class _OnNode:
    """``fresh`` with its vhosts on the private node."""

    def __init__(self, fresh, node):
        self.database = fresh.database
        self.vhost = node.vhost


def _boot(api, flavor, image, names):
    return [
        api.create_server(name, flavor['id'], image['id'])['server']['id']
        for name in names
    ]


def _all_active(api, ids, cloud):
    def active():
        servers = {s['id']: s for s in api.servers()}
        states = [servers.get(i, {}).get('status') for i in ids]
        if all(s == 'ACTIVE' for s in states):
            return True
        assert 'ERROR' not in states, [
            api.server(i).get('fault')
            for i in ids
            if servers[i]['status'] == 'ERROR'
        ]
        return False

    helpers._wait(active, 180, 'servers to become ACTIVE', cloud)


def test_broker_restart_loses_nothing(tmp_path, fresh, rabbit):
    cloud = helpers._cloud(tmp_path, _OnNode(fresh, rabbit), 'mysql')
    try:
        cloud.start()
        api = helpers._ready(cloud)
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        before = _boot(api, flavor, image, ['before-%d' % i for i in range(5)])
        _all_active(api, before, cloud)

        connections = rabbit.ctl(
            'list_connections', '-q', '--no-table-headers'
        )
        assert connections.strip(), 'the daemons are not on the private node'
        rabbit.restart_app(down_s=3)

        after = _boot(api, flavor, image, ['after-%d' % i for i in range(5)])
        _all_active(api, before + after, cloud)
        consumers = helpers._consumers_in_placement(cloud)
        assert set(consumers) == set(before + after)
        for daemon in cloud.daemons.values():
            assert daemon.alive(), daemon.name + '\n' + daemon.tail()
    finally:
        cloud.stop()
