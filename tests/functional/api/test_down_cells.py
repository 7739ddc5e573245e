"""Servers of a cell whose database is down (microversion 2.69).

Two cells on SQLite: cell1 answers, cell2's mapping points at a database
that cannot be opened (or one that is locked, so it does not answer). Below
2.69 lists leave cell2's servers out and a show of one is 503; from 2.69
lists without filter, sort or paging parameters carry minimal records and a
show answers the minimal record (Nova's "Handling Down Cells").
"""

import datetime
import sqlite3
import time

import jsonschema
import pytest
import sqlalchemy as sa

from nimbus import db as nimbus_db
from nimbus.common import db as common_db
from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models
from tests.functional.api import fixtures
from tests.functional.api.test_servers import boot

CELL2_UUID = '22222222-2222-2222-2222-222222222222'
_LINKS = {
    'type': 'array',
    'minItems': 2,
    'items': {
        'type': 'object',
        'properties': {
            'rel': {'enum': ['self', 'bookmark']},
            'href': {'type': 'string'},
        },
        'required': ['rel', 'href'],
        'additionalProperties': False,
    },
}
_UUID = {'type': 'string', 'pattern': '^[0-9a-f-]{36}$'}
_TIME = {'type': 'string', 'pattern': r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$'}
# The minimal records of Nova's api-guide, no key more or less.
MINIMAL_INDEX = {
    'type': 'object',
    'properties': {
        'id': _UUID,
        'status': {'const': 'UNKNOWN'},
        'links': _LINKS,
    },
    'required': ['id', 'status', 'links'],
    'additionalProperties': False,
}
MINIMAL_DETAIL = {
    'type': 'object',
    'properties': dict(
        MINIMAL_INDEX['properties'],
        tenant_id={'type': 'string'},
        created=_TIME,
    ),
    'required': MINIMAL_INDEX['required'] + ['tenant_id', 'created'],
    'additionalProperties': False,
}
_FLAVOR = {
    'type': 'object',
    'properties': {
        'vcpus': {'type': 'integer'},
        'ram': {'type': 'integer'},
        'disk': {'type': 'integer'},
        'ephemeral': {'type': 'integer'},
        'swap': {'type': 'integer'},
        'original_name': {'type': 'string'},
        'extra_specs': {'type': 'object'},
    },
    'required': ['vcpus', 'ram', 'disk', 'ephemeral', 'swap', 'original_name'],
    'additionalProperties': False,
}
MINIMAL_SHOW = {
    'type': 'object',
    'properties': dict(
        MINIMAL_DETAIL['properties'],
        user_id={'type': 'string'},
        image={
            'oneOf': [
                {'const': ''},
                {
                    'type': 'object',
                    'properties': {'id': _UUID, 'links': {'type': 'array'}},
                    'required': ['id'],
                    'additionalProperties': False,
                },
            ]
        },
        flavor=_FLAVOR,
        **{
            'OS-EXT-AZ:availability_zone': {'type': 'string'},
            'OS-EXT-STS:power_state': {'const': 0},
        },
    ),
    'required': MINIMAL_DETAIL['required']
    + [
        'user_id',
        'image',
        'flavor',
        'OS-EXT-AZ:availability_zone',
        'OS-EXT-STS:power_state',
    ],
    'additionalProperties': False,
}
MINIMAL_SHOW_271 = dict(
    MINIMAL_SHOW,
    properties=dict(
        MINIMAL_SHOW['properties'],
        server_groups={'type': 'array', 'items': _UUID, 'maxItems': 1},
    ),
    required=MINIMAL_SHOW['required'] + ['server_groups'],
)


def _setup(tmp_path, overrides=None):
    api = fixtures.ApiFixture(tmp_path, overrides=overrides)
    api.add_flavor('1', 'm1.small', extra_specs={'hw:cpu_policy': 'shared'})
    api.image = api.add_image()
    api.add_compute('host1')
    api.cell2_url = 'sqlite:///%s/cell2.db' % tmp_path
    nimbus_db.sync_cell(api.cell2_url)
    with api.api_db.session() as session:
        session.add(
            api_models.CellMapping(
                uuid=CELL2_UUID,
                name='cell2',
                transport_url='inproc:///cell2',
                database_connection=api.cell2_url,
            )
        )
    api.cells.refresh()
    api.cell2 = api.cells.by_uuid(CELL2_UUID)
    api.add_compute('host2', cell=api.cell2)
    return api


def _spread(api):
    """Servers of demo in cell1, cell2 and as build requests, one of
    another project in cell2. Returns {name: id}."""
    ids = {}
    for i, (where, user) in enumerate(
        [
            ('cell1', 'demo'),
            ('cell2', 'demo'),
            ('build', 'demo'),
            ('cell2', 'demo'),
            ('cell1', 'demo'),
            ('cell2', 'other'),
        ]
    ):
        name = 'vm%d' % i
        uuid = boot(api, user=user, name=name).json['server']['id']
        if where == 'cell1':
            api.place(uuid, host='host1')
        elif where == 'cell2':
            api.place(uuid, cell=api.cell2, host='host2')
        ids[name] = uuid
        _created(api, uuid, where, i)
    return ids


def _created(api, uuid, where, minute):
    """Creation times a minute apart, everywhere the server has one (the
    build request's has whole seconds only, the others microseconds)."""
    moment = datetime.datetime(2026, 1, 1, 12, minute)
    with api.api_db.session() as session:
        session.execute(
            sa.update(api_models.InstanceMapping)
            .where(api_models.InstanceMapping.instance_uuid == uuid)
            .values(created_at=moment)
        )
        request = session.execute(
            sa.select(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid == uuid
            )
        ).scalar()
        if request is not None:
            request.instance = dict(
                request.instance, created_at=moment.isoformat() + 'Z'
            )
    if where != 'build':
        cell = api.cell1 if where == 'cell1' else api.cell2
        with api.cells.db(cell).session() as session:
            session.execute(
                sa.update(cell_models.Instance)
                .where(cell_models.Instance.uuid == uuid)
                .values(created_at=moment)
            )


def _break(api, tmp_path):
    """cell2's mapping now names a database that cannot be opened."""
    (tmp_path / 'not-a-dir').write_text('')
    with api.api_db.session() as session:
        session.execute(
            sa.update(api_models.CellMapping)
            .where(api_models.CellMapping.uuid == CELL2_UUID)
            .values(
                database_connection='sqlite:///%s'
                % (tmp_path / 'not-a-dir' / 'cell2.db')
            )
        )
    api.cells.refresh()


@pytest.fixture
def down(tmp_path):
    api = _setup(tmp_path)
    api.ids = _spread(api)
    _break(api, tmp_path)
    yield api
    common_db.dispose_all()


def _ids(api, path, version, user='demo'):
    r = api.req('GET', path, version=version, user=user)
    assert r.status_code == 200, r.text
    return r.json['servers']


def _by_id(servers):
    return {s['id']: s for s in servers}


@pytest.mark.parametrize('path', ['/v2.1/servers', '/v2.1/servers/detail'])
def test_below_2_69_the_down_cell_is_left_out(down, path):
    ids = down.ids
    servers = _ids(down, path, '2.68')
    assert sorted(s['id'] for s in servers) == sorted(
        ids[n] for n in ('vm0', 'vm2', 'vm4')
    )
    assert all(s['status'] != 'UNKNOWN' for s in servers if 'status' in s)


def test_at_2_69_lists_carry_minimal_records(down):
    ids = down.ids
    mine = {ids[n] for n in ('vm0', 'vm1', 'vm2', 'vm3', 'vm4')}
    servers = _ids(down, '/v2.1/servers', '2.69')
    assert {s['id'] for s in servers} == mine
    # Newest first, the down cell's servers by the mapping's creation time.
    assert [s['id'] for s in servers] == [
        ids['vm%d' % i] for i in (4, 3, 2, 1, 0)
    ]
    by_id = _by_id(servers)
    for name in ('vm1', 'vm3'):
        jsonschema.validate(by_id[ids[name]], MINIMAL_INDEX)
        assert by_id[ids[name]]['links'][0]['href'].endswith(ids[name])
    assert by_id[ids['vm0']]['name'] == 'vm0'
    assert 'status' not in by_id[ids['vm0']]

    detail = _by_id(_ids(down, '/v2.1/servers/detail', '2.69'))
    assert set(detail) == mine
    for name in ('vm1', 'vm3'):
        record = detail[ids[name]]
        jsonschema.validate(record, MINIMAL_DETAIL)
        assert record['tenant_id'] == 'demo'
    assert detail[ids['vm0']]['status'] == 'ACTIVE'
    assert detail[ids['vm2']]['status'] == 'BUILD'


def test_all_tenants_is_the_one_filter_that_keeps_minimal_records(down):
    ids = down.ids
    servers = _by_id(
        _ids(down, '/v2.1/servers/detail?all_tenants=1', '2.69', 'admin')
    )
    assert set(servers) == set(ids.values())
    assert servers[ids['vm5']]['tenant_id'] == 'other'
    assert servers[ids['vm5']]['status'] == 'UNKNOWN'
    # The admin's own project has no server.
    assert _ids(down, '/v2.1/servers', '2.69', 'admin') == []
    # Another user's admin-only filter is dropped (as Nova drops it), so
    # it does not count as a filter.
    assert {s['id'] for s in _ids(down, '/v2.1/servers?host=x', '2.69')} == {
        ids['vm%d' % i] for i in range(5)
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    'query',
    [
        'name=vm',
        'status=ACTIVE',
        'limit=10',
        'sort_key=display_name',
        'sort_dir=desc',
        'image=%s',
        'changes-since=2000-01-01T00:00:00Z',
    ],
)
def test_filters_sort_and_paging_leave_the_down_cell_out(down, query):
    ids = down.ids
    if '%s' in query:
        query = query % down.image
    servers = _ids(down, '/v2.1/servers/detail?' + query, '2.69')
    assert all(s['status'] != 'UNKNOWN' for s in servers)
    assert {ids['vm1'], ids['vm3']}.isdisjoint(s['id'] for s in servers)
    assert ids['vm0'] in {s['id'] for s in servers}


@pytest.mark.parametrize('version', ['2.68', '2.69', '2.71'])
def test_paging_walks_the_cells_that_answer(down, version):
    ids = down.ids
    seen, url = [], '/v2.1/servers/detail?limit=1'
    while url:
        r = down.req('GET', url, version=version)
        assert r.status_code == 200, r.text
        seen += [s['id'] for s in r.json['servers']]
        links = r.json.get('servers_links')
        url = links and '/v2.1' + links[0]['href'].split('/v2.1', 1)[1]
    assert seen == [ids['vm%d' % i] for i in (4, 2, 0)]


def test_a_marker_in_the_down_cell(down):
    ids = down.ids
    # Where its minimal record stood (created_at, the default order).
    r = down.req('GET', '/v2.1/servers?marker=%s' % ids['vm3'], version='2.69')
    assert r.status_code == 200
    assert [s['id'] for s in r.json['servers']] == [ids['vm2'], ids['vm0']]
    r = down.req(
        'GET',
        '/v2.1/servers?sort_key=uuid&sort_dir=asc&marker=%s' % ids['vm3'],
    )
    assert r.status_code == 200
    assert all(s['id'] > ids['vm3'] for s in r.json['servers'])
    # No other order can place it: 503 naming the cell, not a 500.
    r = down.req(
        'GET', '/v2.1/servers?sort_key=display_name&marker=%s' % ids['vm3']
    )
    assert r.status_code == 503
    message = r.json['serviceUnavailable']['message']
    assert 'cell2' in message and ids['vm3'] in message


def test_show_below_2_69_is_503(down):
    uuid = down.ids['vm1']
    r = down.req('GET', '/v2.1/servers/%s' % uuid, version='2.68')
    assert r.status_code == 503
    assert 'cell2' in r.json['serviceUnavailable']['message']
    # Delete and update need the cell at every version.
    for method, body in (('DELETE', None), ('PUT', {'server': {'name': 'x'}})):
        r = down.req(method, '/v2.1/servers/%s' % uuid, body, version='2.71')
        assert r.status_code == 503, (method, r.text)


def test_show_at_2_69_is_the_minimal_record(down):
    uuid = down.ids['vm1']
    r = down.req('GET', '/v2.1/servers/%s' % uuid, version='2.69')
    assert r.status_code == 200, r.text
    server = r.json['server']
    jsonschema.validate(server, MINIMAL_SHOW)
    assert server['id'] == uuid and server['status'] == 'UNKNOWN'
    assert server['tenant_id'] == 'demo' and server['user_id'] == 'demo'
    assert server['image']['id'] == down.image
    assert server['flavor']['original_name'] == 'm1.small'
    assert server['flavor']['vcpus'] == 1 and server['flavor']['ram'] == 512
    # As for any server: extra specs as the flavor extra specs policy
    # allows (readers of the project by default).
    assert server['flavor']['extra_specs'] == {'hw:cpu_policy': 'shared'}
    # No zone was asked for at boot.
    assert server['OS-EXT-AZ:availability_zone'] == 'UNKNOWN'
    # Another project's server stays hidden.
    r = down.req('GET', '/v2.1/servers/%s' % uuid, version='2.69', user='x')
    assert r.status_code == 404


def test_show_at_2_71_names_the_server_group(tmp_path):
    api = _setup(tmp_path)
    group = api.req(
        'POST',
        '/v2.1/os-server-groups',
        {'server_group': {'name': 'g', 'policy': 'anti-affinity'}},
        version='2.64',
    ).json['server_group']
    uuid = boot(
        api, hints={'group': group['id']}, availability_zone='nova'
    ).json['server']['id']
    api.place(uuid, cell=api.cell2, host='host2')
    lone = boot(api, name='lone').json['server']['id']
    api.place(lone, cell=api.cell2, host='host2')
    _break(api, tmp_path)
    try:
        r = api.req('GET', '/v2.1/servers/%s' % uuid, version='2.71')
        assert r.status_code == 200, r.text
        server = r.json['server']
        jsonschema.validate(server, MINIMAL_SHOW_271)
        assert server['server_groups'] == [group['id']]
        assert server['OS-EXT-AZ:availability_zone'] == 'nova'
        r = api.req('GET', '/v2.1/servers/%s' % lone, version='2.71')
        assert r.json['server']['server_groups'] == []
        r = api.req('GET', '/v2.1/servers/%s' % uuid, version='2.70')
        assert 'server_groups' not in r.json['server']
        jsonschema.validate(r.json['server'], MINIMAL_SHOW)
    finally:
        common_db.dispose_all()


def test_servers_queued_for_delete_are_not_listed(down):
    with down.api_db.session() as session:
        session.execute(
            sa.update(api_models.InstanceMapping)
            .where(api_models.InstanceMapping.instance_uuid == down.ids['vm1'])
            .values(queued_for_delete=True)
        )
    ids = {s['id'] for s in _ids(down, '/v2.1/servers', '2.69')}
    assert down.ids['vm1'] not in ids and down.ids['vm3'] in ids


def test_a_cell_that_does_not_answer_in_time(tmp_path):
    """cell2's database is held by an exclusive lock: its queries wait
    (SQLite's busy timeout is 30 s). The API waits [api] cell_timeout.

    The timeout is the time cell1, which is not locked, has to answer: 0.5
    s was too little on a loaded CI machine (cell1's servers came back
    UNKNOWN too). 3 s is still far below the locked cell's 30 s."""
    api = _setup(tmp_path, overrides={'api': {'cell_timeout': 3}})
    ids = _spread(api)
    common_db.dispose_all()
    holder = sqlite3.connect(api.cell2_url.split(':///', 1)[1])
    holder.execute('PRAGMA locking_mode=EXCLUSIVE')
    holder.execute('BEGIN EXCLUSIVE')
    try:
        servers = _by_id(_ids(api, '/v2.1/servers/detail', '2.69'))
        assert set(servers) == {ids['vm%d' % i] for i in range(5)}
        assert servers[ids['vm1']]['status'] == 'UNKNOWN'
        assert servers[ids['vm0']]['status'] == 'ACTIVE'
        servers = _by_id(_ids(api, '/v2.1/servers/detail', '2.68'))
        assert set(servers) == {ids[n] for n in ('vm0', 'vm2', 'vm4')}
        r = api.req('GET', '/v2.1/servers/%s' % ids['vm1'], version='2.69')
        assert r.status_code == 200
        assert r.json['server']['status'] == 'UNKNOWN'
    finally:
        holder.rollback()
        holder.close()
    # Back: once the queries that waited have returned, the cell is asked
    # again and answers.
    queries = api.app.deps.cell_queries
    for _ in range(600):
        if not queries.in_flight(api.cell2):
            break
        time.sleep(0.1)
    assert queries.in_flight(api.cell2) == 0
    servers = _by_id(_ids(api, '/v2.1/servers/detail', '2.69'))
    assert servers[ids['vm1']]['status'] == 'ACTIVE'
    common_db.dispose_all()
