"""accessIPv4/accessIPv6: stored and shown in Nova's normalised form (the
address as Python's ipaddress writes it, so IPv6 compressed), on create
and on update; what is not an address is a 400 naming the field."""

import ipaddress

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest


@pytest.fixture
def world(api):
    api.add_flavor('1', 'm1.small')
    api.image = api.add_image()
    api.add_compute('host1')
    # hypothesis boots many servers in one project
    unlimited = {'instances': -1, 'cores': -1, 'ram': -1}
    r = api.admin('PUT', '/v2.1/os-quota-sets/demo', {'quota_set': unlimited})
    assert r.status_code == 200, r.text
    return api


def boot(api, **server):
    body = {
        'server': dict(
            {'name': 'vm', 'flavorRef': '1', 'imageRef': api.image}, **server
        )
    }
    return api.req('POST', '/v2.1/servers', body)


def shown(api, uuid):
    r = api.req('GET', '/v2.1/servers/%s' % uuid)
    assert r.status_code == 200, r.text
    return r.json['server']


def test_tempest_example_is_compressed(world):
    # Tempest's test_create_server's address, an IPv4 tail in IPv6.
    r = boot(
        world,
        accessIPv4='1.1.1.1',
        accessIPv6='0000:0000:0000:0000:0000:babe:220.12.22.2',
    )
    assert r.status_code == 202, r.text
    server = shown(world, r.json['server']['id'])
    assert server['accessIPv6'] == '::babe:dc0c:1602'
    assert server['accessIPv4'] == '1.1.1.1'


def test_unset_addresses_show_empty(world):
    server = shown(world, boot(world).json['server']['id'])
    assert server['accessIPv4'] == '' and server['accessIPv6'] == ''


def _spellings(address):
    """Ways a client may write the same IPv6 address."""
    return st.sampled_from(
        [
            address.exploded,
            address.exploded.upper(),
            address.compressed,
            address.compressed.upper(),
        ]
    )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), v6=st.ip_addresses(v=6), v4=st.ip_addresses(v=4))
def test_create_and_update_normalise(world, data, v6, v4):
    written = data.draw(_spellings(v6))
    r = boot(world, accessIPv6=written, accessIPv4=str(v4))
    assert r.status_code == 202, r.text
    uuid = r.json['server']['id']
    server = shown(world, uuid)
    # The oracle: ipaddress's own text form of the same address.
    assert server['accessIPv6'] == str(ipaddress.IPv6Address(written))
    assert server['accessIPv4'] == str(v4)
    again = data.draw(_spellings(v6))
    r = world.req(
        'PUT', '/v2.1/servers/%s' % uuid, {'server': {'accessIPv6': again}}
    )
    assert r.status_code == 200, r.text
    assert r.json['server']['accessIPv6'] == v6.compressed
    assert shown(world, uuid)['accessIPv6'] == v6.compressed


@pytest.mark.parametrize(
    'field, value',
    [
        ('accessIPv4', '1.2.3.256'),
        ('accessIPv4', '2001:db8::1'),
        ('accessIPv4', 'localhost'),
        ('accessIPv6', '2001:db8::zz'),
        ('accessIPv6', '1.2.3.4'),
        ('accessIPv6', '1:2:3:4:5:6:7:8:9'),
    ],
)
def test_bad_address_is_400_naming_the_field(world, field, value):
    r = boot(world, **{field: value})
    assert r.status_code == 400, r.text
    assert field in r.json['badRequest']['message']
    uuid = boot(world).json['server']['id']
    r = world.req('PUT', '/v2.1/servers/%s' % uuid, {'server': {field: value}})
    assert r.status_code == 400, r.text
    assert field in r.json['badRequest']['message']
    assert shown(world, uuid)[field] == ''
