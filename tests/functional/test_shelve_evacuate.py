"""Shelve, shelveOffload, unshelve and evacuate through the REST API of a
whole in-process cloud (API -> conductors -> scheduler -> computes ->
placement): the states to their end, the host, the migration's status
and placement's allocations (instance and migration consumers), and
Nova's refusals."""

import time

import requests

from nimbus import services
from nimbus.allinone import client as client_mod
from nimbus.common import context
from nimbus.common.db import get_database
from nimbus.db import cell_migrations
from nimbus.db.cell_instances import queries
from tests.functional.test_server_actions import ADMIN
from tests.functional.test_server_actions import Api
from tests.functional.test_server_actions import MEMBER


def _cloud(make_cloud, hosts=2, **defaults):
    cloud = make_cloud(hosts=hosts, overrides={'DEFAULT': defaults})
    return Api(cloud)


def _allocations(api, consumer):
    """``{host name: resources}`` of a consumer's allocations."""
    client = services.placement(api.cloud.conf)
    ctxt = context.get_admin_context()
    allocations = client.get_allocations_for_consumer(ctxt, consumer)[
        'allocations'
    ]
    names = {}
    for rp_uuid, value in allocations.items():
        response = client.request(
            ctxt, 'GET', '/resource_providers/%s' % rp_uuid
        )
        names[response.json()['name']] = value['resources']
    return names


def _migrations(api, uuid):
    db = get_database(api.cloud.db_urls['cell1'])
    with db.session() as session:
        return cell_migrations.for_instance(session, uuid)


def _faults(api, uuid):
    db = get_database(api.cloud.db_urls['cell1'])
    with db.session() as session:
        return [f.message for f in queries.faults(session, [uuid])]


