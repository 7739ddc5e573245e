"""``nimbus all-in-one``: which buses it picks, and that a bad command line
ends with one line of error, never a traceback."""

import os
import socket
import subprocess
import sys

import pytest

from nimbus.allinone import cloud as cloud_mod
from nimbus.common import rpc


def _nimbus(*args, timeout=180):
    env = dict(os.environ, PYTHONWARNINGS='ignore')
    return subprocess.run(
        [sys.executable, '-m', 'nimbus.cmd.cli'] + list(args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.mark.parametrize(
    'api_url, cell_url',
    [
        ('inproc://', 'inproc:///cell1'),
        ('inproc:///', 'inproc:///cell1'),
        ('inproc:///demo', 'inproc:///demo-cell1'),
    ],
)
def test_an_inproc_api_bus_gets_a_cell_bus_of_its_own(api_url, cell_url):
    assert cloud_mod.cell_bus_for(api_url) == cell_url
    assert not rpc.same_bus(api_url, cell_url)


def test_a_rabbit_api_bus_alone_is_refused_with_what_to_pass():
    with pytest.raises(cloud_mod.ConfigurationError) as info:
        cloud_mod.cell_bus_for('rabbit://nova:secret@mq:5672/nimbus')
    message = str(info.value)
    assert '\n' not in message
    assert (
        '--cell-transport-url rabbit://nova:***@mq:5672/nimbus-cell1'
        in message
    )
    assert 'rabbitmqctl add_vhost nimbus-cell1' in message
    assert 'secret' not in message


@pytest.mark.parametrize(
    'cell_url',
    [
        'rabbit://nova:secret@mq:5672/nimbus',  # the same URL
        'rabbit://other:pw@MQ/nimbus?ssl=1',  # same host and vhost
        'rabbit://a:b@mq2,a:b@mq:5672/nimbus',  # one broker in common
    ],
)
def test_a_cell_bus_on_the_api_vhost_is_refused(cell_url):
    with pytest.raises(cloud_mod.ConfigurationError, match='another vhost'):
        cloud_mod.cell_bus_for('rabbit://nova:secret@mq:5672/nimbus', cell_url)


def test_a_cell_bus_on_another_vhost_is_taken():
    assert (
        cloud_mod.cell_bus_for(
            'rabbit://nova:secret@mq:5672/nimbus',
            'rabbit://nova:secret@mq:5672/cell1',
        )
        == 'rabbit://nova:secret@mq:5672/cell1'
    )


def test_cli_with_only_a_rabbit_transport_url_exits_with_one_line(tmp_path):
    result = _nimbus(
        'all-in-one',
        '--state-dir',
        str(tmp_path),
        '--transport-url',
        'rabbit://guest:guest@127.0.0.1:5672/nimbus',
    )
    assert result.returncode == 1
    assert 'Traceback' not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith('nimbus all-in-one: ')
    assert (
        '--cell-transport-url rabbit://guest:***@127.0.0.1:5672/'
        'nimbus-cell1' in lines[0]
    )


@pytest.mark.slow
def test_cli_start_failure_is_one_line_not_a_traceback(tmp_path):
    busy = socket.socket()
    busy.bind(('127.0.0.1', 0))
    busy.listen(1)
    try:
        result = _nimbus(
            'all-in-one',
            '--state-dir',
            str(tmp_path),
            '--hosts',
            '1',
            '--placement-port',
            '0',
            '--api-port',
            str(busy.getsockname()[1]),
        )
    finally:
        busy.close()
    assert result.returncode == 1
    assert 'Traceback' not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith('nimbus all-in-one: could not start: ')
    assert 'nimbus.log' in lines[0]


@pytest.mark.slow
def test_cli_with_only_an_inproc_transport_url_runs_the_demo(tmp_path):
    result = _nimbus(
        'all-in-one',
        '--state-dir',
        str(tmp_path),
        '--transport-url',
        'inproc:///clitest',
        '--hosts',
        '2',
        '--api-port',
        '0',
        '--placement-port',
        '0',
        '--demo',
        '--servers',
        '2',
        '--exit-after-demo',
    )
    assert 'Traceback' not in result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
