"""What an operator installs works: a built wheel, not the editable tree.

The test builds a wheel of this checkout, installs it (without its
dependencies) into a fresh virtual environment whose only other path is the
test environment's site-packages (plain path, so the editable install's
finder there never runs), and from a directory outside the checkout runs:

- ``nimbus-manage db sync`` on the API, a cell and placement databases, which
  needs every alembic ``versions/`` folder in the wheel;
- ``nimbus all-in-one --demo --exit-after-demo``, the README's first command.

A folder the wheel leaves out (no ``__init__.py``, no package data rule)
fails here, where an editable install would hide it.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile

import pytest

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def wheel_env(tmp_path_factory):
    base = tmp_path_factory.mktemp('wheel')
    # A copy of the sources without build/ or *.egg-info: setuptools would
    # reuse a stale build/lib and mask a folder the package leaves out.
    source = base / 'source'
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            '.git',
            '.venv',
            'build',
            'dist',
            '*.egg-info',
            'state',
            '__pycache__',
            '.hypothesis',
            '.pytest_cache',
        ),
    )
    dist = base / 'dist'
    subprocess.run(
        [
            sys.executable,
            '-m',
            'pip',
            'wheel',
            '--no-deps',
            '--no-build-isolation',
            '-q',
            '-w',
            str(dist),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next(dist.glob('nimbus-*.whl'))
    env_dir = base / 'venv'
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / 'bin' / 'python'
    site = subprocess.run(
        [
            str(python),
            '-c',
            'import sysconfig; print(sysconfig.get_paths()["purelib"])',
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # The dependencies come from the test environment, as a plain path:
    # its .pth files (the editable install of nimbus) are not processed.
    pathlib.Path(site, 'test-deps.pth').write_text(
        sysconfig.get_paths()['purelib'] + '\n'
    )
    subprocess.run(
        [
            sys.executable,
            '-m',
            'pip',
            'install',
            '--no-deps',
            '-q',
            '--target',
            site,
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return wheel, env_dir, site


def _run(env_dir, cwd, *argv, timeout=300):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ('PYTHONPATH', 'VIRTUAL_ENV')
    }
    env['COLUMNS'] = '200'
    env['PATH'] = '%s:%s' % (env_dir / 'bin', env.get('PATH', ''))
    return subprocess.run(
        [
            str(env_dir / 'bin' / 'python'),
            '-c',
            'import sys; from %s import main; sys.exit(main())' % argv[0],
        ]
        + list(argv[1:]),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_wheel_carries_migrations_and_package_data(wheel_env):
    wheel, _, _ = wheel_env
    names = set(zipfile.ZipFile(wheel).namelist())
    for base in (
        'nimbus/db/api/migrations',
        'nimbus/db/cell/migrations',
        'nimbus/placement/db/migrations',
    ):
        assert base + '/script.py.mako' in names
        versions = [
            n
            for n in names
            if n.startswith(base + '/versions/')
            and n.endswith('.py')
            and not n.endswith('__init__.py')
        ]
        assert versions, 'no migration of %s in the wheel' % base
    for asset in ('index.html', 'dashboard.js', 'dashboard.css'):
        assert 'nimbus/api/dashboard/static/' + asset in names, asset
    assert not any(n.startswith('tests/') for n in names)


def test_the_dashboard_is_served_from_the_wheel(wheel_env, tmp_path):
    _, env_dir, site = wheel_env
    result = subprocess.run(
        [
            str(env_dir / 'bin' / 'python'),
            '-c',
            'from nimbus.api.handlers import dashboard as d\n'
            'for name in ("index.html", "dashboard.js", "dashboard.css"):\n'
            '    print(name, len(d._static(name)))\n'
            'print(d.__file__)',
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.split()
    assert lines[-1].startswith(site), result.stdout
    sizes = dict(zip(lines[0:6:2], lines[1:6:2]))
    assert set(sizes) == {'index.html', 'dashboard.js', 'dashboard.css'}
    assert all(int(size) > 500 for size in sizes.values()), sizes


def test_the_installed_package_is_the_wheel(wheel_env, tmp_path):
    _, env_dir, site = wheel_env
    result = subprocess.run(
        [
            str(env_dir / 'bin' / 'python'),
            '-c',
            'import nimbus; print(nimbus.__file__)',
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip().startswith(site), result.stdout


def test_db_sync_from_the_wheel(wheel_env, tmp_path):
    _, env_dir, _ = wheel_env
    conf = tmp_path / 'nimbus.conf'
    conf.write_text(
        '[api_database]\nconnection = sqlite:///%(d)s/api.db\n'
        '[database]\nconnection = sqlite:///%(d)s/cell1.db\n'
        '[placement_database]\nconnection = sqlite:///%(d)s/placement.db\n'
        % {'d': tmp_path}
    )
    result = _run(
        env_dir,
        tmp_path,
        'nimbus.cmd.manage',
        '--config-file',
        str(conf),
        'db',
        'sync',
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for name in (
        'synced: api',
        'synced: cell database of this node',
        'synced: placement',
    ):
        assert name in result.stdout


def test_all_in_one_demo_from_the_wheel(wheel_env, tmp_path):
    _, env_dir, _ = wheel_env
    result = _run(
        env_dir,
        tmp_path,
        'nimbus.cmd.cli',
        'all-in-one',
        '--demo',
        '--exit-after-demo',
        '--state-dir',
        str(tmp_path / 'state'),
        '--api-port',
        '0',
        '--placement-port',
        '0',
    )
    assert result.returncode == 0, (
        result.stdout[-3000:] + result.stderr[-3000:]
    )
    assert 'Where each server landed' in result.stdout
    assert '/dashboard/#token=admin:admin' in result.stdout
