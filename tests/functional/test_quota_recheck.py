"""``[quota] recheck_quota``: creates racing for the last headroom of a
project are counted again once their records are written; none is admitted
beyond a limit, and a refused one leaves no build request, request spec,
instance mapping or group member behind and casts nothing."""

import threading

import pytest
import sqlalchemy as sa
from falcon import testing

from nimbus.api import app as api_app
from nimbus.db.api import models as api_models
from tests.functional.api import fixtures

PROFILE_GROUP = {
    'requester_id': 'device_profile_0',
    'resources': {'FPGA': 1},
    'required_traits': [],
    'forbidden_traits': [],
}


class HeldAccelerator:
    """Answers a device profile lookup only once released: a create of a
    flavor with ``accel:device_profile`` waits there, after its first
    quota check and before it writes its records."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()

    def get_device_request_groups(self, ctx, name):
        self.entered.set()
        assert self.release.wait(30), 'never released'
        return [dict(PROFILE_GROUP)]


def _api(tmp_path, quota, accelerator=None):
    api = fixtures.ApiFixture(tmp_path, overrides={'quota': quota})
    if accelerator is not None:
        api.app = api_app.make_app(
            api.conf,
            api_db=api.api_db,
            cells=api.cells,
            conductor_api=api.conductor,
            scheduler_api=api.scheduler,
            accelerator=accelerator,
        )
        api.client = testing.TestClient(api.app)
    return api


def _body(flavor, image, count=1, name='vm'):
    server = {'name': name, 'flavorRef': flavor, 'imageRef': image}
    if count > 1:
        server.update(min_count=count, max_count=count)
    return {'server': server}


def _post(api, body, client=None):
    headers = api.headers('alice', 'p1', 'member')
    return (client or api.client).simulate_request(
        'POST', '/v2.1/servers', headers=headers, json=body
    )


def _records(api):
    """The uuids of every build request, request spec and instance
    mapping of the API database, and the group members."""
    with api.api_db.session() as session:

        def uuids(column):
            return sorted(session.execute(sa.select(column)).scalars())

        return {
            'build_requests': uuids(api_models.BuildRequest.instance_uuid),
            'request_specs': uuids(api_models.RequestSpec.instance_uuid),
            'mappings': uuids(api_models.InstanceMapping.instance_uuid),
            'members': uuids(api_models.InstanceGroupMember.instance_uuid),
        }


def _cast(conductor):
    return sorted(uuid for call in conductor.calls for uuid in call[2])


def _race(api, clients, count, body):
    """``count`` creates at once (one thread each, released together),
    spread over ``clients``; their responses."""
    barrier = threading.Barrier(count)
    responses = [None] * count

    def create(index):
        barrier.wait()
        responses[index] = _post(api, body, clients[index % len(clients)])

    threads = [
        threading.Thread(target=create, args=(i,)) for i in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(r is not None for r in responses)
    return responses


def test_twenty_racing_creates_admit_exactly_the_quota(tmp_path):
    api = _api(tmp_path, {'instances': 10})
    api.add_flavor()
    image = api.add_image()
    responses = _race(api, [api.client], 20, _body('1', image))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [202] * 10 + [403] * 10
    for response in responses:
        if response.status_code == 403:
            assert response.json['forbidden']['message'] == (
                'Quota exceeded for instances: Requested 1, but already '
                'used 10 of 10 instances'
            )
    admitted = sorted(
        r.json['server']['id'] for r in responses if r.status_code == 202
    )
    records = _records(api)
    assert records['build_requests'] == admitted
    assert records['request_specs'] == admitted
    assert records['mappings'] == admitted
    assert _cast(api.conductor) == admitted
    limits = api.req('GET', '/v2.1/limits', user='alice', project='p1')
    absolute = limits.json['limits']['absolute']
    assert (absolute['totalInstancesUsed'], absolute['maxTotalInstances']) == (
        10,
        10,
    )


def test_two_api_processes_racing_stay_within_the_quota(tmp_path):
    """Two apps on one database do not share a lock (as two nimbus-api
    processes): the recheck alone keeps the limit; a create it refuses
    leaves nothing behind."""
    api = _api(tmp_path, {'instances': 10, 'cores': 12})
    api.add_flavor(vcpus=1)
    image = api.add_image()
    other = testing.TestClient(
        api_app.make_app(
            api.conf,
            api_db=api.api_db,
            cells=api.cells,
            conductor_api=api.conductor,
            scheduler_api=api.scheduler,
        )
    )
    responses = _race(api, [api.client, other], 20, _body('1', image))
    admitted = sorted(
        r.json['server']['id'] for r in responses if r.status_code == 202
    )
    refused = [r for r in responses if r.status_code == 403]
    assert len(admitted) + len(refused) == 20
    # Each app holds at most one create between its write and its recheck,
    # so a create is refused only when at least 9 others are admitted.
    assert 9 <= len(admitted) <= 10
    for response in refused:
        assert response.json['forbidden']['message'].startswith(
            'Quota exceeded for instances: Requested 1, but already used '
        )
    records = _records(api)
    assert records['build_requests'] == admitted
    assert records['request_specs'] == admitted
    assert records['mappings'] == admitted
    assert _cast(api.conductor) == admitted


# (quota, flavor vcpus, flavor MiB, count of the held create, message)
CASES = {
    'instances': (
        {'instances': 2},
        1,
        512,
        1,
        'Quota exceeded for instances: Requested 1, but already used 2 of '
        '2 instances',
    ),
    'cores': (
        {'cores': 4},
        2,
        512,
        1,
        'Quota exceeded for cores: Requested 2, but already used 4 of 4 cores',
    ),
    'ram': (
        {'ram': 2048},
        1,
        1024,
        1,
        'Quota exceeded for ram: Requested 1024, but already used 2048 of '
        '2048 ram',
    ),
    'multi-create': (
        {'instances': 4},
        1,
        512,
        2,
        'Quota exceeded for instances: Requested 2, but already used 4 of '
        '4 instances',
    ),
}


def _held_create(tmp_path, case, recheck):
    """A create passes its first check and waits (device profile lookup)
    while plain creates take the headroom; then it goes on."""
    quota, vcpus, ram, count, _ = CASES[case]
    quota = dict(quota, recheck_quota=recheck)
    accelerator = HeldAccelerator()
    api = _api(tmp_path, quota, accelerator)
    api.add_flavor('1', 'plain', vcpus=vcpus, memory_mb=ram)
    api.add_flavor(
        '2',
        'accel',
        vcpus=vcpus,
        memory_mb=ram,
        extra_specs={'accel:device_profile': 'fpga'},
    )
    image = api.add_image()
    held = {}
    thread = threading.Thread(
        target=lambda: held.update(
            response=_post(api, _body('2', image, count, 'held'))
        )
    )
    thread.start()
    assert accelerator.entered.wait(30)
    # Fill the quota up while the held create waits.
    taken = []
    while True:
        response = _post(api, _body('1', image))
        if response.status_code != 202:
            assert response.status_code == 403
            break
        taken.append(response.json['server']['id'])
    accelerator.release.set()
    thread.join(30)
    return api, held['response'], sorted(taken)


@pytest.mark.parametrize('case', sorted(CASES))
def test_recheck_refuses_a_create_whose_headroom_was_taken(tmp_path, case):
    api, response, taken = _held_create(tmp_path, case, recheck=True)
    assert response.status_code == 403
    assert response.json['forbidden']['message'] == CASES[case][4]
    records = _records(api)
    assert records['build_requests'] == taken
    assert records['request_specs'] == taken
    assert records['mappings'] == taken
    assert _cast(api.conductor) == taken


def test_without_recheck_the_held_create_goes_over(tmp_path):
    """What the option prevents: with ``recheck_quota = false`` the held
    create is admitted beyond the limit."""
    api, response, taken = _held_create(tmp_path, 'instances', recheck=False)
    assert response.status_code == 202
    assert len(_records(api)['mappings']) == len(taken) + 1 == 3


def test_a_refused_create_leaves_its_group_membership_behind(tmp_path):
    """A create into a server group that the recheck refuses is no member
    of the group."""
    accelerator = HeldAccelerator()
    api = _api(tmp_path, {'instances': 1}, accelerator)
    api.add_flavor('1', 'plain')
    api.add_flavor('2', 'accel', extra_specs={'accel:device_profile': 'fpga'})
    image = api.add_image()
    group = api.req(
        'POST',
        '/v2.1/os-server-groups',
        {'server_group': {'name': 'g', 'policies': ['anti-affinity']}},
        user='alice',
        project='p1',
        roles='member',
    )
    assert group.status_code == 200, group.json
    body = _body('2', image, name='held')
    body['os:scheduler_hints'] = {'group': group.json['server_group']['id']}
    held = {}
    thread = threading.Thread(
        target=lambda: held.update(response=_post(api, body))
    )
    thread.start()
    assert accelerator.entered.wait(30)
    first = _post(api, _body('1', image))
    assert first.status_code == 202
    accelerator.release.set()
    thread.join(30)
    assert held['response'].status_code == 403
    assert _records(api)['members'] == []
    assert _records(api)['mappings'] == [first.json['server']['id']]


def test_recheck_counts_racers_already_in_their_cell(tmp_path):
    """The recheck reads the flavors of the creates that raced it only:
    one whose build request has already become an instance in its cell
    (the conductor deleted the build request) is counted from its request
    spec, so it still takes the held create's cores."""
    accelerator = HeldAccelerator()
    api = _api(tmp_path, {'cores': 4}, accelerator)
    api.add_flavor('1', 'plain', vcpus=2)
    api.add_flavor(
        '2', 'accel', vcpus=2, extra_specs={'accel:device_profile': 'fpga'}
    )
    image = api.add_image()
    held = {}
    thread = threading.Thread(
        target=lambda: held.update(
            response=_post(api, _body('2', image, name='held'))
        )
    )
    thread.start()
    assert accelerator.entered.wait(30)
    taken = []
    for name in ('a', 'b'):
        response = _post(api, _body('1', image, name=name))
        assert response.status_code == 202, response.json
        taken.append(response.json['server']['id'])
    # As the super conductor does once the instances are in their cell.
    with api.api_db.session() as session:
        session.execute(
            sa.delete(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid.in_(taken)
            )
        )
    accelerator.release.set()
    thread.join(30)
    assert held['response'].status_code == 403
    assert held['response'].json['forbidden']['message'] == (
        'Quota exceeded for cores: Requested 2, but already used 4 of 4 cores'
    )
    assert _records(api)['mappings'] == sorted(taken)


def test_a_create_reads_its_quota_once_and_rechecks_in_one_transaction(
    tmp_path,
):
    """What a create costs the API database when nothing races it: the
    reads before the write (flavor, image, limits, usage) in one
    transaction, the write in one, the recheck in one."""
    api = _api(tmp_path, {'instances': 5, 'cores': 8})
    api.add_flavor()
    image = api.add_image()
    # The first create also reads the cell mappings (cached afterwards).
    assert _post(api, _body('1', image)).status_code == 202
    commits = []

    def on_commit(connection):
        if connection.engine is api.api_db.engine:
            commits.append(connection)

    sa.event.listen(sa.engine.Engine, 'commit', on_commit)
    try:
        response = _post(api, _body('1', image))
    finally:
        sa.event.remove(sa.engine.Engine, 'commit', on_commit)
    assert response.status_code == 202, response.json
    assert len(commits) == 3
