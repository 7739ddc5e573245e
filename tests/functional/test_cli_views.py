"""The ``nimbus`` CLI, run as a subprocess against an in-process cloud whose
host names are long: it takes the /v2.1 URL all-in-one prints, its tables
fit 80 columns without cutting a host name, and every command has
``--format json``."""

import json
import io
import os
import subprocess
import sys

from rich.console import Console

import pytest

from nimbus.allinone import client as client_mod
from nimbus.allinone.cloud import wait_for
from nimbus.cmd import cli_views

PREFIX = 'compute-node-with-a-rather-long-name-rack17-'


def _nimbus(*args):
    env = dict(os.environ, PYTHONWARNINGS='ignore', COLUMNS='80')
    env.pop('NIMBUS_API_URL', None)
    return subprocess.run(
        [sys.executable, '-m', 'nimbus.cmd.cli'] + list(args),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture
def cloud(make_cloud):
    cloud = make_cloud(hosts=2, host_prefix=PREFIX)
    api = client_mod.ComputeClient(cloud.api_url)
    flavor = api.create_flavor('m1.small', 2, 2048, 20)
    image = api.create_image('cirros')
    server = api.create_server('vm-1', flavor['id'], image['id'])
    uuid = server['server']['id']
    wait_for(
        lambda: api.server(uuid)['status'] == 'ACTIVE' or None,
        timeout=60,
        what='vm-1 ACTIVE',
    )
    cloud.server_id = uuid
    cloud.server_host = api.server(uuid)['OS-EXT-SRV-ATTR:host']
    return cloud


def _args(cloud, command, *extra):
    return (
        command,
        '--url',
        cloud.api_url + '/v2.1',
        '--placement-url',
        cloud.placement_url,
    ) + extra


def _table(cloud, command, *extra):
    result = _nimbus(*_args(cloud, command, *extra))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, result.stdout
    return result.stdout


def _json(cloud, command, *extra):
    result = _nimbus(*_args(cloud, command, '--format', 'json', *extra))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_hosts(cloud):
    hosts = {h['host']: h for h in _json(cloud, 'hosts')}
    assert set(hosts) == set(cloud.host_names())
    used = hosts[cloud.server_host]['resources']
    assert list(used)[:3] == ['VCPU', 'MEMORY_MB', 'DISK_GB']
    assert used['VCPU']['used'] == 2 and used['MEMORY_MB']['used'] == 2048
    assert used['DISK_GB']['used'] == 20
    assert used['VCPU']['capacity'] >= 2
    text = _table(cloud, 'hosts')
    for host in cloud.host_names():
        assert host in text
    assert '2048/' in text


@pytest.mark.slow
def test_servers(cloud):
    (server,) = _json(cloud, 'servers')
    assert server['id'] == cloud.server_id
    assert server['status'] == 'ACTIVE'
    assert server['host'] == cloud.server_host
    assert server['flavor'] == 'm1.small'
    text = _table(cloud, 'servers')
    assert cloud.server_host in text and 'vm-1' in text


@pytest.mark.slow
def test_cells(cloud):
    cells = {c['name']: c for c in _json(cloud, 'cells')}
    assert set(cells) == {'cell0', 'cell1'}
    assert cells['cell1']['hosts'] == 2 and cells['cell1']['servers'] == 1
    assert 'transport_url' not in cells['cell1']
    assert 'cell1' in _table(cloud, 'cells')


@pytest.mark.slow
def test_services(cloud):
    services = _json(cloud, 'services')
    computes = {s['host'] for s in services if s['binary'] == 'nimbus-compute'}
    assert computes == set(cloud.host_names())
    # Every kind, under the names the daemons run as (the compute API
    # shows nova-*).
    assert {s['binary'] for s in services} == {
        'nimbus-scheduler',
        'nimbus-conductor',
        'nimbus-compute',
    }
    text = _table(cloud, 'services')
    for host in cloud.host_names():
        assert host in text


@pytest.mark.slow
def test_schedule_dry_run_takes_the_printed_url(cloud):
    text = _table(cloud, 'schedule', '--dry-run', '--flavor', 'm1.small')
    for host in cloud.host_names():
        assert host in text
    result = _json(cloud, 'schedule', '--dry-run', '--flavor', 'm1.small')
    assert {h['host'] for h in result['ranked']} == set(cloud.host_names())


@pytest.mark.slow
def test_a_wrong_url_is_one_line(cloud):
    result = _nimbus('servers', '--url', 'http://127.0.0.1:9/v2.1')
    assert result.returncode != 0
    assert 'Traceback' not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    'url',
    [
        'http://h:8774',
        'http://h:8774/',
        'http://h:8774/v2.1',
        'http://h:8774/v2.1/',
        'http://h:8774/v2',
    ],
)
def test_root_url(url):
    assert client_mod.root_url(url) == 'http://h:8774'


def test_host_table_without_room_for_bars_keeps_names_whole():
    out = io.StringIO()
    console = Console(width=80, file=out)
    name = 'x' * 70
    cli_views.render_hosts(
        [{'host': name, 'resources': {'VCPU': {'used': 1, 'capacity': 8}}}],
        console,
    )
    text = out.getvalue()
    assert name in text
    assert '\x1b' not in text  # not a terminal: no escape codes
    assert max(len(line) for line in text.splitlines()) <= 80


@pytest.mark.slow
def test_config_file_names_the_cloud(cloud, tmp_path):
    """--config-file (a daemon's: the API's listen address, placement's
    client endpoint) finds the cloud, and wins over $NIMBUS_API_URL."""
    port = cloud.api_url.rsplit(':', 1)[1]
    path = tmp_path / 'nimbus.conf'
    path.write_text(
        '[wsgi]\napi_listen = 0.0.0.0\napi_listen_port = %s\n'
        '[placement_client]\nendpoint = %s\n'
        '[api_database]\nconnection = mysql+pymysql://u:p@db/api\n'
        % (port, cloud.placement_url)
    )
    env = dict(
        os.environ,
        PYTHONWARNINGS='ignore',
        NIMBUS_API_URL='http://127.0.0.1:9',
    )
    for command in ('servers', 'hosts'):
        result = subprocess.run(
            [sys.executable, '-m', 'nimbus.cmd.cli', command]
            + ['--config-file', str(path), '--format', 'json'],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)
    result = subprocess.run(
        [sys.executable, '-m', 'nimbus.cmd.cli', 'servers'],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode != 0
    assert '127.0.0.1:9' in result.stderr
