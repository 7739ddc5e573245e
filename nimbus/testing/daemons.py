"""Run Nimbus as real daemons: one process per service, config files, logs.

Used by the integration tests: a :class:`DaemonCloud` writes a config file
per service (the way an operator would), runs ``nimbus-manage`` to create
the databases and cells, starts each daemon with ``python -m nimbus.cmd.X``
and can ``kill -9`` and restart any of them. Waiting on a group of them and
stopping them together: :mod:`nimbus.testing.daemon_group`.
"""

import configparser
import json
import os
import signal
import socket
import subprocess
import sys
import time

import requests

from nimbus.testing import daemon_group
from nimbus.testing import tcp_proxy

# Still importable from here: the integration tests, harnesses and
# benchmarks, and an integrator's own, call ``daemons.wait_for`` and
# ``daemons.stop_together``.
from nimbus.testing.daemon_group import stop_together  # noqa: F401
from nimbus.testing.daemon_group import wait_for  # noqa: F401


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


# nimbus-manage's commands one after another in one process (a failed
# one names itself and ends the run with its own message).
_MANAGE_STEPS = """
import json, sys
from nimbus.cmd import manage
for argv in json.loads(sys.argv[1]):
    try:
        manage.main(argv)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            print('nimbus-manage %s:' % ' '.join(argv[2:]), file=sys.stderr)
            raise
"""


