"""/os-services, /os-hypervisors and /os-availability-zone."""

import uuid as uuidlib


def test_services_list_and_update(api):
    api.add_compute('host1')
    api.add_compute('host2', up=False)
    api.add_service('ctl', 'nimbus-conductor')
    r = api.req('GET', '/v2.1/os-services')
    assert r.status_code == 403
    r = api.admin('GET', '/v2.1/os-services', version='2.53')
    by_host = {(s['host'], s['binary']): s for s in r.json['services']}
    compute = by_host[('host1', 'nova-compute')]
    assert compute['state'] == 'up' and compute['status'] == 'enabled'
    assert compute['zone'] == 'nova' and compute['forced_down'] is False
    assert uuidlib.UUID(compute['id'])
    assert by_host[('host2', 'nova-compute')]['state'] == 'down'
    assert by_host[('ctl', 'nova-conductor')]['zone'] == 'internal'
    r = api.admin('GET', '/v2.1/os-services?binary=nimbus-conductor')
    assert [s['host'] for s in r.json['services']] == ['ctl']
    assert isinstance(r.json['services'][0]['id'], int)
    url = '/v2.1/os-services/%s' % compute['id']
    r = api.admin(
        'PUT',
        url,
        {'status': 'disabled', 'disabled_reason': 'maintenance'},
        version='2.53',
    )
    assert r.status_code == 200
    assert r.json['service']['status'] == 'disabled'
    assert r.json['service']['disabled_reason'] == 'maintenance'
    assert (
        'update_service',
        {
            'host': 'host1',
            'binary': 'nimbus-compute',
            'disabled': True,
            'disabled_reason': 'maintenance',
            'forced_down': False,
            'up': True,
        },
    ) in api.scheduler.calls
    r = api.admin('PUT', url, {'forced_down': True}, version='2.53')
    assert r.json['service']['state'] == 'down'
    r = api.admin('PUT', url, {'status': 'enabled'}, version='2.53')
    assert r.json['service']['status'] == 'enabled'
    assert r.json['service']['disabled_reason'] is None
    assert (
        api.admin('PUT', url, {'status': 'paused'}, version='2.53').status_code
        == 400
    )
    assert api.admin('PUT', url, {}, version='2.53').status_code == 400
    assert (
        api.admin(
            'PUT', url, {'disabled_reason': 'x'}, version='2.53'
        ).status_code
        == 400
    )
    r = api.admin(
        'PUT',
        '/v2.1/os-services/%s' % uuidlib.uuid4(),
        {'status': 'disabled'},
        version='2.53',
    )
    assert r.status_code == 404
    assert (
        api.req('PUT', url, {'status': 'disabled'}, version='2.53').status_code
        == 403
    )


def test_services_legacy_actions(api):
    api.add_compute('host1')
    body = {
        'host': 'host1',
        'binary': 'nimbus-compute',
        'disabled_reason': 'why',
    }
    r = api.admin('PUT', '/v2.1/os-services/disable-log-reason', body)
    # Named by either name, the service is answered as the API shows it.
    assert r.json['service'] == {
        'host': 'host1',
        'binary': 'nova-compute',
        'status': 'disabled',
        'disabled_reason': 'why',
    }
    r = api.admin(
        'PUT',
        '/v2.1/os-services/enable',
        {'host': 'host1', 'binary': 'nova-compute'},
    )
    assert r.json['service']['status'] == 'enabled'
    r = api.admin(
        'PUT',
        '/v2.1/os-services/enable',
        {'host': 'nohost', 'binary': 'nimbus-compute'},
    )
    assert r.status_code == 404
    r = api.admin('PUT', '/v2.1/os-services/enable', {'host': 'host1'})
    assert r.status_code == 400 and 'binary' in r.json['badRequest']['message']
    r = api.admin('PUT', '/v2.1/os-services/bogus', {})
    assert r.status_code == 404


def test_service_delete(api):
    api.add_compute('host1')
    r = api.admin('GET', '/v2.1/os-services', version='2.53')
    sid = r.json['services'][0]['id']
    assert (
        api.admin(
            'DELETE', '/v2.1/os-services/%s' % sid, version='2.53'
        ).status_code
        == 204
    )
    assert api.admin('GET', '/v2.1/os-hypervisors').json['hypervisors'] == []
    assert (
        api.admin(
            'DELETE', '/v2.1/os-services/%s' % sid, version='2.53'
        ).status_code
        == 404
    )


