"""``nimbus all-in-one`` is the same code on RabbitMQ as in-process.

The demo's output is checked, not just its exit code: the "where each
server landed" table must list every server with its status and, when
ACTIVE, its host; ``--exit-after-demo`` exits 1 when some servers could not
become ACTIVE.
"""

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

# One row of the landing table: server, flavor, status, host.
_ROW = re.compile(
    r'^\s*(demo-\d{3})\s+(m1\.\w+)\s+(ACTIVE|ERROR|BUILD)\s+'
    r'(\S+)\s*$'
)
_FLAVORS = ['m1.tiny', 'm1.small', 'm1.medium', 'm1.large']
_MEMORY = {
    'm1.tiny': 512,
    'm1.small': 2048,
    'm1.medium': 4096,
    'm1.large': 8192,
}
# The fake driver's default memory, less [compute] reserved_host_memory_mb.
HOST_MEMORY = 131072 - 512


def _demo(tmp_path, *args):
    # A wide console, so rich never folds or truncates a table cell.
    env = dict(os.environ, COLUMNS='200')
    return subprocess.run(
        [
            sys.executable,
            '-m',
            'nimbus.cmd.cli',
            'all-in-one',
            '--demo',
            '--exit-after-demo',
            '--state-dir',
            str(tmp_path / 'state'),
            '--api-port',
            '0',
            '--placement-port',
            '0',
        ]
        + list(args),
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def _landing(output, servers):
    """{server: (flavor, status, host)} from the landing table, which must
    follow its title and name each demo server exactly once."""
    assert 'Where each server landed' in output, output
    table = output.split('Where each server landed', 1)[1]
    rows = [_ROW.match(line) for line in table.splitlines()]
    rows = [row.groups() for row in rows if row]
    names = [row[0] for row in rows]
    assert names == ['demo-%03d' % i for i in range(1, servers + 1)], output
    return {
        name: (flavor, status, host) for name, flavor, status, host in rows
    }


def _utilisation(output):
    """{host: servers} from the per-host utilisation table."""
    assert 'Per-host utilisation' in output, output
    table = output.split('Per-host utilisation', 1)[1]
    return {
        m.group(1): int(m.group(2))
        for m in re.finditer(r'^\s*(host-\d+)\s+(\d+)\s+\d+/\d+', table, re.M)
    }


_GPU_ROW = re.compile(
    r'^\s*(gpu-\d{3})\s+(ACTIVE|ERROR|BUILD)\s+(\S+)\s+'
    r'(Bound|\S+)\s+(\S+)\s*$'
)


def _accelerated(output):
    """{server: (status, host, ARQ state, PCI address)} from the table of
    servers with an accelerator."""
    if 'Servers with an accelerator' not in output:
        return {}
    table = output.split('Servers with an accelerator', 1)[1].split(
        'Per-host utilisation', 1
    )[0]
    return {
        m.group(1): m.groups()[1:]
        for m in (_GPU_ROW.match(line) for line in table.splitlines())
        if m
    }


def _check_all_active(result, servers, hosts, gpu_servers=2):
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    total = servers + gpu_servers
    assert '%d of %d servers ACTIVE' % (total, total) in result.stdout
    landed = _landing(result.stdout, servers)
    gpus = _accelerated(result.stdout)
    assert sorted(gpus) == ['gpu-%03d' % i for i in range(1, gpu_servers + 1)]
    for name, (status, host, arq, pci) in gpus.items():
        # Each bound to a fake GPU of its host (bus 3b: the GPU driver's).
        assert (status, arq) == ('ACTIVE', 'Bound'), (name, status, arq)
        assert host in hosts and pci.startswith('0000:3b:'), (host, pci)
    for index, (name, (flavor, status, host)) in enumerate(
        sorted(landed.items())
    ):
        assert status == 'ACTIVE', (name, status)
        assert host in hosts, (name, host)
        assert flavor == _FLAVORS[index % len(_FLAVORS)], (name, flavor)
    per_host = _utilisation(result.stdout)
    assert set(per_host) == set(hosts)
    for host in hosts:
        assert per_host[host] == sum(
            1 for _, _, h in landed.values() if h == host
        ) + sum(1 for _, h, _, _ in gpus.values() if h == host), host


def test_demo_on_rabbitmq(tmp_path, fresh):
    api_bus, cell_bus = fresh.vhost(), fresh.vhost()
    result = _demo(
        tmp_path,
        '--hosts',
        '3',
        '--servers',
        '6',
        '--transport-url',
        api_bus,
        '--cell-transport-url',
        cell_bus,
    )
    _check_all_active(result, 6, {'host-1', 'host-2', 'host-3'})
    # Every service, its RPC servers and its RabbitMQ connections stopped
    # cleanly: nothing above INFO in the log, nothing on stderr.
    with open(tmp_path / 'state' / 'nimbus.log') as f:
        noisy = [
            line for line in f if ' WARNING ' in line or ' ERROR ' in line
        ]
    assert noisy == [], ''.join(noisy[:20])
    assert result.stderr.strip() == '', result.stderr[-2000:]


# The demo from the wheel (test_wheel) walks the same path in make test.
@pytest.mark.daemons_full
def test_demo_in_process(tmp_path):
    result = _demo(tmp_path, '--hosts', '2', '--servers', '4')
    _check_all_active(result, 4, {'host-1', 'host-2'})


# Forty servers on one host: make test-daemons-full.
@pytest.mark.daemons_full
def test_demo_exits_1_when_servers_cannot_become_active(tmp_path):
    """One default host (130560 MB of memory for guests) and 40 demo
    servers cycling through the four flavors (148480 MB in all): some
    cannot fit, end in ERROR, and the demo exits 1 naming them."""
    result = _demo(
        tmp_path,
        '--hosts',
        '1',
        '--servers',
        '40',
        '--accelerator-servers',
        '0',
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    landed = _landing(result.stdout, 40)
    active = {n for n, (_, status, _) in landed.items() if status == 'ACTIVE'}
    failed = {n for n, (_, status, _) in landed.items() if status == 'ERROR'}
    assert active | failed == set(landed), landed
    assert failed, result.stdout
    assert '%d of 40 servers ACTIVE' % len(active) in result.stdout
    # Every ACTIVE server is on the only host; no failed one has a host.
    assert {landed[n][2] for n in active} == {'host-1'}
    assert {landed[n][2] for n in failed} == {'-'}
    # Placement admitted servers until memory ran out: what is used fits,
    # and what is left is too little for any server that failed.
    used = sum(_MEMORY[landed[n][0]] for n in active)
    assert used <= HOST_MEMORY
    assert HOST_MEMORY - used < min(_MEMORY[landed[n][0]] for n in failed)
    assert _utilisation(result.stdout) == {'host-1': len(active)}
    assert re.search(
        r'^\s*host-1\s+%d\s+\d+/\d+\s+%d/%d\s'
        % (len(active), used, HOST_MEMORY),
        result.stdout,
        re.M,
    ), result.stdout
