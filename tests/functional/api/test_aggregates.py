"""/os-aggregates."""

import pytest


def make(api, name='agg1', zone=None):
    body = {'aggregate': {'name': name}}
    if zone:
        body['aggregate']['availability_zone'] = zone
    return api.admin('POST', '/v2.1/os-aggregates', body, version='2.41')


def action(api, agg_id, body):
    return api.admin('POST', '/v2.1/os-aggregates/%s/action' % agg_id, body,
                     version='2.41')


def test_crud_and_actions(api):
    api.add_compute('host1')
    api.add_compute('host2')
    r = make(api, zone='az1')
    assert r.status_code == 200
    agg = r.json['aggregate']
    assert agg['availability_zone'] == 'az1' and agg['uuid']
    assert agg['metadata'] == {'availability_zone': 'az1'}
    assert make(api).status_code == 409
    r = action(api, agg['id'], {'add_host': {'host': 'host1'}})
    assert r.json['aggregate']['hosts'] == ['host1']
    assert ('update_aggregates', [{
        'id': agg['id'], 'uuid': agg['uuid'], 'name': 'agg1',
        'hosts': ['host1'], 'metadata': {'availability_zone': 'az1'}}]) \
        in api.scheduler.calls
    assert action(api, agg['id'], {'add_host': {'host': 'host1'}}) \
        .status_code == 409
    assert action(api, agg['id'], {'add_host': {'host': 'ghost'}}) \
        .status_code == 404
    r = action(api, agg['id'], {'set_metadata': {'metadata': {
        'cpu_allocation_ratio': '2.0', 'filter_tenant_id': 'demo'}}})
    assert r.json['aggregate']['metadata']['cpu_allocation_ratio'] == '2.0'
    r = action(api, agg['id'], {'set_metadata': {'metadata': {
        'filter_tenant_id': None}}})
    assert 'filter_tenant_id' not in r.json['aggregate']['metadata']
    # host1 is in az1; a second aggregate may not put it in az2
    other = make(api, 'agg2', zone='az2').json['aggregate']
    r = action(api, other['id'], {'add_host': {'host': 'host1'}})
    assert r.status_code == 400
    action(api, other['id'], {'add_host': {'host': 'host2'}})
    r = action(api, other['id'], {'set_metadata': {'metadata': {
        'availability_zone': 'az1'}}})
    assert r.json['aggregate']['availability_zone'] == 'az1'
    r = api.admin('PUT', '/v2.1/os-aggregates/%d' % agg['id'],
                  {'aggregate': {'name': 'renamed'}})
    assert r.json['aggregate']['name'] == 'renamed'
    r = api.admin('PUT', '/v2.1/os-aggregates/%d' % agg['id'],
                  {'aggregate': {'name': 'agg2'}})
    assert r.status_code == 409
    r = api.admin('GET', '/v2.1/os-aggregates')
    assert len(r.json['aggregates']) == 2
    assert 'uuid' not in r.json['aggregates'][0]
    r = api.admin('GET', '/v2.1/os-aggregates/%d' % agg['id'])
    assert r.json['aggregate']['hosts'] == ['host1']
    assert api.admin('DELETE', '/v2.1/os-aggregates/%d' % agg['id']) \
        .status_code == 400
    r = action(api, agg['id'], {'remove_host': {'host': 'host1'}})
    assert r.json['aggregate']['hosts'] == []
    assert action(api, agg['id'], {'remove_host': {'host': 'host1'}}) \
        .status_code == 404
    assert api.admin('DELETE', '/v2.1/os-aggregates/%d' % agg['id']) \
        .status_code == 200
    assert api.scheduler.calls[-1][0] == 'delete_aggregate'
    assert api.admin('GET', '/v2.1/os-aggregates/%d' % agg['id']) \
        .status_code == 404


@pytest.mark.parametrize('body, field', [
    ({'aggregate': {}}, 'name'),
    ({'aggregate': {'name': 'a', 'availability_zone': 'x:y'}},
     'availability_zone'),
    ({'aggregate': {'name': 'a', 'extra': 1}}, 'extra'),
    ({}, 'aggregate'),
])
def test_create_bad(api, body, field):
    r = api.admin('POST', '/v2.1/os-aggregates', body)
    assert r.status_code == 400
    assert field in r.json['badRequest']['message']


def test_bad_actions_and_ids(api):
    agg = make(api).json['aggregate']
    for body in ({}, {'explode': {}}, {'add_host': {}},
                 {'add_host': {'host': 'h'}, 'remove_host': {'host': 'h'}},
                 {'set_metadata': {'metadata': {'k': 5}}},
                 {'set_metadata': {}}):
        assert action(api, agg['id'], body).status_code == 400, body
    assert action(api, 999, {'add_host': {'host': 'h'}}).status_code == 404
    assert api.admin('GET', '/v2.1/os-aggregates/abc').status_code == 400
    assert api.req('GET', '/v2.1/os-aggregates').status_code == 403
    assert api.req('POST', '/v2.1/os-aggregates', {'aggregate': {
        'name': 'x'}}).status_code == 403
