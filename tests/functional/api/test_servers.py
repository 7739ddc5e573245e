"""POST/GET/DELETE /servers across build requests, cell0 and cell1."""

import sqlalchemy as sa

from nimbus.db.api import models as api_models
from nimbus.db.cell import models as cell_models
from tests.functional.api import fixtures

import pytest


@pytest.fixture
def world(api):
    api.add_flavor('1', 'm1.small', extra_specs={'hw:cpu_policy': 'shared'})
    api.image = api.add_image(properties={'hw_architecture': 'x86_64'})
    api.add_compute('host1')
    return api


def boot(api, user='demo', hints=None, version=None, **server):
    body = {
        'server': dict(
            {'name': 'vm', 'flavorRef': '1', 'imageRef': api.image}, **server
        )
    }
    if hints is not None:
        body['os:scheduler_hints'] = hints
    return api.req('POST', '/v2.1/servers', body, user=user, version=version)


def test_create_stores_and_casts(world):
    r = boot(world, metadata={'k': 'v'}, availability_zone='nova')
    assert r.status_code == 202
    server = r.json['server']
    assert len(server['adminPass']) >= 8
    assert server['links'][0]['rel'] == 'self'
    assert r.headers['Location'].endswith(server['id'])
    ((ctx, spec, uuids),) = world.conductor.calls
    assert uuids == [server['id']]
    assert ctx.project_id == 'demo'
    assert spec['instance_uuids'] == uuids
    assert spec['num_instances'] == 1 and spec['min_count'] == 1
    assert spec['flavor']['flavorid'] == '1'
    assert spec['flavor']['extra_specs'] == {'hw:cpu_policy': 'shared'}
    assert spec['image'] == {
        'id': world.image,
        'name': 'cirros',
        'properties': {'hw_architecture': 'x86_64'},
    }
    assert spec['availability_zone'] == 'nova'
    assert spec['project_id'] == 'demo' and spec['user_id'] == 'demo'
    assert spec['instance_group'] is None
    assert spec['request_id'] == ctx.request_id
    with world.api_db.session() as s:
        br = s.execute(sa.select(api_models.BuildRequest)).scalar_one()
        assert br.instance['metadata'] == {'k': 'v'}
        assert br.instance['vm_state'] == 'building'
        assert (
            s.execute(sa.select(api_models.RequestSpec))
            .scalar_one()
            .spec['instance_uuids']
            == uuids
        )
        mapping = s.execute(sa.select(api_models.InstanceMapping)).scalar_one()
        assert mapping.cell_id is None and mapping.project_id == 'demo'


def test_multi_create_and_reservation_id(world):
    r = boot(world, min_count=2, max_count=3, return_reservation_id=True)
    assert r.status_code == 202
    assert r.json['reservation_id'].startswith('r-')
    ((_, spec, uuids),) = world.conductor.calls
    assert len(uuids) == 3 and spec['num_instances'] == 3
    assert spec['min_count'] == 2
    # Each instance's stored spec is its own (a row naming every uuid of
    # a multi-create grew as N squared: 37 MB for 1000 instances).
    with world.api_db.session() as s:
        stored = {
            row.instance_uuid: row.spec
            for row in s.execute(sa.select(api_models.RequestSpec)).scalars()
        }
    assert sorted(stored) == sorted(uuids)
    for uuid, one in stored.items():
        assert one['instance_uuids'] == [uuid]
        assert one['num_instances'] == 1 and one['min_count'] == 1
        assert one['flavor'] == spec['flavor']
        assert one['request_id'] == spec['request_id']
    r = world.req('GET', '/v2.1/servers/detail?reservation_id=%s' % 'nope')
    assert r.json['servers'] == []
    names = sorted(
        s['name'] for s in world.req('GET', '/v2.1/servers').json['servers']
    )
    assert names == ['vm-1', 'vm-2', 'vm-3']


