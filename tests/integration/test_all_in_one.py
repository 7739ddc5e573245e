"""``nimbus all-in-one`` is the same code on RabbitMQ as in-process."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_demo_on_rabbitmq(tmp_path, fresh):
    api_bus, cell_bus = fresh.vhost(), fresh.vhost()
    result = subprocess.run(
        [sys.executable, '-m', 'nimbus.cmd.cli', 'all-in-one', '--demo',
         '--exit-after-demo', '--hosts', '3', '--servers', '6',
         '--state-dir', str(tmp_path / 'state'), '--api-port', '0',
         '--placement-port', '0', '--transport-url', api_bus,
         '--cell-transport-url', cell_bus],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert '6 of 6 servers ACTIVE' in result.stdout


def test_demo_in_process(tmp_path):
    result = subprocess.run(
        [sys.executable, '-m', 'nimbus.cmd.cli', 'all-in-one', '--demo',
         '--exit-after-demo', '--hosts', '2', '--servers', '4',
         '--state-dir', str(tmp_path / 'state'), '--api-port', '0',
         '--placement-port', '0'],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert '4 of 4 servers ACTIVE' in result.stdout
    assert 'Per-host utilisation' in result.stdout