def test_hypervisors(api):
    node1 = api.add_compute('host1')
    api.add_compute('host2', disabled=True)
    assert api.req('GET', '/v2.1/os-hypervisors').status_code == 403
    r = api.admin('GET', '/v2.1/os-hypervisors', version='2.53')
    assert [h['hypervisor_hostname'] for h in r.json['hypervisors']] == [
        'host1',
        'host2',
    ]
    assert r.json['hypervisors'][0] == {
        'id': node1,
        'hypervisor_hostname': 'host1',
        'state': 'up',
        'status': 'enabled',
    }
    assert r.json['hypervisors'][1]['status'] == 'disabled'
    r = api.admin('GET', '/v2.1/os-hypervisors/detail')
    hyp = r.json['hypervisors'][0]
    assert hyp['vcpus'] == 8 and hyp['free_ram_mb'] == 16384
    assert hyp['service']['host'] == 'host1'
    assert isinstance(hyp['cpu_info'], str)
    r = api.admin('GET', '/v2.1/os-hypervisors/detail', version='2.88')
    assert 'vcpus' not in r.json['hypervisors'][0]
    r = api.admin(
        'GET',
        '/v2.1/os-hypervisors/%s?with_servers=true' % node1,
        version='2.53',
    )
    assert r.json['hypervisor']['servers'] == []
    assert r.json['hypervisor']['cpu_info'] == {'arch': 'x86_64'}
    r = api.admin(
        'GET',
        '/v2.1/os-hypervisors?hypervisor_hostname_pattern=host2',
        version='2.53',
    )
    assert len(r.json['hypervisors']) == 1
    r = api.admin('GET', '/v2.1/os-hypervisors?limit=1', version='2.53')
    assert len(r.json['hypervisors']) == 1
    assert 'hypervisors_links' in r.json
    assert (
        api.admin(
            'GET', '/v2.1/os-hypervisors/%s' % uuidlib.uuid4(), version='2.53'
        ).status_code
        == 404
    )
    assert (
        api.admin(
            'GET', '/v2.1/os-hypervisors/abc', version='2.53'
        ).status_code
        == 400
    )
    assert api.admin('GET', '/v2.1/os-hypervisors/99').status_code == 404
    assert (
        api.admin(
            'GET', '/v2.1/os-hypervisors?with_servers=maybe', version='2.53'
        ).status_code
        == 400
    )
    r = api.admin('GET', '/v2.1/os-hypervisors/statistics')
    assert r.json['hypervisor_statistics']['count'] == 2
    assert r.json['hypervisor_statistics']['vcpus'] == 16
    assert (
        api.admin(
            'GET', '/v2.1/os-hypervisors/statistics', version='2.88'
        ).status_code
        == 404
    )
    assert api.req('GET', '/v2.1/os-hypervisors/statistics').status_code == 403
    assert (
        api.admin(
            'GET', '/v2.1/os-hypervisors?limit=x', version='2.53'
        ).status_code
        == 400
    )


def test_availability_zones(api):
    api.add_compute('host1')
    api.add_compute('host2')
    api.add_service('ctl', 'nimbus-scheduler')
    agg = api.admin(
        'POST',
        '/v2.1/os-aggregates',
        {'aggregate': {'name': 'a1', 'availability_zone': 'zone-a'}},
    ).json['aggregate']
    api.admin(
        'POST',
        '/v2.1/os-aggregates/%d/action' % agg['id'],
        {'add_host': {'host': 'host2'}},
    )
    r = api.req('GET', '/v2.1/os-availability-zone')
    zones = {z['zoneName']: z for z in r.json['availabilityZoneInfo']}
    assert set(zones) == {'nova', 'zone-a'}
    assert zones['zone-a']['zoneState'] == {'available': True}
    assert zones['nova']['hosts'] is None
    assert (
        api.req('GET', '/v2.1/os-availability-zone/detail').status_code == 403
    )
    r = api.admin('GET', '/v2.1/os-availability-zone/detail')
    zones = {z['zoneName']: z for z in r.json['availabilityZoneInfo']}
    assert set(zones['zone-a']['hosts']) == {'host2'}
    assert (
        zones['internal']['hosts']['ctl']['nova-scheduler']['available']
        is True
    )
    r = api.admin('GET', '/v2.1/os-services')
    zone_of = {s['host']: s['zone'] for s in r.json['services']}
    assert zone_of['host2'] == 'zone-a' and zone_of['host1'] == 'nova'
