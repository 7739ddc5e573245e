"""A private RabbitMQ node for tests that stop, restart or break the broker.

The machine's RabbitMQ (``rabbit@localhost`` on 127.0.0.1:5672, configured by
``/etc/rabbitmq``) is shared by everyone on the machine; a test that runs
``rabbitmqctl stop_app`` on it drops every other user's connections. A
:class:`RabbitNode` is a node of its own, started from the same installed
``rabbitmq-server``, sharing nothing with the machine's node:

- its own node name (``nimbus-test-<random>@localhost``);
- its own AMQP port and Erlang distribution port (free ports, 127.0.0.1);
- its own epmd, on a free port of its own (``ERL_EPMD_PORT``), which this
  module starts and stops; the machine's epmd (port 4369) is never used;
- its own data (mnesia), log and plugin directories, config file, env file
  (``RABBITMQ_CONF_ENV_FILE``, so ``/etc/rabbitmq/rabbitmq-env.conf`` is not
  read), Erlang cookie and ``HOME``, all under one temporary directory;
- no plugins (no management listener).

:meth:`RabbitNode.ctl` runs ``rabbitmqctl -n <node>`` with the node's
``HOME`` (cookie) and epmd port, so it can only ever reach this node.

Nodes of one cluster share one :class:`Epmd` and one ``cookie``
(``RabbitNode(epmd=e, cookie=c)``), each keeping its own name, ports and
directories: :class:`nimbus.testing.rabbit_cluster.RabbitCluster` joins
three of them with ``rabbitmqctl join_cluster``.

No pytest at module level: integrators import this as a library.
"""

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time

from nimbus.testing import infra
from nimbus.testing import managed

# The real scripts; /usr/sbin's wrappers switch to the rabbitmq user (and
# its HOME, hence the machine node's cookie) when run as root.
_SCRIPT_DIRS = ('/usr/lib/rabbitmq/bin', '/usr/sbin', '/usr/bin')
_EPMD_DIRS = ('/usr/bin', '/usr/lib/erlang/bin')


def _tool(name, dirs):
    for directory in dirs:
        path = os.path.join(directory, name)
        if os.access(path, os.X_OK):
            return path
    path = shutil.which(name)
    if path is None:
        infra.unavailable('%s is not installed (private RabbitMQ node)' % name)
    return path