@pytest.mark.parametrize(
    'server, field',
    [
        ({'name': 'vm'}, 'flavorRef'),
        ({'flavorRef': '1'}, 'name'),
        ({'name': '', 'flavorRef': '1'}, 'name'),
        ({'name': 'vm', 'flavorRef': '1', 'min_count': 0}, 'min_count'),
        ({'name': 'vm', 'flavorRef': '1', 'max_count': 'x'}, 'max_count'),
        ({'name': 'vm', 'flavorRef': '1', 'metadata': {'k': 1}}, 'metadata'),
        ({'name': 'vm', 'flavorRef': '1', 'networks': 'some'}, 'networks'),
        ({'name': 'vm', 'flavorRef': '1', 'bogus': 1}, 'bogus'),
        ({'name': 'vm', 'flavorRef': '1', 'accessIPv4': 'x'}, 'accessIPv4'),
    ],
)
def test_create_bad_body(world, server, field):
    r = world.req('POST', '/v2.1/servers', {'server': server})
    assert r.status_code == 400
    assert field in r.json['badRequest']['message']
    assert world.conductor.calls == []


@pytest.mark.parametrize(
    'hints, field',
    [
        ({'group': 'not-a-uuid'}, 'group'),
        ({'same_host': ['nope']}, 'same_host'),
        ({'build_near_host_ip': '300.1.1.1'}, 'build_near_host_ip'),
        ({'query': 5}, 'query'),
    ],
)
def test_create_bad_hints(world, hints, field):
    r = boot(world, hints=hints)
    assert r.status_code == 400
    assert field in r.json['badRequest']['message']


def test_create_bad_references(world):
    assert (
        'Flavor 9' in boot(world, flavorRef='9').json['badRequest']['message']
    )
    r = boot(world, imageRef='11111111-2222-3333-4444-555555555555')
    assert r.status_code == 400 and 'Image' in r.json['badRequest']['message']
    r = world.req(
        'POST', '/v2.1/servers', {'server': {'name': 'vm', 'flavorRef': '1'}}
    )
    assert (
        r.status_code == 400 and 'imageRef' in r.json['badRequest']['message']
    )
    r = boot(world, availability_zone='nowhere')
    assert (
        r.status_code == 400
        and 'availability zone' in r.json['badRequest']['message']
    )
    r = boot(world, min_count=3, max_count=2)
    assert r.status_code == 400
    r = boot(world, hints={'group': '11111111-2222-3333-4444-555555555555'})
    assert r.status_code == 400 and 'group' in r.json['badRequest']['message']
    r = boot(world, hints={'query': '[">=", '})
    assert r.status_code == 400 and 'query' in r.json['badRequest']['message']
    r = boot(world, hints={'cidr': '/24'})
    assert r.status_code == 400
    r = boot(world, availability_zone='nova:host1')
    assert r.status_code == 403
    assert world.conductor.calls == []


def _stored(api):
    with api.api_db.session() as s:
        return s.execute(
            sa.select(sa.func.count()).select_from(api_models.BuildRequest)
        ).scalar()


@pytest.mark.parametrize(
    'counts, field',
    [
        ({'max_count': 1001}, 'max_count'),
        ({'max_count': '1001'}, 'max_count'),
        ({'min_count': 1001}, 'min_count'),
        ({'min_count': 2, 'max_count': 10**9}, 'max_count'),
    ],
)
def test_counts_above_the_request_limit_are_400(world, counts, field):
    r = boot(world, **counts)
    assert r.status_code == 400
    message = r.json['badRequest']['message']
    assert field in message and 'max_instances_per_request' in message
    assert world.conductor.calls == [] and _stored(world) == 0


def _boot_raw(api, server_json):
    """POST /servers with the server's counts written verbatim, so a JSON
    number like 99999999999999999999 reaches the API as a client sent it."""
    body = (
        '{"server": {"name": "vm", "flavorRef": "1", "imageRef": "%s", '
        '%s}}' % (api.image, server_json)
    )
    return api.client.simulate_post(
        '/v2.1/servers',
        body=body,
        headers=dict(
            api.headers('demo'), **{'Content-Type': 'application/json'}
        ),
    )


