"""/os-aggregates."""

import pathlib
import re

import pytest

from nimbus.api.objects import aggregates as agg_obj
import nimbus.scheduler as scheduler_pkg
from nimbus.scheduler.filters import aggregate as aggregate_filters


def make(api, name='agg1', zone=None):
    body = {'aggregate': {'name': name}}
    if zone:
        body['aggregate']['availability_zone'] = zone
    return api.admin('POST', '/v2.1/os-aggregates', body, version='2.41')


def action(api, agg_id, body):
    return api.admin(
        'POST', '/v2.1/os-aggregates/%s/action' % agg_id, body, version='2.41'
    )


def test_crud_and_actions(api):
    api.add_compute('host1')
    api.add_compute('host2')
    r = make(api, zone='az1')
    assert r.status_code == 200
    agg = r.json['aggregate']
    assert agg['availability_zone'] == 'az1' and agg['uuid']
    # Nova's create response has neither hosts nor metadata; show has both.
    assert 'metadata' not in agg and 'hosts' not in agg
    shown = api.admin('GET', '/v2.1/os-aggregates/%s' % agg['id']).json
    assert shown['aggregate']['metadata'] == {'availability_zone': 'az1'}
    assert make(api).status_code == 409
    r = action(api, agg['id'], {'add_host': {'host': 'host1'}})
    assert r.json['aggregate']['hosts'] == ['host1']
    assert (
        'update_aggregates',
        [
            {
                'id': agg['id'],
                'uuid': agg['uuid'],
                'name': 'agg1',
                'hosts': ['host1'],
                'metadata': {'availability_zone': 'az1'},
            }
        ],
    ) in api.scheduler.calls
    assert (
        action(api, agg['id'], {'add_host': {'host': 'host1'}}).status_code
        == 409
    )
    assert (
        action(api, agg['id'], {'add_host': {'host': 'ghost'}}).status_code
        == 404
    )
    r = action(
        api,
        agg['id'],
        {
            'set_metadata': {
                'metadata': {
                    'cpu_allocation_ratio': '2.0',
                    'filter_tenant_id': 'demo',
                }
            }
        },
    )
    assert r.json['aggregate']['metadata']['cpu_allocation_ratio'] == '2.0'
    r = action(
        api,
        agg['id'],
        {'set_metadata': {'metadata': {'filter_tenant_id': None}}},
    )
    assert 'filter_tenant_id' not in r.json['aggregate']['metadata']
    # host1 is in az1; a second aggregate may not put it in az2
    other = make(api, 'agg2', zone='az2').json['aggregate']
    r = action(api, other['id'], {'add_host': {'host': 'host1'}})
    assert r.status_code == 400
    action(api, other['id'], {'add_host': {'host': 'host2'}})
    r = action(
        api,
        other['id'],
        {'set_metadata': {'metadata': {'availability_zone': 'az1'}}},
    )
    assert r.json['aggregate']['availability_zone'] == 'az1'
    r = api.admin(
        'PUT',
        '/v2.1/os-aggregates/%d' % agg['id'],
        {'aggregate': {'name': 'renamed'}},
    )
    assert r.json['aggregate']['name'] == 'renamed'
    r = api.admin(
        'PUT',
        '/v2.1/os-aggregates/%d' % agg['id'],
        {'aggregate': {'name': 'agg2'}},
    )
    assert r.status_code == 409
    r = api.admin('GET', '/v2.1/os-aggregates')
    assert len(r.json['aggregates']) == 2
    assert 'uuid' not in r.json['aggregates'][0]
    r = api.admin('GET', '/v2.1/os-aggregates/%d' % agg['id'])
    assert r.json['aggregate']['hosts'] == ['host1']
    assert (
        api.admin('DELETE', '/v2.1/os-aggregates/%d' % agg['id']).status_code
        == 400
    )
    r = action(api, agg['id'], {'remove_host': {'host': 'host1'}})
    assert r.json['aggregate']['hosts'] == []
    assert (
        action(api, agg['id'], {'remove_host': {'host': 'host1'}}).status_code
        == 404
    )
    assert (
        api.admin('DELETE', '/v2.1/os-aggregates/%d' % agg['id']).status_code
        == 200
    )
    assert api.scheduler.calls[-1][0] == 'delete_aggregate'
    assert (
        api.admin('GET', '/v2.1/os-aggregates/%d' % agg['id']).status_code
        == 404
    )


@pytest.mark.parametrize(
    'body, field',
    [
        ({'aggregate': {}}, 'name'),
        (
            {'aggregate': {'name': 'a', 'availability_zone': 'x:y'}},
            'availability_zone',
        ),
        ({'aggregate': {'name': 'a', 'extra': 1}}, 'extra'),
        ({}, 'aggregate'),
    ],
)
def test_create_bad(api, body, field):
    r = api.admin('POST', '/v2.1/os-aggregates', body)
    assert r.status_code == 400
    assert field in r.json['badRequest']['message']


