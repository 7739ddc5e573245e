"""The WSGI entry points as operators deploy them: each HTTP service
(``nimbus.wsgi.placement``, ``.api``, ``.accelerator``) under gunicorn with
the shipped settings (etc/nimbus/examples/wsgi/gunicorn.conf.py) and two
workers, its config found through ``OS_NIMBUS_CONFIG_DIR`` or
``NIMBUS_CONFIG_FILE``; what one worker writes the other serves."""

import concurrent.futures
import functools
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import uuid

import pytest
import requests

from nimbus.testing import daemons
from nimbus.testing import infra

pytestmark = pytest.mark.integration
infra.require_module('gunicorn')

ROOT = pathlib.Path(__file__).resolve().parents[2]
WSGI_EXAMPLES = ROOT / 'etc' / 'nimbus' / 'examples' / 'wsgi'
GUNICORN_CONF = WSGI_EXAMPLES / 'gunicorn.conf.py'
PLACEMENT = {
    'X-Auth-Token': 'admin',
    'OpenStack-API-Version': 'placement 1.39',
}
ADMIN = {'X-Auth-Token': 'admin:admin'}
ACCEL = {'X-Auth-Token': 'admin', 'X-Roles': 'admin'}


@functools.lru_cache(maxsize=None)
def _no_control_socket():
    # gunicorn 23+ opens a control socket at one fixed path per user; two
    # masters (or parallel test runs) would share it. Older ones have none.
    gunicorn = os.path.join(os.path.dirname(sys.executable), 'gunicorn')
    help_text = subprocess.run(
        [gunicorn, '--help'], capture_output=True, text=True, timeout=60
    ).stdout
    return (
        ['--no-control-socket'] if '--no-control-socket' in help_text else []
    )


def _bin(name):
    """``name`` installed beside this Python (the venv), else on PATH."""
    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.access(path, os.X_OK) else shutil.which(name)


