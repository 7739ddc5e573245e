"""The install guide (docs/install/daemons.md, "Running the daemons on
RabbitMQ and MariaDB", which the README points to) runs as written.

The test reads the page and runs, in order, every fenced block preceded by an HTML comment ``<!-- deploy-step -->`` (other blocks
are prose). Each block runs in ``bash -euo pipefail``; what a block exports
holds for the later ones, as in one terminal. Two kinds differ:

- ``<!-- deploy-step: daemons -->``: every line is ``SCRIPT --config-file F
  ... --log-file L &``; each becomes a :class:`nimbus.testing.daemons.Daemon`
  (``python -m`` the module the console script names in setup.cfg), so a
  daemon that dies fails the test with its log, and the next blocks wait
  for it the way the guide does;
- ``<!-- deploy-step: stop -->``: SIGTERM to every daemon, each must exit 0.

Only what must differ per run is substituted, by :meth:`Run.apply`, in the
blocks and in the example files they copy: the database names
``nimbus_<name>`` -> ``nimbus_test_<hex>_<name>``, the vhosts ``nimbus``
and ``nimbus-cell1`` (after ``5672/``, ``add_vhost``, ``delete_vhost``,
``-p``) -> ``nimbus-test-<hex>[-cell1]``, the ports 8774, 8778, 6666 ->
free ports, ``/etc/nimbus``, ``/var/lib/nimbus``, ``/var/log/nimbus`` ->
directories under the test's tmp_path, and ``etc/nimbus/examples/noauth``
-> a copy of that directory with the same substitutions (the blocks run in
tmp_path, not in the checkout). RabbitMQ and MariaDB are the machine's own,
on 127.0.0.1 with guest/guest and root as the examples say; the vhosts and
databases are dropped by the guide's last block, and again (if they
remain) when the test ends.
"""

import configparser
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemon_group
from nimbus.testing import daemons
from nimbus.testing import infra

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / 'docs' / 'install' / 'daemons.md'
NOAUTH = ROOT / 'etc' / 'nimbus' / 'examples' / 'noauth'
UNITS = ROOT / 'etc' / 'systemd'
SECTION = '# Running the daemons on RabbitMQ and MariaDB (or PostgreSQL)'
MARK = re.compile(r'^\s*<!-- deploy-step(?::\s*(\w+))? -->\s*$')
DATABASES = ('api', 'placement', 'cell0', 'cell1', 'accelerator')
PORTS = ('8774', '8778', '6666')
# Every daemon a deployment runs, and the ones the brief asks to see.
REQUIRED = {
    'nimbus.cmd.placement_api',
    'nimbus.cmd.api',
    'nimbus.cmd.scheduler',
    'nimbus.cmd.conductor',
    'nimbus.cmd.compute',
}


def section(text):
    """The guide section's text, up to the next heading of its level or
    above (its ``###`` subsections are not steps)."""
    start = text.index(SECTION) + len(SECTION)
    nxt = re.search(r'^#{2,3} ', text[start:], re.MULTILINE)
    return text[start : start + nxt.start() if nxt else len(text)]


def steps(text):
    """``[(kind, code)]``: every fenced block right after a deploy-step
    mark (blank lines between allowed), dedented; kind is ``run``,
    ``daemons`` or ``stop``."""
    lines = text.split('\n')
    found, i = [], 0
    while i < len(lines):
        mark = MARK.match(lines[i])
        i += 1
        if not mark:
            continue
        while i < len(lines) and not lines[i].strip():
            i += 1
        fence = lines[i].strip()
        assert fence.startswith('```'), 'no code block after the mark'
        end = i + 1
        while lines[end].strip() != '```':
            end += 1
        code = textwrap.dedent('\n'.join(lines[i + 1 : end]))
        found.append((mark.group(1) or 'run', code))
        i = end + 1
    return found