class Daemon:
    """One daemon process: ``python -m module --config-file ...``, or with
    ``launcher``, ``python -m launcher module --config-file ...`` (a test
    module that wraps the daemon, :mod:`harness.twice`)."""

    def __init__(
        self, name, module, config_file, log_file, extra_args=(), launcher=None
    ):
        self.name = name
        self.module = module
        self.config_file = config_file
        self.log_file = log_file
        self.extra_args = list(extra_args)
        self.launcher = launcher
        self.process = None

    def start(self):
        log = open(self.log_file, 'ab')
        head = [self.launcher] if self.launcher else []
        self.process = subprocess.Popen(
            [sys.executable, '-m']
            + head
            + [
                self.module,
                '--config-file',
                self.config_file,
                '--log-file',
                self.log_file,
            ]
            + self.extra_args,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        return self

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def kill9(self):
        if self.alive():
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def terminate(self):
        """Send SIGTERM and return at once (:meth:`wait_stopped` waits)."""
        if self.alive():
            os.killpg(self.process.pid, signal.SIGTERM)

    def wait_stopped(self, timeout=20):
        """Wait for the exit a :meth:`terminate` asked for; kill -9 after
        ``timeout`` seconds."""
        if self.process is None:
            return
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill9()

    def stop(self, timeout=20):
        if not self.alive():
            return
        self.terminate()
        self.wait_stopped(timeout)

    def tail(self, lines=40):
        try:
            with open(self.log_file, errors='replace') as f:
                return ''.join(f.readlines()[-lines:])
        except FileNotFoundError:
            return ''


class DaemonCloud:
    """API, placement API, scheduler, super conductor, one cell (cell1)
    with its conductor, and compute hosts, each its own process.

    ``api_bus``/``cell_bus`` are transport URLs (fresh vhosts);
    ``databases`` maps api, cell0, cell1, placement to URLs.

    Each daemon's config holds only the credentials the README gives it:
    placement API the placement database; API, scheduler and super
    conductor the API database; the cell conductor its cell database;
    computes none. ``nimbus-api`` gets its address from ``--host`` and
    ``--port`` (its config names another port, ``api_config_port``).
    """

    def __init__(
        self,
        workdir,
        api_bus,
        cell_bus,
        databases,
        hosts=3,
        compute_options=None,
        common_options=None,
        more_cells=None,
        unlimited_quotas=True,
        replicas=None,
    ):
        """``replicas`` runs more than one of a daemon, active-active
        ({'api': 2, 'placement': 2, 'conductor': 2, 'cell_conductor': 2,
        'scheduler': 3}; default one each): the HTTP services each on a
        port of its own behind a round-robin proxy on ``api_port`` /
        ``placement_port`` (:meth:`TcpProxy.round_robin`), the others on
        the same bus and databases. :meth:`replica_groups` names them."""
        self.workdir = workdir
        self.api_bus = api_bus
        self.cell_bus = cell_bus
        self.databases = databases
        # {cell name: (bus, database URL)}: cell1 and ``more_cells``.
        self.cells = {'cell1': (cell_bus, databases['cell1'])}
        self.cells.update(more_cells or {})
        # Tests boot more servers than Nova's default quotas allow one
        # project (10); a test of the quotas themselves passes False.
        self.unlimited_quotas = unlimited_quotas
        self.hosts = ['host-%d' % i for i in range(1, hosts + 1)]
        self.compute_options = compute_options or {}
        self.common_options = common_options or {}
        self.api_port = free_port()
        self.placement_port = free_port()
        self.api_config_port = free_port()
        self.replicas = dict(replicas or {})
        self.api_ports = self._ports('api', self.api_port)
        self.placement_ports = self._ports('placement', self.placement_port)
        self.proxies = []
        self.daemons = {}
        # A module every daemon is run through (Daemon's ``launcher``).
        self.launcher = None
        os.makedirs(workdir, exist_ok=True)

    def _ports(self, kind, front):
        """The ports of ``kind``'s replicas: ``front`` itself for one."""
        count = self.replicas.get(kind, 1)
        return [front] if count == 1 else [free_port() for _ in range(count)]

    @staticmethod
    def replica_name(name, index):
        """``name`` for the first replica, ``name-2``... for the others."""
        return name if index == 0 else '%s-%d' % (name, index + 1)

    def replica_groups(self):
        """{kind: [daemon names]} of every daemon run more than once."""
        groups = {}
        names = {
            'api': ['api'],
            'placement': ['placement-api'],
            'conductor': ['conductor'],
            'scheduler': ['scheduler'],
            'cell_conductor': ['%s-conductor' % cell for cell in self.cells],
        }
        for kind, bases in names.items():
            count = self.replicas.get(kind, 1)
            if count < 2:
                continue
            for base in bases:
                groups[base] = [
                    self.replica_name(base, i) for i in range(count)
                ]
        return groups

    def _front(self, ports, front):
        """A round-robin proxy on ``front`` for more than one replica."""
        if len(ports) > 1:
            self.proxies.append(
                tcp_proxy.TcpProxy.round_robin(
                    ports, listen_port=front
                ).start()
            )

    @property
    def api_url(self):
        return 'http://127.0.0.1:%d' % self.api_port

    @property
    def placement_url(self):
        return 'http://127.0.0.1:%d' % self.placement_port

    def _write(self, name, sections):
        parser = configparser.ConfigParser(interpolation=None)
        for section, values in sections.items():
            parser[section] = {k: str(v) for k, v in values.items()}
        path = os.path.join(self.workdir, '%s.conf' % name)
        with open(path, 'w') as f:
            parser.write(f)
        return path

    def _base(self):
        """Options every daemon shares; no database credentials."""
        sections = {
            'DEFAULT': {
                'state_path': self.workdir,
                'report_interval': 2,
                'service_down_time': 10,
                'debug': 'false',
            },
            'rpc': {'transport_url': self.api_bus, 'rpc_response_timeout': 60},
            'api': {'auth_strategy': 'noauth2'},
            'placement_client': {'endpoint': self.placement_url},
            'wsgi': {
                'api_listen': '127.0.0.1',
                'api_listen_port': self.api_port,
                'placement_listen': '127.0.0.1',
                'placement_listen_port': self.placement_port,
            },
        }
        if self.unlimited_quotas:
            sections['quota'] = {
                'instances': -1,
                'cores': -1,
                'ram': -1,
                'server_groups': -1,
                'server_group_members': -1,
            }
        for section, values in self.common_options.items():
            sections.setdefault(section, {}).update(values)
        return sections

    def _with(self, **databases):
        """:meth:`_base` plus the named databases only (the README's rule:
        ``api``/``placement`` for the API level, ``cell`` for a cell
        conductor, none for a compute)."""
        sections = self._base()
        groups = {
            'api': 'api_database',
            'placement': 'placement_database',
            'cell': 'database',
        }
        for key, url in databases.items():
            sections.setdefault(groups[key], {})['connection'] = url
        return sections

    def _common(self):
        """The operator's config (nimbus-manage, gunicorn): API and
        placement databases."""
        return self._with(
            api=self.databases['api'], placement=self.databases['placement']
        )

    def manage(self, *args):
        """Run ``nimbus-manage ARGS`` with the operator's config; its
        output."""
        return self.manage_steps(args)

    def manage_steps(self, *steps):
        """Run ``nimbus-manage`` once per step (a tuple of its arguments),
        in order, in one Python process: the same commands an operator
        types, for one import of Nimbus instead of one per command."""
        config = self._write('manage', self._common())
        argvs = [['--config-file', config] + list(step) for step in steps]
        result = subprocess.run(
            [sys.executable, '-c', _MANAGE_STEPS, json.dumps(argvs)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if result.returncode != 0:
            raise RuntimeError(
                'nimbus-manage %s failed:\n%s%s'
                % (
                    ' / '.join(' '.join(step) for step in steps),
                    result.stdout,
                    result.stderr,
                )
            )
        return result.stdout

    def prepare(self):
        cells = [('cell0', 'none:///', self.databases['cell0'])] + [
            (cell, bus, database)
            for cell, (bus, database) in self.cells.items()
        ]
        steps = [('db', 'sync')] + [
            (
                'cell',
                'create',
                '--name',
                cell,
                '--transport-url',
                bus,
                '--database-connection',
                database,
            )
            for cell, bus, database in cells
        ]
        if len(self.cells) > 1:
            steps.append(('db', 'sync'))  # the schemas of the cells mapped
        self.manage_steps(*steps)

    def _daemon(self, name, module, sections, extra_args=()):
        config = self._write(name, sections)
        daemon = Daemon(
            name,
            module,
            config,
            os.path.join(self.workdir, '%s.log' % name),
            extra_args,
            self.launcher,
        )
        self.daemons[name] = daemon
        return daemon.start()

    def start_compute(self, host):
        """A compute: its cell's bus and placement, no database at all."""
        sections = self._base()
        sections['DEFAULT']['host'] = host
        sections['DEFAULT']['state_path'] = os.path.join(self.workdir, host)
        sections['rpc']['transport_url'] = self.cell_bus
        for section, values in self.compute_options.get(host, {}).items():
            sections.setdefault(section, {}).update(values)
        return self._daemon(host, 'nimbus.cmd.compute', sections)

    def start_simulated(self, name, count, options=None, cell='cell1'):
        """One nimbus-compute process running ``count`` simulated hosts
        ``<name>-0001`` ... (``--simulated-hosts``) in ``cell``;
        ``options`` are config sections of its own."""
        sections = self._base()
        sections['DEFAULT']['host'] = name
        sections['DEFAULT']['state_path'] = os.path.join(self.workdir, name)
        sections['rpc']['transport_url'] = self.cells[cell][0]
        for section, values in (options or {}).items():
            sections.setdefault(section, {}).update(values)
        return self._daemon(
            name,
            'nimbus.cmd.compute',
            sections,
            ['--simulated-hosts', str(count)],
        )

    def start_placement(self):
        for index, port in enumerate(self.placement_ports):
            sections = self._with(placement=self.databases['placement'])
            sections['wsgi']['placement_listen_port'] = port
            self._daemon(
                self.replica_name('placement-api', index),
                'nimbus.cmd.placement_api',
                sections,
            )
            self.wait_http('http://127.0.0.1:%d/' % port)
        self._front(self.placement_ports, self.placement_port)
        self.wait_http(self.placement_url + '/')

    def start_cell_conductor(self, cell='cell1'):
        # The cell conductor knows its cell's bus and database only.
        bus, database = self.cells[cell]
        for index in range(self.replicas.get('cell_conductor', 1)):
            sections = self._with(cell=database)
            sections['rpc']['transport_url'] = bus
            self._daemon(
                self.replica_name('%s-conductor' % cell, index),
                'nimbus.cmd.conductor',
                sections,
                ['--cell', cell],
            )

    def start(self):
        api_db = self.databases['api']
        self.start_placement()
        for kind in ('scheduler', 'conductor'):
            for index in range(self.replicas.get(kind, 1)):
                self._daemon(
                    self.replica_name(kind, index),
                    'nimbus.cmd.%s' % kind,
                    self._with(api=api_db),
                )
        for cell in self.cells:
            self.start_cell_conductor(cell)
        # nimbus-api listens where --host/--port say; its config names a
        # decoy port, so answering on api_port proves the flags won.
        for index, port in enumerate(self.api_ports):
            api = self._with(api=api_db)
            api['wsgi']['api_listen_port'] = self.api_config_port
            self._daemon(
                self.replica_name('api', index),
                'nimbus.cmd.api',
                api,
                ['--host', '127.0.0.1', '--port', str(port)],
            )
            self.wait_http('http://127.0.0.1:%d/' % port)
        self._front(self.api_ports, self.api_port)
        self.wait_http(self.api_url + '/')
        for host in self.hosts:
            self.start_compute(host)
        return self

    def wait_log(self, name, text, timeout=60):
        """Wait until daemon ``name``'s log contains ``text``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(self.daemons[name].log_file, errors='replace') as f:
                    if text in f.read():
                        return
            except FileNotFoundError:
                pass
            self._check_alive()
            time.sleep(0.2)
        raise TimeoutError('%s did not log %r' % (name, text))

    def config_of(self, name):
        """The parsed config file of daemon ``name``."""
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(self.daemons[name].config_file)
        return parser

    def wait_http(self, url, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if requests.get(url, timeout=2).status_code < 500:
                    return
            except requests.RequestException:
                pass
            self._check_alive()
            time.sleep(0.2)
        raise TimeoutError('%s did not answer' % url)

    def _check_alive(self):
        dead = daemon_group.first_exit(self.daemons.values())
        if dead is not None:
            raise RuntimeError(daemon_group.exit_report(dead))

    def stop(self, timeout=20):
        """Stop every daemon (:func:`.daemon_group.stop_together`), then
        the proxies."""
        daemon_group.stop_together(
            reversed(list(self.daemons.values())), timeout
        )
        for proxy in self.proxies:
            proxy.stop()

    def logs(self):
        return '\n'.join(
            '==> %s <==\n%s' % (name, d.tail())
            for name, d in self.daemons.items()
        )
