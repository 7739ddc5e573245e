"""Configuration: private ConfigOpts, and a sample config that matches the
code."""

import os
import re
import subprocess
import sys

from oslo_config import cfg

from nimbus.common import config

ROOT = os.path.dirname(
    os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    )
)
NIMBUS_NAMESPACES = (
    'nimbus.common',
    'nimbus.memtrace',
    'nimbus.rpc',
    'nimbus.db',
    'nimbus.wsgi',
    'nimbus.clients',
    'nimbus.placement',
    'nimbus.scheduler',
    'nimbus.compute',
    'nimbus.conductor',
    'nimbus.api',
    'nimbus.accelerator_agent',
)


def test_build_conf_is_private_and_complete():
    conf = config.build_conf(
        [], overrides={'rpc': {'transport_url': 'inproc:///x'}}
    )
    assert conf.rpc.transport_url == 'inproc:///x'
    assert conf.scheduler.max_attempts == 3
    assert conf.placement.allocation_conflict_retry_count == 10
    # Nothing leaked into the global CONF.
    assert 'rpc' not in cfg.CONF


def _options(text):
    found, group = set(), None
    for line in text.splitlines():
        heading = re.match(r'^\[(\w+)\]', line)
        if heading:
            group = heading.group(1)
            continue
        option = re.match(r'^#(\w+) =', line)
        if option and group:
            found.add((group, option.group(1)))
    return found


def test_sample_config_lists_every_nimbus_option(tmp_path):
    out = tmp_path / 'sample.conf'
    args = [
        sys.executable,
        '-m',
        'oslo_config.generator',
        '--output-file',
        str(out),
    ]
    for namespace in NIMBUS_NAMESPACES:
        args += ['--namespace', namespace]
    subprocess.run(args, check=True, capture_output=True, cwd=ROOT)
    generated = _options(out.read_text())
    with open(os.path.join(ROOT, 'etc', 'nimbus', 'nimbus.conf.sample')) as f:
        committed = _options(f.read())
    missing = generated - committed
    assert not missing, (
        'etc/nimbus/nimbus.conf.sample is stale; run '
        '`make sample-config`. Missing: %s' % sorted(missing)
    )
