"""/os-server-groups and /os-server-external-events."""

import uuid as uuidlib

import pytest

from nimbus.common import context
from nimbus.common.objects import RequestSpec
from nimbus import services
from tests.functional.scheduler import fixtures as fx


def test_server_groups_v264(api):
    r = api.req(
        'POST',
        '/v2.1/os-server-groups',
        {
            'server_group': {
                'name': 'g1',
                'policy': 'anti-affinity',
                'rules': {'max_server_per_host': 3},
            }
        },
        version='2.64',
    )
    assert r.status_code == 200
    group = r.json['server_group']
    assert group['policy'] == 'anti-affinity'
    assert group['rules'] == {'max_server_per_host': 3}
    assert group['members'] == [] and group['project_id'] == 'demo'
    assert api.scheduler.calls[-1][0] == 'update_server_group'
    r = api.req(
        'GET', '/v2.1/os-server-groups/%s' % group['id'], version='2.1'
    )
    assert r.json['server_group']['policies'] == ['anti-affinity']
    assert 'project_id' not in r.json['server_group']
    assert (
        api.req(
            'GET', '/v2.1/os-server-groups/%s' % group['id'], user='other'
        ).status_code
        == 404
    )
    r = api.req('GET', '/v2.1/os-server-groups', user='other')
    assert r.json['server_groups'] == []
    r = api.admin('GET', '/v2.1/os-server-groups?all_projects=True')
    assert len(r.json['server_groups']) == 1
    assert (
        api.req('GET', '/v2.1/os-server-groups?all_projects=1').status_code
        == 403
    )
    assert (
        api.req(
            'DELETE', '/v2.1/os-server-groups/%s' % group['id'], user='other'
        ).status_code
        == 404
    )
    assert (
        api.req(
            'DELETE', '/v2.1/os-server-groups/%s' % group['id']
        ).status_code
        == 204
    )
    assert api.scheduler.calls[-1] == ('delete_server_group', group['id'])
    assert (
        api.req('GET', '/v2.1/os-server-groups/%s' % group['id']).status_code
        == 404
    )


def test_server_groups_legacy(api):
    r = api.req(
        'POST',
        '/v2.1/os-server-groups',
        {'server_group': {'name': 'g', 'policies': ['soft-affinity']}},
        version='2.15',
    )
    assert r.json['server_group']['policies'] == ['soft-affinity']
    assert r.json['server_group']['metadata'] == {}
    r = api.req(
        'POST',
        '/v2.1/os-server-groups',
        {'server_group': {'name': 'g', 'policies': ['soft-affinity']}},
    )
    assert r.status_code == 400


@pytest.mark.parametrize(
    'group, version',
    [
        ({'name': 'g', 'policy': 'clumped'}, '2.64'),
        ({'name': 'g'}, '2.64'),
        (
            {
                'name': 'g',
                'policy': 'affinity',
                'rules': {'max_server_per_host': 2},
            },
            '2.64',
        ),
        (
            {
                'name': 'g',
                'policy': 'anti-affinity',
                'rules': {'max_server_per_host': 0},
            },
            '2.64',
        ),
        (
            {'name': 'g', 'policy': 'anti-affinity', 'rules': {'other': 1}},
            '2.64',
        ),
        ({'name': 'g', 'policies': ['affinity']}, '2.64'),
        ({'name': 'g', 'policies': ['affinity', 'anti-affinity']}, '2.1'),
    ],
)
def test_server_groups_bad(api, group, version):
    r = api.req(
        'POST',
        '/v2.1/os-server-groups',
        {'server_group': group},
        version=version,
    )
    assert r.status_code == 400


@pytest.fixture
def placed(api):
    api.add_flavor()
    api.image = api.add_image()
    api.add_compute('host1')
    body = {
        'server': {
            'name': 'vm',
            'flavorRef': '1',
            'imageRef': api.image,
            'max_count': 2,
        }
    }
    api.req('POST', '/v2.1/servers', body)
    uuids = api.conductor.calls[0][2]
    api.place(uuids[0], host='host1')
    return uuids


def test_external_events(api, placed):
    on_host, pending = placed
    missing = str(uuidlib.uuid4())
    events = [
        {
            'name': 'accelerator-request-bound',
            'server_uuid': on_host,
            'tag': 'arq-1',
            'status': 'completed',
        },
        {'name': 'network-changed', 'server_uuid': on_host},
        {'name': 'network-changed', 'server_uuid': pending},
        {'name': 'network-changed', 'server_uuid': missing},
    ]
    r = api.admin(
        'POST',
        '/v2.1/os-server-external-events',
        {'events': events},
        version='2.82',
    )
    assert r.status_code == 207
    codes = [e['code'] for e in r.json['events']]
    assert codes == [200, 200, 422, 404]
    assert r.json['events'][1]['status'] == 'completed'
    assert api.compute_log == [
        (
            'external_instance_event',
            'cell1',
            'host1',
            on_host,
            [
                {
                    'name': 'accelerator-request-bound',
                    'tag': 'arq-1',
                    'status': 'completed',
                },
                {
                    'name': 'network-changed',
                    'tag': None,
                    'status': 'completed',
                },
            ],
        )
    ]
    r = api.req(
        'POST',
        '/v2.1/os-server-external-events',
        {'events': events[:1]},
        roles='service',
        version='2.82',
    )
    assert r.status_code == 200
    r = api.admin(
        'POST',
        '/v2.1/os-server-external-events',
        {'events': events[3:]},
        version='2.82',
    )
    assert r.status_code == 404


