"""Serve OpenStack Placement 16.0.0 from a throwaway venv for comparison.

Used by ``placement_bench.py --compare-openstack-placement``: creates (or
reuses) ``/tmp/openstack-placement-16-venv``, installs
``openstack-placement==16.0.0`` and cheroot into it, writes a config with a
fresh database of the same engine as Nimbus used, serves Placement's own WSGI
app (``placement.wsgi.init_application``) with cheroot in a subprocess and
runs the same load against it.
"""

import os
import socket
import subprocess
import sys
import time

import requests

VENV = '/tmp/openstack-placement-16-venv'
SERVE = r'''
import os, sys
from cheroot import wsgi
from placement.wsgi import init_application
app = init_application()
server = wsgi.Server(('127.0.0.1', int(sys.argv[1])), app, numthreads=16)
print('serving', flush=True)
server.start()
'''


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def ensure_venv(extra=()):
    python = os.path.join(VENV, 'bin', 'python')
    if not os.path.exists(python):
        subprocess.run([sys.executable, '-m', 'venv', VENV], check=True)
    subprocess.run([python, '-m', 'pip', 'install', '-q',
                    'openstack-placement==16.0.0', 'cheroot', *extra],
                   check=True)
    return python


def compare(args, db_url, threads, run):
    """Run the load against OpenStack Placement on the fresh database
    ``db_url`` with ``threads`` populate threads; None if it cannot run."""
    workdir = os.path.dirname(db_url.split(':///', 1)[-1]) \
        if db_url.startswith('sqlite') else None
    import tempfile
    workdir = workdir or tempfile.mkdtemp(prefix='openstack-placement-')
    extra = []
    if db_url.startswith('mysql'):
        extra.append('PyMySQL')
    elif db_url.startswith('postgresql'):
        extra.append('psycopg[binary]')
    try:
        python = ensure_venv(extra)
    except (subprocess.CalledProcessError, OSError) as exc:
        print('openstack-placement==16.0.0 could not be installed: %s' % exc)
        return None
    confdir = os.path.join(workdir, 'openstack-placement')
    os.makedirs(confdir, exist_ok=True)
    with open(os.path.join(confdir, 'placement.conf'), 'w') as f:
        f.write('[DEFAULT]\ndebug = False\n[api]\nauth_strategy = noauth2\n'
                '[placement_database]\nconnection = %s\n'
                'sync_on_startup = True\n' % db_url)
    script = os.path.join(confdir, 'serve.py')
    with open(script, 'w') as f:
        f.write(SERVE)
    port = _free_port()
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=confdir)
    log = open(os.path.join(confdir, 'server.log'), 'w')
    proc = subprocess.Popen([python, script, str(port)], env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    url = 'http://127.0.0.1:%d' % port
    try:
        deadline = time.time() + 120
        while True:
            if proc.poll() is not None:
                print('OpenStack Placement failed to start; see %s'
                      % log.name)
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
        return run(url, args.providers, threads, args.repeat,
                   'openstack-placement-16.0.0')
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
