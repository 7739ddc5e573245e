"""The example configs in etc/nimbus/examples cannot rot: every section and
option they set is one Nimbus (or the library that reads it) registers, a
compute's config holds no database, and the systemd units start existing
commands with existing example files."""

import configparser
import pathlib

from keystoneauth1 import loading as ks_loading
from keystonemiddleware import auth_token
from oslo_config import cfg
import pytest

from nimbus.common import config

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / 'etc' / 'nimbus' / 'examples'
UNITS = ROOT / 'etc' / 'systemd'
NOAUTH = EXAMPLES / 'noauth'
# The Keystone set and the noauth2 set of a single-machine trial.
CONFIGS = sorted(EXAMPLES.glob('*.conf')) + sorted(NOAUTH.glob('*.conf'))


def _known_options():
    """``{group: {option names}}`` of a fully registered Nimbus config,
    plus keystonemiddleware's and the password plugin's options, which
    ``[keystone_authtoken]`` (and an ``auth_section`` naming it) holds."""
    conf = config.build_conf([])
    known = {'DEFAULT': set()}
    for name in conf:
        if isinstance(conf[name], cfg.ConfigOpts.GroupAttr):
            known[name] = set(conf[name])
        else:
            known['DEFAULT'].add(name)
    keystone = set()
    for _, opts in auth_token.list_opts():
        keystone.update(o.dest for o in opts)
    keystone.update(o.dest for o in ks_loading.get_auth_common_conf_options())
    keystone.update(
        o.dest for o in ks_loading.get_auth_plugin_conf_options('password')
    )
    known['keystone_authtoken'] = keystone
    return known


def _read(path):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return parser


def test_there_is_one_config_per_daemon_of_a_two_cell_cloud():
    assert {p.name for p in EXAMPLES.glob('*.conf')} == {
        'nimbus.conf',
        'placement.conf',
        'cell1.conf',
        'cell2.conf',
        'compute.conf',
        'accelerator.conf',
        'accelerator-agent.conf',
    }


def test_the_noauth_set_has_a_config_per_daemon_of_one_cell():
    assert {p.name for p in NOAUTH.glob('*.conf')} == {
        'nimbus.conf',
        'placement.conf',
        'cell1.conf',
        'compute.conf',
        'accelerator.conf',
        'accelerator-agent.conf',
    }


def test_the_noauth_set_needs_no_keystone():
    for path in NOAUTH.glob('*.conf'):
        parser = _read(path)
        assert not parser.has_section('keystone_authtoken'), path.name
        conf = config.build_conf(['--config-file', str(path)])
        # What a daemon serves (the REST APIs) and what it calls.
        assert conf.placement_client.auth_strategy == 'noauth2', path.name
        assert conf.compute_client.auth_strategy == 'noauth2', path.name
        if parser.has_section('wsgi') or parser.has_section('accelerator_api'):
            assert conf.api.auth_strategy == 'noauth2', path.name


def _id(path):
    return str(path.relative_to(EXAMPLES))


@pytest.mark.parametrize('path', CONFIGS, ids=_id)
def test_every_option_exists(path):
    known = _known_options()
    parser = _read(path)
    unknown = []
    for section in ['DEFAULT'] + parser.sections():
        names = (
            parser.defaults()
            if section == 'DEFAULT'
            else {
                k: v
                for k, v in parser.items(section)
                if k not in parser.defaults()
            }
        )
        for name in names:
            group = section.replace('-', '_')
            if name.replace('-', '_') not in known.get(group, ()):
                unknown.append('[%s] %s' % (section, name))
    assert unknown == []


@pytest.mark.parametrize('path', CONFIGS, ids=_id)
def test_every_config_parses_with_nimbus(path):
    conf = config.build_conf(['--config-file', str(path)])
    assert conf.host


@pytest.mark.parametrize('examples', [EXAMPLES, NOAUTH], ids=_id)
def test_a_compute_holds_no_database_and_a_cell_no_api_database(examples):
    for name in ('compute.conf', 'accelerator-agent.conf'):
        compute = config.build_conf(['--config-file', str(examples / name)])
        assert not compute.database.connection
        assert not compute.api_database.connection
        assert not compute.placement_database.connection
        assert not compute.accelerator_database.connection
    for path in examples.glob('cell*.conf'):
        cell = config.build_conf(['--config-file', str(path)])
        assert cell.database.connection
        assert not cell.api_database.connection


def test_each_cell_has_its_own_bus_and_database():
    cells = [_read(EXAMPLES / n) for n in ('cell1.conf', 'cell2.conf')]
    api = _read(EXAMPLES / 'nimbus.conf')
    buses = {c['DEFAULT']['transport_url'] for c in cells}
    assert len(buses) == 2 and api['DEFAULT']['transport_url'] not in buses
    assert len({c['database']['connection'] for c in cells}) == 2
    compute = _read(EXAMPLES / 'compute.conf')
    assert (
        compute['DEFAULT']['transport_url']
        == cells[0]['DEFAULT']['transport_url']
    )


def _console_scripts():
    parser = configparser.ConfigParser()
    parser.read(ROOT / 'setup.cfg')
    lines = parser['options.entry_points']['console_scripts'].split('\n')
    return {line.split('=')[0].strip() for line in lines if '=' in line}


@pytest.mark.parametrize(
    'unit', sorted(UNITS.glob('*.service')), ids=lambda p: p.name
)
def test_each_unit_starts_a_command_with_a_shipped_config(unit):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read(unit)
    command = parser['Service']['ExecStart'].split()
    assert pathlib.Path(command[0]).name in _console_scripts()
    config_file = command[command.index('--config-file') + 1]
    name = pathlib.Path(config_file).name.replace('%i', 'cell1')
    assert (EXAMPLES / name).exists(), config_file
    assert parser['Service']['User'] == 'nimbus'
    assert parser['Service']['Restart'] == 'on-failure'


def test_there_is_a_unit_per_daemon():
    names = {p.name for p in UNITS.glob('*.service')}
    assert names == {
        'nimbus-api.service',
        'nimbus-placement-api.service',
        'nimbus-scheduler.service',
        'nimbus-conductor.service',
        'nimbus-conductor@.service',
        'nimbus-compute.service',
        'nimbus-accelerator-api.service',
        'nimbus-accelerator-agent.service',
    }