@pytest.mark.parametrize(
    'counts, field',
    [
        ('"max_count": 99999999999999999999', 'max_count'),
        ('"min_count": 99999999999999999999', 'min_count'),
        ('"max_count": 1001.0', 'max_count'),
        ('"min_count": 1, "max_count": 1e300', 'max_count'),
        ('"max_count": -9223372036854775809', 'max_count'),
    ],
)
def test_huge_or_float_counts_are_400_and_store_nothing(world, counts, field):
    r = _boot_raw(world, counts)
    assert r.status_code == 400, r.text
    assert field in r.json['badRequest']['message']
    assert world.conductor.calls == [] and _stored(world) == 0


@pytest.mark.parametrize(
    'counts', ['"max_count": 2.0', '"min_count": 1.0', '"max_count": true']
)
def test_counts_are_integers_not_floats(world, counts):
    r = _boot_raw(world, counts)
    assert r.status_code == 400, r.text
    assert 'is not of type' in r.json['badRequest']['message']
    assert world.conductor.calls == [] and _stored(world) == 0


def test_min_count_above_max_count_is_400(world):
    r = boot(world, min_count='3', max_count=2)
    assert r.status_code == 400
    assert r.json['badRequest']['message'] == 'min_count must be <= max_count'
    assert world.conductor.calls == []


def test_the_default_limit_still_allows_a_thousand(world):
    # The project's quotas would lower the count to 10 (see test_quotas).
    assert (
        world.admin(
            'PUT',
            '/v2.1/os-quota-sets/demo',
            {'quota_set': {'instances': -1, 'cores': -1, 'ram': -1}},
        ).status_code
        == 200
    )
    r = boot(world, min_count=1, max_count=1000, return_reservation_id=True)
    assert r.status_code == 202
    assert len(world.conductor.calls[0][2]) == 1000


def test_the_request_limit_is_configurable(tmp_path):
    api = fixtures.ApiFixture(
        tmp_path, overrides={'api': {'max_instances_per_request': 5}}
    )
    api.add_flavor('1')
    api.image = api.add_image()
    assert boot(api, max_count=6).status_code == 400
    assert boot(api, max_count=5).status_code == 202
    assert len(api.conductor.calls[0][2]) == 5


def test_flavor_ref_as_url_and_image_too_big(world):
    r = boot(world, flavorRef='http://x/v2.1/flavors/1')
    assert r.status_code == 202
    big = world.add_image(min_ram=4096)
    r = boot(world, imageRef=big)
    assert r.status_code == 400 and 'memory' in r.json['badRequest']['message']


def test_hints_and_group(world):
    r = world.req(
        'POST',
        '/v2.1/os-server-groups',
        {
            'server_group': {
                'name': 'g',
                'policy': 'anti-affinity',
                'rules': {'max_server_per_host': 2},
            }
        },
        version='2.64',
    )
    group = r.json['server_group']
    other = boot(world).json['server']['id']
    world.place(other, host='host1')
    with world.api_db.session() as s:
        grp = s.execute(sa.select(api_models.InstanceGroup)).scalar_one()
        grp.members.append(api_models.InstanceGroupMember(instance_uuid=other))
    r = boot(
        world,
        hints={
            'group': group['id'],
            'same_host': other,
            'different_host': [other],
            'query': ['>=', '$free_ram_mb', 1024],
            'build_near_host_ip': '192.0.2.1',
            'cidr_mask': 24,
            'custom': 'x',
        },
    )
    assert r.status_code == 202, r.json
    spec = world.conductor.calls[-1][1]
    hints = spec['scheduler_hints']
    assert hints['same_host'] == [other]
    assert hints['query'] == '[">=", "$free_ram_mb", 1024]'
    assert hints['cidr'] == '/24' and hints['custom'] == 'x'
    ig = spec['instance_group']
    assert ig['policy'] == 'anti-affinity'
    assert ig['rules'] == {'max_server_per_host': 2}
    assert ig['hosts'] == ['host1']
    new = r.json['server']['id']
    assert set(ig['members']) == {other, new}
    name, payload = world.scheduler.calls[-1]
    assert name == 'update_server_group'
    assert set(payload['members']) == {other, new}
    r = world.req('GET', '/v2.1/os-server-groups/%s' % group['id'])
    assert set(r.json['server_group']['members']) == {other, new}


