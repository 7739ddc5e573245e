"""os-quota-sets, os-quota-class-sets and /limits, validated against
Tempest's response schemas, with Nova's quota enforcement at create."""

import jsonschema
import pytest

from nimbus.db.api import models as api_models

tempest_schemas = pytest.importorskip(
    'tempest.lib.api_schema.response.compute.v2_1.quotas'
)
from tempest.lib.api_schema.response.compute.v2_1 import (  # noqa: E402
    limits as limits_v21,
    quota_classes as classes_v21,
    quotas as quotas_v21,
)
from tempest.lib.api_schema.response.compute.v2_36 import (  # noqa: E402
    limits as limits_v236,
    quotas as quotas_v236,
)
from tempest.lib.api_schema.response.compute.v2_39 import (  # noqa: E402
    limits as limits_v239,
)
from tempest.lib.api_schema.response.compute.v2_50 import (  # noqa: E402
    quota_classes as classes_v250,
)
from tempest.lib.api_schema.response.compute.v2_57 import (  # noqa: E402
    limits as limits_v257,
    quota_classes as classes_v257,
    quotas as quotas_v257,
)

Q = '/v2.1/os-quota-sets/'


def check(schema, response):
    assert response.status_code in schema['status_code'], response.text
    jsonschema.validate(response.json, schema['response_body'])


def server(name='vm', flavor='1', count=None, min_count=None, **extra):
    body = {'name': name, 'flavorRef': flavor, 'imageRef': IMAGE}
    if count is not None:
        body['max_count'] = count
    if min_count is not None:
        body['min_count'] = min_count
    body.update(extra)
    return {'server': body}


IMAGE = '70a599e0-31e7-49b7-b260-868f441e862b'


@pytest.fixture
def cloud(api):
    api.add_flavor('1', 'm1.small', vcpus=1, memory_mb=512)
    api.add_flavor('4', 'm1.big', vcpus=4, memory_mb=2048)
    api.add_image(IMAGE)
    api.add_compute('host1')
    return api


@pytest.mark.parametrize(
    'version, show, detail',
    [
        ('2.1', quotas_v21.get_quota_set, quotas_v21.get_quota_set_details),
        ('2.35', quotas_v21.get_quota_set, quotas_v21.get_quota_set_details),
        ('2.36', quotas_v236.get_quota_set, quotas_v236.get_quota_set_details),
        ('2.56', quotas_v236.get_quota_set, quotas_v236.get_quota_set_details),
        ('2.57', quotas_v257.get_quota_set, quotas_v257.get_quota_set_details),
        ('2.96', quotas_v257.get_quota_set, quotas_v257.get_quota_set_details),
    ],
)
def test_quota_set_shapes(api, version, show, detail):
    r = api.req('GET', Q + 'demo', version=version)
    check(show, r)
    quota = r.json['quota_set']
    assert quota['id'] == 'demo'
    assert (quota['instances'], quota['cores'], quota['ram']) == (
        10,
        20,
        51200,
    )
    assert ('floating_ips' in quota) == (version < '2.36' and version != '2.4')
    assert ('injected_files' in quota) == (
        tuple(map(int, version.split('.'))) < (2, 57)
    )
    r = api.req('GET', Q + 'demo/detail', version=version)
    check(detail, r)
    assert r.json['quota_set']['cores'] == {
        'limit': 20,
        'in_use': 0,
        'reserved': 0,
    }
    r = api.req('GET', Q + 'demo/defaults', version=version)
    check(show, r)


def test_defaults_come_from_config(tmp_path):
    from tests.functional.api import fixtures

    fixture = fixtures.ApiFixture(
        tmp_path, overrides={'quota': {'instances': 3, 'cores': -1}}
    )
    r = fixture.req('GET', Q + 'demo/defaults')
    assert r.json['quota_set']['instances'] == 3
    assert r.json['quota_set']['cores'] == -1
    r = fixture.req('GET', '/v2.1/limits')
    assert r.json['limits']['absolute']['maxTotalInstances'] == 3


def test_update_show_delete(cloud):
    r = cloud.admin(
        'PUT',
        Q + 'demo',
        {'quota_set': {'instances': 5, 'cores': '8', 'ram': -1}},
        version='2.57',
    )
    check(quotas_v257.update_quota_set, r)
    assert 'id' not in r.json['quota_set']
    assert (
        r.json['quota_set']['instances'],
        r.json['quota_set']['cores'],
        r.json['quota_set']['ram'],
    ) == (5, 8, -1)
    r = cloud.req('GET', Q + 'demo')
    assert r.json['quota_set']['instances'] == 5
    # Another project keeps the defaults; the defaults do not move.
    assert (
        cloud.req('GET', Q + 'other', user='other').json['quota_set'][
            'instances'
        ]
        == 10
    )
    assert (
        cloud.req('GET', Q + 'demo/defaults').json['quota_set']['instances']
        == 10
    )
    r = cloud.admin('DELETE', Q + 'demo')
    assert r.status_code == 202
    # no body, as Nova (Tempest's client refuses one)
    assert r.content == b''
    assert cloud.req('GET', Q + 'demo').json['quota_set']['instances'] == 10