class Served:
    """One WSGI server master (``argv``, logging to ``self.log``) serving
    an app with two workers; ``pid_pattern`` (with ``%(path)s``) finds the
    pid of the worker that answered a GET in its access log."""

    def __init__(self, workdir, name, argv, env, pid_pattern):
        self.port = daemons.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.log = os.path.join(workdir, '%s.log' % name)
        self.access = os.path.join(workdir, '%s-access.log' % name)
        self.pid_pattern = pid_pattern
        # Only ``env`` says where the config is: none inherited.
        environ = {
            k: v
            for k, v in os.environ.items()
            if k not in ('NIMBUS_CONFIG_FILE', 'OS_NIMBUS_CONFIG_DIR')
        }
        self.process = subprocess.Popen(
            argv(self),
            env=dict(environ, **env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @classmethod
    def gunicorn(cls, workdir, app, env):
        """``app`` under gunicorn with the shipped settings, two workers."""
        name = app.split(':')[0].rsplit('.', 1)[-1] + '-gunicorn'
        return cls(
            workdir,
            name,
            lambda s: (
                [_bin('gunicorn'), '-c', str(GUNICORN_CONF)]
                + ['--workers', '2', '--bind', '127.0.0.1:%d' % s.port]
                + ['--access-logfile', s.access, '--error-logfile', s.log]
                + _no_control_socket()
                + [app]
            ),
            env,
            r'<(\d+)> "GET %(path)s[ ?]',
        )

    def tail(self):
        with open(self.log, errors='replace') as f:
            return f.read()[-4000:]

    def wait(self, timeout=180):
        """The answer to ``GET /`` once a worker serves (the shipped
        config builds the app when the worker starts: migrations, a
        broker connection)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.tail()
            try:
                return requests.get(self.url + '/', timeout=60)
            except requests.RequestException:
                time.sleep(0.3)
        raise AssertionError('gunicorn did not answer\n' + self.tail())

    def workers_that_served(self, path):
        """The pids of the workers whose access log shows ``GET path``."""
        pattern = re.compile(self.pid_pattern % {'path': re.escape(path)})
        with open(self.access, errors='replace') as f:
            return set(pattern.findall(f.read()))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait(timeout=10)


def _through_both_workers(served, path, headers, check):
    """GET ``path`` in concurrent rounds (a busy worker leaves the next
    connection to the other) until both workers have answered it; every
    answer passes ``check``."""
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for _ in range(30):
            answers = list(
                pool.map(
                    lambda _: requests.get(
                        served.url + path, headers=headers, timeout=60
                    ),
                    range(16),
                )
            )
            for answer in answers:
                assert answer.status_code == 200, answer.text
                check(answer.json())
            if len(served.workers_that_served(path)) == 2:
                return
    raise AssertionError(
        'one worker answered every %s: %s'
        % (path, served.workers_that_served(path))
    )


def _manage(config, *args):
    result = subprocess.run(
        [sys.executable, '-m', 'nimbus.cmd.manage', '--config-file', config]
        + list(args),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _placement_config(tmp_path):
    """The operator's layout: ``placement.conf`` in a directory (here one
    of our own, named by ``OS_NIMBUS_CONFIG_DIR``), the database synced
    once before the workers start (etc/nimbus/examples/wsgi)."""
    etc = tmp_path / 'etc'
    etc.mkdir()
    config = etc / 'placement.conf'
    config.write_text(
        '[api]\nauth_strategy = noauth2\n'
        '[placement_database]\nconnection = sqlite:///%s\n'
        'sync_on_startup = false\n' % (tmp_path / 'placement.sqlite')
    )
    _manage(str(config), 'db', 'sync', '--database', 'placement')
    return etc


def _placement_serves(served):
    """A provider created through one worker is listed by both."""
    root = served.wait()
    assert root.json()['versions'][0]['max_version'] == '1.39'
    provider = str(uuid.uuid4())
    created = requests.post(
        served.url + '/resource_providers',
        json={'name': 'wsgi-rp', 'uuid': provider},
        headers=PLACEMENT,
        timeout=30,
    )
    assert created.status_code == 200, created.text

    def lists_it(body):
        assert [p['uuid'] for p in body['resource_providers']] == [provider]

    _through_both_workers(served, '/resource_providers', PLACEMENT, lists_it)


def test_placement_under_gunicorn_with_two_workers(tmp_path):
    etc = _placement_config(tmp_path)
    served = Served.gunicorn(
        str(tmp_path),
        'nimbus.wsgi.placement:application',
        {'OS_NIMBUS_CONFIG_DIR': str(etc)},
    )
    try:
        _placement_serves(served)
    finally:
        served.stop()


def test_placement_under_uwsgi_with_two_workers(tmp_path):
    """The shipped uwsgi-placement.ini with only what a deployment changes
    substituted: the address, the config directory; two processes."""
    uwsgi = _bin('uwsgi')
    if uwsgi is None:
        infra.unavailable('uwsgi is not installed (pip install uWSGI)')
    etc = _placement_config(tmp_path)
    lines = []
    for line in (
        (WSGI_EXAMPLES / 'uwsgi-placement.ini').read_text().split('\n')
    ):
        key = line.split('=', 1)[0].strip()
        if key in ('http-socket', 'processes', 'env'):
            continue
        lines.append(line)
    ini = tmp_path / 'uwsgi-placement.ini'

    def argv(served):
        ini.write_text(
            '\n'.join(lines) + '\nhttp-socket = 127.0.0.1:%d\nprocesses = 2\n'
            'env = OS_NIMBUS_CONFIG_DIR=%s\n' % (served.port, etc)
        )
        # the venv's packages; the access log is uWSGI's request log
        return [uwsgi, '--ini', str(ini), '--virtualenv', sys.prefix] + [
            '--logto',
            served.access,
        ]

    served = Served(
        str(tmp_path),
        'placement-uwsgi',
        argv,
        {},
        r'\[pid: (\d+)\|[^\]]*\] [^\n]* GET %(path)s[ ?]',
    )
    served.log = served.access
    try:
        _placement_serves(served)
    finally:
        served.stop()


def test_api_and_accelerator_under_gunicorn_with_two_workers(tmp_path, fresh):
    databases = {
        name: fresh.database('mysql')
        for name in ('api', 'cell0', 'cell1', 'placement')
    }
    cloud = daemons.DaemonCloud(
        str(tmp_path), fresh.vhost(), fresh.vhost(), databases, hosts=0
    )
    cloud.prepare()
    # nimbus-manage's config holds what nimbus-api needs (the API
    # database, the bus); the accelerator gets a file of its own.
    api_config = os.path.join(str(tmp_path), 'manage.conf')
    accel_config = tmp_path / 'accelerator.conf'
    accel_config.write_text(
        '[DEFAULT]\ntransport_url = %s\n'
        '[api]\nauth_strategy = noauth2\n'
        '[accelerator_database]\nconnection = sqlite:///%s\n'
        'sync_on_startup = false\n'
        % (cloud.api_bus, tmp_path / 'accelerator.sqlite')
    )
    _manage(str(accel_config), 'db', 'sync', '--database', 'accelerator')
    api = Served.gunicorn(
        str(tmp_path),
        'nimbus.wsgi.api:application',
        {'NIMBUS_CONFIG_FILE': api_config},
    )
    accel = Served.gunicorn(
        str(tmp_path),
        'nimbus.wsgi.accelerator:application',
        {'NIMBUS_CONFIG_FILE': str(accel_config)},
    )
    try:
        versions = api.wait().json()['versions']
        assert [v['id'] for v in versions] == ['v2.0', 'v2.1']
        flavor = requests.post(
            api.url + '/v2.1/flavors',
            json={
                'flavor': {
                    'name': 'gunicorn.tiny',
                    'ram': 256,
                    'vcpus': 1,
                    'disk': 1,
                }
            },
            headers=ADMIN,
            timeout=30,
        )
        assert flavor.status_code == 200, flavor.text

        def one_flavor(body):
            assert [f['name'] for f in body['flavors']] == ['gunicorn.tiny']

        _through_both_workers(api, '/v2.1/flavors', ADMIN, one_flavor)

        root = accel.wait().json()
        assert root['versions'][0]['max_version'] == '2.3'
        profile = requests.post(
            accel.url + '/v2/device_profiles',
            json=[{'name': 'gpu', 'groups': [{'resources:PGPU': '1'}]}],
            headers=ACCEL,
            timeout=30,
        )
        assert profile.status_code == 201, profile.text

        def one_profile(body):
            assert [p['name'] for p in body['device_profiles']] == ['gpu']

        _through_both_workers(accel, '/v2/device_profiles', ACCEL, one_profile)
    finally:
        api.stop()
        accel.stop()