def test_bad_actions_and_ids(api):
    agg = make(api).json['aggregate']
    for body in (
        {},
        {'explode': {}},
        {'add_host': {}},
        {'add_host': {'host': 'h'}, 'remove_host': {'host': 'h'}},
        {'set_metadata': {'metadata': {'k': 5}}},
        {'set_metadata': {}},
    ):
        assert action(api, agg['id'], body).status_code == 400, body
    assert action(api, 999, {'add_host': {'host': 'h'}}).status_code == 404
    assert api.admin('GET', '/v2.1/os-aggregates/abc').status_code == 400
    assert api.req('GET', '/v2.1/os-aggregates').status_code == 403
    assert (
        api.req(
            'POST', '/v2.1/os-aggregates', {'aggregate': {'name': 'x'}}
        ).status_code
        == 403
    )


NUMERIC = sorted(agg_obj.numeric_metadata_rules())


def _scheduler_numeric_keys():
    """Every aggregate metadata key the scheduler's code reads as a number:
    literal ``aggregate_min("<key>", ...)`` calls, filters' ``ratio_key``,
    the count filters' ``option`` (the aggregate count filters read the
    option's name as their key) and weighers' multiplier overrides
    (``aggregate_key`` or ``multiplier_option``)."""
    root = pathlib.Path(scheduler_pkg.__file__).parent
    keys = {
        cls.option
        for cls in vars(aggregate_filters).values()
        if isinstance(cls, type)
        and issubclass(cls, aggregate_filters._AggregateCountFilter)
        and cls.option
    }
    for path in root.rglob('*.py'):
        text = path.read_text()
        keys.update(re.findall(r'aggregate_min\(\s*[\'"]([a-z_]+)[\'"]', text))
        keys.update(re.findall(r'ratio_key\s*=\s*[\'"]([a-z_]+)[\'"]', text))
        for cls_text in re.split(r'\nclass ', text):
            agg = re.search(
                r'\n\s+aggregate_key\s*=\s*[\'"]([a-z_]+)[\'"]', cls_text
            )
            opt = re.search(
                r'\n\s+multiplier_option\s*=\s*[\'"]([a-z_]+)[\'"]', cls_text
            )
            if agg or opt:
                keys.add((agg or opt).group(1))
    return keys


def test_every_numeric_key_the_scheduler_reads_is_validated():
    found = _scheduler_numeric_keys()
    assert {
        'ram_weight_multiplier',
        'metrics_weight_multiplier',
        'cpu_allocation_ratio',
        'max_instances_per_host',
        'max_io_ops_per_host',
    } <= found
    assert found <= set(NUMERIC)


@pytest.mark.slow
@pytest.mark.parametrize('key', NUMERIC)
def test_numeric_metadata_must_parse(api, key):
    agg = make(api).json['aggregate']
    r = action(
        api,
        agg['id'],
        {'set_metadata': {'metadata': {'note': 'free text', key: 'lots'}}},
    )
    assert r.status_code == 400
    message = r.json['badRequest']['message']
    assert key in message and "'lots'" in message
    shown = api.admin('GET', '/v2.1/os-aggregates/%d' % agg['id']).json
    assert shown['aggregate']['metadata'] == {}
    good = '2' if key.startswith('max_') else '1.5'
    r = action(api, agg['id'], {'set_metadata': {'metadata': {key: good}}})
    assert r.status_code == 200
    assert r.json['aggregate']['metadata'][key] == good
    r = action(api, agg['id'], {'set_metadata': {'metadata': {key: None}}})
    assert r.status_code == 200 and key not in r.json['aggregate']['metadata']


@pytest.mark.slow
@pytest.mark.parametrize(
    'key, value, words',
    [
        ('cpu_allocation_ratio', '0', 'above 0'),
        ('ram_allocation_ratio', '-1.0', 'above 0'),
        ('disk_allocation_ratio', 'nan', 'finite'),
        ('max_instances_per_host', '0', 'at least 1'),
        ('max_instances_per_host', '2.5', 'an integer'),
        ('max_io_ops_per_host', '-1', 'at least 0'),
        ('pci_weight_multiplier', '-1', 'at least 0'),
        ('soft_anti_affinity_weight_multiplier', '-0.5', 'at least 0'),
        ('ram_weight_multiplier', 'inf', 'finite'),
    ],
)
def test_numeric_metadata_bounds(api, key, value, words):
    agg = make(api).json['aggregate']
    r = action(api, agg['id'], {'set_metadata': {'metadata': {key: value}}})
    assert r.status_code == 400
    assert key in r.json['badRequest']['message']
    assert words in r.json['badRequest']['message']


def test_negative_multipliers_that_stack_are_fine(api):
    agg = make(api).json['aggregate']
    r = action(
        api,
        agg['id'],
        {
            'set_metadata': {
                'metadata': {
                    'ram_weight_multiplier': '-1.0',
                    'io_ops_weight_multiplier': '-2',
                    'max_io_ops_per_host': '0',
                    'instance_type': 'm1.small',
                }
            }
        },
    )
    assert r.status_code == 200