def console_scripts():
    """``{script: module}`` from setup.cfg."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / 'setup.cfg')
    scripts = {}
    for line in parser['options.entry_points']['console_scripts'].split('\n'):
        if '=' in line:
            name, target = line.split('=')
            scripts[name.strip()] = target.strip().split(':')[0]
    return scripts


def daemon_lines(code):
    """``[(module, config file, log file, other args)]`` of a daemons
    block; a line of anything else fails."""
    scripts = console_scripts()
    parsed = []
    for line in code.replace('\\\n', ' ').split('\n'):
        if not line.strip():
            continue
        words = shlex.split(line)
        assert words[-1] == '&' and words[0] in scripts, line
        args, config, log = words[1:-1], None, None
        rest = []
        while args:
            word = args.pop(0)
            if word == '--config-file':
                config = args.pop(0)
            elif word == '--log-file':
                log = args.pop(0)
            else:
                rest.append(word)
        assert config and log, line
        parsed.append((scripts[words[0]], config, log, rest))
    return parsed


def readme_steps():
    return steps(section(GUIDE.read_text()))


class Run:
    """The names, ports and directories of one run (module docstring)."""

    def __init__(self, workdir):
        self.tag = uuid.uuid4().hex[:10]
        self.workdir = workdir
        self.ports = {port: str(daemons.free_port()) for port in PORTS}
        self.dirs = {
            '/etc/nimbus': workdir / 'etc',
            '/var/lib/nimbus': workdir / 'lib',
            '/var/log/nimbus': workdir / 'log',
        }
        self.examples = workdir / 'examples-noauth'
        self.databases = [
            'nimbus_test_%s_%s' % (self.tag, name) for name in DATABASES
        ]
        self.vhosts = [
            'nimbus-test-%s' % self.tag,
            'nimbus-test-%s-cell1' % self.tag,
        ]

    def apply(self, text):
        for old, new in self.ports.items():
            text = re.sub(r'\b%s\b' % old, new, text)
        text = re.sub(
            r'(?<![\w/.])etc/nimbus/examples/noauth', str(self.examples), text
        )
        for old, new in self.dirs.items():
            text = re.sub(re.escape(old) + r'(?![\w.-])', str(new), text)
        text = re.sub(
            r'\bnimbus_(%s)\b' % '|'.join(DATABASES),
            r'nimbus_test_%s_\1' % self.tag,
            text,
        )
        return re.sub(
            r'(5672/|add_vhost |delete_vhost |-p )nimbus(-cell1)?(?![\w-])',
            r'\1nimbus-test-%s\2' % self.tag,
            text,
        )

    def copy_examples(self):
        self.examples.mkdir()
        for path in NOAUTH.glob('*.conf'):
            (self.examples / path.name).write_text(
                self.apply(path.read_text())
            )

    @property
    def api_url(self):
        return 'http://127.0.0.1:%s' % self.ports['8774']


def _drop(run):
    """Whatever the guide's last block did not drop (a failed run)."""
    import sqlalchemy as sa

    engine = sa.create_engine(
        infra.server_url('mysql') + '/', isolation_level='AUTOCOMMIT'
    )
    try:
        with engine.connect() as conn:
            for name in run.databases:
                conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
    finally:
        engine.dispose()
    for vhost in run.vhosts:
        subprocess.run(
            ['rabbitmqctl', 'delete_vhost', vhost],
            capture_output=True,
            timeout=60,
        )


def _machine(openstack):
    """Skip (or fail under CI) unless the guide's services and tools
    are here, where the guide says."""
    if infra.server_url('mysql') != 'mysql+pymysql://root@127.0.0.1:3306':
        infra.unavailable('the install guide names MariaDB as root@127.0.0.1')
    if infra.rabbit_address() != ('127.0.0.1', 5672):
        infra.unavailable('the install guide names RabbitMQ on 127.0.0.1:5672')
    for tool in ('bash', 'mysql', 'rabbitmqctl', 'curl', 'truncate'):
        if shutil.which(tool) is None:
            infra.unavailable('%s is not on the PATH' % tool)
    if not os.path.exists(openstack):
        infra.unavailable(
            'the openstack CLI is not beside %s' % sys.executable
        )
    if not infra.port_open('127.0.0.1', 5672):
        infra.unavailable('RabbitMQ is not listening on 127.0.0.1:5672')
    if not infra.port_open('127.0.0.1', 3306):
        infra.unavailable('MariaDB is not listening on 127.0.0.1:3306')


