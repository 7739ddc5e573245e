"""The stock ``openstack`` CLI live migrates a server of a noauth2
all-in-one cloud (issue 24, section 2): ``server migrate --live-migration
[--host] --wait``, ``server migration list/show``, ``server migration
force complete`` and ``server migration abort``, with placement holding
one allocation set at the end of each."""

import pytest

from nimbus.testing import infra
from tests.integration.test_openstack_cli import CLI
from tests.integration.test_openstack_cli import _image
from tests.integration.test_openstack_cli import _wait
from tests.integration.test_openstack_cli import _write_clouds

pytestmark = [pytest.mark.integration, pytest.mark.moves_cli]

infra.require_module('openstackclient')

V = ('--os-compute-api-version', '2.80')


def _server(cli, name):
    return cli.json(*V, 'server', 'show', name)


def _migrations(cli, name):
    return cli.json(*V, 'server', 'migration', 'list', '--server', name)


def _running(cli, name):
    """The live migration of ``name`` once it runs (its row of
    ``server migration list``)."""

    def running():
        found = [
            m
            for m in _migrations(cli, name)
            if m['Type'] == 'live-migration' and m['Status'] == 'running'
        ]
        return found and found[0]

    return _wait(running, 'a running live migration')


def _settled(cli, name, host, status):
    """The server ACTIVE on ``host`` and its newest migration ``status``."""

    def done():
        server = _server(cli, name)
        newest = _migrations(cli, name)[0]
        return (
            server['status'],
            server['OS-EXT-STS:task_state'],
            server['OS-EXT-SRV-ATTR:host'],
            newest['Status'],
        ) == ('ACTIVE', None, host, status) and newest

    return _wait(done, '%s on %s, migration %s' % (name, host, status))


def _allocation_hosts(cli, uuid):
    allocations = cli.json('resource', 'provider', 'allocation', 'show', uuid)
    names = {
        p['uuid']: p['name'] for p in cli.json('resource', 'provider', 'list')
    }
    return sorted(names[a['resource_provider']] for a in allocations)


def test_live_migrate_with_the_cli(tmp_path):
    from nimbus.allinone import cloud as cloud_mod
    from nimbus.messaging_internals import inproc

    cloud = cloud_mod.Cloud(
        str(tmp_path / 'state'),
        hosts=2,
        transport_url='inproc:///cli-live-api',
        cell_transport_url='inproc:///cli-live-cell1',
        overrides={'fake_driver': {'live_migration_seconds': 0.2}},
    )
    fast, slow = cloud.host_names()
    # The copy away from ``slow`` takes long enough to be seen running.
    cloud.host_overrides = {
        slow: {'fake_driver': {'live_migration_seconds': 600}}
    }
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
                },
                'nimbus-placement': {
                    'auth_type': 'admin_token',
                    'auth': {
                        'token': 'admin:admin',
                        'endpoint': cloud.placement_url,
                    },
                },
            },
        )
        cli = CLI(clouds, 'nimbus')
        placement_cli = CLI(clouds, 'nimbus-placement')
        _wait(
            lambda: len(cli.json('hypervisor', 'list') or []) == 2,
            'two hypervisors',
        )
        _image(cli, tmp_path)
        cli.run('flavor', 'create', '--ram', '512', '--disk', '1', 'cli.tiny')
        created = cli.json(
            *V,
            'server',
            'create',
            '--flavor',
            'cli.tiny',
            '--image',
            'cirros-cli',
            '--no-network',
            '--availability-zone',
            'nova:%s' % fast,
            '--wait',
            'vm-live',
        )
        uuid = created['id']
        assert created['OS-EXT-SRV-ATTR:host'] == fast
        # The scheduler chooses (the only other host), --wait.
        cli.run(
            *V, 'server', 'migrate', '--live-migration', '--wait', 'vm-live'
        )
        _settled(cli, 'vm-live', slow, 'completed')
        assert _allocation_hosts(placement_cli, uuid) == [slow]
        # Away from the slow host: seen running, shown, forced to complete.
        cli.run(*V, 'server', 'migrate', '--live-migration', 'vm-live')
        listed = _running(cli, 'vm-live')
        migration_id = listed['Id']
        # By uuid (2.59): python-openstackclient then finds it in GET
        # /servers/{id}/migrations; by id it swaps the server and the
        # migration in its call to openstacksdk (the client's own bug).
        shown = cli.json(
            *V, 'server', 'migration', 'show', 'vm-live', listed['UUID']
        )
        assert shown['Server UUID'] == uuid
        assert shown['Status'] == 'running'
        assert shown['Memory Total Bytes'] == 512 * 1024 * 1024
        cli.run(
            *V,
            'server',
            'migration',
            'force',
            'complete',
            'vm-live',
            str(migration_id),
        )
        _settled(cli, 'vm-live', fast, 'completed')
        assert _allocation_hosts(placement_cli, uuid) == [fast]
        # To a chosen host, --wait.
        cli.run(
            *V,
            'server',
            'migrate',
            '--live-migration',
            '--host',
            slow,
            '--wait',
            'vm-live',
        )
        _settled(cli, 'vm-live', slow, 'completed')
        # Aborted mid-way: it stays on the slow host.
        cli.run(*V, 'server', 'migrate', '--live-migration', 'vm-live')
        migration_id = _running(cli, 'vm-live')['Id']
        cli.run(
            *V, 'server', 'migration', 'abort', 'vm-live', str(migration_id)
        )
        _settled(cli, 'vm-live', slow, 'cancelled')
        assert _allocation_hosts(placement_cli, uuid) == [slow]
        actions = [
            a['Action'] for a in cli.json('server', 'event', 'list', 'vm-live')
        ]
        assert actions[:2] == ['live_migration_cancel', 'live-migration']
    finally:
        cloud.stop()
        inproc.reset_buses()