@pytest.mark.parametrize(
    'body, version, words',
    [
        ({'quota_set': {'instances': 1.0}}, '2.1', 'instances'),
        ({'quota_set': {'instances': '1.0'}}, '2.1', 'instances'),
        ({'quota_set': {'instances': -2}}, '2.1', 'instances'),
        ({'quota_set': {'instances': '-2'}}, '2.1', 'instances'),
        ({'quota_set': {'instances': True}}, '2.1', 'instances'),
        ({'quota_set': {'widgets': 1}}, '2.1', 'widgets'),
        ({'quota_set': {'floating_ips': 1}}, '2.36', 'floating_ips'),
        ({'quota_set': {'injected_files': 1}}, '2.57', 'injected_files'),
        ({'quota_set': {'force': 'maybe'}}, '2.1', 'force'),
        ({'quota': {'instances': 1}}, '2.1', 'quota_set'),
    ],
)
def test_update_bad_input(api, body, version, words):
    r = api.admin('PUT', Q + 'demo', body, version=version)
    assert r.status_code == 400, r.text
    assert words in r.json['badRequest']['message']


def test_legacy_resources_updatable_below_236(api):
    r = api.admin(
        'PUT', Q + 'demo', {'quota_set': {'floating_ips': 3}}, version='2.35'
    )
    check(quotas_v21.update_quota_set, r)
    assert r.json['quota_set']['floating_ips'] == 3


def test_rbac(api):
    # A member reads its own quotas, not another project's, and changes
    # none; the defaults are anyone's to read.
    assert api.req('GET', Q + 'demo').status_code == 200
    assert api.req('GET', Q + 'demo/detail').status_code == 200
    r = api.req('GET', Q + 'other')
    assert r.status_code == 403 and 'forbidden' in r.json
    assert api.req('GET', Q + 'other/detail').status_code == 403
    assert api.req('GET', Q + 'other/defaults').status_code == 200
    r = api.req('PUT', Q + 'demo', {'quota_set': {'instances': 50}})
    assert r.status_code == 403
    assert api.req('DELETE', Q + 'demo').status_code == 403
    assert api.req('GET', Q + 'demo').json['quota_set']['instances'] == 10
    # An administrator reads and changes any project's.
    assert api.admin('GET', Q + 'other').status_code == 200
    assert (
        api.admin(
            'PUT', Q + 'other', {'quota_set': {'instances': 1}}
        ).status_code
        == 200
    )
    assert (
        api.req('GET', '/v2.1/os-quota-class-sets/default').status_code == 403
    )
    assert (
        api.req(
            'PUT',
            '/v2.1/os-quota-class-sets/default',
            {'quota_class_set': {'instances': 1}},
        ).status_code
        == 403
    )
    assert api.req('GET', '/v2.1/limits?tenant_id=other').status_code == 403
    r = api.admin('GET', '/v2.1/limits?tenant_id=other')
    assert r.json['limits']['absolute']['maxTotalInstances'] == 1


@pytest.mark.parametrize(
    'version, schema, groups, network',
    [
        ('2.1', classes_v21.get_quota_class_set, False, True),
        ('2.49', classes_v21.get_quota_class_set, False, True),
        ('2.50', classes_v250.get_quota_class_set, True, False),
        ('2.57', classes_v257.get_quota_class_set, True, False),
    ],
)
def test_quota_class_shapes(api, version, schema, groups, network):
    r = api.admin('GET', '/v2.1/os-quota-class-sets/default', version=version)
    check(schema, r)
    body = r.json['quota_class_set']
    assert body['id'] == 'default'
    assert ('server_groups' in body) == groups
    assert ('floating_ips' in body) == network


def test_quota_class_update_changes_defaults(api):
    r = api.admin(
        'PUT',
        '/v2.1/os-quota-class-sets/default',
        {'quota_class_set': {'instances': 7, 'server_groups': 2}},
        version='2.57',
    )
    check(classes_v257.update_quota_class_set, r)
    assert r.json['quota_class_set']['instances'] == 7
    assert (
        api.req('GET', Q + 'demo/defaults').json['quota_set']['instances'] == 7
    )
    assert api.req('GET', Q + 'demo').json['quota_set']['instances'] == 7
    # A project's own limit still wins over the class.
    api.admin('PUT', Q + 'demo', {'quota_set': {'instances': 4}})
    assert api.req('GET', Q + 'demo').json['quota_set']['instances'] == 4
    r = api.admin(
        'PUT',
        '/v2.1/os-quota-class-sets/default',
        {'quota_class_set': {'server_groups': 2}},
        version='2.49',
    )
    assert r.status_code == 400
    assert 'server_groups' in r.json['badRequest']['message']


