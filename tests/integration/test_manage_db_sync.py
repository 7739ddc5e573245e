"""``nimbus-manage db sync --database NAME`` syncs that database only, and
says which option is missing when the config does not name it (the README
runs one ``db sync`` per database, each from the config that names it).

SQLite files stand for the databases: the command is the same on MariaDB,
which test_install_steps.py runs through the install guide.
"""

import subprocess
import sys

import sqlalchemy as sa


def _manage(config, *args):
    return subprocess.run(
        [sys.executable, '-m', 'nimbus.cmd.manage', '--config-file', config]
        + list(args),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _synced(stdout):
    # oslo.log writes to stdout too.
    return [line for line in stdout.splitlines() if line.startswith('synced')]


def _tables(path):
    if not path.exists():
        return set()
    engine = sa.create_engine('sqlite:///%s' % path)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _config(tmp_path, **databases):
    groups = {
        'api': 'api_database',
        'placement': 'placement_database',
        'accelerator': 'accelerator_database',
    }
    path = tmp_path / 'nimbus.conf'
    path.write_text(
        ''.join(
            '[%s]\nconnection = sqlite:///%s\n' % (groups[name], tmp_path / f)
            for name, f in databases.items()
        )
    )
    return str(path)


def test_each_database_alone(tmp_path):
    config = _config(tmp_path, api='api.db', placement='placement.db')
    result = _manage(config, 'db', 'sync', '--database', 'placement')
    assert result.returncode == 0, result.stderr
    assert _synced(result.stdout) == ['synced: placement']
    assert 'resource_providers' in _tables(tmp_path / 'placement.db')
    assert _tables(tmp_path / 'api.db') == set()

    result = _manage(config, 'db', 'sync', '--database', 'api')
    assert result.returncode == 0, result.stderr
    assert _synced(result.stdout) == ['synced: api']
    assert 'cell_mappings' in _tables(tmp_path / 'api.db')

    # No cell mapped yet: nothing to do, and it says so.
    result = _manage(config, 'db', 'sync', '--database', 'cells')
    assert result.returncode == 0, result.stderr
    assert 'no cell is mapped yet' in result.stdout


def test_a_database_the_config_does_not_name_is_one_line(tmp_path):
    config = _config(tmp_path, api='api.db')
    result = _manage(config, 'db', 'sync', '--database', 'placement')
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        'db sync --database placement: this config does not set '
        '[placement_database] connection'
    )
    assert _tables(tmp_path / 'api.db') == set()
    result = _manage(config, 'db', 'sync', '--database', 'accelerator')
    assert result.returncode == 1
    assert '[accelerator_database] connection' in result.stderr


def test_without_database_every_one_the_config_names(tmp_path):
    config = _config(tmp_path, api='api.db', accelerator='accel.db')
    result = _manage(config, 'db', 'sync')
    assert result.returncode == 0, result.stderr
    assert _synced(result.stdout) == ['synced: api', 'synced: accelerator']
