"""What an operator installs works: the built wheel and what pip resolves.

The session fixture builds a wheel of this checkout and installs it WITH
its dependencies into a fresh virtual environment made by ``python -m
venv`` without the system site-packages: pip resolves every dependency
from the package index exactly as an operator's ``pip install`` would (its
cache may serve the downloads), from ``setup.cfg``'s ``install_requires``
alone. Nothing of the test environment is visible there (no PYTHONPATH,
no user site, no test extra: ``import pytest`` fails in it), so a run-time
dependency that only the test extra brought in fails here. From a
temporary directory outside the checkout the tests then run:

- ``nimbus-manage db sync`` on every database (API, cell0 and cell1,
  placement, accelerator: SQLite URLs in a config file written here), which
  also needs every alembic ``versions/`` folder in the wheel;
- ``nimbus all-in-one --demo --exit-after-demo``: the command ``make demo``
  runs, with the same flags, so this test proves ``make demo`` on a fresh
  clone (``make demo`` is ``pip install -e .`` of the same setup.cfg into a
  fresh venv, then this command);
- ``--help`` of every console script the installed wheel declares (read
  from its entry points, not from a list here);
- an import of every module of the installed package found by
  :func:`pkgutil.walk_packages`, so no lazily imported module can hide a
  missing dependency.

A folder the wheel leaves out (no ``__init__.py``, no package data rule)
fails here too, where an editable install would hide it.
"""

import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import zipfile

import pytest

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Variables of the test run that would let the venv see the checkout or
# the test environment.
_LEAKING = ('PYTHONPATH', 'PYTHONHOME', 'PYTHONSTARTUP', 'VIRTUAL_ENV')


def _env(env_dir):
    env = {k: v for k, v in os.environ.items() if k not in _LEAKING}
    env['PYTHONNOUSERSITE'] = '1'
    env['COLUMNS'] = '200'
    env['PATH'] = '%s:%s' % (env_dir / 'bin', env.get('PATH', ''))
    return env


def _check(result, what):
    assert result.returncode == 0, '%s exited %d:\n%s\n%s' % (
        what,
        result.returncode,
        result.stdout[-4000:],
        result.stderr[-4000:],
    )
    return result


