"""The devstack plugin's phases, run for real.

``tests/devstack/harness.sh`` stands in for the devstack functions the
plugin calls (same names and effects, reached without devstack); the
plugin itself runs unchanged: ``stack install``, ``post-config``,
``extra`` and ``test-config`` against the local MariaDB and RabbitMQ and a
real Keystone, with two cells and the accelerator service (its API and an
agent beside each cell's compute). The stock ``openstack`` CLI then logs
in with a password from the catalog the plugin registered and boots a
server in each cell, one of them with a device profile made by
python-cyborgclient through the catalog's accelerator endpoint;
``unstack`` stops every daemon and ``clean`` drops the databases and
vhosts it made.
"""

import configparser
import json
import os
import subprocess
import sys
import uuid

import pytest

from nimbus.testing import daemons
from nimbus.testing import infra
from harness import keystone as keystone_mod

pytestmark = [pytest.mark.integration, pytest.mark.devstack]

ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
HARNESS = os.path.join(ROOT, 'tests', 'devstack', 'harness.sh')
BIN = os.path.dirname(sys.executable)
CELLS = ('cell1', 'cell2')


def _mysql(*args):
    return subprocess.run(
        ['mysql', '-uroot', '-h127.0.0.1', '-N', '-e'] + list(args),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout


def _vhosts():
    return subprocess.run(
        ['rabbitmqctl', 'list_vhosts', '-q'],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()


@pytest.fixture
def keystone(tmp_path):
    reason = keystone_mod.missing()
    if reason:
        infra.unavailable(reason)
    server = keystone_mod.Keystone(str(tmp_path / 'keystone'))
    server.start()
    yield server
    server.stop()


def _phases(env, *phases):
    """Source the harness and the plugin's settings, then the plugin once
    per phase, in one shell as stack.sh does."""
    script = ['source %s' % HARNESS, 'source %s/devstack/settings' % ROOT]
    for phase in phases:
        script.append('source %s/devstack/plugin.sh %s' % (ROOT, phase))
    result = subprocess.run(
        ['bash', '-c', '\n'.join(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, '%s\n%s\n%s' % (
        ' / '.join(phases),
        result.stdout[-3000:],
        result.stderr[-3000:],
    )
    return result.stdout


def _running(harness_dir):
    pids = {}
    for name in os.listdir(harness_dir):
        if name.endswith('.pid'):
            with open(os.path.join(harness_dir, name)) as f:
                pids[name[:-4]] = int(f.read())
    return pids


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_plugin_phases_two_cells_with_keystone(tmp_path, keystone):
    for tool in ('mysql', 'rabbitmqctl'):
        if subprocess.run(['which', tool], capture_output=True).returncode:
            infra.unavailable('%s is not installed' % tool)
    if not infra.port_open(*infra.rabbit_address()):
        infra.unavailable('RabbitMQ is not listening')
    if not infra.port_open('127.0.0.1', 3306):
        infra.unavailable('MariaDB is not listening on 127.0.0.1:3306')
    harness_dir = tmp_path / 'devstack'
    harness_dir.mkdir()
    prefix = 'nimbus_ds_%s' % uuid.uuid4().hex[:8]
    api_port, placement_port = daemons.free_port(), daemons.free_port()
    accelerator_port = daemons.free_port()
    env = dict(
        os.environ,
        PYTHONWARNINGS='ignore',
        HARNESS_DIR=str(harness_dir),
        HARNESS_BIN_DIR=BIN,
        ENABLED_SERVICES='mysql,rabbit,keystone,tempest,n-api,n-cpu',
        KEYSTONE_SERVICE_URI=keystone.url,
        SERVICE_PASSWORD=keystone_mod.SERVICE_PASSWORD,
        OS_AUTH_URL=keystone.url,
        OS_USERNAME='admin',
        OS_PASSWORD=keystone_mod.ADMIN_PASSWORD,
        OS_PROJECT_NAME='admin',
        OS_USER_DOMAIN_NAME='Default',
        OS_PROJECT_DOMAIN_NAME='Default',
        OS_IDENTITY_API_VERSION='3',
        OS_REGION_NAME=keystone_mod.REGION,
        NIMBUS_DIR=ROOT,
        NIMBUS_CELLS=' '.join(CELLS),
        NIMBUS_DB_PREFIX=prefix,
        NIMBUS_CONF_DIR=str(tmp_path / 'etc'),
        NIMBUS_API_PORT=str(api_port),
        NIMBUS_PLACEMENT_PORT=str(placement_port),
        NIMBUS_ACCELERATOR_PORT=str(accelerator_port),
    )
    running = {}
    try:
        out = _phases(
            env,
            'stack install',
            'stack post-config',
            'stack extra',
            'stack test-config',
        )
        assert 'Nimbus: 2 compute hosts mapped to their cells' in out, out

        # The plugin's own files: one conductor and one compute per cell;
        # the computes hold no database credentials.
        etc = tmp_path / 'etc'
        assert sorted(os.listdir(etc)) == sorted(
            [
                'nimbus.conf',
                'placement.conf',
                'cell1.conf',
                'cell2.conf',
                'compute-cell1.conf',
                'compute-cell2.conf',
                'accelerator.conf',
                'accelerator-agent-cell1.conf',
                'accelerator-agent-cell2.conf',
            ]
        )
        for cell in CELLS:
            compute = configparser.RawConfigParser()
            compute.read(etc / ('compute-%s.conf' % cell))
            assert not compute.has_section('database')
            assert compute.get('DEFAULT', 'transport_url').endswith(
                '/%s_%s' % (prefix, cell)
            )
            assert compute.get('accelerator_client', 'endpoint') == (
                'http://127.0.0.1:%d/v2' % accelerator_port
            )
            # The agent: the compute's host name, the API bus, no database.
            agent = configparser.RawConfigParser()
            agent.read(etc / ('accelerator-agent-%s.conf' % cell))
            assert agent.get('DEFAULT', 'host') == compute.get(
                'DEFAULT', 'host'
            )
            assert agent.get('DEFAULT', 'transport_url').endswith(
                '/%s' % prefix
            )
            assert not agent.has_section('accelerator_database')
        accel = configparser.RawConfigParser()
        accel.read(etc / 'accelerator.conf')
        assert accel.get('accelerator_database', 'connection').startswith(
            'mysql+pymysql://'
        )
        assert accel.get('compute_client', 'endpoint') == (
            'http://127.0.0.1:%d/v2.1' % api_port
        )
        assert '%s_accelerator' % prefix in _mysql('SHOW DATABASES')
        # The decision stream's bound (docs/insight.md) on the API bus.
        policies = subprocess.run(
            ['rabbitmqctl', 'list_policies', '-q', '-p', prefix],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        assert 'nimbus-notifications' in policies
        assert '"max-length":1000' in policies
        running = _running(harness_dir)
        assert set(running) == {
            'nimbus-placement',
            'nimbus-api',
            'nimbus-scheduler',
            'nimbus-conductor',
            'nimbus-conductor-cell1',
            'nimbus-conductor-cell2',
            'nimbus-compute-cell1',
            'nimbus-compute-cell2',
            'nimbus-accelerator-api',
            'nimbus-accelerator-agent-cell1',
            'nimbus-accelerator-agent-cell2',
        }
        assert all(_alive(pid) for pid in running.values())
        tempest = configparser.RawConfigParser()
        tempest.read(harness_dir / 'tempest.conf')
        assert tempest.get('compute', 'min_compute_nodes') == '2'
        assert tempest.get('service_available', 'neutron') == 'False'

        # The stock CLI finds compute, image and placement in the catalog
        # the plugin registered, and boots one server in each cell.
        def cli(*args):
            result = subprocess.run(
                [os.path.join(BIN, 'openstack')] + list(args) + ['-f', 'json'],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert result.returncode == 0, (args, result.stderr[-2000:])
            return json.loads(result.stdout) if result.stdout.strip() else None

        kinds = {s['Type'] for s in cli('catalog', 'list')}
        assert {
            'compute',
            'image',
            'placement',
            'identity',
            'accelerator',
        } <= kinds
        cli(
            'flavor',
            'create',
            '--vcpus',
            '1',
            '--ram',
            '256',
            '--disk',
            '1',
            'ds.tiny',
        )
        image = tmp_path / 'image.img'
        image.write_bytes(b'\0' * 1024)
        cli(
            'image',
            'create',
            '--file',
            str(image),
            '--disk-format',
            'raw',
            '--container-format',
            'bare',
            'ds-image',
        )
        # python-cyborgclient through the catalog: the agents' devices, and
        # a device profile for the server of cell2.
        devices = cli('accelerator', 'device', 'list')
        assert sorted(d['type'] for d in devices) == [
            'FPGA',
            'FPGA',
            'GPU',
            'GPU',
        ]
        cli(
            'accelerator',
            'device',
            'profile',
            'create',
            'ds-fpga',
            json.dumps([{'resources:FPGA': '1'}]),
        )
        cli(
            'flavor',
            'create',
            '--vcpus',
            '1',
            '--ram',
            '256',
            '--disk',
            '1',
            '--property',
            'accel:device_profile=ds-fpga',
            'ds.fpga',
        )
        hosts = set()
        for cell in CELLS:
            host = '%s-%s' % (os.uname().nodename.split('.')[0], cell)
            server = cli(
                'server',
                'create',
                '--flavor',
                'ds.fpga' if cell == 'cell2' else 'ds.tiny',
                '--image',
                'ds-image',
                '--no-network',
                '--availability-zone',
                'nova:' + host,
                '--wait',
                'ds-' + cell,
            )
            assert server['status'] == 'ACTIVE', server
            hosts.add(server['OS-EXT-SRV-ATTR:host'])
        assert len(hosts) == 2
        arqs = [
            a
            for a in cli('accelerator', 'arq', 'list', '--long')
            if a['instance_uuid'] == server['id']
        ]
        assert [a['state'] for a in arqs] == ['Bound'], arqs
        assert arqs[0]['hostname'] == server['OS-EXT-SRV-ATTR:host']
        # Two compute nodes, each with an FPGA and a GPU child.
        providers = cli('resource', 'provider', 'list')
        assert len(providers) == 6
    finally:
        _phases(env, 'unstack', 'clean')
    assert not [pid for pid in running.values() if _alive(pid)]
    assert _running(harness_dir) == {}
    assert not os.path.exists(tmp_path / 'etc')
    assert prefix not in _mysql('SHOW DATABASES')
    assert not [v for v in _vhosts() if v.startswith(prefix)]
