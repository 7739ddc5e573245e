"""RabbitMQ restarts under a running cloud: nothing is lost.

The broker's application is stopped and started again (every connection of
every daemon drops). The daemons reconnect on their own, the servers booted
before stay ACTIVE, and servers booted after the restart build normally.

Marked ``broker_restart``: it disturbs every RabbitMQ user on the machine,
so ``make test`` runs it alone, after the parallel run.
"""

import shutil
import subprocess
import time

import pytest

from nimbus.testing import infra
from tests.integration import test_daemons as helpers

pytestmark = [pytest.mark.integration, pytest.mark.broker_restart]


def _rabbitmqctl(*args):
    subprocess.run(
        [shutil.which('rabbitmqctl')] + list(args),
        check=True,
        capture_output=True,
        timeout=120,
    )


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


def test_broker_restart_loses_nothing(tmp_path, fresh):
    cloud = helpers._cloud(tmp_path, fresh, 'mysql')
    try:
        cloud.start()
        api = helpers._ready(cloud)
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        before = _boot(api, flavor, image, ['before-%d' % i for i in range(5)])
        _all_active(api, before, cloud)

        _rabbitmqctl('stop_app')
        time.sleep(3)
        _rabbitmqctl('start_app')
        deadline = time.monotonic() + 60
        while not infra.port_open(*infra.rabbit_address()):
            assert time.monotonic() < deadline, 'RabbitMQ did not come back'
            time.sleep(0.5)

        after = _boot(api, flavor, image, ['after-%d' % i for i in range(5)])
        _all_active(api, before + after, cloud)
        consumers = helpers._consumers_in_placement(cloud)
        assert set(consumers) == set(before + after)
        for daemon in cloud.daemons.values():
            assert daemon.alive(), daemon.name + '\n' + daemon.tail()
    finally:
        cloud.stop()
