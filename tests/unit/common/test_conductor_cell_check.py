"""``nimbus-conductor --cell NAME`` checks its config against the cell's
mapping when it can see the API database."""

import os
import subprocess
import sys

import pytest

from nimbus.cmd import conductor
from nimbus.common import config
from nimbus.common import db as common_db
from nimbus.db import cell_mappings
from nimbus import db as nimbus_db

CELL_BUS = 'rabbit://nimbus:secret@mq:5672/cell1'


@pytest.fixture
def mapped(tmp_path):
    api_url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
    cell_url = 'sqlite:///%s' % (tmp_path / 'cell1.sqlite')
    nimbus_db.sync_api(api_url)
    cell_mappings.create_cell(
        common_db.get_database(api_url), 'cell1', CELL_BUS, cell_url
    )

    def conf(bus=CELL_BUS, database=cell_url, api=api_url):
        values = {
            'DEFAULT': {'transport_url': bus},
            'database': {'connection': database},
        }
        if api:
            values['api_database'] = {'connection': api}
        return config.build_conf([], overrides=values)

    yield conf, tmp_path
    common_db.dispose_all()


def test_a_config_that_matches_the_mapping_passes(mapped):
    conf, _ = mapped
    assert conductor.check_cell_mapping(conf(), 'cell1') is None
    # Other credentials, same broker and vhost: the same bus.
    assert (
        conductor.check_cell_mapping(
            conf(bus='rabbit://other:pw@mq/cell1'), 'cell1'
        )
        is None
    )


def test_mismatches_are_named(mapped):
    conf, tmp_path = mapped
    assert conductor.check_cell_mapping(conf(), 'cell9') == (
        'cell cell9 is not mapped in the API database (nimbus-manage cell '
        'create --name cell9 ...)'
    )
    reason = conductor.check_cell_mapping(
        conf(bus='rabbit://nimbus:secret@mq:5672/nimbus'), 'cell1'
    )
    assert reason == (
        "cell cell1's mapping has transport URL "
        'rabbit://nimbus:***@mq:5672/cell1 but this config '
        'gives rabbit://nimbus:***@mq:5672/nimbus'
    )
    reason = conductor.check_cell_mapping(
        conf(database='sqlite:///%s' % (tmp_path / 'other.sqlite')), 'cell1'
    )
    assert 'another database' in reason


def test_without_an_api_database_nothing_is_checked(mapped):
    conf, _ = mapped
    assert (
        conductor.check_cell_mapping(
            conf(bus='rabbit://h/elsewhere', api=None), 'cell1'
        )
        is None
    )


def test_the_daemon_exits_with_one_line_on_a_mismatch(mapped):
    _conf, tmp_path = mapped
    path = tmp_path / 'nimbus.conf'
    path.write_text(
        '[DEFAULT]\ntransport_url = rabbit://nimbus:secret@mq:5672/nimbus\n'
        '[api_database]\nconnection = sqlite:///%s\n'
        '[database]\nconnection = sqlite:///%s\n'
        % (tmp_path / 'api.sqlite', tmp_path / 'cell1.sqlite')
    )
    result = subprocess.run(
        [
            sys.executable,
            '-m',
            'nimbus.cmd.conductor',
            '--config-file',
            str(path),
            '--cell',
            'cell1',
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONWARNINGS='ignore'),
    )
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        "nimbus-conductor --cell cell1: cell cell1's mapping has transport URL"
    )


def test_a_cell_conductor_records_the_configured_host(tmp_path, monkeypatch):
    """``[DEFAULT] host = cell1-conductor-1`` is the host its service record
    names (it was ``cell1-conductor-1-cell1``); the RPC server name keeps
    the cell's name."""
    config = tmp_path / 'cell1.conf'
    config.write_text(
        '[DEFAULT]\nhost = cell1-conductor-1\ntransport_url = %s\n'
        '[database]\nconnection = sqlite:///%s/cell1.sqlite\n'
        % (CELL_BUS, tmp_path)
    )
    built = {}

    class Started:
        def start(self):
            return self

    def build(conf, **kwargs):
        built.update(kwargs)
        return Started()

    monkeypatch.setattr(conductor.services, 'cell_conductor_service', build)
    monkeypatch.setattr(
        conductor.service, 'run_until_signalled', lambda svcs, conf=None: None
    )
    # not the test process's heap
    monkeypatch.setattr(conductor.common, 'settle', lambda: None)
    conductor.main(['--config-file', str(config), '--cell', 'cell1'])
    assert built == {
        'host': 'cell1-conductor-1',
        'server': 'cell1-conductor-1-cell1',
    }
