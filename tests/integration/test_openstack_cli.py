"""The stock ``openstack`` CLI (python-openstackclient and osc-placement)
drives an operator session against Nimbus.

With Keystone: a real Keystone (the ``keystone`` package, gunicorn, SQLite)
holds Nimbus's compute, image and placement endpoints; the daemons run as
processes on RabbitMQ and MariaDB behind keystonemiddleware's auth_token,
and reach placement with their own Keystone session (``[placement_client]
auth_section = keystone_authtoken``). The CLI logs in with a password from
a generated clouds.yaml. A second user, member of another project, sees
none of the first project's servers.

Without Keystone: the same commands against a noauth2 cloud, through a
clouds.yaml with ``auth_type: admin_token`` and endpoint overrides (and a
second entry for osc-placement, which ignores endpoint overrides).
"""

import atexit
import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from nimbus.testing import daemons
from nimbus.testing import infra
from harness import keystone as keystone_mod
from tests.integration import osc_shell

pytestmark = pytest.mark.integration

infra.require_module('openstackclient')
infra.require_module('osc_placement')


def _openstack_bin():
    path = os.path.join(os.path.dirname(sys.executable), 'openstack')
    if not os.path.exists(path):
        infra.unavailable(
            'the openstack CLI is not installed beside %s' % sys.executable
        )
    return path


# One process with the CLI imported serves every command of one cloud
# entry (tests/integration/osc_shell.py: the console script's own main,
# without its one to three CPU seconds of imports per command). One per
# entry, because the CLI's libraries keep what they learnt of a cloud in
# the process (its token among it): a second cloud's command in the same
# process was sent with the first cloud's token. For the same reason a
# command with a global option of its own (``--os-compute-api-version``)
# runs in a process of its own: in a shared one the microversion the
# SDK had settled on earlier won over the option.
_SHELLS = {}


def _shell(clouds_file, cloud):
    key = (clouds_file, cloud)
    if key not in _SHELLS:
        _SHELLS[key] = osc_shell.Shell()
    return _SHELLS[key]


@atexit.register
def _close_shells():
    for shell in _SHELLS.values():
        shell.close()


class CLI:
    """Runs ``openstack --os-cloud NAME ...`` with a generated clouds.yaml;
    every command must exit 0."""

    def __init__(self, clouds_file, cloud):
        self.clouds_file = clouds_file
        self.cloud = cloud
        self.binary = _openstack_bin()

    def run(self, *args, cloud=None, check=True):
        env = dict(
            os.environ,
            OS_CLIENT_CONFIG_FILE=self.clouds_file,
            PYTHONWARNINGS='ignore',
        )
        for name in list(env):
            if name.startswith('OS_') and name != 'OS_CLIENT_CONFIG_FILE':
                del env[name]
        cloud = cloud or self.cloud
        argv = ['--os-cloud', cloud] + list(args)
        if any(str(arg).startswith('--os-') for arg in args):
            result = subprocess.run(
                [self.binary] + argv,
                capture_output=True,
                text=True,
                timeout=300,
                env=env,
            )
        else:
            result = _shell(self.clouds_file, cloud).run(
                argv, env, timeout=300
            )
        if check:
            assert result.returncode == 0, 'openstack %s exited %s:\n%s%s' % (
                ' '.join(args),
                result.returncode,
                result.stdout,
                result.stderr,
            )
        return result

    def json(self, *args, cloud=None):
        out = self.run(*(args + ('-f', 'json')), cloud=cloud).stdout
        return json.loads(out) if out.strip() else None