def _images_named(api, name):
    response = requests.get(
        client_mod.root_url(api.cloud.api_url) + '/image/v2/images',
        params={'name': name},
        headers={'X-Auth-Token': 'u1:p1', 'X-Roles': 'member,reader'},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return [i for i in response.json()['images'] if i['name'] == name]


def _events(api, uuid, action_name):
    actions = api.call(
        'GET', '/servers/%s/os-instance-actions' % uuid, who=ADMIN
    ).json()['instanceActions']
    (action,) = [a for a in actions if a['action'] == action_name][:1]
    shown = api.call(
        'GET',
        '/servers/%s/os-instance-actions/%s' % (uuid, action['request_id']),
        who=ADMIN,
        version='2.51',
    )
    return shown.json()['instanceAction']['events']


def _force_down(api, host, down=True):
    services_ = api.call('GET', '/os-services', who=ADMIN).json()['services']
    (service,) = [
        s
        for s in services_
        if s['host'] == host and s['binary'] == 'nova-compute'
    ]
    response = api.call(
        'PUT',
        '/os-services/%s' % service['id'],
        {'forced_down': down},
        who=ADMIN,
        version='2.53',
    )
    assert response.status_code == 200, response.text


def _wait_for(predicate, what, bound=60):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError('never %s' % what)


def _code(response, code):
    """The response's text, once its status is ``code``."""
    assert response.status_code == code, response.text
    return response.text or str(code)


def test_shelve_and_unshelve_on_the_same_host(make_cloud):
    api = _cloud(make_cloud, shelved_offload_time=-1)
    uuid = api.boot()
    host = api.show(uuid)['OS-EXT-SRV-ATTR:host']
    assert _code(api.action(uuid, {'shelve': None}), 202)
    server, seen = api.wait(uuid, 'SHELVED')
    assert server['OS-EXT-STS:vm_state'] == 'shelved'
    assert server['OS-EXT-STS:power_state'] == 4
    assert server['OS-EXT-SRV-ATTR:host'] == host
    (image,) = _images_named(api, 'vm-shelved')
    # Never offloaded (-1): it keeps its host's resources.
    assert list(_allocations(api, uuid)) == [host]
    # shelve again, or an offload by its owner: refused.
    assert 'vm_state shelved' in _code(api.action(uuid, {'shelve': None}), 409)
    _code(api.action(uuid, {'shelveOffload': None}), 403)
    # A zone (2.77) needs an offloaded server.
    _code(
        api.action(
            uuid, {'unshelve': {'availability_zone': 'nova'}}, version='2.77'
        ),
        409,
    )
    assert _code(api.action(uuid, {'unshelve': None}), 202)
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == host
    assert server['OS-EXT-STS:power_state'] == 1
    # Deleted once the super conductor has the compute's answer.
    _wait_for(lambda: _images_named(api, 'vm-shelved') == [], 'image deleted')
    assert list(_allocations(api, uuid)) == [host]
    events = _events(api, uuid, 'unshelve')
    assert [e['event'] for e in events] == ['compute_unshelve_instance']
    assert events[0]['result'] == 'Success'
    assert image['id']


def test_shelve_offload_by_action_then_unshelve_anywhere(make_cloud):
    api = _cloud(make_cloud, shelved_offload_time=-1)
    uuid = api.boot()
    api.action(uuid, {'shelve': None})
    api.wait(uuid, 'SHELVED')
    assert _code(api.action(uuid, {'shelveOffload': None}, who=ADMIN), 202)
    server, _ = api.wait(uuid, 'SHELVED_OFFLOADED')
    assert server['OS-EXT-SRV-ATTR:host'] is None
    assert _allocations(api, uuid) == {}
    _code(api.action(uuid, {'shelveOffload': None}, who=ADMIN), 409)
    assert _code(api.action(uuid, {'unshelve': None}), 202)
    server, _ = api.wait(uuid, 'ACTIVE')
    host = server['OS-EXT-SRV-ATTR:host']
    assert host in api.cloud.host_names()
    assert list(_allocations(api, uuid)) == [host]
    # Deleted once the super conductor has the compute's answer.
    _wait_for(lambda: _images_named(api, 'vm-shelved') == [], 'image deleted')


def test_shelve_offloads_at_once_with_offload_time_0(make_cloud):
    api = _cloud(make_cloud, shelved_offload_time=0)
    uuid = api.boot()
    source = api.show(uuid)['OS-EXT-SRV-ATTR:host']
    api.action(uuid, {'shelve': None})
    server, seen = api.wait(uuid, 'SHELVED_OFFLOADED')
    assert server['OS-EXT-SRV-ATTR:host'] is None
    assert server['OS-EXT-STS:task_state'] is None
    assert _allocations(api, uuid) == {}
    guests = api.cloud.computes[source].driver.list_instances()
    assert uuid not in guests
    # 2.91: an admin unshelves it to a chosen host.
    target = [h for h in api.cloud.host_names() if h != source][0]
    body = {'unshelve': {'host': target}}
    _code(api.action(uuid, body, version='2.90'), 400)  # no host below
    _code(api.action(uuid, body, version='2.91'), 403)  # not an admin
    _code(
        api.action(
            uuid, {'unshelve': {'host': 'nowhere'}}, ADMIN, version='2.91'
        ),
        400,
    )
    _code(
        api.action(
            uuid,
            {'unshelve': {'availability_zone': 'atlantis'}},
            version='2.77',
        ),
        400,
    )
    assert _code(api.action(uuid, body, ADMIN, version='2.91'), 202)
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == target
    assert list(_allocations(api, uuid)) == [target]
    assert uuid in api.cloud.computes[target].driver.list_instances()


def test_shelved_server_is_offloaded_by_the_periodic(make_cloud):
    api = _cloud(make_cloud, shelved_offload_time=1, shelved_poll_interval=1)
    uuid = api.boot()
    api.action(uuid, {'shelve': None})
    api.wait(uuid, 'SHELVED')
    server, _ = api.wait(uuid, 'SHELVED_OFFLOADED')
    assert server['OS-EXT-SRV-ATTR:host'] is None
    assert _allocations(api, uuid) == {}


def test_unshelve_with_no_valid_host_stays_offloaded(make_cloud):
    api = _cloud(make_cloud, shelved_offload_time=0)
    response = api.call(
        'POST',
        '/os-aggregates',
        {'aggregate': {'name': 'empty', 'availability_zone': 'empty'}},
        who=ADMIN,
    )
    _code(response, 200)
    uuid = api.boot()
    api.action(uuid, {'shelve': None})
    api.wait(uuid, 'SHELVED_OFFLOADED')
    body = {'unshelve': {'availability_zone': 'empty'}}
    assert _code(api.action(uuid, body, version='2.77'), 202)

    def settled():
        server = api.show(uuid, version='2.77')
        return server['OS-EXT-STS:task_state'] is None and server

    # The task is taken at once; it is given back when the scheduler
    # found nothing.
    server = _wait_for(
        lambda: _events(api, uuid, 'unshelve') and settled(), 'settled'
    )
    assert server['status'] == 'SHELVED_OFFLOADED'
    # Nova shows a fault only in ERROR; the instance has it.
    assert 'No valid host' in _faults(api, uuid)[-1]
    assert _allocations(api, uuid) == {}
    events = _events(api, uuid, 'unshelve')
    assert [(e['event'], e['result']) for e in events] == [
        ('schedule_instances', 'Error')
    ]


def test_evacuate_from_a_down_host_and_the_source_cleans_up(make_cloud):
    api = _cloud(make_cloud, hosts=2)
    uuid = api.boot()
    source = api.show(uuid)['OS-EXT-SRV-ATTR:host']
    (target,) = [h for h in api.cloud.host_names() if h != source]
    body = {'evacuate': {}}
    # Its compute is up: refused, as Nova (ComputeServiceInUse is a 400).
    assert 'still in use' in _code(
        api.action(uuid, body, ADMIN, version='2.68'), 400
    )
    _code(api.action(uuid, body, MEMBER, version='2.68'), 403)
    api.cloud.stop_compute(source)
    _force_down(api, source)
    _code(
        api.action(
            uuid, {'evacuate': {'host': 'nowhere'}}, ADMIN, version='2.68'
        ),
        404,
    )
    _code(
        api.action(
            uuid, {'evacuate': {'host': source}}, ADMIN, version='2.68'
        ),
        400,
    )
    response = api.action(uuid, body, ADMIN, version='2.68')
    assert _code(response, 200)
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == target
    # ``done`` once the super conductor has the compute's answer.
    (migration,) = _wait_for(
        lambda: [m for m in _migrations(api, uuid) if m['status'] == 'done'],
        'done',
    )
    assert migration['migration_type'] == 'evacuation'
    assert (migration['source_compute'], migration['dest_compute']) == (
        source,
        target,
    )
    # The source's allocation is the migration's until the source is back.
    assert list(_allocations(api, uuid)) == [target]
    assert list(_allocations(api, migration['uuid'])) == [source]
    # The audit takes it for the move's, not an orphan to heal.
    checker = services.auditor(api.cloud.conf)
    checker.grace = 0
    report = checker.run(context.get_admin_context())
    assert [
        d for d in report.disagreements if d.uuid == migration['uuid']
    ] == []
    _force_down(api, source, False)
    api.cloud.start_compute(source)
    _wait_for(
        lambda: _migrations(api, uuid)[0]['status'] == 'completed', 'completed'
    )
    assert _allocations(api, migration['uuid']) == {}
    assert list(_allocations(api, uuid)) == [target]
    assert uuid not in api.cloud.computes[source].driver.list_instances()
    assert uuid in api.cloud.computes[target].driver.list_instances()


def test_evacuate_to_a_host_ends_stopped_from_2_95(make_cloud):
    api = _cloud(make_cloud, hosts=3)
    uuid = api.boot()
    source = api.show(uuid)['OS-EXT-SRV-ATTR:host']
    target = [h for h in api.cloud.host_names() if h != source][-1]
    api.cloud.stop_compute(source)
    _force_down(api, source)
    body = {'evacuate': {'host': target}}
    assert _code(api.action(uuid, body, ADMIN, version='2.95'), 200)
    server, _ = api.wait(uuid, 'SHUTOFF')
    assert server['OS-EXT-SRV-ATTR:host'] == target
    assert server['OS-EXT-STS:power_state'] == 4
    (migration,) = _wait_for(
        lambda: [m for m in _migrations(api, uuid) if m['status'] == 'done'],
        'done',
    )
    assert migration['dest_compute'] == target


def test_evacuate_with_no_valid_host_gives_the_source_back(make_cloud):
    api = _cloud(make_cloud, hosts=2)
    uuid = api.boot()
    source = api.show(uuid)['OS-EXT-SRV-ATTR:host']
    (target,) = [h for h in api.cloud.host_names() if h != source]
    api.cloud.stop_compute(source)
    _force_down(api, source)
    _force_down(api, target)  # the only other host is down too
    assert _code(
        api.action(uuid, {'evacuate': {}}, ADMIN, version='2.14'), 200
    )
    server, _ = api.wait(uuid, 'ERROR')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    assert server['fault']['message']
    (migration,) = _migrations(api, uuid)
    assert migration['status'] == 'error'
    assert list(_allocations(api, uuid)) == [source]
    assert _allocations(api, migration['uuid']) == {}


def _accel(api, method, path, body=None):
    response = requests.request(
        method,
        api.cloud.accelerator_url + '/v2' + path,
        json=body,
        headers={'X-Auth-Token': 'admin:admin', 'X-Roles': 'admin'},
        timeout=30,
    )
    assert response.status_code < 300, response.text
    return response.json() if response.text else None


def _arqs(api, uuid):
    """``{arq uuid: (state, hostname)}`` of the instance's ARQs."""
    arqs = _accel(api, 'GET', '/accelerator_requests?instance=%s' % uuid)
    return {
        a['uuid']: (a['state'], a['hostname'])
        for a in arqs['arqs']
        if a['instance_uuid'] == uuid
    }


def test_accelerators_are_released_and_bound_again_on_the_new_host(make_cloud):
    cloud = make_cloud(
        hosts=2,
        accelerators=True,
        overrides={'DEFAULT': {'shelved_offload_time': 0}},
    )
    api = Api(cloud)
    _accel(
        api,
        'POST',
        '/device_profiles',
        [{'name': 'fpga', 'groups': [{'resources:FPGA': '1'}]}],
    )
    flavor = api.admin.create_flavor(
        'm1.fpga', 1, 512, 1, extra_specs={'accel:device_profile': 'fpga'}
    )
    api.flavor = flavor
    uuid = api.boot()
    source = api.show(uuid)['OS-EXT-SRV-ATTR:host']
    (first,) = _arqs(api, uuid).items()
    assert first[1] == ('Bound', source)
    api.action(uuid, {'shelve': None})
    api.wait(uuid, 'SHELVED_OFFLOADED')
    assert _arqs(api, uuid) == {}  # the offload released them
    target = [h for h in cloud.host_names() if h != source][0]
    body = {'unshelve': {'host': target}}
    assert _code(api.action(uuid, body, ADMIN, version='2.91'), 202)
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == target
    (second,) = _arqs(api, uuid).items()
    assert second[1] == ('Bound', target) and second[0] != first[0]
    # Evacuated back to the first host: new ARQs there, the old gone.
    cloud.stop_compute(target)
    _force_down(api, target)
    assert _code(
        api.action(uuid, {'evacuate': {}}, ADMIN, version='2.68'), 200
    )
    server, _ = api.wait(uuid, 'ACTIVE')
    assert server['OS-EXT-SRV-ATTR:host'] == source
    (third,) = _arqs(api, uuid).items()
    assert third[1] == ('Bound', source) and third[0] != second[0]


def test_failed_spawns_undo_the_unshelve_and_the_evacuation(make_cloud):
    cloud = make_cloud(
        hosts=2,
        fail_hosts=('host-2',),
        overrides={'DEFAULT': {'shelved_offload_time': 0}},
    )
    api = Api(cloud)
    uuid = api.boot()  # host-2 fails every spawn: it lands on host-1
    assert api.show(uuid)['OS-EXT-SRV-ATTR:host'] == 'host-1'
    api.action(uuid, {'shelve': None})
    api.wait(uuid, 'SHELVED_OFFLOADED')
    body = {'unshelve': {'host': 'host-2'}}
    assert _code(api.action(uuid, body, ADMIN, version='2.91'), 202)

    def settled():
        server = api.show(uuid)
        return server['OS-EXT-STS:task_state'] is None and server

    _wait_for(lambda: _events(api, uuid, 'unshelve') and settled(), 'back')
    server = _wait_for(settled, 'settled')
    assert server['status'] == 'SHELVED_OFFLOADED'
    assert server['OS-EXT-SRV-ATTR:host'] is None
    assert _allocations(api, uuid) == {}
    assert 'simulated hypervisor failure' in _faults(api, uuid)[-1]
    # Unshelved where it can run, then evacuated to the failing host.
    api.action(uuid, {'unshelve': {'host': 'host-1'}}, ADMIN, version='2.91')
    api.wait(uuid, 'ACTIVE')
    cloud.stop_compute('host-1')
    _force_down(api, 'host-1')
    assert _code(
        api.action(uuid, {'evacuate': {}}, ADMIN, version='2.68'), 200
    )
    server, _ = api.wait(uuid, 'ERROR')
    assert server['OS-EXT-SRV-ATTR:host'] == 'host-1'
    (migration,) = _wait_for(
        lambda: [m for m in _migrations(api, uuid) if m['status'] == 'failed'],
        'failed',
    )
    _wait_for(lambda: _allocations(api, migration['uuid']) == {}, 'given back')
    assert list(_allocations(api, uuid)) == ['host-1']
    assert uuid not in cloud.computes['host-2'].driver.list_instances()
