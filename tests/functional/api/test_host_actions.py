"""os-hosts' host update and power actions (below 2.43) and
os-hypervisors/{id}/uptime (below 2.88), validated against Tempest's
response schemas."""

import jsonschema
import oslo_messaging as messaging
import pytest

pytest.importorskip('tempest.lib.api_schema.response.compute.v2_1.hosts')
from tempest.lib.api_schema.response.compute.v2_1 import (  # noqa: E402
    hosts as hosts_schema,
)
from tempest.lib.api_schema.response.compute.v2_53 import (  # noqa: E402
    hypervisors as hypervisors_v253,
)
from tempest.lib.api_schema.response.compute.v2_1 import (  # noqa: E402
    hypervisors as hypervisors_v21,
)

H = '/v2.1/os-hosts/'
UPTIME = ' 08:32:11 up 93 days, 18:25,  0 users,  load average: 0.20'


def check(schema, response):
    assert response.status_code in schema['status_code'], response.text
    jsonschema.validate(response.json, schema['response_body'])
    return response.json


@pytest.fixture
def cloud(api):
    api.nodes = {
        'host1': api.add_compute('host1'),
        'host2': api.add_compute('host2', up=False),
    }
    api.add_service('host1', 'nimbus-scheduler')
    api.add_service('sched-only', 'nimbus-scheduler')
    return api


def services(api):
    r = api.admin('GET', '/v2.1/os-services')
    return {(s['host'], s['binary']): s['status'] for s in r.json['services']}


@pytest.mark.parametrize('word', ['disable', 'DISABLE', ' Disable '])
def test_status_goes_to_the_services_table(cloud, word):
    r = cloud.admin('PUT', H + 'host1', {'status': word}, version='2.42')
    assert check(hosts_schema.update_host, r) == {
        'host': 'host1',
        'status': 'disabled',
    }
    assert services(cloud)[('host1', 'nova-compute')] == 'disabled'
    # the scheduler service of the same host is not touched
    assert services(cloud)[('host1', 'nova-scheduler')] == 'enabled'
    # the schedulers are told, as os-services does
    assert (
        'update_service',
        {
            'host': 'host1',
            'binary': 'nimbus-compute',
            'disabled': True,
            'disabled_reason': None,
            'forced_down': False,
            'up': True,
        },
    ) in cloud.scheduler.calls
    r = cloud.admin('PUT', H + 'host1', {'status': 'enable'})
    assert check(hosts_schema.update_host, r)['status'] == 'enabled'
    assert services(cloud)[('host1', 'nova-compute')] == 'enabled'


def test_enable_clears_the_disabled_reason(cloud):
    r = cloud.admin(
        'PUT',
        '/v2.1/os-services/disable-log-reason',
        {'host': 'host1', 'binary': 'nova-compute', 'disabled_reason': 'x'},
    )
    assert r.status_code == 200, r.text
    cloud.admin('PUT', H + 'host1', {'status': 'enable'})
    r = cloud.admin('GET', '/v2.1/os-services?binary=nova-compute&host=host1')
    (service,) = r.json['services']
    assert service['status'] == 'enabled'
    assert service['disabled_reason'] is None


def test_maintenance_mode_is_not_supported(cloud):
    # Refused as a whole: the status named beside it does not change.
    r = cloud.admin(
        'PUT', H + 'host1', {'status': 'disable', 'maintenance_mode': 'enable'}
    )
    assert r.status_code == 501, r.text
    assert 'maintenance' in r.json['notImplemented']['message']
    assert services(cloud)[('host1', 'nova-compute')] == 'enabled'


@pytest.mark.parametrize(
    'body, words',
    [
        ({'status': 'invalid', 'maintenance_mode': 'enable'}, 'status'),
        ({'status': 'enable', 'maintenance_mode': 'invalid'}, 'maintenance'),
        # what Tempest's client sends when given nothing
        ({'status': None, 'maintenance_mode': None}, 'None'),
        ({}, 'status'),
        ({'status': 'enable', 'bogus': 1}, 'bogus'),
    ],
)
def test_update_bad_body(cloud, body, words):
    r = cloud.admin('PUT', H + 'host1', body)
    assert r.status_code == 400, r.text
    assert words in r.json['badRequest']['message']
    assert services(cloud)[('host1', 'nova-compute')] == 'enabled'


@pytest.mark.parametrize('action', ['reboot', 'shutdown', 'startup'])
def test_power_actions(cloud, action):
    r = cloud.admin('GET', H + 'host1/' + action)
    assert r.status_code == 501, r.text
    assert 'host' in r.json['notImplemented']['message']
    r = cloud.admin('GET', H + 'nonexistent_hostname/' + action)
    assert r.status_code == 404
    assert 'nonexistent_hostname' in r.json['itemNotFound']['message']
    # a host with no compute service has no driver to ask
    assert cloud.admin('GET', H + 'sched-only/' + action).status_code == 404
    assert cloud.req('GET', H + 'host1/' + action).status_code == 403
    r = cloud.admin('GET', H + 'host1/' + action, version='2.43')
    assert r.status_code == 404


