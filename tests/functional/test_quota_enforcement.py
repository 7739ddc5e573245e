"""Quotas through the real services in one process: usage counted from
placement (``[quota] count_usage_from_placement``) or from the databases,
and a multi-create over quota that leaves nothing behind."""

import pytest

from nimbus.allinone import client as client_mod
from nimbus.allinone.cloud import wait_for
from nimbus.common import context
from nimbus import services


def _placement_usages(cloud, project_id):
    client = services.placement(cloud.conf)
    response = client.request(
        context.get_admin_context(),
        'GET',
        '/usages',
        params={'project_id': project_id},
        version='1.9',
    )
    assert response.status_code == 200
    return response.json()['usages']


def _active(api, count):
    def done():
        servers = api.servers()
        active = [s for s in servers if s['status'] == 'ACTIVE']
        return servers if len(active) == count == len(servers) else None

    return wait_for(done, timeout=60, what='%d active servers' % count)


def _post(api, body):
    return api.session.post(
        api.url + '/servers', json=body, timeout=api.timeout
    )


@pytest.mark.slow
@pytest.mark.parametrize('from_placement', [True, False])
def test_multi_create_over_quota(make_cloud, from_placement):
    cloud = make_cloud(
        hosts=2,
        overrides={
            'quota': {'count_usage_from_placement': from_placement, 'cores': 6}
        },
    )
    admin = client_mod.ComputeClient(cloud.api_url)
    flavor = admin.create_flavor('m1.two', 2, 1024, 1)
    image = admin.create_image('cirros')
    user = client_mod.ComputeClient(
        cloud.api_url, user='alice', project='p1', roles='member'
    )
    user.create_server(
        'one', flavor['id'], image['id'], min_count=2, max_count=2
    )
    _active(user, 2)
    usages = _placement_usages(cloud, 'p1')
    assert usages['VCPU'] == 4 and usages['MEMORY_MB'] == 2048
    limits = user.get('/limits')['limits']['absolute']
    assert (
        limits['totalCoresUsed'],
        limits['totalRAMUsed'],
        limits['totalInstancesUsed'],
        limits['maxTotalCores'],
    ) == (4, 2048, 2, 6)
    body = {
        'server': {
            'name': 'more',
            'flavorRef': flavor['id'],
            'imageRef': image['id'],
            'networks': 'none',
            'min_count': 2,
            'max_count': 2,
        }
    }
    response = _post(user, body)
    assert response.status_code == 403
    assert response.json()['forbidden']['message'] == (
        'Quota exceeded for cores: Requested 4, but already used 4 of 6 cores'
    )
    # Nothing was created and placement holds no more than before.
    assert len(user.servers()) == 2
    assert _placement_usages(cloud, 'p1') == usages
    # Another project is not held back by p1's usage.
    other = client_mod.ComputeClient(
        cloud.api_url, user='bob', project='p2', roles='member'
    )
    assert _post(other, body).status_code == 202
    _active(other, 2)
    # Deleting frees the quota.
    for server in user.servers():
        user.delete('/servers/%s' % server['id'])
    wait_for(lambda: not user.servers(), timeout=60, what='deletes')
    wait_for(
        lambda: _placement_usages(cloud, 'p1').get('VCPU', 0) == 0,
        timeout=60,
        what='allocations freed',
    )
    assert _post(user, body).status_code == 202


def test_placement_counting_without_placement_is_503(tmp_path):
    from tests.functional.api import fixtures

    api = fixtures.ApiFixture(
        tmp_path, overrides={'quota': {'count_usage_from_placement': True}}
    )
    api.add_flavor()
    image = api.add_image()
    r = api.req(
        'POST',
        '/v2.1/servers',
        {'server': {'name': 'vm', 'flavorRef': '1', 'imageRef': image}},
    )
    assert r.status_code == 503
    assert (
        'count_usage_from_placement' in r.json['serviceUnavailable']['message']
    )
    assert api.conductor.calls == []