def test_list_merges_build_requests_and_cells(world):
    a = boot(world, name='alpha').json['server']['id']
    b = boot(world, name='beta').json['server']['id']
    c = boot(world, name='gamma').json['server']['id']
    world.place(b, host='host1')
    world.place(
        c,
        cell=world.cell0,
        host=None,
        vm_state='error',
        fault=('No valid host was found.', 'placement returned 0'),
    )
    boot(world, user='other', name='theirs')
    r = world.req('GET', '/v2.1/servers')
    assert {s['id'] for s in r.json['servers']} == {a, b, c}
    r = world.req('GET', '/v2.1/servers/detail')
    by_id = {s['id']: s for s in r.json['servers']}
    assert by_id[a]['status'] == 'BUILD'
    assert by_id[b]['status'] == 'ACTIVE'
    assert by_id[c]['status'] == 'ERROR'
    assert by_id[c]['fault']['message'] == 'No valid host was found.'
    assert by_id[c]['fault']['code'] == 500
    assert by_id[c]['fault']['created']
    # As in Nova: a 500 fault's details (hosts tried, why each failed) are
    # for admins; the owner sees the message and the code.
    assert 'details' not in by_id[c]['fault']
    r = world.admin('GET', '/v2.1/servers/%s' % c)
    assert r.json['server']['fault']['details'] == 'placement returned 0'
    assert 'OS-EXT-SRV-ATTR:host' not in by_id[b]
    r = world.req('GET', '/v2.1/servers/detail?status=ERROR')
    assert [s['id'] for s in r.json['servers']] == [c]
    r = world.req('GET', '/v2.1/servers?name=^al')
    assert [s['id'] for s in r.json['servers']] == [a]
    r = world.admin('GET', '/v2.1/servers?all_tenants=1')
    assert len(r.json['servers']) == 4
    r = world.admin('GET', '/v2.1/servers/detail?all_tenants=1&host=host1')
    assert [s['id'] for s in r.json['servers']] == [b]
    assert r.json['servers'][0]['OS-EXT-SRV-ATTR:host'] == 'host1'
    r = world.req('GET', '/v2.1/servers?host=host1')
    assert len(r.json['servers']) == 3  # non-admin: filter ignored


def ids_plain(api):
    return {s['id'] for s in api.req('GET', '/v2.1/servers').json['servers']}


def test_changes_since_and_before(world):
    live = boot(world, name='live').json['server']['id']
    gone = boot(world, name='gone').json['server']['id']
    world.place(live)
    world.place(gone, cell=world.cell0, host=None, vm_state='error')
    assert world.req('DELETE', '/v2.1/servers/%s' % gone).status_code == 204
    assert ids_plain(world) == {live}
    past, future = '2000-01-01T00:00:00Z', '2999-01-01T00:00:00%2B02:00'

    def ids(query, **kwargs):
        r = world.req('GET', '/v2.1/servers?' + query, **kwargs)
        assert r.status_code == 200, r.text
        return {s['id'] for s in r.json['servers']}

    # As in Nova, a time window lists the deleted servers too.
    assert ids('changes-since=' + past) == {live, gone}
    assert ids(
        'changes-since=' + past + '&deleted=false',
        user='admin',
        project='demo',
    ) == {live}
    assert ids('changes-since=2999-01-01') == set()
    assert ids('changes-before=2000-01-01', version='2.66') == set()
    assert ids(
        'changes-since=%s&changes-before=%s' % (past, future), version='2.66'
    ) == {live, gone}
    # Before 2.66 changes-before is not a parameter, and is ignored.
    assert ids('changes-before=2000-01-01', version='2.65') == {live}


@pytest.mark.parametrize(
    'query, version',
    [
        ('changes-since=notadate', None),
        ('changes-since=2026-13-45T00:00:00Z', None),
        ('changes-before=yesterday', '2.66'),
        ('changes-since=2026-02-01&changes-before=2026-01-01', '2.66'),
    ],
)
def test_bad_change_windows_are_400(world, query, version):
    r = world.req('GET', '/v2.1/servers/detail?' + query, version=version)
    assert r.status_code == 400, r.text
    assert 'changes-' in r.json['badRequest']['message']


