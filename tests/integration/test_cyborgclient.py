"""python-cyborgclient, unchanged, against nimbus-accelerator-api.

The stock ``openstack accelerator ...`` commands (python-cyborgclient
through openstackclient) drive the accelerator service of an all-in-one
cloud with noauth2 and an endpoint override: the devices and deployables
the agents found, a device profile's whole life, an ARQ's, and the ARQ the
conductor made and bound for a server booted with a device profile.
"""

import json
import os
import subprocess
import sys
import time

import pytest
import requests
import yaml

from nimbus.allinone import cloud as cloud_mod
from nimbus.allinone.client import ComputeClient
from nimbus.testing import infra

pytestmark = pytest.mark.integration

infra.require_module('cyborgclient')


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    state = tmp_path_factory.mktemp('cyborg')
    # test_arq_bind_and_unbind binds an ARQ to an instance that does not
    # exist: the super conductor's recovery pass would delete it as an
    # orphan (rightly) if a pass fell inside the test, as it may under
    # load. No pass runs here.
    running = cloud_mod.Cloud(
        str(state / 'state'),
        hosts=2,
        accelerators=True,
        overrides={'conductor': {'recovery_interval': 0}},
    ).start()
    yield running, state
    running.stop()


def _cli(cloud, *args):
    running, state = cloud
    clouds = state / 'clouds.yaml'
    url = running.accelerator_url + '/v2'
    clouds.write_text(
        yaml.safe_dump(
            {
                'clouds': {
                    'nimbus-accel': {
                        'auth_type': 'admin_token',
                        'auth': {'token': 'admin:admin', 'endpoint': url},
                        'accelerator_endpoint_override': url,
                    }
                }
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(OS_CLIENT_CONFIG_FILE=str(clouds), PYTHONWARNINGS='ignore')
    binary = os.path.join(os.path.dirname(sys.executable), 'openstack')
    result = subprocess.run(
        [binary, '--os-cloud', 'nimbus-accel', 'accelerator'] + list(args),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def _json(cloud, *args):
    return json.loads(_cli(cloud, *args, '-f', 'json'))


def test_devices_and_deployables_the_agents_found(cloud):
    devices = _json(cloud, 'device', 'list')
    assert sorted((d['hostname'], d['type']) for d in devices) == [
        ('host-1', 'FPGA'),
        ('host-1', 'GPU'),
        ('host-2', 'FPGA'),
        ('host-2', 'GPU'),
    ]
    shown = _json(cloud, 'device', 'show', devices[0]['uuid'])
    assert shown['uuid'] == devices[0]['uuid']
    names = sorted(d['name'] for d in _json(cloud, 'deployable', 'list'))
    assert names == [
        'host-1_fake_fpga_0',
        'host-1_fake_gpu_0',
        'host-2_fake_fpga_0',
        'host-2_fake_gpu_0',
    ]


def test_device_profile_and_arq_life(cloud):
    group = json.dumps(
        [
            {
                'resources:FPGA': '1',
                'trait:CUSTOM_FPGA_PRODUCT_ID_09C4': 'required',
            }
        ]
    )
    created = _json(cloud, 'device', 'profile', 'create', 'fpga-cli', group)
    assert created['name'] == 'fpga-cli'
    listed = {p['name']: p for p in _json(cloud, 'device', 'profile', 'list')}
    assert listed['fpga-cli']['groups'] == json.loads(group)
    # By uuid: the client sends no microversion, and showing a profile by
    # name needs 2.2 (as Cyborg).
    assert (
        _json(cloud, 'device', 'profile', 'show', created['uuid'])['name']
        == 'fpga-cli'
    )
    arq = _json(cloud, 'arq', 'create', 'fpga-cli')
    assert arq['state'] == 'Initial'
    assert arq['device_profile_name'] == 'fpga-cli'
    assert arq['uuid'] in {a['uuid'] for a in _json(cloud, 'arq', 'list')}
    assert _json(cloud, 'arq', 'show', arq['uuid'])['uuid'] == arq['uuid']
    _cli(cloud, 'arq', 'delete', arq['uuid'])
    assert arq['uuid'] not in {a['uuid'] for a in _json(cloud, 'arq', 'list')}
    _cli(cloud, 'device', 'profile', 'delete', 'fpga-cli')
    assert 'fpga-cli' not in {
        p['name'] for p in _json(cloud, 'device', 'profile', 'list')
    }


def test_arq_of_a_server_booted_with_a_profile(cloud):
    running, _ = cloud
    group = json.dumps([{'resources:PGPU': '1'}])
    _cli(cloud, 'device', 'profile', 'create', 'gpu-cli', group)
    api = ComputeClient(running.api_url + '/v2.1')
    flavor = api.create_flavor(
        'gpu.cli', 1, 256, 1, extra_specs={'accel:device_profile': 'gpu-cli'}
    )
    image = api.create_image('cli-image')
    server = api.create_server('with-gpu', flavor['id'], image['id'])['server']
    deadline = time.monotonic() + 120
    while api.server(server['id'])['status'] not in ('ACTIVE', 'ERROR'):
        assert time.monotonic() < deadline, 'server never settled'
        time.sleep(0.5)
    shown = api.server(server['id'])
    assert shown['status'] == 'ACTIVE', shown.get('fault')
    arqs = [
        a
        for a in _json(cloud, 'arq', 'list')
        if a['instance_uuid'] == server['id']
    ]
    assert len(arqs) == 1 and arqs[0]['state'] == 'Bound', arqs
    assert arqs[0]['attach_handle_type'] == 'PCI'
    # The profile is in use: Nimbus refuses to delete it (409, not 500).
    env_result = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), 'openstack'),
            '--os-cloud',
            'nimbus-accel',
            'accelerator',
            'device',
            'profile',
            'delete',
            'gpu-cli',
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(
            {k: v for k, v in os.environ.items() if not k.startswith('OS_')},
            OS_CLIENT_CONFIG_FILE=str(cloud[1] / 'clouds.yaml'),
        ),
    )
    assert env_result.returncode != 0
    assert 'gpu-cli' in {
        p['name'] for p in _json(cloud, 'device', 'profile', 'list')
    }


def _commands(cloud, roles):
    """Run python-cyborgclient's own command objects in process, through
    openstacksdk, on a session with these noauth2 roles: the
    ``openstack`` CLI's ``admin_token`` carries no role (so no service
    role), and openstackclient's ``arq bind`` also looks the server up in
    the compute API."""
    from keystoneauth1 import session as ks_session
    from keystoneauth1 import token_endpoint
    import openstack

    running, _ = cloud
    url = running.accelerator_url + '/v2'
    session = ks_session.Session(
        auth=token_endpoint.Token(url, 'nimbus:service'),
        additional_headers={'X-Roles': roles},
    )
    conn = openstack.connection.Connection(
        session=session, accelerator_endpoint_override=url
    )

    class App:
        client_manager = type('Clients', (), {'accelerator': conn.accelerator})

    def run(command_class, *args):
        command = command_class(App(), None)
        parsed = command.get_parser('openstack accelerator').parse_args(
            list(args)
        )
        return command.take_action(parsed)

    return run


def _fails(cloud, *args):
    running, state = cloud
    binary = os.path.join(os.path.dirname(sys.executable), 'openstack')
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(
        OS_CLIENT_CONFIG_FILE=str(state / 'clouds.yaml'),
        PYTHONWARNINGS='ignore',
    )
    result = subprocess.run(
        [binary, '--os-cloud', 'nimbus-accel', 'accelerator'] + list(args),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode != 0, (args, result.stdout)
    return result.stdout + result.stderr


def test_arq_bind_and_unbind(cloud):
    """``arq bind`` and ``arq unbind`` send ``PATCH
    /v2/accelerator_requests/{uuid}`` with ``{uuid: [ops]}``: refused to
    an admin without the service role (as Cyborg), done for the service."""
    from cyborgclient.osc.v2 import accelerator_request as arq_commands
    from openstack import exceptions as sdk_exceptions

    group = json.dumps([{'resources:FPGA': '1'}])
    _cli(cloud, 'device', 'profile', 'create', 'fpga-bind', group)
    arq = _json(cloud, 'arq', 'create', 'fpga-bind')
    deployables = requests.get(
        cloud[0].accelerator_url + '/v2/deployables',
        headers={'X-Auth-Token': 'admin:admin'},
        timeout=30,
    ).json()['deployables']
    [rp_uuid] = [
        d['rp_uuid'] for d in deployables if d['name'] == 'host-1_fake_fpga_0'
    ]
    instance = '6a9d8e39-3d1f-4d5c-9a55-0000000000b1'
    bind = (arq['uuid'], 'host-1', instance, rp_uuid, 'admin')
    as_admin = _commands(cloud, 'admin')
    with pytest.raises(sdk_exceptions.HttpException) as refused:
        as_admin(arq_commands.BindAcceleratorRequest, *bind)
    assert refused.value.status_code == 403
    assert _json(cloud, 'arq', 'show', arq['uuid'])['state'] == 'Initial'

    as_nova = _commands(cloud, 'admin,service')
    as_nova(arq_commands.BindAcceleratorRequest, *bind)
    deadline = time.monotonic() + 60
    while _json(cloud, 'arq', 'show', arq['uuid'])['state'] != 'Bound':
        assert time.monotonic() < deadline, 'never bound'
        time.sleep(0.5)
    shown = _json(cloud, 'arq', 'show', arq['uuid'])
    assert (shown['hostname'], shown['instance_uuid']) == ('host-1', instance)

    # a bound ARQ is the service's: the stock CLI (an admin token) may
    # neither unbind nor delete it
    refused = _fails(cloud, 'arq', 'unbind', arq['uuid'])
    assert 'cyborg:arq:update' in refused or '403' in refused, refused
    refused = _fails(cloud, 'arq', 'delete', arq['uuid'])
    assert _json(cloud, 'arq', 'show', arq['uuid'])['state'] == 'Bound'
    as_nova(arq_commands.UnbindAcceleratorRequest, arq['uuid'])
    shown = _json(cloud, 'arq', 'show', arq['uuid'])
    assert shown['state'] == 'Unbound' and shown['instance_uuid'] is None
    _cli(cloud, 'arq', 'delete', arq['uuid'])
    _cli(cloud, 'device', 'profile', 'delete', 'fpga-bind')
