"""nimbus.testing.infra: a missing service skips, or fails under CI.

Runs a small test file in a pytest subprocess, pointed at services that
are not there (a closed port, an unknown module), once without CI (every
test skips with a one-line reason) and once with CI=true (every test
fails). Needs none of the real services itself.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from nimbus.testing import daemons

PROBES = """
from nimbus.testing import infra


def test_rabbit():
    infra.rabbit_vhost()


def test_mysql():
    infra.mysql_database()


def test_postgresql():
    infra.postgresql_database()


def test_module():
    infra.require_module('nimbus_no_such_module')
"""


def _run(tmp_path, env):
    (tmp_path / 'test_probes.py').write_text(textwrap.dedent(PROBES))
    closed = daemons.free_port()
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ('CI', 'NIMBUS_TEST_PG_URL')
    }
    environ.update(
        {
            'NIMBUS_TEST_RABBIT_PORT': str(closed),
            'NIMBUS_TEST_MYSQL_URL': 'mysql+pymysql://root@127.0.0.1:%d'
            % closed,
            'NIMBUS_TEST_POSTGRESQL_URL': 'postgresql+psycopg://postgres@'
            '127.0.0.1:%d' % closed,
        }
    )
    environ.update(env)
    return subprocess.run(
        [
            sys.executable,
            '-m',
            'pytest',
            '-q',
            '-rsf',
            '-p',
            'no:randomly',
            '-p',
            'no:cacheprovider',
            '-o',
            'addopts=',
            str(tmp_path),
        ],
        cwd=str(tmp_path),
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_missing_services_skip_with_one_line_reasons(tmp_path):
    result = _run(tmp_path, {})
    assert result.returncode == 0, result.stdout + result.stderr
    assert '4 skipped' in result.stdout, result.stdout
    skips = [
        line
        for line in result.stdout.splitlines()
        if line.startswith('SKIPPED')
    ]
    assert len(skips) == 4, result.stdout
    for word in ('RabbitMQ', 'mysql', 'postgresql', 'nimbus_no_such_module'):
        assert any(word in line for line in skips), (word, skips)


@pytest.mark.parametrize('ci', ['true', '1', 'yes'])
def test_missing_services_fail_under_ci(tmp_path, ci):
    result = _run(tmp_path, {'CI': ci})
    assert result.returncode == 1, result.stdout + result.stderr
    assert '4 failed' in result.stdout, result.stdout
    assert 'CI=%s and RabbitMQ is not listening' % ci in result.stdout


def test_old_postgresql_variable_is_still_read(tmp_path):
    closed = daemons.free_port()
    url = 'postgresql+psycopg://postgres@127.0.0.1:%d' % closed
    environ = {
        k: v
        for k, v in os.environ.items()
        if k != 'NIMBUS_TEST_POSTGRESQL_URL'
    }
    environ['NIMBUS_TEST_PG_URL'] = url
    code = (
        'from nimbus.testing import infra; print(infra.server_url('
        '"postgresql"))'
    )
    out = subprocess.run(
        [sys.executable, '-c', code],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == url, out.stderr
    environ['NIMBUS_TEST_POSTGRESQL_URL'] = url + '0'
    out = subprocess.run(
        [sys.executable, '-c', code],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == url + '0', out.stderr
