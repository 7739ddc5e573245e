"""A private MariaDB server for tests that shut the database down.

The machine's MariaDB (127.0.0.1:3306) is shared by everyone on the machine.
A :class:`MariaDBServer` is a ``mariadbd`` of its own: a data directory made
by ``mariadb-install-db`` under a temporary directory, its own TCP port
(free, 127.0.0.1 only), socket, pid file and log, ``--no-defaults`` (so
``/etc/mysql`` is not read), and ``root`` without a password. It is our
child process, so a restart stops and starts exactly it.

No pytest at module level: integrators import this as a library.
"""

import os
import shutil
import subprocess
import tempfile

from nimbus.testing import infra
from nimbus.testing import managed
from nimbus.testing import private_rabbit


def _tool(name):
    path = shutil.which(name) or (
        '/usr/sbin/' + name
        if os.access('/usr/sbin/' + name, os.X_OK)
        else None
    )
    if path is None:
        infra.unavailable('%s is not installed (private MariaDB)' % name)
    return path


class MariaDBServer(managed.Managed):
    """``with MariaDBServer() as db:`` installs a data directory, starts
    the server and waits until it answers SQL; leaving the block stops it
    and removes its directory (unless ``base_dir`` was given)."""

    def __init__(self, base_dir=None, buffer_pool='64M', max_connections=300):
        self._own_dir = base_dir is None
        self.base_dir = base_dir or tempfile.mkdtemp(prefix='nimbus-mariadb-')
        self.datadir = os.path.join(self.base_dir, 'data')
        self.socket = os.path.join(self.base_dir, 'mariadb.sock')
        self.log_file = os.path.join(self.base_dir, 'mariadbd.err')
        self.port = infra.free_port()
        self.buffer_pool = buffer_pool
        self.max_connections = max_connections
        self.process = None

    def _install(self):
        os.makedirs(self.datadir, exist_ok=True)
        result = subprocess.run(
            [
                _tool('mariadb-install-db'),
                '--no-defaults',
                '--datadir=%s' % self.datadir,
                '--user=%s' % _user(),
                '--auth-root-authentication-method=normal',
                '--skip-test-db',
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if result.returncode != 0:
            raise RuntimeError(
                'mariadb-install-db failed: %s%s'
                % (result.stdout, result.stderr)
            )

    def _command(self):
        return [
            _tool('mariadbd'),
            '--no-defaults',
            '--user=%s' % _user(),
            '--datadir=%s' % self.datadir,
            '--port=%d' % self.port,
            '--bind-address=127.0.0.1',
            '--socket=%s' % self.socket,
            '--pid-file=%s' % os.path.join(self.base_dir, 'mariadbd.pid'),
            '--log-error=%s' % self.log_file,
            '--skip-name-resolve',
            '--innodb-buffer-pool-size=%s' % self.buffer_pool,
            '--max-connections=%d' % self.max_connections,
            '--character-set-server=utf8mb4',
            '--collation-server=utf8mb4_general_ci',
        ]

    def start(self, timeout=120):
        if not os.path.isdir(os.path.join(self.datadir, 'mysql')):
            self._install()
        self.process = subprocess.Popen(
            self._command(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        private_rabbit.wait_until(
            self.answers,
            timeout,
            'MariaDB on port %d' % self.port,
            self.process,
            self.log_file,
        )
        return self

    def answers(self):
        """True when ``SELECT 1`` works over TCP as root."""
        import pymysql

        try:
            conn = pymysql.connect(
                host='127.0.0.1',
                port=self.port,
                user='root',
                connect_timeout=2,
            )
        except Exception:  # noqa: BLE001 - not up yet
            return False
        try:
            with conn.cursor() as cursor:
                cursor.execute('SELECT 1')
            return True
        finally:
            conn.close()

    def shutdown(self, timeout=120):
        """A clean shutdown (SIGTERM, as ``mysqladmin shutdown``) of this
        server, waiting for the process to exit."""
        private_rabbit.stop_group(self.process, timeout)

    def restart(self, down_s=3.0):
        """Shut down, ``down_s`` seconds down, start again on the same port
        and data; returns once it answers SQL."""
        import time

        self.shutdown()
        time.sleep(down_s)
        self.start()

    def stop(self):
        self.shutdown()
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def server_url(self):
        return 'mysql+pymysql://root@127.0.0.1:%d' % self.port

    def database(self):
        """A fresh database on this server; returns (url, cleanup)."""
        return infra.fresh_database(self.server_url(), 'mysql')


def _user():
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name
