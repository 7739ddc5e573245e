"""Two cells on MariaDB and RabbitMQ, one of whose databases goes away.

The daemons run as separate processes (API, placement API, scheduler,
super conductor, a conductor and a simulated compute per cell). Servers
are built in both cells; then cell2's database is dropped, and later its
mapping names a server that accepts connections and never answers. Each
time nimbus-api answers with cell1's servers, and from microversion 2.69
with minimal records of cell2's, within ``[api] cell_timeout``.
"""

import socket

import pytest
import requests
import sqlalchemy as sa

from nimbus.allinone.client import ComputeClient
from nimbus.common import db as common_db
from nimbus.db.api import models as api_models
from nimbus.testing import daemons

pytestmark = pytest.mark.integration


def _get(cloud, path, version):
    response = requests.get(
        cloud.api_url + '/v2.1' + path,
        headers={
            'X-Auth-Token': 'admin:admin',
            'X-Roles': 'admin',
            'OpenStack-API-Version': 'compute %s' % version,
        },
        timeout=60,
    )
    return response


def _servers(cloud, path, version):
    response = _get(cloud, path, version)
    assert response.status_code == 200, response.text
    return {s['id']: s for s in response.json()['servers']}


def _wait(predicate, what, cloud, timeout=180):
    # Only nimbus-api's death fails the wait: cell2's daemons may well
    # give up once their database is gone.
    return daemons.wait_for(predicate, timeout, what, [cloud.daemons['api']])


def _answers(cloud):
    try:
        return requests.get(cloud.api_url + '/', timeout=5).status_code < 500
    except requests.RequestException:
        return False


def _check_down(cloud, cell1, cell2):
    listed = _servers(cloud, '/servers/detail', '2.68')
    assert set(listed) == cell1
    listed = _servers(cloud, '/servers/detail', '2.69')
    assert set(listed) == cell1 | cell2
    for uuid in cell2:
        assert listed[uuid]['status'] == 'UNKNOWN'
        assert set(listed[uuid]) == {
            'id',
            'status',
            'links',
            'tenant_id',
            'created',
        }
    for uuid in cell1:
        assert listed[uuid]['status'] == 'ACTIVE'
    # A filter leaves the down cell out at any version.
    listed = _servers(cloud, '/servers/detail?status=ACTIVE', '2.69')
    assert set(listed) == cell1
    uuid = sorted(cell2)[0]
    response = _get(cloud, '/servers/%s' % uuid, '2.68')
    assert response.status_code == 503
    assert 'cell2' in response.json()['serviceUnavailable']['message']
    response = _get(cloud, '/servers/%s' % uuid, '2.71')
    assert response.status_code == 200, response.text
    server = response.json()['server']
    assert server['status'] == 'UNKNOWN'
    assert server['flavor']['original_name'] == 'down.tiny'
    assert server['OS-EXT-AZ:availability_zone'] == 'nova'
    assert server['OS-EXT-STS:power_state'] == 0
    assert server['server_groups'] == []


def test_a_cell_whose_database_is_gone(tmp_path, fresh):
    databases = {
        name: fresh.database('mysql')
        for name in ('api', 'cell0', 'cell1', 'cell2', 'placement')
    }
    cloud = daemons.DaemonCloud(
        str(tmp_path / 'cloud'),
        fresh.vhost(),
        fresh.vhost(),
        databases,
        hosts=0,
        more_cells={'cell2': (fresh.vhost(), databases['cell2'])},
        common_options={'api': {'cell_timeout': 3}},
    )
    cloud.prepare()
    listener = None
    try:
        cloud.start()
        cloud.start_simulated('c1', 1, cell='cell1')
        cloud.start_simulated('c2', 1, cell='cell2')
        api = ComputeClient(cloud.api_url)
        _wait(
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
            'two hosts to report',
            cloud,
        )
        cloud.manage('cell', 'discover-hosts')
        flavor = api.create_flavor('down.tiny', 1, 256, 1)['id']
        image = api.create_image('down-image')['id']
        cells = {'cell1': set(), 'cell2': set()}
        for cell, host in (('cell1', 'c1-0001'), ('cell2', 'c2-0001')):
            for i in range(2):
                server = api.create_server(
                    '%s-%d' % (cell, i),
                    flavor,
                    image,
                    availability_zone='nova:%s' % host,
                )['server']
                cells[cell].add(server['id'])
        every = cells['cell1'] | cells['cell2']
        _wait(
            lambda: (
                all(
                    s['status'] == 'ACTIVE'
                    for s in _servers(
                        cloud, '/servers/detail', '2.68'
                    ).values()
                )
                and set(_servers(cloud, '/servers', '2.68')) == every
            ),
            'four ACTIVE servers',
            cloud,
        )

        # 1. cell2's database is dropped (the MariaDB server stays up).
        admin = sa.create_engine(
            databases['cell2'].rsplit('/', 1)[0] + '/',
            isolation_level='AUTOCOMMIT',
        )
        name = databases['cell2'].rsplit('/', 1)[1].split('?')[0]
        with admin.connect() as conn:
            conn.exec_driver_sql('DROP DATABASE %s' % name)
        admin.dispose()
        _check_down(cloud, cells['cell1'], cells['cell2'])

        # 2. cell2's mapping names a server that accepts connections and
        # never says a word (nimbus-api reads mappings at start).
        listener = socket.socket()
        listener.bind(('127.0.0.1', 0))
        listener.listen(64)
        port = listener.getsockname()[1]
        cloud.daemons['api'].stop()
        api_db = common_db.get_database(databases['api'])
        with api_db.session() as session:
            session.execute(
                sa.update(api_models.CellMapping)
                .where(api_models.CellMapping.name == 'cell2')
                .values(
                    database_connection='mysql+pymysql://root@127.0.0.1:%d/'
                    'nimbus' % port
                )
            )
        api_db.dispose()
        cloud.daemons['api'].start()
        _wait(lambda: _answers(cloud), 'nimbus-api to answer', cloud, 60)
        _check_down(cloud, cells['cell1'], cells['cell2'])
        with open(cloud.daemons['api'].log_file, errors='replace') as f:
            assert 'no answer within 3.0 s' in f.read()
    finally:
        cloud.stop()
        if listener is not None:
            listener.close()
