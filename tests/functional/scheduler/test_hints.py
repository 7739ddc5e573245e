"""Scheduler hints on POST /servers: same_host, different_host, query
(JsonFilter), build_near_host_ip + cidr (SimpleCIDRAffinityFilter)."""

import json

import pytest

from tests.functional.scheduler import fixtures as fx

FILTERS = [
    'ComputeFilter',
    'SameHostFilter',
    'DifferentHostFilter',
    'JsonFilter',
    'SimpleCIDRAffinityFilter',
]
IPS = {
    'host-1': '10.0.0.11',
    'host-2': '10.0.0.12',
    'host-3': '10.0.1.13',
    'host-4': '192.168.7.14',
}


def _api(make_cloud, **kwargs):
    cloud = make_cloud(
        hosts=4,
        overrides={'filter_scheduler': {'enabled_filters': FILTERS}},
        host_overrides={
            h: {'compute': {'host_ip': ip}} for h, ip in IPS.items()
        },
        **kwargs,
    )
    api = fx.admin_client(cloud)
    api.flavor = api.create_flavor('f', 1, 512, 1)
    api.image = api.create_image('img')
    return api


@pytest.mark.slow
def test_same_host_and_different_host(make_cloud):
    api = _api(make_cloud)
    first = fx.boot_and_settle(api, 'first', api.flavor, api.image)
    assert first['status'] == 'ACTIVE'
    # Spreading weighers would pick another host; same_host wins.
    for i in range(2):
        same = fx.boot_and_settle(
            api,
            'same-%d' % i,
            api.flavor,
            api.image,
            hints={'same_host': first['id']},
        )
        assert same['status'] == 'ACTIVE'
        assert fx.host_of(same) == fx.host_of(first)
    other = fx.boot_and_settle(
        api,
        'other',
        api.flavor,
        api.image,
        hints={'different_host': [first['id']]},
    )
    assert other['status'] == 'ACTIVE'
    assert fx.host_of(other) != fx.host_of(first)
    # different_host over two servers on two hosts leaves the other two.
    result = fx.dry_run(
        api, api.flavor, hints={'different_host': [first['id'], other['id']]}
    )
    expected = set(IPS) - {fx.host_of(first), fx.host_of(other)}
    assert set(fx.ranked_hosts(result)) == expected
    rejected = {r['host']: r for r in result['rejected']}
    assert set(rejected) == {fx.host_of(first), fx.host_of(other)}
    assert {r['filter'] for r in rejected.values()} == {'DifferentHostFilter'}


@pytest.mark.slow
def test_query_hint_uses_json_filter(make_cloud):
    api = _api(make_cloud)
    query = json.dumps(
        ['and', ['>=', '$free_ram_mb', 1024], ['=', '$host', 'host-3']]
    )
    server = fx.boot_and_settle(
        api, 'json', api.flavor, api.image, hints={'query': query}
    )
    assert server['status'] == 'ACTIVE'
    assert fx.host_of(server) == 'host-3'
    # 'in' and 'not' over host names; the dry run shows the reasons.
    query = json.dumps(['not', ['in', '$host', 'host-1', 'host-2']])
    result = fx.dry_run(api, api.flavor, hints={'query': query})
    assert set(fx.ranked_hosts(result)) == {'host-3', 'host-4'}
    assert {r['filter'] for r in result['rejected']} == {'JsonFilter'}
    # A query no host satisfies: the fault names the filter.
    query = json.dumps(['>', '$free_ram_mb', 10**9])
    doomed = fx.boot_and_settle(
        api, 'nowhere', api.flavor, api.image, hints={'query': query}
    )
    assert doomed['status'] == 'ERROR'
    details = api.server(doomed['id'])['fault']['details']
    assert 'JsonFilter: 4 in, 0 out' in details


@pytest.mark.slow
def test_build_near_host_ip_with_cidr(make_cloud):
    api = _api(make_cloud)
    hints = {'build_near_host_ip': '10.0.0.99', 'cidr': '/24'}
    hosts = set()
    for i in range(4):
        server = fx.boot_and_settle(
            api, 'near-%d' % i, api.flavor, api.image, hints=hints
        )
        assert server['status'] == 'ACTIVE'
        hosts.add(fx.host_of(server))
    assert hosts == {'host-1', 'host-2'}
    result = fx.dry_run(
        api,
        api.flavor,
        hints={'build_near_host_ip': '10.0.0.1', 'cidr': '/16'},
    )
    assert set(fx.ranked_hosts(result)) == {'host-1', 'host-2', 'host-3'}
    (rejected,) = result['rejected']
    assert rejected['host'] == 'host-4'
    assert rejected['filter'] == 'SimpleCIDRAffinityFilter'
    assert '192.168.7.14' in rejected['reason']