class Shell:
    """Runs blocks as one terminal would: bash, the environment of the
    blocks before, the console scripts and ``openstack`` of this Python
    on the PATH."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith('OS_')
        }
        self.env['PATH'] = '%s:%s' % (
            os.path.dirname(sys.executable),
            self.env.get('PATH', ''),
        )
        self.env['PYTHONPATH'] = str(ROOT)
        self.env['PYTHONWARNINGS'] = 'ignore'
        self.count = 0

    def run(self, code, running, timeout=600):
        self.count += 1
        out = self.workdir / ('step-%d.out' % self.count)
        env_file = self.workdir / ('step-%d.env' % self.count)
        script = '%s\nenv -0 > %s\n' % (code, shlex.quote(str(env_file)))
        with open(out, 'wb') as sink:
            process = subprocess.Popen(
                ['bash', '-euo', 'pipefail', '-c', script],
                cwd=self.workdir,
                env=self.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            daemons.wait_for(
                lambda: process.poll() is not None,
                timeout,
                'step %d:\n%s' % (self.count, code),
                running,
            )
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        output = out.read_text(errors='replace')
        assert process.returncode == 0, (
            'step %d exited %s:\n%s\n--- output:\n%s\n%s'
            % (
                self.count,
                process.returncode,
                code,
                output,
                '\n'.join(
                    '==> %s <==\n%s' % (d.name, d.tail()) for d in running
                ),
            )
        )
        self.env = dict(
            item.split('=', 1)
            for item in env_file.read_text().split('\0')
            if '=' in item
        )
        return output


def test_the_section_has_the_whole_sequence():
    kinds = [kind for kind, _ in readme_steps()]
    assert kinds.count('daemons') == 1 and kinds.count('stop') == 1
    assert kinds.index('daemons') < kinds.index('stop') < len(kinds) - 1
    started = daemon_lines(dict(readme_steps())['daemons'])
    modules = {module for module, _, _, _ in started}
    assert REQUIRED <= modules
    cells = [args for module, _, _, args in started if '--cell' in args]
    assert cells == [['--cell', 'cell1']]


def test_every_config_the_steps_name_is_a_shipped_example():
    """Each ``--config-file /etc/nimbus/NAME`` of the steps, and of the
    systemd units, is a file of the noauth set the steps copy there."""
    shipped = {p.name for p in NOAUTH.glob('*.conf')}
    named = set()
    for _, code in readme_steps():
        named.update(re.findall(r'--config-file /etc/nimbus/(\S+)', code))
    assert named and named <= shipped
    for unit in UNITS.glob('*.service'):
        config = re.search(
            r'--config-file /etc/nimbus/(\S+)', unit.read_text()
        )
        assert config.group(1).replace('%i', 'cell1') in shipped, unit.name


def test_the_substitutions_leave_nothing_of_a_shared_name():
    run = Run(pathlib.Path('/nonexistent'))
    text = '\n'.join(code for _, code in readme_steps())
    for path in NOAUTH.glob('*.conf'):
        text += '\n' + path.read_text()
    done = run.apply(text)
    for name in DATABASES:
        assert not re.search(r'\bnimbus_%s\b' % name, done)
    for port in PORTS:
        assert not re.search(r'\b%s\b' % port, done)
    assert not re.search(r'5672/nimbus(-cell1)?\b(?!-test)', done)
    for path in ('/etc/nimbus', '/var/lib/nimbus', '/var/log/nimbus'):
        assert not re.search(r'(?<!\w)%s(?![\w.-])' % path, done), path
    assert 'examples/noauth' not in done


# What each daemon writes to its log once it serves: an RPC server, an
# HTTP server, the simulated computes, the accelerator agent's hosts.
STARTED = (
    'Serving topic',
    'listening on',
    'hosts reported in',
    'hosts started in',
)


def _wait_started(daemon, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = daemon.tail(lines=100000)
        if any(marker in text for marker in STARTED):
            return
        assert daemon.alive(), '%s exited: %s' % (daemon.name, text[-3000:])
        time.sleep(0.5)
    raise AssertionError(
        '%s did not start in %d s: %s'
        % (daemon.name, timeout, daemon.tail()[-3000:])
    )


@pytest.mark.integration
def test_the_readme_deploys_a_cloud_that_boots_a_server(tmp_path):
    openstack = os.path.join(os.path.dirname(sys.executable), 'openstack')
    _machine(openstack)
    run = Run(tmp_path)
    run.copy_examples()
    shell = Shell(tmp_path)
    running = []
    outputs = []
    try:
        for kind, code in readme_steps():
            code = run.apply(code)
            if kind == 'daemons':
                for module, config, log, args in daemon_lines(code):
                    name = pathlib.Path(log).stem
                    daemon = daemons.Daemon(name, module, config, log, args)
                    running.append(daemon.start())
            elif kind == 'stop':
                # The README stops a cloud that is up: each daemon has said
                # so before it is asked to stop (the accelerator agent, the
                # last one started and awaited by no step, can still be
                # starting on a loaded machine, and a daemon stopped while
                # it starts dies by the signal).
                for daemon in running:
                    _wait_started(daemon)
                for daemon in reversed(running):
                    daemon.stop(timeout=60)
                codes = {d.name: d.process.returncode for d in running}
                assert set(codes.values()) == {0}, codes
            else:
                outputs.append(shell.run(code, running))
            if kind == 'run' and 'server create' in code:
                # The booted server, seen through the API as well.
                api = ComputeClient(run.api_url)
                servers = api.get('/servers/detail')['servers']
                assert [s['status'] for s in servers] == ['ACTIVE'], servers
                assert servers[0]['OS-EXT-SRV-ATTR:host'].startswith(
                    'compute-000'
                )
                flavors = {f['name'] for f in api.get('/flavors')['flavors']}
                assert {'m1.small', 'm1.tiny'} <= flavors
                images = {i['name']: i['status'] for i in api.images()}
                assert images == {'cirros': 'active', 'cirros-curl': 'active'}
                quota = api.get('/os-quota-sets/admin')['quota_set']
                assert quota['instances'] == 100
                assert 'ACTIVE' in outputs[-1]
        assert any('ACTIVE' in output for output in outputs)
        # The last block dropped the databases and the vhosts.
        vhosts = subprocess.run(
            ['rabbitmqctl', 'list_vhosts'],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        assert run.tag not in vhosts
    finally:
        daemon_group.stop_together(reversed(running))
        _drop(run)