def test_paging(world):
    ids = [boot(world, name='vm%d' % i).json['server']['id'] for i in range(5)]
    r = world.req('GET', '/v2.1/servers?limit=2')
    page1 = [s['id'] for s in r.json['servers']]
    assert len(page1) == 2
    assert 'marker=%s' % page1[-1] in r.json['servers_links'][0]['href']
    r = world.req('GET', '/v2.1/servers?limit=10&marker=%s' % page1[-1])
    assert len(r.json['servers']) == 3
    assert set(page1) | {s['id'] for s in r.json['servers']} == set(ids)
    assert world.req('GET', '/v2.1/servers?marker=nope').status_code == 400
    r = world.req('GET', '/v2.1/servers?limit=-1')
    assert r.status_code == 400 and 'limit' in r.json['badRequest']['message']
    assert world.req('GET', '/v2.1/servers?status=FOO').status_code == 400
    assert world.req('GET', '/v2.1/servers?name=(').status_code == 400


def _spread(world, n=9):
    """n servers: a third build requests, a third in cell1, a third in
    cell0. Returns {name: id}."""
    ids = {}
    for i in range(n):
        uuid = boot(world, name='vm%d' % i).json['server']['id']
        if i % 3 == 1:
            world.place(uuid, host='host1')
        elif i % 3 == 2:
            world.place(
                uuid,
                cell=world.cell0,
                host=None,
                vm_state='error',
                fault=('No valid host was found.', 'none'),
            )
        ids['vm%d' % i] = uuid
    return ids


def _walk(world, query, limit):
    """Every page of GET /servers, following the next links."""
    seen, url = [], '/v2.1/servers/detail?limit=%d&%s' % (limit, query)
    while True:
        body = world.req('GET', url).json
        seen += [s['id'] for s in body['servers']]
        if 'servers_links' not in body:
            return seen
        url = body['servers_links'][0]['href'].split('/v2.1', 1)[1]
        url = '/v2.1' + url


@pytest.mark.parametrize('sort_dir', ['asc', 'desc'])
def test_pages_are_merge_sorted_across_cells_and_build_requests(
    world, sort_dir
):
    ids = _spread(world)
    names = sorted(ids, reverse=sort_dir == 'desc')
    query = 'sort_key=display_name&sort_dir=%s' % sort_dir
    assert _walk(world, query, 2) == [ids[n] for n in names]
    assert _walk(world, query, 4) == [ids[n] for n in names]
    # The default order (created_at desc, uuid desc) pages the same way as
    # it lists in one go.
    whole = [
        s['id'] for s in world.req('GET', '/v2.1/servers').json['servers']
    ]
    assert sorted(whole) == sorted(ids.values())
    assert _walk(world, '', 2) == whole


def test_filters_and_faults_on_a_merged_page(world):
    ids = _spread(world)
    r = world.req(
        'GET',
        '/v2.1/servers/detail?status=ERROR&'
        'sort_key=display_name&sort_dir=asc&limit=2',
    )
    servers = r.json['servers']
    assert [s['id'] for s in servers] == [ids['vm2'], ids['vm5']]
    assert all(
        s['fault']['message'] == 'No valid host was found.' for s in servers
    )
    r = world.req('GET', '/v2.1/servers?name=^vm[147]$&sort_key=uuid')
    assert sorted(s['id'] for s in r.json['servers']) == sorted(
        ids[n] for n in ('vm1', 'vm4', 'vm7')
    )
    r = world.req('GET', '/v2.1/servers?flavor=1&status=BUILD&limit=1000')
    assert sorted(s['id'] for s in r.json['servers']) == sorted(
        ids[n] for n in ('vm0', 'vm3', 'vm6')
    )
    assert world.req('GET', '/v2.1/servers?flavor=2').json['servers'] == []


