"""Every response of the compute API against Nova's response schemas, as
Tempest (47) holds them, at each microversion where a schema changes.

The schema of a call is chosen the way Tempest's service clients choose it:
the client class's ``schema_versions_info`` (min/max microversion -> schema
module), and the same validator (``RestClient.validate_response``: status
code, then the body against the schema with additionalProperties false, so a
field too many or too few fails).
"""

import pytest
from tempest.lib.api_schema.response.compute.v2_1 import (
    availability_zone as az_schema,
)
from tempest.lib.api_schema.response.compute.v2_1 import (
    flavors_access as access_schema,
)
from tempest.lib.api_schema.response.compute.v2_1 import (
    flavors_extra_specs as specs_schema,
)
from tempest.lib.api_schema.response.compute.v2_1 import (
    server_external_events as events_schema,
)
from tempest.lib.api_schema.response.compute.v2_1 import servers as servers_v21
from tempest.lib.api_schema.response.compute.v2_1 import (
    versions as versions_schema,
)
from tempest.lib.common import api_version_request
from tempest.lib.common import rest_client
from tempest.lib.services.compute import aggregates_client
from tempest.lib.services.compute import flavors_client
from tempest.lib.services.compute import hypervisor_client
from tempest.lib.services.compute import keypairs_client
from tempest.lib.services.compute import server_groups_client
from tempest.lib.services.compute import servers_client
from tempest.lib.services.compute import services_client

from nimbus.api import versions as api_versions
from nimbus.api.objects import keypair_crypto


class _Response(dict):
    """What validate_response reads of a response: headers and status."""

    def __init__(self, result):
        super().__init__({k.lower(): v for k, v in result.headers.items()})
        self.status = result.status_code


def schemas_of(client_class, version):
    """The schema module Tempest's client uses at ``version``."""
    wanted = api_version_request.APIVersionRequest(version)
    for info in client_class.schema_versions_info:
        low = api_version_request.APIVersionRequest(info['min'])
        high = api_version_request.APIVersionRequest(info['max'])
        if wanted.matches(low, high):
            return info['schema']
    raise AssertionError('no schema for %s at %s' % (client_class, version))


def check(schema, result):
    """Tempest's own check; raises InvalidHTTPResponseBody on a field too
    many or too few, or on a wrong status code."""
    body = result.json if result.text else ''
    rest_client.RestClient.validate_response(schema, _Response(result), body)
    return body


def boundaries(client_class):
    """Each microversion where the client's schema changes, and the
    highest Nimbus serves."""
    out = []
    for info in client_class.schema_versions_info:
        low = info['min'] or '2.1'
        if api_version_request.APIVersionRequest(
            low
        ) <= api_version_request.APIVersionRequest(api_versions.MAX_VERSION):
            out.append(low)
    return out + [api_versions.MAX_VERSION]


SERVER_VERSIONS = sorted(
    set(
        boundaries(servers_client.ServersClient)
        + ['2.63', '2.71', '2.73', '2.90', '2.96']
    ),
    key=lambda v: tuple(int(p) for p in v.split('.')),
)


@pytest.fixture
def world(api):
    api.add_flavor('1', 'm1.small')
    api.image = api.add_image()
    api.add_compute('host1')
    return api


def _boot(api, version, **server):
    body = {
        'server': dict(
            {'name': 'vm', 'flavorRef': '1', 'imageRef': api.image}, **server
        )
    }
    return api.req('POST', '/v2.1/servers', body, version=version)


