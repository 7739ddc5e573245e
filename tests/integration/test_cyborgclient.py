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
import yaml

from nimbus.allinone import cloud as cloud_mod
from nimbus.allinone.client import ComputeClient
from nimbus.testing import infra

pytestmark = pytest.mark.integration

infra.require_module('cyborgclient')


@pytest.fixture(scope='module')
def cloud(tmp_path_factory):
    state = tmp_path_factory.mktemp('cyborg')
    running = cloud_mod.Cloud(
        str(state / 'state'), hosts=2, accelerators=True
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