def test_each_cell_is_asked_for_one_page_only(world):
    # Thirty servers are above the default instances quota of 10.
    assert (
        world.admin(
            'PUT',
            '/v2.1/os-quota-sets/demo',
            {'quota_set': {'instances': -1, 'cores': -1, 'ram': -1}},
        ).status_code
        == 200
    )
    for i in range(30):
        uuid = boot(world, name='many%02d' % i).json['server']['id']
        world.place(uuid, host='host1')
    statements = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if 'FROM instances' in statement:
            statements.append((statement, parameters))

    engine = world.cells.db(world.cell1).engine
    sa.event.listen(engine, 'before_cursor_execute', record)
    try:
        r = world.req('GET', '/v2.1/servers?limit=5&name=^many&status=ACTIVE')
    finally:
        sa.event.remove(engine, 'before_cursor_execute', record)
    assert len(r.json['servers']) == 5
    ((statement, parameters),) = [s for s in statements if 'ORDER BY' in s[0]]
    assert 'LIMIT' in statement and 6 in parameters  # limit + 1
    assert 'REGEXP' in statement and 'vm_state =' in statement


def test_an_unreachable_cell_leaves_the_rest_of_the_list(world, tmp_path):
    ids = _spread(world, 6)
    with world.api_db.session() as session:
        session.add(
            api_models.CellMapping(
                uuid='22222222-2222-2222-2222-222222222222',
                name='cell2',
                transport_url='inproc:///cell2',
                database_connection='sqlite:///%s'
                % (tmp_path / 'no-such-dir' / 'cell2.db'),
            )
        )
    world.cells.refresh()
    lost = boot(world, name='lost').json['server']['id']
    cell2 = world.cells.by_uuid('22222222-2222-2222-2222-222222222222')
    with world.api_db.session() as session:
        session.execute(
            sa.delete(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid == lost
            )
        )
        session.execute(
            sa.update(api_models.InstanceMapping)
            .where(api_models.InstanceMapping.instance_uuid == lost)
            .values(cell_id=cell2.id)
        )
    for path in ('/v2.1/servers', '/v2.1/servers/detail?limit=2'):
        r = world.req('GET', path)
        assert r.status_code == 200
    assert sorted(_walk(world, '', 2)) == sorted(ids.values())
    r = world.req('GET', '/v2.1/servers/%s' % lost)
    assert r.status_code == 503
    assert 'cannot be reached' in r.json['serviceUnavailable']['message']
    assert world.req('DELETE', '/v2.1/servers/%s' % lost).status_code == 503


def test_show_shapes(world):
    uuid = boot(world).json['server']['id']
    r = world.req('GET', '/v2.1/servers/%s' % uuid)
    assert r.json['server']['status'] == 'BUILD'
    assert r.json['server']['flavor']['id'] == '1'
    world.place(uuid, host='host1')
    r = world.req('GET', '/v2.1/servers/%s' % uuid, version='2.47')
    server = r.json['server']
    assert server['flavor'] == {
        'vcpus': 1,
        'ram': 512,
        'disk': 1,
        'ephemeral': 0,
        'swap': 0,
        'original_name': 'm1.small',
        'extra_specs': {'hw:cpu_policy': 'shared'},
    }
    assert server['hostId']
    assert 'OS-EXT-SRV-ATTR:host' not in server
    r = world.admin('GET', '/v2.1/servers/%s' % uuid, version='2.96')
    server = r.json['server']
    assert server['OS-EXT-SRV-ATTR:host'] == 'host1'
    assert server['OS-EXT-SRV-ATTR:hypervisor_hostname'] == 'host1'
    assert server['OS-EXT-AZ:availability_zone'] == ''
    assert server['pinned_availability_zone'] is None
    assert server['locked'] is False and server['tags'] == []
    assert world.req('GET', '/v2.1/servers/nope').status_code == 404
    r = world.req('GET', '/v2.1/servers/%s' % uuid, user='other')
    assert r.status_code == 404
    assert 'itemNotFound' in r.json


def test_delete_build_request(world):
    uuid = boot(world).json['server']['id']
    r = world.req('DELETE', '/v2.1/servers/%s' % uuid)
    assert r.status_code == 204
    with world.api_db.session() as s:
        assert s.execute(sa.select(api_models.BuildRequest)).first() is None
        assert s.execute(sa.select(api_models.InstanceMapping)).first() is None
    assert world.req('GET', '/v2.1/servers/%s' % uuid).status_code == 404
    assert world.req('DELETE', '/v2.1/servers/%s' % uuid).status_code == 404