@pytest.mark.matrix
@pytest.mark.parametrize('version', SERVER_VERSIONS)
@pytest.mark.parametrize('user', ['demo', 'admin'])
def test_servers(world, version, user):
    schema = schemas_of(servers_client.ServersClient, version)
    r = _boot(world, version, accessIPv4='192.0.2.7')
    # Tempest's client checks a create (and a delete) against the 2.1
    # schema at every microversion.
    created = check(servers_v21.create_server_with_admin_pass, r)['server']
    assert 'name' not in created
    building = created['id']
    placed = check(
        servers_v21.create_server_with_admin_pass, _boot(world, version)
    )['server']['id']
    world.place(placed)
    for uuid in (building, placed):
        r = world.req(
            'GET',
            '/v2.1/servers/%s' % uuid,
            user=user,
            project='demo',
            version=version,
        )
        server = check(schema.get_server, r)['server']
        assert ('server_groups' in server) == (
            api_version_request.APIVersionRequest(version)
            >= api_version_request.APIVersionRequest('2.71')
        )
    r = world.req('GET', '/v2.1/servers/%s' % building, version=version)
    assert r.json['server']['accessIPv4'] == '192.0.2.7'
    check(
        schema.list_servers,
        world.req(
            'GET', '/v2.1/servers', user=user, project='demo', version=version
        ),
    )
    r = world.req(
        'GET',
        '/v2.1/servers/detail',
        user=user,
        project='demo',
        version=version,
    )
    assert len(check(schema.list_servers_detail, r)['servers']) == 2
    body = {'name': 'renamed', 'accessIPv6': '2001:db8::7'}
    for uuid in (building, placed):
        r = world.req(
            'PUT',
            '/v2.1/servers/%s' % uuid,
            {'server': body},
            user=user,
            project='demo',
            version=version,
        )
        updated = check(schema.update_server, r)['server']
        assert updated['name'] == 'renamed'
        shown = world.req(
            'GET', '/v2.1/servers/%s' % uuid, version=version
        ).json['server']
        assert shown['name'] == 'renamed'
        assert shown['accessIPv6'] == '2001:db8::7'
    check(
        servers_v21.delete_server,
        world.req('DELETE', '/v2.1/servers/%s' % building, version=version),
    )


def test_reservation_id_finds_the_servers_of_one_multi_create(world):
    r = _boot(
        world, '2.1', min_count=2, max_count=2, return_reservation_id=True
    )
    reservation = r.json['reservation_id']
    _boot(world, '2.1')
    uuids = [
        s['id']
        for s in world.req(
            'GET', '/v2.1/servers?reservation_id=%s' % reservation
        ).json['servers']
    ]
    assert len(uuids) == 2
    world.place(uuids[0])
    r = world.req(
        'GET', '/v2.1/servers/detail?reservation_id=%s' % reservation
    )
    assert sorted(s['id'] for s in r.json['servers']) == sorted(uuids)


@pytest.mark.parametrize(
    'server',
    [{'key_name': 'nokey'}, {'security_groups': [{'name': 'does_not_exist'}]}],
)
def test_unknown_keypair_or_security_group_is_400(world, server):
    r = _boot(world, '2.1', **server)
    assert r.status_code == 400
    assert (
        'could not be found' in r.json['badRequest']['message']
        or 'not found' in r.json['badRequest']['message']
    )
    assert world.conductor.calls == []


@pytest.mark.parametrize('version', boundaries(flavors_client.FlavorsClient))
def test_flavors(api, version):
    schema = schemas_of(flavors_client.FlavorsClient, version)
    r = api.admin(
        'POST',
        '/v2.1/flavors',
        {
            'flavor': {
                'name': 'f1',
                'ram': 512,
                'vcpus': 1,
                'disk': 1,
                'id': 42,
                'os-flavor-access:is_public': 'False',
            }
        },
        version=version,
    )
    flavor = check(schema.create_update_get_flavor_details, r)['flavor']
    assert flavor['id'] == '42'
    assert flavor['os-flavor-access:is_public'] is False
    check(
        schema.create_update_get_flavor_details,
        api.admin('GET', '/v2.1/flavors/42', version=version),
    )
    check(
        schema.list_flavors,
        api.admin('GET', '/v2.1/flavors?is_public=None', version=version),
    )
    check(
        schema.list_flavors_details,
        api.admin(
            'GET', '/v2.1/flavors/detail?is_public=None', version=version
        ),
    )
    check(
        specs_schema.set_get_flavor_extra_specs,
        api.admin(
            'POST',
            '/v2.1/flavors/42/os-extra_specs',
            {'extra_specs': {'hw:cpu_policy': 'shared'}},
            version=version,
        ),
    )
    check(
        specs_schema.set_get_flavor_extra_specs,
        api.admin('GET', '/v2.1/flavors/42/os-extra_specs', version=version),
    )
    check(
        specs_schema.set_get_flavor_extra_specs_key,
        api.admin(
            'GET',
            '/v2.1/flavors/42/os-extra_specs/hw:cpu_policy',
            version=version,
        ),
    )
    check(
        specs_schema.set_get_flavor_extra_specs_key,
        api.admin(
            'PUT',
            '/v2.1/flavors/42/os-extra_specs/hw:cpu_policy',
            {'hw:cpu_policy': 'dedicated'},
            version=version,
        ),
    )
    check(
        specs_schema.unset_flavor_extra_specs,
        api.admin(
            'DELETE',
            '/v2.1/flavors/42/os-extra_specs/hw:cpu_policy',
            version=version,
        ),
    )
    check(
        schema.delete_flavor,
        api.admin('DELETE', '/v2.1/flavors/42', version=version),
    )