@pytest.mark.parametrize(
    'version, schema, gone',
    [
        ('2.1', limits_v21.get_limit, ()),
        ('2.35', limits_v21.get_limit, ()),
        (
            '2.36',
            limits_v236.get_limit,
            ('maxTotalFloatingIps', 'maxSecurityGroups'),
        ),
        ('2.38', limits_v236.get_limit, ('maxTotalFloatingIps',)),
        ('2.39', limits_v239.get_limit, ('maxImageMeta',)),
        ('2.57', limits_v257.get_limit, ('maxPersonality', 'maxImageMeta')),
        ('2.96', limits_v257.get_limit, ('maxPersonalitySize',)),
    ],
)
def test_limits_shapes(cloud, version, schema, gone):
    cloud.req('POST', '/v2.1/servers', server(flavor='4'))
    r = cloud.req('GET', '/v2.1/limits', version=version)
    check(schema, r)
    absolute = r.json['limits']['absolute']
    assert r.json['limits']['rate'] == []
    assert absolute['maxTotalInstances'] == 10
    assert absolute['totalInstancesUsed'] == 1
    assert absolute['totalCoresUsed'] == 4
    assert absolute['totalRAMUsed'] == 2048
    for name in gone:
        assert name not in absolute
    # The strict schema of the version before a removal refuses it.
    if version == '2.36':
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(r.json, limits_v21.get_limit['response_body'])


def _stored(api):
    with api.api_db.session() as session:
        return session.query(api_models.BuildRequest).count(), session.query(
            api_models.InstanceMapping
        ).count()


def test_create_over_cores_quota(cloud):
    cloud.admin('PUT', Q + 'demo', {'quota_set': {'cores': 20}})
    for _ in range(4):
        assert (
            cloud.req('POST', '/v2.1/servers', server(flavor='4')).status_code
            == 202
        )
    r = cloud.req(
        'POST', '/v2.1/servers', server(flavor='4', count=2, min_count=2)
    )
    assert r.status_code == 403
    assert r.json['forbidden']['message'] == (
        'Quota exceeded for cores: Requested 8, but already used 16 of 20 '
        'cores'
    )
    assert _stored(cloud) == (4, 4)
    assert len(cloud.conductor.calls) == 4


def test_multi_create_over_instances_quota_creates_nothing(cloud):
    cloud.admin('PUT', Q + 'demo', {'quota_set': {'instances': 3}})
    r = cloud.req('POST', '/v2.1/servers', server(count=5, min_count=5))
    assert r.status_code == 403
    assert r.json['forbidden']['message'] == (
        'Quota exceeded for instances: Requested 5, but already used 0 of 3 '
        'instances'
    )
    assert _stored(cloud) == (0, 0)
    assert cloud.conductor.calls == []


def test_multi_create_lowered_to_what_fits(cloud):
    # Nova's rule: with min_count 1 and max_count 5 and room for 3, three
    # servers are created.
    cloud.admin('PUT', Q + 'demo', {'quota_set': {'instances': 3}})
    r = cloud.req('POST', '/v2.1/servers', server(count=5, min_count=1))
    assert r.status_code == 202
    assert len(cloud.conductor.calls[0][2]) == 3
    assert _stored(cloud) == (3, 3)
    r = cloud.req('POST', '/v2.1/servers', server())
    assert r.status_code == 403
    assert 'instances' in r.json['forbidden']['message']


def test_several_resources_over(cloud):
    cloud.admin('PUT', Q + 'demo', {'quota_set': {'instances': 1, 'cores': 2}})
    r = cloud.req('POST', '/v2.1/servers', server(flavor='4', count=2))
    assert r.status_code == 403
    assert r.json['forbidden']['message'] == (
        'Quota exceeded for instances, cores: Requested 1-2, 8, but already '
        'used 0, 0 of 1, 2 instances, cores'
    )


def test_unlimited_and_other_projects(cloud):
    cloud.admin(
        'PUT',
        Q + 'demo',
        {'quota_set': {'instances': -1, 'cores': -1, 'ram': -1}},
    )
    r = cloud.req('POST', '/v2.1/servers', server(flavor='4', count=12))
    assert r.status_code == 202
    assert len(cloud.conductor.calls[0][2]) == 12
    # The demo project's servers do not count against another project.
    r = cloud.req(
        'POST', '/v2.1/servers', server(flavor='4', count=5), user='other'
    )
    assert r.status_code == 202
    r = cloud.req('GET', '/v2.1/limits', user='other')
    assert r.json['limits']['absolute']['totalCoresUsed'] == 20


