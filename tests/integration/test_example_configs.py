"""The shipped example configs run a two-cell cloud as they are.

Each daemon starts from its file in etc/nimbus/examples with only the
values a deployment must change substituted (bus and database URLs, host
names, ports, paths) and Keystone switched to noauth2 (the Keystone path is
tested with a real Keystone in test_openstack_cli.py): every other option
stays as shipped. nimbus-manage syncs the databases and maps both cells,
computes in both cells report, and servers land in both cells.

The noauth2 set (etc/nimbus/examples/noauth) runs exactly as shipped in
test_install_steps.py, through the install guide's own steps;
tests/unit/common/test_example_configs.py parses both sets against the
registered options.
"""

import configparser
import pathlib
import subprocess
import sys

import pytest
import requests

from nimbus.allinone.client import ComputeClient
from nimbus.testing import daemon_group
from nimbus.testing import daemons

pytestmark = pytest.mark.integration

EXAMPLES = (
    pathlib.Path(__file__).resolve().parents[2] / 'etc' / 'nimbus' / 'examples'
)
NOAUTH = {
    ('api', 'auth_strategy'): 'noauth2',
    ('placement_client', 'auth_strategy'): 'noauth2',
    ('placement_client', 'auth_section'): None,
    ('accelerator_client', 'auth_strategy'): 'noauth2',
    ('accelerator_client', 'auth_section'): None,
    ('oslo_policy', 'policy_file'): None,
    ('keystone_authtoken', None): None,
}


