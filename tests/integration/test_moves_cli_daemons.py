"""The stock ``openstack`` CLI moves a server of the daemons (each service
its own process, on RabbitMQ and MariaDB, noauth2) as it would one of Nova
(issue 24, section 4): resize with ``--wait``, confirm and revert, cold
migrate with ``--wait``, rebuild, shelve and unshelve, evacuate from a
host that is down, then lists the migrations and the server's events."""

import pytest

from nimbus.testing import daemons
from nimbus.testing import infra
from tests.integration.test_openstack_cli import CLI
from tests.integration.test_openstack_cli import _image
from tests.integration.test_openstack_cli import _wait
from tests.integration.test_openstack_cli import _write_clouds

pytestmark = [pytest.mark.integration, pytest.mark.moves_cli]

infra.require_module('openstackclient')

NAME = 'vm-move'


def _server(cli):
    return cli.json('server', 'show', NAME)


def _where(cli):
    server = _server(cli)
    return (
        server['status'],
        server['OS-EXT-STS:task_state'],
        server['OS-EXT-SRV-ATTR:host'],
        server['flavor'],
    )


def _settled(cli, status, host):
    def done():
        now = _where(cli)
        return now[:3] == (status, None, host) and now

    return done


def test_moves_with_the_cli_against_the_daemons(tmp_path, fresh):
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
        common_options={'compute': {'update_resources_interval': 2}},
    )
    cloud.prepare()
    api = cloud.api_url
    clouds = _write_clouds(
        tmp_path / 'clouds.yaml',
        {
            'nimbus': {
                'auth_type': 'admin_token',
                'auth': {'token': 'admin:admin', 'endpoint': api + '/v2.1'},
                'compute_endpoint_override': api + '/v2.1',
                'image_endpoint_override': api + '/image',
                'identity_api_version': 3,
                'identity_endpoint_override': api + '/identity/v3',
            }
        },
    )
    cli = CLI(clouds, 'nimbus')
    try:
        cloud.start()
        _wait(
            lambda: len(cli.json('hypervisor', 'list') or []) == 2,
            'two hypervisors',
            cloud=cloud,
        )
        cloud.manage('cell', 'discover-hosts')
        _image(cli, tmp_path)
        for name, vcpus, ram in (('cli.tiny', 1, 512), ('cli.big', 2, 1024)):
            cli.run(
                'flavor',
                'create',
                '--vcpus',
                str(vcpus),
                '--ram',
                str(ram),
                '--disk',
                '1',
                name,
            )
        created = cli.json(
            'server',
            'create',
            '--flavor',
            'cli.tiny',
            '--image',
            'cirros-cli',
            '--no-network',
            '--wait',
            NAME,
        )
        first = created['OS-EXT-SRV-ATTR:host']
        (second,) = [h for h in cloud.hosts if h != first]

        # Resize: --wait returns at VERIFY_RESIZE on the other host (no
        # resize to the same host by default); confirm keeps it there.
        cli.run('server', 'resize', '--flavor', 'cli.big', '--wait', NAME)
        status, task, host, flavor = _where(cli)
        assert (status, task, host) == ('VERIFY_RESIZE', None, second)
        assert flavor['name'] == 'cli.big' and flavor['vcpus'] == 2
        cli.run('server', 'resize', 'confirm', NAME)
        _, _, _, flavor = _wait(
            _settled(cli, 'ACTIVE', second), 'confirmed', cloud=cloud
        )
        assert flavor['name'] == 'cli.big'

        # Resize back down, then revert: the server returns to its source
        # with the flavor it had there.
        cli.run('server', 'resize', '--flavor', 'cli.tiny', '--wait', NAME)
        assert _where(cli)[:3] == ('VERIFY_RESIZE', None, first)
        cli.run('server', 'resize', 'revert', NAME)
        _, _, _, flavor = _wait(
            _settled(cli, 'ACTIVE', second), 'reverted', cloud=cloud
        )
        assert flavor['name'] == 'cli.big'

        # Cold migrate: --wait returns at VERIFY_RESIZE on the other host,
        # the flavor unchanged; confirm.
        cli.run('server', 'migrate', '--wait', NAME)
        status, task, host, flavor = _where(cli)
        assert (status, task, host) == ('VERIFY_RESIZE', None, first)
        assert flavor['name'] == 'cli.big'
        cli.run('server', 'resize', 'confirm', NAME)
        _wait(_settled(cli, 'ACTIVE', first), 'migrated', cloud=cloud)

        # Rebuild with another image, on its host.
        data = tmp_path / 'other.raw'
        data.write_bytes(b'\1' * 4096)
        other = cli.json(
            'image',
            'create',
            '--file',
            str(data),
            '--disk-format',
            'raw',
            '--container-format',
            'bare',
            'cirros-other',
        )
        cli.run('server', 'rebuild', '--image', 'cirros-other', '--wait', NAME)
        _wait(_settled(cli, 'ACTIVE', first), 'rebuilt', cloud=cloud)
        # The CLI shows the image as 'name (id)'.
        assert other['id'] in _server(cli)['image']

        # Shelve (offloaded at once: shelved_offload_time 0) and unshelve.
        cli.run('server', 'shelve', '--wait', NAME)
        status, task, host, _ = _where(cli)
        assert (status, task, host) == ('SHELVED_OFFLOADED', None, None)
        cli.run('server', 'unshelve', '--wait', NAME)
        status, task, host, _ = _where(cli)
        assert (status, task) == ('ACTIVE', None) and host in cloud.hosts

        # Evacuate: refused while the compute is up, done once it is
        # stopped and forced down; the server rebuilds on the other host.
        refused = cli.run(
            '--os-compute-api-version',
            '2.68',
            'server',
            'evacuate',
            NAME,
            check=False,
        )
        assert refused.returncode != 0 and 'still in use' in refused.stderr
        cloud.daemons[host].stop()
        cli.run(
            '--os-compute-api-version',
            '2.11',
            'compute',
            'service',
            'set',
            '--down',
            host,
            'nova-compute',
        )
        (survivor,) = [h for h in cloud.hosts if h != host]
        cli.run('--os-compute-api-version', '2.68', 'server', 'evacuate', NAME)
        _wait(_settled(cli, 'ACTIVE', survivor), 'evacuated', cloud=None)

        # The migration records, newest first, as os-migrations lists them.
        migrations = cli.json(
            '--os-compute-api-version',
            '2.80',
            'server',
            'migration',
            'list',
            '--server',
            NAME,
        )
        kinds = [(m['Type'], m['Status']) for m in migrations]
        assert kinds == [
            ('evacuation', 'done'),
            ('migration', 'confirmed'),
            ('resize', 'reverted'),
            ('resize', 'confirmed'),
        ]
        assert {m['Server UUID'] for m in migrations} == {created['id']}
        # Show: Nova's GET /servers/{id}/migrations/{id} serves only a
        # live migration in progress; a finished one is not found (this
        # client also swaps the server and migration ids in that URL,
        # which Nova answers with the same 404).
        shown = cli.run(
            '--os-compute-api-version',
            '2.80',
            'server',
            'migration',
            'show',
            NAME,
            str(migrations[0]['Id']),
            check=False,
        )
        assert shown.returncode != 0
        assert 'could not be found' in shown.stderr

        actions = [
            a['Action'] for a in cli.json('server', 'event', 'list', NAME)
        ]
        assert actions == [
            'evacuate',
            'unshelve',
            'shelve',
            'rebuild',
            'confirmResize',
            'migrate',
            'revertResize',
            'resize',
            'confirmResize',
            'resize',
            'create',
        ]
    except BaseException:
        print(cloud.logs())
        raise
    finally:
        cloud.stop()