def wait_until(predicate, timeout, what, process=None, log=None):
    """Poll ``predicate`` until true; fail with ``log``'s tail when
    ``process`` exits or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                '%s: the process exited with %s\n%s'
                % (what, process.returncode, _tail(log))
            )
        if time.monotonic() > deadline:
            raise RuntimeError(
                'timed out waiting for %s\n%s' % (what, _tail(log))
            )
        time.sleep(0.3)


def _tail(path, size=3000):
    if not path or not os.path.exists(path):
        return ''
    with open(path, errors='replace') as f:
        return f.read()[-size:]


def stop_group(process, timeout=30):
    """SIGTERM the process group we started (its own session), then
    SIGKILL it if it does not go."""
    if process is None or process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


class Epmd:
    """An Erlang port mapper daemon of our own on a free port of 127.0.0.1,
    run in the foreground (not ``-daemon``), so it is our child and we stop
    exactly it. Nodes of one cluster share one."""

    def __init__(self, log_file):
        self.port = infra.free_port()
        self.log_file = log_file
        self.process = None

    def start(self):
        epmd = _tool('epmd', _EPMD_DIRS)
        with open(self.log_file, 'ab') as log:
            self.process = subprocess.Popen(
                [epmd, '-port', str(self.port), '-address', '127.0.0.1'],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        wait_until(
            lambda: infra.port_open('127.0.0.1', self.port),
            30,
            'epmd on port %d' % self.port,
            self.process,
            self.log_file,
        )
        return self

    def stop(self):
        stop_group(self.process)


class RabbitNode(managed.Managed):
    """One private RabbitMQ node; see the module docstring.

    ``with RabbitNode() as node:`` starts it and waits until it accepts
    AMQP connections; leaving the block stops the node and its epmd (when
    the node started that epmd) and removes its directory (unless
    ``base_dir`` was given)."""

    def __init__(
        self, base_dir=None, name=None, epmd=None, cookie=None, conf=''
    ):
        self._own_dir = base_dir is None
        # More lines of rabbitmq.conf.
        self.conf = conf
        self.base_dir = base_dir or tempfile.mkdtemp(prefix='nimbus-rabbit-')
        self.name = name or 'nimbus-test-%s' % secrets.token_hex(5)
        self.node = '%s@localhost' % self.name
        self.port = infra.free_port()
        self.dist_port = infra.free_port()
        self.cookie = cookie or secrets.token_hex(20)
        self._own_epmd = epmd is None
        self.epmd = epmd
        self.process = None
        self.home = os.path.join(self.base_dir, 'home')
        self.log_file = os.path.join(self.base_dir, 'server.out')

    # -- set up ------------------------------------------------------------

    def _write_files(self):
        for sub in ('home', 'mnesia', 'log', 'plugins-expand'):
            os.makedirs(os.path.join(self.base_dir, sub), exist_ok=True)
        cookie = os.path.join(self.home, '.erlang.cookie')
        with open(cookie, 'w') as f:
            f.write(self.cookie)
        os.chmod(cookie, 0o400)
        self._file(
            'rabbitmq.conf',
            'listeners.tcp.local = 127.0.0.1:%d\n'
            'log.file.level = info\n'
            'log.console = false\n' % self.port + self.conf,
        )
        self._file('enabled_plugins', '[].\n')
        # Read instead of /etc/rabbitmq/rabbitmq-env.conf (which names the
        # machine's node).
        self._file('rabbitmq-env.conf', '')
        self._file('advanced.config', '[].\n')

    def _file(self, name, text):
        with open(os.path.join(self.base_dir, name), 'w') as f:
            f.write(text)

    def environ(self):
        """The environment of this node's server and of its rabbitmqctl."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(('RABBITMQ_', 'ERL_'))
        }
        d = self.base_dir
        env.update(
            HOME=self.home,
            ERL_EPMD_PORT=str(self.epmd.port),
            ERL_EPMD_ADDRESS='127.0.0.1',
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_IP_ADDRESS='127.0.0.1',
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_CONF_ENV_FILE=os.path.join(d, 'rabbitmq-env.conf'),
            RABBITMQ_CONFIG_FILE=os.path.join(d, 'rabbitmq.conf'),
            RABBITMQ_ADVANCED_CONFIG_FILE=os.path.join(d, 'advanced.config'),
            RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(d, 'enabled_plugins'),
            RABBITMQ_MNESIA_BASE=os.path.join(d, 'mnesia'),
            RABBITMQ_LOG_BASE=os.path.join(d, 'log'),
            RABBITMQ_PLUGINS_EXPAND_DIR=os.path.join(d, 'plugins-expand'),
            RABBITMQ_PID_FILE=os.path.join(d, 'rabbitmq.pid'),
            RABBITMQ_SERVER_ERL_ARGS=(
                '-kernel inet_dist_use_interface {127,0,0,1}'
            ),
        )
        return env

    # -- life cycle --------------------------------------------------------

    def start(self, timeout=120):
        self.launch()
        self.wait_ready(timeout)
        return self

    def launch(self):
        """Start the server process (and its epmd when it has none) without
        waiting for it: the nodes of a cluster boot side by side."""
        server = _tool('rabbitmq-server', _SCRIPT_DIRS)
        self._write_files()
        if self.epmd is None:
            self.epmd = Epmd(os.path.join(self.base_dir, 'epmd.out')).start()
        with open(self.log_file, 'ab') as log:
            self.process = subprocess.Popen(
                [server],
                env=self.environ(),
                cwd=self.base_dir,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    def kill9(self):
        """``kill -9`` the node's whole process group (the Erlang VM and
        its helpers): no clean shutdown, its connections drop at once.
        :meth:`start` brings it back on the same data, ports and name."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def accepts_amqp(self):
        """True when an AMQP connection to the node opens (guest/guest)."""
        import kombu

        if not infra.port_open('127.0.0.1', self.port):
            return False
        try:
            amqp = 'amqp://guest:guest@127.0.0.1:%d//' % self.port
            with kombu.Connection(amqp, connect_timeout=2) as conn:
                conn.connect()
            return True
        except Exception:  # noqa: BLE001 - not up yet
            return False

    def wait_ready(self, timeout=120):
        wait_until(
            self.accepts_amqp,
            timeout,
            'RabbitMQ node %s to accept AMQP on port %d'
            % (self.node, self.port),
            self.process,
            self.log_file,
        )

    def ctl(self, *args, timeout=120):
        """``rabbitmqctl -n <node> ARGS`` with this node's cookie and epmd;
        returns its stdout, raises with its output on failure."""
        ctl = _tool('rabbitmqctl', _SCRIPT_DIRS)
        result = subprocess.run(
            [ctl, '-n', self.node] + list(args),
            env=self.environ(),
            cwd=self.base_dir,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise RuntimeError(
                'rabbitmqctl -n %s %s: exit %d\n%s%s'
                % (
                    self.node,
                    ' '.join(args),
                    result.returncode,
                    result.stdout,
                    result.stderr,
                )
            )
        return result.stdout

    def stop_app(self):
        self.ctl('stop_app')

    def start_app(self, timeout=120):
        self.ctl('start_app')
        self.wait_ready(timeout)

    def restart_app(self, down_s=3.0):
        """``stop_app``, ``down_s`` seconds down, ``start_app``: every
        connection to this node drops; returns once it accepts AMQP."""
        self.stop_app()
        time.sleep(down_s)
        self.start_app()

    def stop(self):
        """Stop the node (``rabbitmqctl stop``, else signals to the process
        group we started), its epmd if it started it, remove its files."""
        if self.process is not None and self.process.poll() is None:
            try:
                self.ctl('stop', timeout=60)
                self.process.wait(60)
            except Exception:  # noqa: BLE001 - stop by signal below
                pass
            stop_group(self.process)
        if self._own_epmd and self.epmd is not None:
            self.epmd.stop()
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    # -- use ---------------------------------------------------------------

    def url(self, vhost=''):
        return 'rabbit://guest:guest@127.0.0.1:%d/%s' % (self.port, vhost)

    def vhost(self):
        """A fresh vhost on this node (guest may use it); its URL."""
        name = 'nimbus-test-%s' % secrets.token_hex(5)
        self.ctl('add_vhost', name)
        self.ctl('set_permissions', '-p', name, 'guest', '.*', '.*', '.*')
        return self.url(name)