@pytest.mark.parametrize(
    'value, public',
    [
        (True, True),
        (False, False),
        ('True', True),
        ('False', False),
        ('true', True),
        ('0', False),
    ],
)
def test_flavor_is_public_as_nova_accepts_it(api, value, public):
    r = api.admin(
        'POST',
        '/v2.1/flavors',
        {
            'flavor': {
                'name': 'f',
                'ram': 512,
                'vcpus': 1,
                'disk': 1,
                'os-flavor-access:is_public': value,
            }
        },
    )
    assert r.status_code == 200
    assert r.json['flavor']['os-flavor-access:is_public'] is public


@pytest.mark.parametrize('flavor_id', [1.0, 'bad id!', ' x', True])
def test_flavor_id_refused_forms(api, flavor_id):
    r = api.admin(
        'POST',
        '/v2.1/flavors',
        {
            'flavor': {
                'name': 'f',
                'ram': 512,
                'vcpus': 1,
                'disk': 1,
                'id': flavor_id,
            }
        },
    )
    assert r.status_code == 400
    assert 'id' in r.json['badRequest']['message']


@pytest.mark.parametrize(
    'version', boundaries(aggregates_client.AggregatesClient)
)
def test_aggregates(api, version):
    api.add_compute('host1')
    schema = schemas_of(aggregates_client.AggregatesClient, version)
    r = api.admin(
        'POST',
        '/v2.1/os-aggregates',
        {'aggregate': {'name': 'a1', 'availability_zone': 'z1'}},
        version=version,
    )
    agg = check(schema.create_aggregate, r)['aggregate']
    assert 'hosts' not in agg and 'metadata' not in agg
    path = '/v2.1/os-aggregates/%s' % agg['id']
    check(schema.get_aggregate, api.admin('GET', path, version=version))
    check(
        schema.list_aggregates,
        api.admin('GET', '/v2.1/os-aggregates', version=version),
    )
    check(
        schema.update_aggregate,
        api.admin('PUT', path, {'aggregate': {'name': 'a2'}}, version=version),
    )
    check(
        schema.aggregate_add_remove_host,
        api.admin(
            'POST',
            path + '/action',
            {'add_host': {'host': 'host1'}},
            version=version,
        ),
    )
    check(
        schema.aggregate_set_metadata,
        api.admin(
            'POST',
            path + '/action',
            {'set_metadata': {'metadata': {'k': 'v'}}},
            version=version,
        ),
    )
    check(
        schema.aggregate_add_remove_host,
        api.admin(
            'POST',
            path + '/action',
            {'remove_host': {'host': 'host1'}},
            version=version,
        ),
    )
    check(schema.delete_aggregate, api.admin('DELETE', path, version=version))


@pytest.mark.parametrize('aggregate_id', ['-1', '999'])
def test_a_missing_aggregate_is_404(api, aggregate_id):
    path = '/v2.1/os-aggregates/%s' % aggregate_id
    for method, body in (
        ('GET', None),
        ('DELETE', None),
        ('PUT', {'aggregate': {'name': 'x'}}),
    ):
        r = api.admin(method, path, body)
        assert r.status_code == 404, (method, r.text)
        assert aggregate_id in r.json['itemNotFound']['message']
    r = api.admin('GET', '/v2.1/os-aggregates/abc')
    assert r.status_code == 400
    assert 'abc' in r.json['badRequest']['message']