def test_deleted_servers_free_quota(cloud):
    cloud.admin('PUT', Q + 'demo', {'quota_set': {'instances': 1}})
    r = cloud.req('POST', '/v2.1/servers', server())
    uuid = r.json['server']['id']
    cloud.place(uuid)
    assert cloud.req('POST', '/v2.1/servers', server()).status_code == 403
    assert cloud.req('DELETE', '/v2.1/servers/' + uuid).status_code == 204
    assert cloud.req('POST', '/v2.1/servers', server()).status_code == 202


def test_update_below_usage_needs_force(cloud):
    cloud.req('POST', '/v2.1/servers', server(flavor='4', count=2))
    r = cloud.admin('PUT', Q + 'demo', {'quota_set': {'cores': 4}})
    assert r.status_code == 400
    assert r.json['badRequest']['message'] == (
        'Quota limit 4 for cores must be greater than or equal to already '
        'used and reserved 8.'
    )
    r = cloud.admin(
        'PUT', Q + 'demo', {'quota_set': {'cores': 4, 'force': True}}
    )
    assert r.status_code == 200 and r.json['quota_set']['cores'] == 4
    r = cloud.req('GET', Q + 'demo/detail')
    assert r.json['quota_set']['cores'] == {
        'limit': 4,
        'in_use': 8,
        'reserved': 0,
    }


def test_metadata_items_quota(cloud):
    cloud.admin('PUT', Q + 'demo', {'quota_set': {'metadata_items': 1}})
    r = cloud.req(
        'POST', '/v2.1/servers', server(metadata={'a': '1', 'b': '2'})
    )
    assert r.status_code == 403
    assert 'metadata_items' in r.json['forbidden']['message']
    assert _stored(cloud) == (0, 0)


def test_personality_quotas(cloud):
    """Personality files (below 2.57) within injected_files and its
    path and content limits: 403 naming the limit, nothing stored."""
    cloud.admin(
        'PUT',
        Q + 'demo',
        {
            'quota_set': {
                'injected_files': 1,
                'injected_file_path_bytes': 10,
                'injected_file_content_bytes': 4,
            }
        },
    )

    def create(*files):
        personality = [{'path': p, 'contents': c} for p, c in files]
        return cloud.req(
            'POST',
            '/v2.1/servers',
            server(personality=personality),
            version='2.56',
        )

    r = create(('/etc/a', 'YWJj'), ('/etc/b', 'YWJj'))
    assert r.status_code == 403
    assert 'Personality file limit' in r.json['forbidden']['message']
    r = create(('/etc/a-long-path', 'YWJj'))
    assert r.status_code == 403 and 'path' in r.json['forbidden']['message']
    # 'YWJjZGU=' decodes to 5 bytes, over 4.
    r = create(('/etc/a', 'YWJjZGU='))
    assert r.status_code == 403
    assert 'content' in r.json['forbidden']['message']
    assert _stored(cloud) == (0, 0)
    assert create(('/etc/a', 'YWJj')).status_code == 202


def test_server_group_quotas(cloud):
    cloud.admin(
        'PUT',
        Q + 'demo',
        {'quota_set': {'server_groups': 1, 'server_group_members': 2}},
    )
    r = cloud.req(
        'POST',
        '/v2.1/os-server-groups',
        {'server_group': {'name': 'g', 'policies': ['anti-affinity']}},
    )
    group = r.json['server_group']['id']
    r = cloud.req(
        'POST',
        '/v2.1/os-server-groups',
        {'server_group': {'name': 'g2', 'policies': ['anti-affinity']}},
    )
    assert r.status_code == 403
    assert 'server_groups' in r.json['forbidden']['message']
    hints = {'group': group}
    body = server(count=3, min_count=3)
    body['os:scheduler_hints'] = hints
    r = cloud.req('POST', '/v2.1/servers', body)
    assert r.status_code == 403
    assert r.json['forbidden']['message'] == (
        'Quota exceeded, too many servers in group: Requested 3, but '
        'already used 0 of 2 server_group_members'
    )
    assert _stored(cloud) == (0, 0)
    body = server(count=2)
    body['os:scheduler_hints'] = hints
    assert cloud.req('POST', '/v2.1/servers', body).status_code == 202
    r = cloud.req('GET', '/v2.1/limits')
    assert r.json['limits']['absolute']['totalServerGroupsUsed'] == 1