@pytest.fixture(scope='session')
def wheel_env(tmp_path_factory):
    """``(wheel, venv dir, the venv's site-packages)``: built and
    installed once per session."""
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
    _check(
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
            capture_output=True,
            text=True,
            timeout=300,
        ),
        'pip wheel',
    )
    wheel = next(dist.glob('nimbus-*.whl'))
    env_dir = base / 'venv'
    env = _env(env_dir)
    # python -m venv: no system site-packages; pip from ensurepip.
    _check(
        subprocess.run(
            [sys.executable, '-m', 'venv', str(env_dir)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        ),
        'python -m venv',
    )
    python = env_dir / 'bin' / 'python'
    _check(
        subprocess.run(
            # --no-compile: no .pyc for every module of every dependency
            # up front (most are never imported); Python writes those of
            # the modules the tests below import, as it would for any
            # module, so what is proven stays the same.
            [
                str(python),
                '-m',
                'pip',
                'install',
                '-q',
                '--no-compile',
                str(wheel),
            ],
            cwd=base,
            capture_output=True,
            text=True,
            env=env,
            timeout=840,
        ),
        'pip install %s (with its dependencies)' % wheel.name,
    )
    site = _check(
        subprocess.run(
            [
                str(python),
                '-c',
                'import sysconfig; print(sysconfig.get_paths()["purelib"])',
            ],
            capture_output=True,
            text=True,
            env=env,
        ),
        'sysconfig',
    ).stdout.strip()
    return wheel, env_dir, site


def _run(env_dir, cwd, argv, timeout=300):
    """Run ``argv`` (a console script of the venv or its python) from
    ``cwd``, with nothing of the test environment."""
    return subprocess.run(
        argv,
        cwd=cwd,
        env=_env(env_dir),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _python(env_dir, cwd, code, timeout=300):
    return _run(
        env_dir, cwd, [str(env_dir / 'bin' / 'python'), '-c', code], timeout
    )


def test_the_wheel_carries_migrations_and_package_data(wheel_env):
    wheel, _, _ = wheel_env
    names = set(zipfile.ZipFile(wheel).namelist())
    for base in (
        'nimbus/db/api/migrations',
        'nimbus/db/cell/migrations',
        'nimbus/placement/db/migrations',
        'nimbus/accelerator/db/migrations',
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


def test_the_venv_sees_nothing_of_the_test_environment(wheel_env, tmp_path):
    _, env_dir, site = wheel_env
    cfg = (env_dir / 'pyvenv.cfg').read_text()
    assert 'include-system-site-packages = false' in cfg, cfg
    result = _check(
        _python(
            env_dir,
            tmp_path,
            'import importlib.util, json, sys, nimbus\n'
            'print(json.dumps({"nimbus": nimbus.__file__, "path": sys.path,'
            ' "test_only": [m for m in ("pytest", "hypothesis", "tempest",'
            ' "selenium", "gabbi") if importlib.util.find_spec(m)]}))',
        ),
        'python',
    )
    seen = json.loads(result.stdout)
    assert seen['nimbus'].startswith(site), seen
    assert seen['test_only'] == [], seen
    test_env = os.path.realpath(sys.prefix)
    for entry in seen['path']:
        # '' is the working directory, tmp_path (python -c).
        real = os.path.realpath(entry or tmp_path)
        assert not real.startswith(test_env), entry
        assert not real.startswith(str(ROOT)), entry


def test_the_dashboard_is_served_from_the_wheel(wheel_env, tmp_path):
    _, env_dir, site = wheel_env
    result = _check(
        _python(
            env_dir,
            tmp_path,
            'from nimbus.api.handlers import dashboard as d\n'
            'for name in ("index.html", "dashboard.js", "dashboard.css"):\n'
            '    print(name, len(d._static(name)))\n'
            'print(d.__file__)',
        ),
        'dashboard',
    )
    lines = result.stdout.split()
    assert lines[-1].startswith(site), result.stdout
    sizes = dict(zip(lines[0:6:2], lines[1:6:2], strict=False))
    assert set(sizes) == {'index.html', 'dashboard.js', 'dashboard.css'}
    assert all(int(size) > 500 for size in sizes.values()), sizes


def _tables(path):
    with sqlite3.connect(path) as db:
        return {
            row[0]
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            )
        }


def test_db_sync_of_every_database_from_the_wheel(wheel_env, tmp_path):
    _, env_dir, _ = wheel_env
    manage = str(env_dir / 'bin' / 'nimbus-manage')
    dbs = {
        name: tmp_path / ('%s.db' % name)
        for name in ('api', 'cell0', 'cell1', 'placement', 'accelerator')
    }
    conf = tmp_path / 'nimbus.conf'
    conf.write_text(
        '[api_database]\nconnection = sqlite:///%s\n'
        '[database]\nconnection = sqlite:///%s\n'
        '[placement_database]\nconnection = sqlite:///%s\n'
        '[accelerator_database]\nconnection = sqlite:///%s\n'
        % (dbs['api'], dbs['cell1'], dbs['placement'], dbs['accelerator'])
    )
    first = _check(
        _run(
            env_dir,
            tmp_path,
            [manage, '--config-file', str(conf), 'db', 'sync'],
        ),
        'nimbus-manage db sync',
    )
    for name in (
        'synced: api',
        'synced: cell database of this node',
        'synced: placement',
        'synced: accelerator',
    ):
        assert name in first.stdout, first.stdout
    # cell0 is mapped in the API database; db sync then upgrades it too.
    _check(
        _run(
            env_dir,
            tmp_path,
            [
                manage,
                '--config-file',
                str(conf),
                'cell',
                'create',
                '--name',
                'cell0',
                '--transport-url',
                'none:///',
                '--database-connection',
                'sqlite:///%s' % dbs['cell0'],
            ],
        ),
        'nimbus-manage cell create --name cell0',
    )
    again = _check(
        _run(
            env_dir,
            tmp_path,
            [manage, '--config-file', str(conf), 'db', 'sync'],
        ),
        'nimbus-manage db sync (again)',
    )
    assert 'synced: cell cell0' in again.stdout, again.stdout
    for name, path in dbs.items():
        tables = _tables(path)
        assert 'alembic_version' in tables, (name, tables)
        assert len(tables) > 2, (name, tables)


def test_all_in_one_demo_from_the_wheel(wheel_env, tmp_path):
    """What ``make demo`` runs, with its flags, from the installed wheel."""
    _, env_dir, _ = wheel_env
    result = _run(
        env_dir,
        tmp_path,
        [
            str(env_dir / 'bin' / 'nimbus'),
            'all-in-one',
            '--demo',
            '--exit-after-demo',
            '--state-dir',
            str(tmp_path / 'state'),
            '--api-port',
            '0',
            '--placement-port',
            '0',
        ],
        timeout=600,
    )
    _check(result, 'nimbus all-in-one --demo --exit-after-demo')
    assert 'Where each server landed' in result.stdout
    assert '/dashboard/#token=admin:admin' in result.stdout


def _console_scripts(env_dir, cwd):
    result = _check(
        _python(
            env_dir,
            cwd,
            'import importlib.metadata, json\n'
            'eps = importlib.metadata.distribution("nimbus").entry_points\n'
            'print(json.dumps(sorted(e.name for e in eps'
            ' if e.group == "console_scripts")))',
        ),
        'entry points',
    )
    return json.loads(result.stdout)


# Every console script from the wheel: make test-daemons-full (make test
# imports every module of the installed package and runs the demo from it).
@pytest.mark.daemons_full
def test_every_console_script_answers_help(wheel_env, tmp_path):
    _, env_dir, _ = wheel_env
    scripts = _console_scripts(env_dir, tmp_path)
    assert 'nimbus' in scripts and 'nimbus-manage' in scripts, scripts
    failed = {}
    for name in scripts:
        result = _run(
            env_dir, tmp_path, [str(env_dir / 'bin' / name), '--help']
        )
        if result.returncode != 0 or 'usage: %s' % name not in result.stdout:
            failed[name] = (
                result.returncode,
                result.stdout[-1500:] + result.stderr[-1500:],
            )
    assert not failed, failed


# Alembic's env.py of each migrations folder runs only inside alembic
# (db sync above runs every one of them).
_IMPORT_ALL = """
import importlib, json, pkgutil, traceback
import nimbus

walk_errors, failed, imported, skipped = [], {}, [], []
def onerror(name):
    walk_errors.append(name + ': ' + traceback.format_exc(limit=3))
for info in pkgutil.walk_packages(nimbus.__path__, 'nimbus.', onerror):
    if info.name.endswith('.migrations.env'):
        skipped.append(info.name)
        continue
    try:
        importlib.import_module(info.name)
        imported.append(info.name)
    except BaseException:
        failed[info.name] = traceback.format_exc(limit=5)
print(json.dumps({'imported': imported, 'skipped': skipped,
                  'failed': failed, 'walk_errors': walk_errors}))
"""


def test_every_module_of_the_installed_package_imports(wheel_env, tmp_path):
    _, env_dir, _ = wheel_env
    result = _check(_python(env_dir, tmp_path, _IMPORT_ALL), 'walk_packages')
    report = json.loads(result.stdout.splitlines()[-1])
    # The last line of each traceback names the missing module.
    assert not report['failed'], {
        name: tb.strip().splitlines()[-1]
        for name, tb in report['failed'].items()
    }
    assert not report['walk_errors'], report['walk_errors']
    migrations = {
        p.parent.relative_to(ROOT).as_posix().replace('/', '.')
        for p in (ROOT / 'nimbus').rglob('migrations/env.py')
    }
    assert {m.rsplit('.', 1)[0] for m in report['skipped']} == migrations
    # Every module of the checkout is in the wheel and was imported.
    in_tree = set()
    for path in (ROOT / 'nimbus').rglob('*.py'):
        parts = path.relative_to(ROOT).with_suffix('').parts
        if not (path.parent / '__init__.py').exists():
            continue
        in_tree.add('.'.join(parts[:-1] if parts[-1] == '__init__' else parts))
    imported = set(report['imported']) | set(report['skipped']) | {'nimbus'}
    assert in_tree - imported == set()