@pytest.mark.parametrize(
    'version', boundaries(server_groups_client.ServerGroupsClient)
)
def test_server_groups(api, version):
    schema = schemas_of(server_groups_client.ServerGroupsClient, version)
    if api_version_request.APIVersionRequest(
        version
    ) >= api_version_request.APIVersionRequest('2.64'):
        body = {'name': 'g', 'policy': 'affinity'}
    else:
        body = {'name': 'g', 'policies': ['affinity']}
    r = api.req(
        'POST',
        '/v2.1/os-server-groups',
        {'server_group': body},
        version=version,
    )
    group = check(schema.create_show_server_group, r)['server_group']
    path = '/v2.1/os-server-groups/%s' % group['id']
    check(
        schema.create_show_server_group, api.req('GET', path, version=version)
    )
    check(
        schema.list_server_groups,
        api.req('GET', '/v2.1/os-server-groups', version=version),
    )
    check(schema.delete_server_group, api.req('DELETE', path, version=version))


# Tempest has no schema for 2.88 (where Nova's hypervisors gained
# ``uptime`` and lost the statistics), so its schemas are checked up to 2.87.
@pytest.mark.parametrize(
    'version', boundaries(hypervisor_client.HypervisorClient)[:-1] + ['2.87']
)
def test_hypervisors(api, version):
    api.add_compute('host1')
    schema = schemas_of(hypervisor_client.HypervisorClient, version)
    check(
        schema.list_search_hypervisors,
        api.admin('GET', '/v2.1/os-hypervisors', version=version),
    )
    r = api.admin('GET', '/v2.1/os-hypervisors/detail', version=version)
    node = check(schema.list_hypervisors_detail, r)['hypervisors'][0]
    check(
        schema.get_hypervisor,
        api.admin(
            'GET', '/v2.1/os-hypervisors/%s' % node['id'], version=version
        ),
    )
    check(
        schema.get_hypervisor_statistics,
        api.admin('GET', '/v2.1/os-hypervisors/statistics', version=version),
    )


@pytest.mark.parametrize('version', boundaries(services_client.ServicesClient))
def test_services(api, version):
    api.add_compute('host1')
    schema = schemas_of(services_client.ServicesClient, version)
    r = api.admin('GET', '/v2.1/os-services', version=version)
    service = check(schema.list_services, r)['services'][0]
    if api_version_request.APIVersionRequest(
        version
    ) >= api_version_request.APIVersionRequest('2.53'):
        r = api.admin(
            'PUT',
            '/v2.1/os-services/%s' % service['id'],
            {'status': 'disabled'},
            version=version,
        )
        check(schema.update_service, r)


def test_availability_zones(api):
    api.add_compute('host1')
    check(
        az_schema.list_availability_zone_list,
        api.req('GET', '/v2.1/os-availability-zone'),
    )
    check(
        az_schema.list_availability_zone_list_detail,
        api.admin('GET', '/v2.1/os-availability-zone/detail'),
    )


def test_external_events(world):
    uuid = _boot(world, '2.1').json['server']['id']
    world.place(uuid)
    r = world.admin(
        'POST',
        '/v2.1/os-server-external-events',
        {'events': [{'name': 'network-changed', 'server_uuid': uuid}]},
    )
    check(events_schema.create, r)


def test_versions(api):
    body = check(versions_schema.list_versions, api.req('GET', '/'))
    assert [v['id'] for v in body['versions']] == ['v2.0', 'v2.1']
    check(versions_schema.get_one_version, api.req('GET', '/v2.1'))


def test_every_version_link_of_the_root_is_its_version_document(api):
    """Tempest's test_get_version_details: follow each self link of
    ``GET /`` and find the same version there (v2.0 at /v2/, which is
    the compute API's, not the images API's)."""
    for version in api.req('GET', '/').json['versions']:
        (link,) = [x['href'] for x in version['links'] if x['rel'] == 'self']
        path = link.split('://', 1)[-1].split('/', 1)[-1]
        r = api.client.simulate_get('/' + path)
        body = check(versions_schema.get_one_version, r)
        assert body['version']['id'] == version['id']
        assert body['version']['media-types']


