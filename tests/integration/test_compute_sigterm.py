"""SIGTERM on a real nimbus-compute process on RabbitMQ (issue 10, section
3): it stops taking builds, finishes the spawn under way, hands the builds
it had not started back to the cell conductor (they go to their alternate),
and exits 0."""

import pytest

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemons

pytestmark = pytest.mark.integration


def test_sigterm_finishes_or_hands_back_builds_and_exits_zero(tmp_path, fresh):
    databases = {
        name: fresh.database('mysql')
        for name in ('api', 'cell0', 'cell1', 'placement')
    }
    cloud = daemons.DaemonCloud(
        str(tmp_path / 'cloud'),
        fresh.vhost(),
        fresh.vhost(),
        databases,
        hosts=2,
        compute_options={
            # host-1 is preferred (more free RAM), spawns slowly and one
            # build at a time, so builds queue behind the first one.
            'host-1': {
                'fake_driver': {'spawn_seconds': 4, 'memory_mb': 262144},
                'compute': {'build_workers': 1},
            },
            'host-2': {'fake_driver': {'spawn_seconds': 0.1}},
        },
        common_options={'compute': {'update_resources_interval': 2}},
    )
    cloud.prepare()
    try:
        cloud.start()
        api = ComputeClient(cloud.api_url)
        daemons.wait_for(
            lambda: (
                len(
                    [
                        h
                        for h in api.get('/os-hypervisors/detail')[
                            'hypervisors'
                        ]
                        if h.get('state') == 'up'
                    ]
                )
                == 2
            ),
            60,
            'two computes to report',
            list(cloud.daemons.values()),
        )
        cloud.manage('cell', 'discover-hosts')
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        ids = [
            api.create_server('vm-%d' % i, flavor['id'], image['id'])[
                'server'
            ]['id']
            for i in range(3)
        ]

        def spawning_on_host1():
            servers = {s['id']: s for s in api.servers()}
            return [
                i
                for i in ids
                if i in servers
                and servers[i].get('OS-EXT-SRV-ATTR:host') == 'host-1'
                and servers[i].get('OS-EXT-STS:task_state') == 'spawning'
            ]

        first = daemons.wait_for(
            spawning_on_host1,
            60,
            'a spawn under way on host-1',
            list(cloud.daemons.values()),
        )[0]
        host1 = cloud.daemons['host-1']
        host1.stop(timeout=60)
        assert host1.process.returncode == 0, host1.tail()

        def settled():
            servers = {s['id']: s for s in api.servers()}
            if all(
                i in servers and servers[i]['status'] in ('ACTIVE', 'ERROR')
                for i in ids
            ):
                return servers
            return None

        servers = daemons.wait_for(
            settled, 60, 'servers to settle', list(cloud.daemons.values())
        )
        assert {servers[i]['status'] for i in ids} == {'ACTIVE'}
        # The spawn under way finished on host-1; none was failed there.
        assert servers[first]['OS-EXT-SRV-ATTR:host'] == 'host-1'
        with open(host1.log_file, errors='replace') as f:
            log = f.read()
        assert 'nimbus-compute host-1 stopping: no new builds' in log
        assert 'nimbus-compute host-1 stopped' in log
        assert 'Traceback' not in log
        for i in ids:
            if servers[i]['OS-EXT-SRV-ATTR:host'] != 'host-1':
                assert servers[i]['OS-EXT-SRV-ATTR:host'] == 'host-2'
    finally:
        cloud.stop()