def test_external_events_bad(api, placed):
    on_host = placed[0]
    url = '/v2.1/os-server-external-events'
    event = {'name': 'accelerator-request-bound', 'server_uuid': on_host}
    r = api.admin('POST', url, {'events': [event]}, version='2.81')
    assert r.status_code == 400 and 'name' in r.json['badRequest']['message']
    assert (
        api.req('POST', url, {'events': [event]}, version='2.82').status_code
        == 403
    )
    for body in (
        {'events': []},
        {},
        {'events': [{'name': 'x'}]},
        {'events': [dict(event, status='done')]},
        {'events': [dict(event, server_uuid='nope')]},
    ):
        r = api.admin('POST', url, body, version='2.82')
        assert r.status_code == 400, body


class _RecordingScheduler:
    """A scheduler RPC API whose casts are recorded, or fail."""

    def __init__(self, fail=False):
        self.calls = []
        self.fail = fail

    def update_server_group(self, ctx, group):
        self.calls.append(('update_server_group', group.uuid))

    def delete_server_group(self, ctx, group_uuid):
        if self.fail:
            raise RuntimeError('bus down')
        self.calls.append(('delete_server_group', group_uuid))


@pytest.mark.parametrize('fail', [False, True])
def test_group_delete_tells_the_schedulers_and_never_fails(api, fail):
    api.app.deps.scheduler_api = scheduler = _RecordingScheduler(fail)
    r = api.req(
        'POST',
        '/v2.1/os-server-groups',
        {'server_group': {'name': 'g', 'policy': 'affinity'}},
        version='2.64',
    )
    uuid = r.json['server_group']['id']
    # A scheduler that cannot be told never fails the delete.
    assert (
        api.req('DELETE', '/v2.1/os-server-groups/%s' % uuid).status_code
        == 204
    )
    expected = [('update_server_group', uuid)]
    if not fail:
        expected.append(('delete_server_group', uuid))
    assert scheduler.calls == expected
    assert (
        api.req('GET', '/v2.1/os-server-groups/%s' % uuid).status_code == 404
    )


def _hint_only_spec(flavor, group_uuid):
    """What a request naming the group only by hint looks like to the
    scheduler (no instance_group: it resolves the hint from its cache)."""
    return RequestSpec.from_primitive(
        {
            'flavor': {
                'name': flavor['name'],
                'flavorid': flavor['id'],
                'vcpus': 1,
                'memory_mb': 512,
                'root_gb': 1,
                'ephemeral_gb': 0,
                'swap': 0,
                'extra_specs': {},
            },
            'image': None,
            'num_instances': 1,
            'instance_uuids': [],
            'project_id': 'admin',
            'user_id': 'admin',
            'scheduler_hints': {'group': group_uuid},
            'instance_group': None,
            'requested_resources': [],
            'request_id': 'req-hint-only',
        }
    )


@pytest.mark.slow
def test_deleted_group_no_longer_influences_scheduling(make_cloud):
    cloud = make_cloud(hosts=2)
    api = fx.admin_client(cloud)
    flavor = api.create_flavor('f', 1, 512, 1)
    image = api.create_image('img')
    group = fx.create_group(api, 'anti', 'anti-affinity')
    member = fx.boot_and_settle(
        api, 'member', flavor, image, hints={'group': group['id']}
    )
    assert member['status'] == 'ACTIVE'
    taken = fx.host_of(member)
    scheduler = services.scheduler_api(cloud.conf)
    ctxt = context.get_admin_context()
    spec = _hint_only_spec(flavor, group['id'])

    def rejected_by_group():
        result = scheduler.dry_run(ctxt, spec)
        return {
            r['host']
            for r in result['rejected']
            if r['filter'] == 'ServerGroupAntiAffinityFilter'
        }

    # While the group exists, its member keeps the next one off its host.
    fx.wait_for(
        lambda: rejected_by_group() == {taken} or None,
        timeout=30,
        what='the group to count',
    )
    api._call('DELETE', api.url + '/os-server-groups/%s' % group['id'])
    fx.wait_for(
        lambda: not rejected_by_group() or None,
        timeout=30,
        what='the schedulers to forget the deleted group',
    )
    result = scheduler.dry_run(ctxt, spec)
    assert taken in fx.ranked_hosts(result)
    assert len(fx.ranked_hosts(result)) == 2
    # And the API refuses the group from now on.
    with pytest.raises(RuntimeError, match='400'):
        fx.boot(api, 'late', flavor, image, hints={'group': group['id']})
