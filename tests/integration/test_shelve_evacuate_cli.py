"""The stock ``openstack`` CLI shelves, unshelves (to a host, 2.91) and
evacuates a server of a noauth2 all-in-one cloud (issue 24, section 2)."""

import pytest

from nimbus.testing import infra
from tests.integration.test_openstack_cli import CLI
from tests.integration.test_openstack_cli import _image
from tests.integration.test_openstack_cli import _wait
from tests.integration.test_openstack_cli import _write_clouds

pytestmark = pytest.mark.integration

infra.require_module('openstackclient')


def _status(cli, name):
    server = cli.json('server', 'show', name)
    return server['status'], server['OS-EXT-STS:task_state'], server


def test_shelve_unshelve_evacuate_with_the_cli(tmp_path):
    from nimbus.allinone import cloud as cloud_mod
    from nimbus.messaging_internals import inproc

    cloud = cloud_mod.Cloud(
        str(tmp_path / 'state'),
        hosts=2,
        transport_url='inproc:///cli-shelve-api',
        cell_transport_url='inproc:///cli-shelve-cell1',
    )
    try:
        cloud.start()
        api = cloud.api_url
        clouds = _write_clouds(
            tmp_path / 'clouds.yaml',
            {
                'nimbus': {
                    'auth_type': 'admin_token',
                    'auth': {
                        'token': 'admin:admin',
                        'endpoint': api + '/v2.1',
                    },
                    'compute_endpoint_override': api + '/v2.1',
                    'image_endpoint_override': api + '/image',
                    'identity_api_version': 3,
                    'identity_endpoint_override': api + '/identity/v3',
                }
            },
        )
        cli = CLI(clouds, 'nimbus')
        _wait(
            lambda: len(cli.json('hypervisor', 'list') or []) == 2,
            'two hypervisors',
        )
        _image(cli, tmp_path)
        cli.run('flavor', 'create', '--ram', '512', '--disk', '1', 'cli.tiny')
        created = cli.json(
            'server',
            'create',
            '--flavor',
            'cli.tiny',
            '--image',
            'cirros-cli',
            '--no-network',
            '--wait',
            'vm-shelve',
        )
        source = created['OS-EXT-SRV-ATTR:host']
        (target,) = [h for h in cloud.host_names() if h != source]
        cli.run('server', 'shelve', '--wait', 'vm-shelve')
        status, task, server = _status(cli, 'vm-shelve')
        assert (status, task) == ('SHELVED_OFFLOADED', None)
        assert server['OS-EXT-SRV-ATTR:host'] is None
        cli.run(
            '--os-compute-api-version',
            '2.91',
            'server',
            'unshelve',
            '--host',
            target,
            '--wait',
            'vm-shelve',
        )
        status, task, server = _status(cli, 'vm-shelve')
        assert (status, task) == ('ACTIVE', None)
        assert server['OS-EXT-SRV-ATTR:host'] == target
        # Evacuate: refused while its compute is up, done once it is down.
        refused = cli.run(
            '--os-compute-api-version',
            '2.68',
            'server',
            'evacuate',
            'vm-shelve',
            check=False,
        )
        assert refused.returncode != 0 and 'still in use' in refused.stderr
        cloud.stop_compute(target)
        cli.run(
            '--os-compute-api-version',
            '2.11',
            'compute',
            'service',
            'set',
            '--down',
            target,
            'nova-compute',
        )
        # Not --wait: the client's wait compares the lowered status with
        # 'ACTIVE' and never ends (python-openstackclient's own bug).
        cli.run(
            '--os-compute-api-version',
            '2.68',
            'server',
            'evacuate',
            'vm-shelve',
        )

        def evacuated():
            status, task, server = _status(cli, 'vm-shelve')
            on = server['OS-EXT-SRV-ATTR:host']
            return (status, task, on) == ('ACTIVE', None, source) and server

        server = _wait(evacuated, 'evacuated')
        assert server['OS-EXT-SRV-ATTR:host'] == source
        actions = [
            a['Action']
            for a in cli.json('server', 'event', 'list', 'vm-shelve')
        ]
        assert actions[:3] == ['evacuate', 'unshelve', 'shelve']
    finally:
        cloud.stop()
        inproc.reset_buses()
