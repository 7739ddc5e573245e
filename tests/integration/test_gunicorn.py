"""Production mode: both REST apps served by gunicorn from a config file."""

import functools
import os
import subprocess
import sys
import time

import pytest
import requests

from nimbus.testing import daemons
from nimbus.testing import infra

pytestmark = pytest.mark.integration
infra.require_module('gunicorn')


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


def _serve(app, config, port, log):
    env = dict(os.environ, NIMBUS_CONFIG_FILE=config)
    gunicorn = os.path.join(os.path.dirname(sys.executable), 'gunicorn')
    return subprocess.Popen(
        [
            gunicorn,
            '--workers',
            '2',
            '--bind',
            '127.0.0.1:%d' % port,
            '--log-file',
            log,
        ]
        + _no_control_socket()
        + [app],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait(url, proc, log):
    # The first request builds the app (placement migrates its database),
    # which can take a while on MariaDB: a slow answer is not a dead one.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, open(log).read()[-3000:]
        try:
            return requests.get(url, timeout=60)
        except requests.RequestException:
            time.sleep(0.3)
    raise AssertionError('gunicorn did not answer\n' + open(log).read())


def test_gunicorn_serves_both_apps(tmp_path, fresh):
    databases = {
        name: fresh.database('mysql')
        for name in ('api', 'cell0', 'cell1', 'placement')
    }
    cloud = daemons.DaemonCloud(
        str(tmp_path), fresh.vhost(), fresh.vhost(), databases, hosts=0
    )
    cloud.prepare()
    config = os.path.join(str(tmp_path), 'manage.conf')
    procs = []
    try:
        procs.append(
            _serve(
                'nimbus.placement.wsgi:application',
                config,
                cloud.placement_port,
                str(tmp_path / 'placement.log'),
            )
        )
        procs.append(
            _serve(
                'nimbus.api.wsgi:application',
                config,
                cloud.api_port,
                str(tmp_path / 'api.log'),
            )
        )
        root = _wait(
            cloud.placement_url + '/',
            procs[0],
            str(tmp_path / 'placement.log'),
        )
        assert root.json()['versions'][0]['max_version'] == '1.39'
        headers = {
            'X-Auth-Token': 'admin',
            'OpenStack-API-Version': 'placement latest',
        }
        traits = requests.get(
            cloud.placement_url + '/traits', headers=headers, timeout=10
        ).json()['traits']
        assert 'HW_CPU_X86_AVX2' in traits
        _wait(cloud.api_url + '/', procs[1], str(tmp_path / 'api.log'))
        flavors = requests.get(
            cloud.api_url + '/v2.1/flavors',
            headers={'X-Auth-Token': 'admin:admin'},
            timeout=10,
        )
        assert flavors.status_code == 200 and flavors.json() == {'flavors': []}
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
