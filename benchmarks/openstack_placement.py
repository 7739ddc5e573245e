"""Serve OpenStack Placement 16.0.0 from a venv for comparison.

Used by ``placement_bench.py --compare-openstack-placement``: installs
``openstack-placement==16.0.0`` and cheroot (plus the database driver) into
a venv, writes a config with the database it is given, serves Placement's
own WSGI app (``placement.wsgi.init_application``) with cheroot in a
subprocess and runs the same load against it.

The venv is ``--openstack-venv DIR`` when given: created if missing, reused
as it is when it already imports Placement, cheroot and the driver (the
install takes about a minute), and kept afterwards. Without it a fresh
temporary venv is made and removed at the end.
"""

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import requests

import proc_cpu

PACKAGES = ('openstack-placement==16.0.0', 'cheroot')
DRIVERS = {
    'mysql': ('PyMySQL', 'pymysql'),
    'postgresql': ('psycopg[binary]', 'psycopg'),
}
SERVE = r"""
import os, sys
from cheroot import wsgi
from placement.wsgi import init_application
app = init_application()
server = wsgi.Server(('127.0.0.1', int(sys.argv[1])), app,
                     numthreads=int(sys.argv[2]))
print('serving', flush=True)
server.start()
"""


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _driver(db_url):
    return DRIVERS.get(db_url.split(':', 1)[0].split('+', 1)[0])


def ensure_venv(venv, db_url):
    """The interpreter of ``venv`` with Placement, cheroot and the driver
    of ``db_url``; installs only what a reuse finds missing."""
    python = os.path.join(venv, 'bin', 'python')
    driver = _driver(db_url)
    modules = ['placement.wsgi', 'cheroot'] + ([driver[1]] if driver else [])
    if os.path.exists(python):
        probe = subprocess.run(
            [python, '-c', 'import %s' % ', '.join(modules)],
            capture_output=True,
        )
        if probe.returncode == 0:
            print('reusing OpenStack Placement venv %s' % venv, flush=True)
            return python
    else:
        subprocess.run([sys.executable, '-m', 'venv', venv], check=True)
    print('installing openstack-placement==16.0.0 into %s' % venv, flush=True)
    subprocess.run(
        [
            python,
            '-m',
            'pip',
            'install',
            '-q',
            *PACKAGES,
            *([driver[0]] if driver else []),
        ],
        check=True,
    )
    return python


@contextlib.contextmanager
def venv_dir(path=None):
    """``path`` (kept), or a temporary directory removed afterwards."""
    if path:
        yield os.path.abspath(path)
        return
    tmp = tempfile.mkdtemp(prefix='openstack-placement-venv-')
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compare(args, db_url, threads, run):
    """Run the load against OpenStack Placement on the fresh database
    ``db_url`` with ``threads`` populate threads; None if it cannot run.
    The venv is ``args.openstack_venv`` or a temporary one."""
    with venv_dir(getattr(args, 'openstack_venv', None)) as venv:
        return _compare(args, venv, db_url, threads, run)


def _compare(args, venv, db_url, threads, run):
    workdir = (
        os.path.dirname(db_url.split(':///', 1)[-1])
        if db_url.startswith('sqlite')
        else None
    )
    workdir = workdir or tempfile.mkdtemp(prefix='openstack-placement-')
    try:
        python = ensure_venv(venv, db_url)
    except (subprocess.CalledProcessError, OSError) as exc:
        print('openstack-placement==16.0.0 could not be installed: %s' % exc)
        return None
    confdir = os.path.join(workdir, 'openstack-placement')
    os.makedirs(confdir, exist_ok=True)
    with open(os.path.join(confdir, 'placement.conf'), 'w') as f:
        f.write(
            '[DEFAULT]\ndebug = False\n[api]\nauth_strategy = noauth2\n'
            '[placement_database]\nconnection = %s\n'
            'sync_on_startup = True\n' % db_url
        )
    script = os.path.join(confdir, 'serve.py')
    with open(script, 'w') as f:
        f.write(SERVE)
    port = _free_port()
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=confdir)
    log = open(os.path.join(confdir, 'server.log'), 'w')
    proc = subprocess.Popen(
        [python, script, str(port), str(args.server_threads)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = 'http://127.0.0.1:%d' % port
    try:
        deadline = time.time() + 120
        while True:
            if proc.poll() is not None:
                print('OpenStack Placement failed to start; see %s' % log.name)
                return None
            try:
                if requests.get(url + '/', timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.time() > deadline:
                print('OpenStack Placement did not answer within 120 s')
                return None
            time.sleep(0.5)
        return run(
            url,
            args.providers,
            threads,
            args.repeat,
            'openstack-placement-16.0.0',
            server_cpu=proc_cpu.cpu_meter([proc.pid]),
            db_cpu=proc_cpu.cpu_meter(proc_cpu.database_pids(db_url)),
        )
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
