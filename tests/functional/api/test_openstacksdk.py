"""openstacksdk drives nimbus-api over real HTTP (noauth2 token)."""

import pytest

from nimbus.common import wsgi
from nimbus.testing import infra

openstack = infra.require_module('openstack')


@pytest.fixture
def server(api):
    srv = wsgi.serve(api.app, '127.0.0.1', 0, threads=4, name='test-api')
    yield srv
    srv.stop()


def connect(url, token):
    # keystoneauth's admin_token plugin sends the token as X-Auth-Token and
    # uses the given endpoint for every service: noauth2's "user:project".
    return openstack.connection.Connection(
        auth_type='admin_token',
        auth={'endpoint': url + '/v2.1', 'token': token},
        compute_endpoint_override=url + '/v2.1',
    )


def test_flavors_and_servers(api, server):
    api.add_flavor('1', 'm1.small')
    api.add_flavor('2', 'm1.large', vcpus=4, memory_mb=8192)
    image = api.add_image()
    conn = connect(server.url, 'demo')
    assert sorted(f.name for f in conn.compute.flavors()) == [
        'm1.large',
        'm1.small',
    ]
    flavor = conn.compute.find_flavor('m1.large')
    assert flavor.vcpus == 4 and flavor.ram == 8192
    created = conn.compute.create_server(
        name='sdk', flavor_id='1', image_id=image, networks='none'
    )
    assert created.admin_password
    servers = list(conn.compute.servers())
    assert [(s.name, s.status) for s in servers] == [('sdk', 'BUILD')]
    api.add_compute('host1')  # an up compute: the delete goes through it
    api.place(created.id, host='host1')
    shown = conn.compute.get_server(created.id)
    assert shown.status == 'ACTIVE'
    assert shown.flavor.original_name == 'm1.small'
    conn.compute.delete_server(created.id)
    assert api.compute_log[0][:3] == ('terminate_instance', 'cell1', 'host1')
    with pytest.raises(openstack.exceptions.BadRequestException):
        conn.compute.create_server(
            name='bad', flavor_id='nope', image_id=image, networks='none'
        )
    with pytest.raises(openstack.exceptions.ResourceNotFound):
        conn.compute.get_server('00000000-0000-0000-0000-000000000001')


def test_admin_views(api, server):
    api.add_compute('host1')
    conn = connect(server.url, 'admin')
    services = list(conn.compute.services())
    assert [(s.host, s.status, s.state) for s in services] == [
        ('host1', 'enabled', 'up')
    ]
    hypervisors = list(conn.compute.hypervisors(details=True))
    assert hypervisors[0].name == 'host1'
    agg = conn.compute.create_aggregate(
        name='fast', availability_zone='az-fast'
    )
    conn.compute.add_host_to_aggregate(agg, 'host1')
    conn.compute.set_aggregate_metadata(agg, {'ssd': 'true'})
    agg = conn.compute.get_aggregate(agg.id)
    assert agg.hosts == ['host1'] and agg.metadata['ssd'] == 'true'
    zones = {z.name for z in conn.compute.availability_zones()}
    assert zones == {'az-fast'}
    group = conn.compute.create_server_group(name='g', policy='anti-affinity')
    assert group.policy == 'anti-affinity'
