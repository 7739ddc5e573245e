"""nimbus-compute --simulated-hosts as a real daemon on RabbitMQ and
MariaDB: 50 hosts in one process all report, builds land on several of
them, and the process's thread count does not grow with the number of
hosts (10 hosts vs 50). No timing is asserted (see
benchmarks/compute_scale_bench.py for the figures)."""

import pytest

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemons
from nimbus.testing import infra

pytestmark = pytest.mark.integration


def _wait(predicate, timeout, what, cloud):
    return daemons.wait_for(
        predicate, timeout, what, list(cloud.daemons.values())
    )


def _threads(cloud, name):
    psutil = infra.require_module('psutil')
    return psutil.Process(cloud.daemons[name].process.pid).num_threads()


def test_fifty_simulated_hosts_in_one_process(tmp_path, fresh):
    databases = {
        name: fresh.database('mysql')
        for name in ('api', 'cell0', 'cell1', 'placement')
    }
    cloud = daemons.DaemonCloud(
        str(tmp_path / 'cloud'),
        fresh.vhost(),
        fresh.vhost(),
        databases,
        hosts=0,
        common_options={
            'DEFAULT': {'report_interval': 5, 'service_down_time': 30},
            'filter_scheduler': {'host_subset_size': 10},
            'simulated_hosts': {
                'workers': 8,
                'rpc_workers': 4,
                'start_concurrency': 8,
            },
        },
    )
    options = {
        'fake_driver': {
            'vcpus': 4,
            'vcpus_max': 16,
            'memory_mb': 4096,
            'memory_mb_max': 16384,
            'spread_seed': 3,
        }
    }
    cloud.prepare()
    try:
        cloud.start()
        cloud.wait_log('cell1-conductor', 'Serving topic conductor')
        cloud.start_simulated('small', 10, options)
        cloud.start_simulated('big', 50, options)
        api = ComputeClient(cloud.api_url)

        def up():
            hypervisors = api.get('/os-hypervisors/detail')['hypervisors']
            names = {
                h['hypervisor_hostname']
                for h in hypervisors
                if h.get('state') == 'up'
            }
            return names if len(names) >= 60 else None

        names = _wait(up, 240, '60 simulated hosts up', cloud)
        assert {'big-%04d' % i for i in range(1, 51)} <= names
        assert {'small-%04d' % i for i in range(1, 11)} <= names
        cloud.manage('cell', 'discover-hosts')
        # Each host has its own provider, sized by the seeded spread.
        hypervisors = api.get('/os-hypervisors/detail')['hypervisors']
        assert len({h['vcpus'] for h in hypervisors}) > 1

        # Both processes settled (every host started and reporting): the
        # thread count does not follow the number of hosts.
        small, big = _threads(cloud, 'small'), _threads(cloud, 'big')
        assert big <= small + 10, (small, big)
        assert big < 50, big

        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        ids = [
            api.create_server('vm-%02d' % i, flavor['id'], image['id'])[
                'server'
            ]['id']
            for i in range(20)
        ]

        def settled():
            servers = {s['id']: s for s in api.servers()}
            if set(ids) <= set(servers) and not any(
                servers[i]['status'] == 'BUILD' for i in ids
            ):
                return servers
            return None

        servers = _wait(settled, 240, 'every server to leave BUILD', cloud)
        assert all(servers[i]['status'] == 'ACTIVE' for i in ids), cloud.logs()
        hosts = {servers[i]['OS-EXT-SRV-ATTR:host'] for i in ids}
        assert len(hosts) >= 3, hosts
        assert hosts <= names
        # Still flat after the builds.
        assert _threads(cloud, 'big') <= small + 12
    finally:
        cloud.stop()