def _write(workdir, example, name, values):
    """``example`` with ``values`` ``{(section, key): value}`` applied
    (None removes a key, ``(section, None)`` a section), as ``name``."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(EXAMPLES / example)
    for (section, key), value in {**NOAUTH, **values}.items():
        if key is None:
            parser.remove_section(section)
        elif value is None:
            if parser.has_section(section) or section == 'DEFAULT':
                parser.remove_option(section, key)
        elif parser.has_section(section) or section == 'DEFAULT':
            parser.set(section, key, str(value))
    path = workdir / name
    with open(path, 'w') as f:
        parser.write(f)
    return str(path)


def _manage(config, *args):
    result = subprocess.run(
        [sys.executable, '-m', 'nimbus.cmd.manage', '--config-file', config]
        + list(args),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_two_cells_from_the_example_configs(tmp_path, fresh):
    buses = {name: fresh.vhost() for name in ('api', 'cell1', 'cell2')}
    dbs = {
        name: fresh.database('mysql')
        for name in ('api', 'placement', 'cell0', 'cell1', 'cell2')
    }
    placement_port, api_port = daemons.free_port(), daemons.free_port()
    placement_url = 'http://127.0.0.1:%d' % placement_port
    client = {('placement_client', 'endpoint'): placement_url}
    state = tmp_path / 'state'
    nimbus_conf = _write(
        tmp_path,
        'nimbus.conf',
        'nimbus.conf',
        {
            **client,
            ('DEFAULT', 'transport_url'): buses['api'],
            ('DEFAULT', 'state_path'): state,
            ('api_database', 'connection'): dbs['api'],
            ('wsgi', 'api_listen'): '127.0.0.1',
            ('wsgi', 'api_listen_port'): api_port,
        },
    )
    placement_conf = _write(
        tmp_path,
        'placement.conf',
        'placement.conf',
        {
            ('placement_database', 'connection'): dbs['placement'],
            ('wsgi', 'placement_listen'): '127.0.0.1',
            ('wsgi', 'placement_listen_port'): placement_port,
        },
    )
    cells, computes = {}, {}
    for cell in ('cell1', 'cell2'):
        cells[cell] = _write(
            tmp_path,
            '%s.conf' % cell,
            '%s.conf' % cell,
            {
                **client,
                ('DEFAULT', 'transport_url'): buses[cell],
                ('DEFAULT', 'state_path'): state,
                ('database', 'connection'): dbs[cell],
            },
        )
        host = 'compute-%s' % cell
        computes[host] = _write(
            tmp_path,
            'compute.conf',
            host + '.conf',
            {
                **client,
                ('DEFAULT', 'host'): host,
                ('DEFAULT', 'transport_url'): buses[cell],
                ('DEFAULT', 'state_path'): state / host,
                ('DEFAULT', 'report_interval'): 2,
            },
        )

    _manage(nimbus_conf, 'db', 'sync')
    _manage(placement_conf, 'db', 'sync')
    _manage(
        nimbus_conf,
        'cell',
        'create',
        '--name',
        'cell0',
        '--transport-url',
        'none:///',
        '--database-connection',
        dbs['cell0'],
    )
    for cell in ('cell1', 'cell2'):
        _manage(
            nimbus_conf,
            'cell',
            'create',
            '--name',
            cell,
            '--transport-url',
            buses[cell],
            '--database-connection',
            dbs[cell],
        )
    assert 'synced: cell cell2' in _manage(nimbus_conf, 'db', 'sync')

    running = []

    def start(name, module, config, *args):
        daemon = daemons.Daemon(
            name, module, config, str(tmp_path / ('%s.log' % name)), args
        )
        running.append(daemon.start())

    try:
        start('placement-api', 'nimbus.cmd.placement_api', placement_conf)
        start('api', 'nimbus.cmd.api', nimbus_conf)
        start('scheduler', 'nimbus.cmd.scheduler', nimbus_conf)
        start('conductor', 'nimbus.cmd.conductor', nimbus_conf)
        for cell, config in cells.items():
            start(
                cell + '-conductor',
                'nimbus.cmd.conductor',
                config,
                '--cell',
                cell,
            )
        for host, config in computes.items():
            start(host, 'nimbus.cmd.compute', config)

        def answers(url):
            try:
                return requests.get(url, timeout=2).status_code < 500
            except requests.RequestException:
                return False

        api_url = 'http://127.0.0.1:%d' % api_port
        daemons.wait_for(
            lambda: answers(placement_url + '/') and answers(api_url),
            90,
            'both APIs',
            running,
        )
        api = ComputeClient(api_url)
        daemons.wait_for(
            lambda: (
                len(
                    [
                        h
                        for h in api.get('/os-hypervisors/detail')[
                            'hypervisors'
                        ]
                        if h.get('state') == 'up'
                    ]
                )
                == 2
            ),
            120,
            'both computes to report',
            running,
        )
        # Every service kind, under the host its config names, up.
        expected = {
            ('controller-1', 'nova-scheduler'),
            ('controller-1', 'nova-conductor'),
            ('cell1-conductor-1', 'nova-conductor'),
            ('cell2-conductor-1', 'nova-conductor'),
            ('compute-cell1', 'nova-compute'),
            ('compute-cell2', 'nova-compute'),
        }
        daemons.wait_for(
            lambda: (
                {
                    (s['host'], s['binary'])
                    for s in api.get('/os-services')['services']
                    if s['state'] == 'up'
                }
                == expected
            ),
            60,
            'every service in os-services, up',
            running,
        )
        _manage(nimbus_conf, 'cell', 'discover-hosts')
        flavor = api.create_flavor('m1.tiny', 1, 512, 1)
        image = api.create_image('cirros')
        uuids = []
        for cell in ('cell1', 'cell2'):
            # A forced host pins each server to one cell's compute.
            server = api.create_server(
                'vm-' + cell,
                flavor['id'],
                image['id'],
                availability_zone='nova:compute-' + cell,
            )
            uuids.append(server['server']['id'])

        def settled():
            found = [api.server(u) for u in uuids]
            if all(s['status'] in ('ACTIVE', 'ERROR') for s in found):
                return found
            return None

        found = daemons.wait_for(
            settled, 180, 'the servers to settle', running
        )
        assert [s['status'] for s in found] == ['ACTIVE', 'ACTIVE'], found
        assert {s['OS-EXT-SRV-ATTR:host'] for s in found} == {
            'compute-cell1',
            'compute-cell2',
        }
        cell_list = _manage(nimbus_conf, 'cell', 'list')
        assert 'cell1' in cell_list and 'cell2' in cell_list

        # A cell whose conductor is stopped keeps its builds waiting on
        # its bus; they complete when the conductor is back, and the other
        # cell builds meanwhile.
        conductor2 = next(d for d in running if d.name == 'cell2-conductor')
        conductor2.stop()
        waiting = api.create_server(
            'vm-waiting',
            flavor['id'],
            image['id'],
            availability_zone='nova:compute-cell2',
        )
        waiting = waiting['server']['id']
        other = api.create_server(
            'vm-other',
            flavor['id'],
            image['id'],
            availability_zone='nova:compute-cell1',
        )
        other = other['server']['id']
        daemons.wait_for(
            lambda: api.server(other)['status'] == 'ACTIVE',
            120,
            'cell1 to build while cell2 waits',
            running,
        )
        assert api.server(waiting)['status'] == 'BUILD'
        running.remove(conductor2)
        running.append(conductor2.start())
        daemons.wait_for(
            lambda: api.server(waiting)['status'] in ('ACTIVE', 'ERROR'),
            120,
            'the waiting build to finish',
            running,
        )
        done = api.server(waiting)
        assert done['status'] == 'ACTIVE', done
        assert done['OS-EXT-SRV-ATTR:host'] == 'compute-cell2'
    finally:
        daemon_group.stop_together(reversed(running))