def test_update_unknown_host_non_admin_and_243(cloud):
    body = {'status': 'enable', 'maintenance_mode': 'enable'}
    r = cloud.admin('PUT', H + 'nonexistent_hostname', body)
    assert r.status_code == 404
    assert 'nonexistent_hostname' in r.json['itemNotFound']['message']
    assert cloud.admin('PUT', H + 'sched-only', body).status_code == 404
    assert cloud.req('PUT', H + 'host1', body).status_code == 403
    r = cloud.admin('PUT', H + 'host1', {'status': 'disable'}, version='2.43')
    assert r.status_code == 404
    assert services(cloud)[('host1', 'nova-compute')] == 'enabled'


@pytest.mark.parametrize('zone', ['', 'nova'])
def test_list_with_blank_or_named_zone(cloud, zone):
    r = cloud.admin('GET', '/v2.1/os-hosts?zone=' + zone)
    hosts = check(hosts_schema.list_hosts, r)['hosts']
    names = {(h['host_name'], h['service']) for h in hosts}
    assert ('host1', 'compute') in names
    # blank: every host, the internal zone's too
    assert (('sched-only', 'scheduler') in names) == (zone == '')


def test_uptime(cloud):
    cloud.uptimes['host1'] = UPTIME
    r = cloud.admin('GET', '/v2.1/os-hypervisors')
    ids = {h['hypervisor_hostname']: h['id'] for h in r.json['hypervisors']}
    r = cloud.admin('GET', '/v2.1/os-hypervisors/%s/uptime' % ids['host1'])
    body = check(hypervisors_v21.get_hypervisor_uptime, r)['hypervisor']
    assert body == {
        'id': ids['host1'],
        'hypervisor_hostname': 'host1',
        'state': 'up',
        'status': 'enabled',
        'uptime': UPTIME,
    }
    assert ('get_host_uptime', 'cell1', 'host1') in cloud.compute_log
    # 2.53: the id is the node's uuid
    r = cloud.admin(
        'GET',
        '/v2.1/os-hypervisors/%s/uptime' % cloud.nodes['host1'],
        version='2.53',
    )
    body = check(hypervisors_v253.get_hypervisor_uptime, r)['hypervisor']
    assert body['id'] == cloud.nodes['host1']
    assert body['uptime'] == UPTIME


def test_uptime_errors(cloud):
    r = cloud.admin('GET', '/v2.1/os-hypervisors')
    ids = {h['hypervisor_hostname']: h['id'] for h in r.json['hypervisors']}
    path = '/v2.1/os-hypervisors/%s/uptime'
    # a driver that cannot tell
    r = cloud.admin('GET', path % ids['host1'])
    assert r.status_code == 501
    assert 'host1' in r.json['notImplemented']['message']
    # a compute that does not answer
    cloud.uptimes['host1'] = messaging.MessagingTimeout('no answer')
    r = cloud.admin('GET', path % ids['host1'])
    assert r.status_code == 503
    assert 'host1' in r.json['serviceUnavailable']['message']
    # a compute too old for RPC 1.1
    cloud.uptimes['host1'] = messaging.RemoteError(
        'UnsupportedVersion', 'Endpoint does not support RPC version 1.1'
    )
    r = cloud.admin('GET', path % ids['host1'])
    assert r.status_code == 503
    assert 'UnsupportedVersion' in r.json['serviceUnavailable']['message']
    # a compute that is down is not asked
    calls = len(cloud.compute_log)
    r = cloud.admin('GET', path % ids['host2'])
    assert r.status_code == 400
    assert 'host2' in r.json['badRequest']['message']
    assert len(cloud.compute_log) == calls
    # unknown ids, at both id forms
    assert cloud.admin('GET', path % '999999').status_code == 404
    nowhere = '9c4ab8a4-1f54-4fb0-a7d1-3b7e5a1f0c11'
    assert cloud.admin('GET', path % nowhere).status_code == 404
    r = cloud.admin('GET', path % nowhere, version='2.53')
    assert r.status_code == 404
    r = cloud.admin('GET', path % 'not-a-uuid', version='2.53')
    assert r.status_code == 400
    assert 'not-a-uuid' in r.json['badRequest']['message']
    # removed in 2.88 (the show has the uptime); admins only
    r = cloud.admin('GET', path % cloud.nodes['host1'], version='2.88')
    assert r.status_code == 404
    assert cloud.req('GET', path % ids['host1']).status_code == 403


def test_every_compute_host_listed_has_a_detail(cloud):
    # A cell conductor's heartbeat row (stored with topic 'compute', as
    # every heartbeat row is) is listed as a conductor, not a compute
    # host; Tempest's test_show_host_detail shows each compute host.
    from nimbus.db import cell_services

    with cloud.cells.db(cloud.cell1).session() as session:
        cell_services.heartbeat(session, 'localhost-cell1', 'nimbus-conductor')
    r = cloud.admin('GET', '/v2.1/os-hosts')
    hosts = check(hosts_schema.list_hosts, r)['hosts']
    assert ('localhost-cell1', 'conductor') in {
        (h['host_name'], h['service']) for h in hosts
    }
    computes = sorted(
        h['host_name'] for h in hosts if h['service'] == 'compute'
    )
    assert computes == ['host1', 'host2']
    for name in computes:
        r = cloud.admin('GET', H + name)
        check(hosts_schema.get_host_detail, r)
        assert r.json['host'][0]['resource']['host'] == name