@pytest.mark.parametrize(
    'version', boundaries(keypairs_client.KeyPairsClient) + ['2.10', '2.35']
)
def test_keypairs(api, version):
    schema = schemas_of(keypairs_client.KeyPairsClient, version)
    bodies = [{'name': 'imp', 'public_key': keypair_crypto.generate_ssh()[1]}]
    if api_version_request.APIVersionRequest(
        version
    ) < api_version_request.APIVersionRequest('2.92'):
        bodies.append({'name': 'gen'})
    for body in bodies:
        r = api.req(
            'POST', '/v2.1/os-keypairs', {'keypair': body}, version=version
        )
        check(schema.create_keypair, r)
        r = api.req(
            'GET', '/v2.1/os-keypairs/%s' % body['name'], version=version
        )
        check(schema.get_keypair, r)
    r = api.req('GET', '/v2.1/os-keypairs', version=version)
    assert len(check(schema.list_keypairs, r)['keypairs']) == len(bodies)
    for body in bodies:
        r = api.req(
            'DELETE', '/v2.1/os-keypairs/%s' % body['name'], version=version
        )
        check(schema.delete_keypair, r)


def test_flavor_access(api):
    api.admin(
        'POST',
        '/v2.1/flavors',
        {
            'flavor': {
                'name': 'p',
                'ram': 512,
                'vcpus': 1,
                'disk': 1,
                'id': 'p',
                'os-flavor-access:is_public': False,
            }
        },
    )
    path = '/v2.1/flavors/p'
    for action in ('addTenantAccess', 'removeTenantAccess'):
        check(
            access_schema.add_remove_list_flavor_access,
            api.admin('POST', path + '/action', {action: {'tenant': 'demo'}}),
        )
    check(
        access_schema.add_remove_list_flavor_access,
        api.admin('GET', path + '/os-flavor-access'),
    )


def test_a_private_flavor_is_unknown_to_a_member(world):
    world.admin(
        'POST',
        '/v2.1/flavors',
        {
            'flavor': {
                'name': 'private',
                'ram': 512,
                'vcpus': 1,
                'disk': 1,
                'id': 'p1',
                'os-flavor-access:is_public': False,
            }
        },
    )
    r = _boot(world, '2.1', flavorRef='p1')
    assert r.status_code == 400
    assert 'p1' in r.json['badRequest']['message']
    assert world.conductor.calls == []
    assert (
        world.req(
            'POST',
            '/v2.1/servers',
            {
                'server': {
                    'name': 'vm',
                    'flavorRef': 'p1',
                    'imageRef': world.image,
                }
            },
            user='admin',
        ).status_code
        == 202
    )


def test_services_are_named_and_filtered_as_nova_names_them(api):
    """Tempest's test_get_service_by_service_binary_name: every service a
    ``binary=nova-compute`` filter finds is ``nova-compute``; Nimbus's own
    names still filter."""
    api.add_compute('host1')
    api.add_service('host1', 'nimbus-scheduler')
    api.add_service('host1', 'nimbus-accelerator-agent')
    for binary in ('nova-compute', 'nimbus-compute'):
        r = api.admin('GET', '/v2.1/os-services?binary=%s' % binary)
        assert [(s['host'], s['binary']) for s in r.json['services']] == [
            ('host1', 'nova-compute')
        ]
    r = api.admin('GET', '/v2.1/os-services')
    assert sorted(s['binary'] for s in r.json['services']) == [
        'nimbus-accelerator-agent',
        'nova-compute',
        'nova-scheduler',
    ]
    r = api.admin('GET', '/v2.1/os-services?binary=nova-scheduler')
    assert [s['binary'] for s in r.json['services']] == ['nova-scheduler']
    r = api.admin('GET', '/v2.1/os-availability-zone/detail')
    (zone,) = [
        z for z in r.json['availabilityZoneInfo'] if z['zoneName'] == 'nova'
    ]
    assert 'nova-compute' in zone['hosts']['host1']


def test_custom_namespace_extra_specs_are_kept_known_ones_checked(api):
    api.add_flavor('1')
    url = '/v2.1/flavors/1/os-extra_specs'
    r = api.admin(
        'POST',
        url,
        {'extra_specs': {'hw:cpu_policy': 'shared', 'foo:bar': 'baz'}},
    )
    assert r.status_code == 200
    assert r.json['extra_specs']['foo:bar'] == 'baz'
    for key, value in (
        ('hw:cpu_policy', 'pinned'),
        ('hw:unknown', '1'),
        ('resources1:NOT_A_CLASS', '1'),
    ):
        r = api.admin('POST', url, {'extra_specs': {key: value}})
        assert r.status_code == 400, key
        assert key in r.json['badRequest']['message']