def test_delete_in_cell0_marks_deleted(world):
    uuid = boot(world).json['server']['id']
    world.place(uuid, cell=world.cell0, host=None, vm_state='error')
    assert world.req('DELETE', '/v2.1/servers/%s' % uuid).status_code == 204
    with world.cells.db(world.cell0).session() as s:
        row = s.execute(sa.select(cell_models.Instance)).scalar_one()
        assert row.deleted and row.vm_state == 'deleted'
    assert world.compute_log == []
    assert world.req('GET', '/v2.1/servers/%s' % uuid).status_code == 404
    r = world.admin('GET', '/v2.1/servers/detail?all_tenants=1&status=DELETED')
    assert [s['id'] for s in r.json['servers']] == [uuid]


def test_delete_on_host_casts_terminate(world):
    uuid = boot(world).json['server']['id']
    world.place(uuid, host='host1')
    r = world.req('DELETE', '/v2.1/servers/%s' % uuid, user='other')
    assert r.status_code == 404
    assert world.req('DELETE', '/v2.1/servers/%s' % uuid).status_code == 204
    assert world.compute_log == [
        ('terminate_instance', 'cell1', 'host1', uuid)
    ]
    with world.cells.db(world.cell1).session() as s:
        row = s.execute(sa.select(cell_models.Instance)).scalar_one()
        assert row.task_state == 'deleting' and not row.deleted


def test_delete_on_host_tells_the_schedulers(world):
    uuid = boot(world).json['server']['id']
    world.place(uuid, host='host1')
    assert world.req('DELETE', '/v2.1/servers/%s' % uuid).status_code == 204
    assert ('delete_instance_info', ('host1', uuid)) in world.scheduler.calls


@pytest.mark.parametrize('how', ['forced_down', 'no_heartbeat'])
def test_delete_on_a_down_compute_is_local_and_frees_at_once(world, how):
    placement = fixtures.FakePlacement()
    world.app.deps.placement = placement
    world.add_compute('host2', up=how != 'no_heartbeat')
    if how == 'forced_down':
        with world.cells.db(world.cell1).session() as s:
            s.execute(
                sa.update(cell_models.Service)
                .where(cell_models.Service.host == 'host2')
                .values(forced_down=True)
            )
    uuid = boot(world).json['server']['id']
    world.place(uuid, host='host2')
    assert world.req('DELETE', '/v2.1/servers/%s' % uuid).status_code == 204
    assert world.compute_log == []  # nobody to cast to
    assert placement.removed == [uuid]
    assert ('delete_instance_info', ('host2', uuid)) in world.scheduler.calls
    with world.cells.db(world.cell1).session() as s:
        row = s.execute(sa.select(cell_models.Instance)).scalar_one()
        assert row.deleted and row.vm_state == 'deleted'
    assert world.req('GET', '/v2.1/servers/%s' % uuid).status_code == 404
    assert uuid not in [
        x['id'] for x in world.req('GET', '/v2.1/servers').json['servers']
    ]


def test_local_delete_with_placement_down_is_503_and_keeps_the_server(world):
    world.app.deps.placement = fixtures.FakePlacement(fail=True)
    world.add_compute('host2', up=False)
    uuid = boot(world).json['server']['id']
    world.place(uuid, host='host2')
    r = world.req('DELETE', '/v2.1/servers/%s' % uuid)
    assert r.status_code == 503
    assert (
        'Placement could not be reached'
        in r.json['serviceUnavailable']['message']
    )
    assert world.req('GET', '/v2.1/servers/%s' % uuid).status_code == 200


def test_delete_without_host_marks_deleted(world):
    uuid = boot(world).json['server']['id']
    world.place(uuid, host=None, vm_state='building')
    assert world.admin('DELETE', '/v2.1/servers/%s' % uuid).status_code == 204
    assert world.compute_log == []
    with world.cells.db(world.cell1).session() as s:
        assert s.execute(sa.select(cell_models.Instance)).scalar_one().deleted


def test_conductor_down_is_503_and_rolls_back(world):
    world.conductor.fail = True
    r = boot(world)
    assert r.status_code == 503
    with world.api_db.session() as s:
        assert s.execute(sa.select(api_models.BuildRequest)).first() is None
