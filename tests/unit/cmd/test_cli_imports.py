"""``nimbus --help`` and every subcommand's ``--help`` import only what
argument parsing needs: none of the services, the messaging and database
stacks, the HTTP framework or the API clients (issue 22; it took 1.9 s of
CPU when ``nimbus.cmd.cli`` imported ``nimbus.allinone`` and with it the
whole cloud). The import set is measured in a fresh interpreter, never the
time."""

import json
import os
import subprocess
import sys

import pytest

# The heaviest entries of ``python -X importtime -m nimbus.cmd.cli --help``
# before the change, and what they pulled in.
HEAVY = (
    'nimbus.allinone.cloud',
    'nimbus.services',
    'nimbus.api',
    'nimbus.placement',
    'nimbus.scheduler',
    'nimbus.conductor',
    'nimbus.compute',
    'nimbus.accelerator',
    'nimbus.db',
    'nimbus.common.db',
    'nimbus.common.rpc',
    'nimbus.common.wsgi',
    'oslo_messaging',
    'oslo_service',
    'oslo_config',
    'oslo_log',
    'oslo_policy',
    'sqlalchemy',
    'alembic',
    'falcon',
    'eventlet',
    'kombu',
    'keystoneauth1',
    'requests',
    'rich',
)

COMMANDS = (
    'all-in-one',
    'schedule',
    'hosts',
    'servers',
    'cells',
    'services',
    'decisions',
    'capacity',
    'simulate',
    'host',
)

WRAPPER = """
import json, sys
from nimbus.cmd import cli
try:
    cli.main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
with open(sys.argv[1], 'w') as out:
    json.dump({'code': code, 'modules': sorted(sys.modules)}, out)
"""


def _help_imports(tmp_path, *argv):
    out = tmp_path / 'modules.json'
    env = dict(os.environ, PYTHONWARNINGS='ignore')
    proc = subprocess.run(
        [sys.executable, '-c', WRAPPER, str(out)] + list(argv),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result['code'] in (0, None), proc.stderr
    assert 'usage: nimbus' in proc.stdout
    return proc.stdout, set(result['modules'])


def _heavy(modules):
    return sorted(
        m
        for m in modules
        if any(m == h or m.startswith(h + '.') for h in HEAVY)
    )


def test_nimbus_help_imports_no_heavy_module(tmp_path):
    text, modules = _help_imports(tmp_path, '--help')
    assert _heavy(modules) == []
    for command in COMMANDS:
        assert command in text


@pytest.mark.parametrize('command', COMMANDS)
def test_subcommand_help_imports_no_heavy_module(tmp_path, command):
    text, modules = _help_imports(tmp_path, command, '--help')
    assert _heavy(modules) == []
    assert command in text.splitlines()[0]


@pytest.mark.parametrize('action', ['drain', 'evacuate'])
def test_host_subcommand_help_imports_no_heavy_module(tmp_path, action):
    text, modules = _help_imports(tmp_path, 'host', action, '--help')
    assert _heavy(modules) == []
    assert text.splitlines()[0].startswith('usage: nimbus host %s' % action)
    assert '--dry-run' in text


def test_the_wrapper_sees_a_command_s_imports(tmp_path):
    """The measure can fail: parsing a real command's arguments and
    running it (here: a config file that does not exist) does import
    oslo.config."""
    out = tmp_path / 'modules.json'
    proc = subprocess.run(
        [
            sys.executable,
            '-c',
            WRAPPER,
            str(out),
            'hosts',
            '--config-file',
            str(tmp_path / 'missing.conf'),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONWARNINGS='ignore'),
    )
    result = json.loads(out.read_text())
    assert result['code'] not in (0, None)
    assert 'missing.conf' in str(result['code'])
    assert 'Traceback' not in proc.stderr
    assert 'oslo_config' in _heavy(result['modules'])
