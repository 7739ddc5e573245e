"""OpenStack Placement 16.0.0 and nimbus-placement-api as HTTP servers.

Used by the differential conformance test. The peer is installed once into a
venv cached under ``$XDG_CACHE_HOME`` (default ``~/.cache``)
``/nimbus-test/openstack-placement-16.0.0`` with ``python -m venv`` and pip
(which resolves from whatever index pip is configured with); later runs reuse
it. A failed install skips the test, or fails it with ``CI=true`` (see
:mod:`nimbus.testing.infra`). Both servers run on their own SQLite file.
"""

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import requests

from nimbus.testing import infra

PEER_VERSION = '16.0.0'
PEER_PACKAGES = ('openstack-placement==%s' % PEER_VERSION, 'cheroot')
ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)

# Served by the peer venv's interpreter: Placement's own WSGI entry point on
# cheroot, exactly as an operator would run it behind any WSGI server.
_SERVE = r"""
import sys
from cheroot import wsgi
from placement.wsgi import init_application
server = wsgi.Server(('127.0.0.1', int(sys.argv[1])), init_application(),
                     numthreads=4)
server.start()
"""


def cache_dir():
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(
        os.path.expanduser('~'), '.cache'
    )
    return os.path.join(
        base, 'nimbus-test', 'openstack-placement-%s' % PEER_VERSION
    )


def _usable(venv):
    python = os.path.join(venv, 'bin', 'python')
    if not os.path.exists(os.path.join(venv, '.complete')):
        return None
    probe = subprocess.run(
        [python, '-c', 'import placement.wsgi, cheroot'],
        capture_output=True,
        timeout=120,
    )
    return python if probe.returncode == 0 else None


def peer_python():
    """The interpreter of a venv with the peer installed (cached)."""
    venv = cache_dir()
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    with open(venv + '.lock', 'w') as lock:
        # one installer at a time (pytest-xdist workers, parallel runs)
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = _usable(venv)
        if python:
            return python
        shutil.rmtree(venv, ignore_errors=True)
        work = tempfile.mkdtemp(prefix='venv-', dir=os.path.dirname(venv))
        try:
            steps = (
                [sys.executable, '-m', 'venv', work],
                [
                    os.path.join(work, 'bin', 'python'),
                    '-m',
                    'pip',
                    'install',
                    '-q',
                    *PEER_PACKAGES,
                ],
            )
            for cmd in steps:
                try:
                    result = subprocess.run(
                        cmd, capture_output=True, text=True, timeout=900
                    )
                except (OSError, subprocess.TimeoutExpired) as exc:
                    infra.unavailable(
                        'cannot install OpenStack Placement '
                        '%s: %s' % (PEER_VERSION, exc)
                    )
                if result.returncode != 0:
                    last = (result.stderr.strip().splitlines() or ['?'])[-1]
                    infra.unavailable(
                        'cannot install OpenStack Placement '
                        '%s: %s' % (PEER_VERSION, last[:200])
                    )
            open(os.path.join(work, '.complete'), 'w').close()
            # a venv records its own path in its scripts but not in
            # bin/python or site-packages, which is all we use
            os.rename(work, venv)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        python = _usable(venv)
        if not python:
            infra.unavailable(
                'OpenStack Placement %s installed into %s but '
                'does not import' % (PEER_VERSION, venv)
            )
        return python


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _server(cmd, env, logpath, what):
    port = _free_port()
    log = open(logpath, 'w')
    proc = subprocess.Popen(
        cmd + [str(port)],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = 'http://127.0.0.1:%d' % port
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise AssertionError(
                    '%s exited at start-up:\n%s'
                    % (what, open(logpath).read()[-3000:])
                )
            try:
                if requests.get(url + '/', timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, '%s did not start' % what
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextlib.contextmanager
def openstack_placement(workdir, extra_conf=''):
    """Serve OpenStack Placement on a fresh SQLite file; yields its URL.
    ``extra_conf`` is appended to its config file (e.g. ``[cors]``)."""
    python = peer_python()
    confdir = os.path.join(workdir, 'peer')
    os.makedirs(confdir)
    with open(os.path.join(confdir, 'placement.conf'), 'w') as f:
        f.write(
            '[DEFAULT]\ndebug = False\n[api]\nauth_strategy = noauth2\n'
            '[placement_database]\nconnection = sqlite:///%s\n'
            'sync_on_startup = True\n%s'
            % (os.path.join(confdir, 'placement.sqlite'), extra_conf)
        )
    script = os.path.join(confdir, 'serve.py')
    with open(script, 'w') as f:
        f.write(_SERVE)
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=confdir)
    with _server(
        [python, script],
        env,
        os.path.join(confdir, 'server.log'),
        'OpenStack Placement %s' % PEER_VERSION,
    ) as url:
        yield url


@contextlib.contextmanager
def nimbus_placement(workdir, extra_conf=''):
    """Serve nimbus-placement-api on a fresh SQLite file; yields its URL.
    ``extra_conf`` is appended to its config file."""
    confdir = os.path.join(workdir, 'nimbus')
    os.makedirs(confdir)
    conf = os.path.join(confdir, 'nimbus.conf')
    with open(conf, 'w') as f:
        f.write(
            '[api]\nauth_strategy = noauth2\n'
            '[placement_database]\nconnection = sqlite:///%s\n%s'
            % (os.path.join(confdir, 'placement.sqlite'), extra_conf)
        )
    cmd = [
        sys.executable,
        '-m',
        'nimbus.cmd.placement_api',
        '--config-file',
        conf,
        '--host',
        '127.0.0.1',
        '--port',
    ]
    with _server(
        cmd,
        dict(os.environ),
        os.path.join(confdir, 'server.log'),
        'nimbus-placement-api',
    ) as url:
        yield url


class Client:
    """A keep-alive session to one server, admin token, chosen microversion."""

    def __init__(self, url):
        self.url = url
        self.session = requests.Session()
        self.session.headers.update(
            {'x-auth-token': 'admin', 'accept': 'application/json'}
        )

    def call(self, method, path, mv='1.39', **kw):
        headers = {'openstack-api-version': 'placement %s' % mv}
        return self.session.request(
            method, self.url + path, headers=headers, timeout=120, **kw
        )

    def close(self):
        self.session.close()