def _wait(predicate, what, timeout=120, cloud=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if cloud is not None:
            cloud._check_alive()
        time.sleep(1)
    raise AssertionError('timed out waiting for %s' % what)


def _write_clouds(path, clouds):
    with open(path, 'w') as f:
        yaml.safe_dump({'clouds': clouds}, f)
    return str(path)


def _password_cloud(keystone, user, password, project):
    return {
        'auth': {
            'auth_url': keystone.url,
            'username': user,
            'password': password,
            'project_name': project,
            'user_domain_name': 'Default',
            'project_domain_name': 'Default',
        },
        'region_name': keystone_mod.REGION,
        'identity_api_version': 3,
    }


def operator_session(cli, hosts, placement_cli=None, zones=('--compute',)):
    """The operator's session; ``placement_cli`` runs the osc-placement
    commands (the same CLI when the catalog has placement)."""
    placement_cli = placement_cli or cli
    # Flavors.
    flavor = cli.json(
        'flavor',
        'create',
        '--vcpus',
        '1',
        '--ram',
        '512',
        '--disk',
        '1',
        'cli.tiny',
    )
    assert flavor['name'] == 'cli.tiny' and flavor['disk'] == 1
    cli.run('flavor', 'set', '--property', 'hw:cpu_policy=shared', 'cli.tiny')
    shown = cli.json('flavor', 'show', 'cli.tiny')
    assert shown['properties'] == {'hw:cpu_policy': 'shared'}
    assert 'cli.tiny' in [f['Name'] for f in cli.json('flavor', 'list')]
    # Aggregates and zones.
    agg = cli.json('aggregate', 'create', '--zone', 'az-cli', 'agg-cli')
    assert agg['availability_zone'] == 'az-cli'
    cli.run('aggregate', 'set', '--property', 'ssd=true', 'agg-cli')
    cli.run('aggregate', 'set', '--zone', 'az-cli', 'agg-cli')
    cli.run('aggregate', 'add', 'host', 'agg-cli', hosts[0])
    agg = cli.json('aggregate', 'show', 'agg-cli')
    assert agg['hosts'] == [hosts[0]]
    assert agg['properties'] == {'ssd': 'true'}
    assert agg['availability_zone'] == 'az-cli'
    names = {
        z['Zone Name']
        for z in cli.json('availability', 'zone', 'list', *zones)
    }
    assert 'az-cli' in names
    # Server groups.
    group = cli.json(
        'server', 'group', 'create', '--policy', 'anti-affinity', 'grp-cli'
    )
    assert group['policy'] == 'anti-affinity'
    assert 'grp-cli' in [
        g['Name'] for g in cli.json('server', 'group', 'list')
    ]
    assert cli.json('server', 'group', 'show', 'grp-cli')['id'] == group['id']
    # Images.
    images = {i['Name']: i for i in cli.json('image', 'list')}
    assert images['cirros-cli']['Status'] == 'active'
    image = cli.json('image', 'show', 'cirros-cli')
    assert image['status'] == 'active' and image['size'] == 4096
    # Servers: two in the anti-affinity group, one pinned to a zone.
    cli.run(
        'server',
        'create',
        '--flavor',
        'cli.tiny',
        '--image',
        'cirros-cli',
        '--hint',
        'group=%s' % group['id'],
        '--min',
        '2',
        '--max',
        '2',
        '--no-network',
        '--wait',
        'vm-cli',
    )
    created = cli.json(
        'server',
        'create',
        '--flavor',
        'cli.tiny',
        '--image',
        'cirros-cli',
        '--availability-zone',
        'az-cli',
        '--no-network',
        '--wait',
        'vm-az',
    )
    assert created['status'] == 'ACTIVE'
    assert created['OS-EXT-SRV-ATTR:host'] == hosts[0]
    listed = {s['Name']: s for s in cli.json('server', 'list', '--long')}
    assert set(listed) == {'vm-cli-1', 'vm-cli-2', 'vm-az'}
    assert all(s['Status'] == 'ACTIVE' for s in listed.values())
    group_hosts = {listed['vm-cli-1']['Host'], listed['vm-cli-2']['Host']}
    assert group_hosts == set(hosts[:2])  # anti-affinity: one per host
    for server in listed.values():  # each takes its host's zone
        assert server['Availability Zone'] == (
            'az-cli' if server['Host'] == hosts[0] else 'nova'
        ), server
    assert {
        s['Name'] for s in cli.json('server', 'list', '--all-projects')
    } == set(listed)
    shown = cli.json('server', 'show', 'vm-az')
    assert shown['status'] == 'ACTIVE'
    assert shown['flavor']['name'] == 'cli.tiny'
    # Placement holds the flavor's disk too (boot from image, local disk).
    allocations = placement_cli.json(
        'resource', 'provider', 'allocation', 'show', shown['id']
    )
    assert allocations[0]['resources'] == {
        'VCPU': 1,
        'MEMORY_MB': 512,
        'DISK_GB': 1,
    }
    providers = {
        p['name'] for p in placement_cli.json('resource', 'provider', 'list')
    }
    assert providers == set(hosts)
    candidates = placement_cli.json(
        'allocation',
        'candidate',
        'list',
        '--resource',
        'VCPU=1',
        '--resource',
        'MEMORY_MB=512',
    )
    assert len(candidates) == len(hosts)
    assert candidates[0]['inventory used/capacity'].startswith('VCPU=')
    # Hypervisors and services.
    hypervisors = {
        h['Hypervisor Hostname']: h for h in cli.json('hypervisor', 'list')
    }
    assert set(hypervisors) == set(hosts)
    assert (
        cli.json('hypervisor', 'show', hosts[0])['hypervisor_hostname']
        == hosts[0]
    )
    services = {s['Host']: s for s in cli.json('compute', 'service', 'list')}
    assert set(services) >= set(hosts)
    cli.run(
        'compute',
        'service',
        'set',
        '--disable',
        '--disable-reason',
        'maintenance',
        hosts[1],
        'nimbus-compute',
    )
    services = {s['Host']: s for s in cli.json('compute', 'service', 'list')}
    assert services[hosts[1]]['Status'] == 'disabled'
    cli.run(
        'compute', 'service', 'set', '--enable', hosts[1], 'nimbus-compute'
    )
    services = {s['Host']: s for s in cli.json('compute', 'service', 'list')}
    assert services[hosts[1]]['Status'] == 'enabled'
    return listed


def _limits(cli, cloud=None):
    rows = cli.json('limits', 'show', '--absolute', cloud=cloud)
    return {row['Name']: row['Value'] for row in rows}


def usage_session(cli):
    """``limits show`` and ``usage list`` after the operator session (3
    servers of cli.tiny in the admin project); no project lookups, so it
    runs without Keystone too."""
    # The rows are named by openstacksdk's attributes of the limits.
    limits = _limits(cli)
    assert limits['instances'] == 10
    assert limits['total_cores'] == 20
    assert (
        limits['instances_used'],
        limits['total_cores_used'],
        limits['total_ram_used'],
    ) == (3, 3, 1536)
    usages = cli.json(
        'usage', 'list', '--start', '2000-01-01', '--end', '2100-01-01'
    )
    assert len(usages) == 1
    # The -f json output carries the server usages themselves.
    servers = usages[0]['Servers']
    assert sorted(s['name'] for s in servers) == [
        'vm-az',
        'vm-cli-1',
        'vm-cli-2',
    ]
    assert all(s['flavor'] == 'cli.tiny' for s in servers)


def quota_session(cli, project, member_cloud):
    """Quotas of ``project`` (whose member logs in as ``member_cloud``):
    the administrator sets them, the member reads them and is held to
    them, and cannot change them."""
    quota = cli.json('quota', 'show', '--compute', project)
    quota = (
        {row['Resource']: row['Limit'] for row in quota}
        if isinstance(quota, list)
        else quota
    )
    assert quota['instances'] == 10 and quota['cores'] == 20
    assert quota['ram'] == 51200
    cli.run('quota', 'set', '--instances', '1', '--cores', '4', project)
    quota = cli.json('quota', 'show', '--compute', project)
    quota = (
        {row['Resource']: row['Limit'] for row in quota}
        if isinstance(quota, list)
        else quota
    )
    assert quota['instances'] == 1 and quota['cores'] == 4
    limits = _limits(cli, cloud=member_cloud)
    assert limits['instances'] == 1
    assert limits['instances_used'] == 0
    result = cli.run(
        'quota',
        'set',
        '--instances',
        '50',
        project,
        cloud=member_cloud,
        check=False,
    )
    assert result.returncode != 0
    result = cli.run(
        'server',
        'create',
        '--flavor',
        'cli.tiny',
        '--image',
        'cirros-cli',
        '--min',
        '2',
        '--max',
        '2',
        '--no-network',
        'over',
        cloud=member_cloud,
        check=False,
    )
    assert result.returncode != 0
    assert 'Quota exceeded for instances' in result.stderr, result.stderr
    assert cli.json('server', 'list', cloud=member_cloud) in (None, [])
    cli.run('quota', 'delete', '--compute', project)
    assert _limits(cli, cloud=member_cloud)['instances'] == 10


def cleanup_session(cli):
    cli.run('server', 'delete', '--wait', 'vm-cli-1', 'vm-cli-2', 'vm-az')
    assert cli.json('server', 'list') in (None, [])
    cli.run('server', 'group', 'delete', 'grp-cli')
    cli.run('flavor', 'delete', 'cli.tiny')
    assert 'cli.tiny' not in [f['Name'] for f in cli.json('flavor', 'list')]


def _image(cli, tmp_path):
    data = tmp_path / 'cirros.raw'
    data.write_bytes(b'\0' * 4096)
    image = cli.json(
        'image',
        'create',
        '--file',
        str(data),
        '--disk-format',
        'raw',
        '--container-format',
        'bare',
        '--public',
        'cirros-cli',
    )
    assert image['status'] == 'active' and image['size'] == 4096


@pytest.fixture
def keystone(tmp_path):
    reason = keystone_mod.missing()
    if reason:
        infra.unavailable('no Keystone: %s' % reason)
    server = keystone_mod.Keystone(str(tmp_path / 'keystone'))
    try:
        server.start()
        yield server
    finally:
        server.stop()


# Keystone and the stock CLI: test-devstack walks them in make test.
@pytest.mark.daemons_full
def test_operator_session_with_keystone(tmp_path, fresh, keystone):
    databases = {
        name: fresh.database('mysql')
        for name in ('api', 'cell0', 'cell1', 'placement')
    }
    common = {
        'api': {'auth_strategy': 'keystone'},
        'keystone_authtoken': keystone.authtoken_options(),
        'placement_client': {
            'auth_strategy': 'keystone',
            'auth_section': 'keystone_authtoken',
        },
        'compute': {'update_resources_interval': 2},
    }
    cloud = daemons.DaemonCloud(
        str(tmp_path / 'cloud'),
        fresh.vhost(),
        fresh.vhost(),
        databases,
        hosts=2,
        common_options=common,
        unlimited_quotas=False,
    )
    cloud.prepare()
    keystone.register_nimbus(cloud.api_url, cloud.placement_url)
    keystone.add_user('demo', 'secret-demo', 'demo')
    clouds = _write_clouds(
        tmp_path / 'clouds.yaml',
        {
            'nimbus': _password_cloud(
                keystone, 'admin', keystone_mod.ADMIN_PASSWORD, 'admin'
            ),
            'demo': _password_cloud(keystone, 'demo', 'secret-demo', 'demo'),
        },
    )
    cli = CLI(clouds, 'nimbus')
    try:
        cloud.start()
        # The computes reached placement with their Keystone session.
        _wait(
            lambda: len(cli.json('hypervisor', 'list') or []) == 2,
            'two hypervisors',
            cloud=cloud,
        )
        cloud.manage('cell', 'discover-hosts')
        _image(cli, tmp_path)
        listed = operator_session(cli, cloud.hosts, zones=())
        # Another project sees none of them, even asking for all.
        demo = cli.json('server', 'list', cloud='demo')
        assert demo in (None, [])
        result = cli.run('server', 'show', 'vm-az', cloud='demo', check=False)
        assert result.returncode != 0
        result = cli.run(
            'server', 'show', listed['vm-az']['ID'], cloud='demo', check=False
        )
        assert result.returncode != 0
        usage_session(cli)
        quota_session(cli, 'demo', 'demo')
        # Without a token the APIs answer 401.
        import requests

        assert (
            requests.get(
                cloud.api_url + '/v2.1/servers', timeout=10
            ).status_code
            == 401
        )
        assert (
            requests.get(
                cloud.placement_url + '/resource_providers', timeout=10
            ).status_code
            == 401
        )
        cleanup_session(cli)
    except BaseException:
        print(cloud.logs())
        print(keystone.tail())
        raise
    finally:
        cloud.stop()


def test_operator_session_without_keystone(tmp_path):
    from nimbus.allinone import cloud as cloud_mod
    from nimbus.messaging_internals import inproc

    cloud = cloud_mod.Cloud(
        str(tmp_path / 'state'),
        hosts=2,
        transport_url='inproc:///cli-api',
        cell_transport_url='inproc:///cli-cell1',
        # Nova's default quotas, which limits show.
        overrides={
            'quota': {
                'instances': 10,
                'cores': 20,
                'ram': 51200,
                'server_groups': 10,
                'server_group_members': 10,
            }
        },
    )
    try:
        cloud.start()
        api, placement = cloud.api_url, cloud.placement_url
        token = {
            'auth_type': 'admin_token',
            'auth': {'token': 'admin:admin', 'endpoint': api + '/v2.1'},
            'compute_endpoint_override': api + '/v2.1',
            'image_endpoint_override': api + '/image',
            'identity_api_version': 3,
            'identity_endpoint_override': api + '/identity/v3',
        }
        clouds = _write_clouds(
            tmp_path / 'clouds.yaml',
            {
                'nimbus': token,
                'nimbus-placement': {
                    'auth_type': 'admin_token',
                    'auth': {'token': 'admin:admin', 'endpoint': placement},
                },
                'other': dict(
                    token,
                    auth={'token': 'other:other', 'endpoint': api + '/v2.1'},
                ),
            },
        )
        cli = CLI(clouds, 'nimbus')
        _wait(
            lambda: len(cli.json('hypervisor', 'list') or []) == 2,
            'two hypervisors',
        )
        _image(cli, tmp_path)
        operator_session(
            cli,
            cloud.host_names(),
            placement_cli=CLI(clouds, 'nimbus-placement'),
        )
        assert cli.json('server', 'list', cloud='other') in (None, [])
        usage_session(cli)
        cleanup_session(cli)
    finally:
        cloud.stop()
        inproc.reset_buses()
