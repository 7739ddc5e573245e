"""Server groups through the ``group`` scheduler hint, real services."""

import collections

import pytest

from tests.functional.scheduler import fixtures as fx

STACK = {
    'ram_weight_multiplier': -1.0,
    'cpu_weight_multiplier': -1.0,
    'disk_weight_multiplier': -1.0,
    'soft_affinity_weight_multiplier': 10.0,
    'soft_anti_affinity_weight_multiplier': 10.0,
}


def _cloud(make_cloud, hosts=4, filter_scheduler=None):
    overrides = {}
    if filter_scheduler:
        overrides['filter_scheduler'] = filter_scheduler
    api = fx.admin_client(make_cloud(hosts=hosts, overrides=overrides))
    api.flavor = api.create_flavor('f', 1, 512, 1)
    api.image = api.create_image('img')
    return api


def _boot_in_group(api, group, count, prefix):
    servers = {}
    for i in range(count):
        server = fx.boot_and_settle(
            api,
            '%s-%d' % (prefix, i),
            api.flavor,
            api.image,
            hints={'group': group['id']},
        )
        servers[server['id']] = server
    return servers


@pytest.mark.slow
def test_affinity_keeps_every_member_on_one_host(make_cloud):
    api = _cloud(make_cloud)
    group = fx.create_group(api, 'aff', 'affinity')
    servers = _boot_in_group(api, group, 3, 'aff')
    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    assert len({fx.host_of(s) for s in servers.values()}) == 1
    members = api.get('/os-server-groups/%s' % group['id'])['server_group'][
        'members'
    ]
    assert sorted(members) == sorted(servers)


@pytest.mark.slow
def test_affinity_multi_create_lands_together(make_cloud):
    api = _cloud(make_cloud)
    group = fx.create_group(api, 'aff', 'affinity')
    api.create_server(
        'aff-multi',
        api.flavor['id'],
        api.image['id'],
        min_count=3,
        max_count=3,
        hints={'group': group['id']},
    )
    ids = fx.wait_for(
        lambda: (
            [
                s['id']
                for s in api.servers()
                if s['name'].startswith('aff-multi')
            ]
            if len(api.servers()) == 3
            else None
        ),
        timeout=30,
    )
    servers = fx.settle(api, ids)
    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    assert len({fx.host_of(s) for s in servers.values()}) == 1


@pytest.mark.slow
def test_anti_affinity_spreads_and_refuses_a_fifth_member(make_cloud):
    # Stacking weighers would pile instances together: the filter wins.
    api = _cloud(make_cloud, filter_scheduler=STACK)
    group = fx.create_group(api, 'anti', 'anti-affinity')
    servers = _boot_in_group(api, group, 4, 'anti')
    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    assert len({fx.host_of(s) for s in servers.values()}) == 4
    extra = fx.boot_and_settle(
        api, 'anti-5', api.flavor, api.image, hints={'group': group['id']}
    )
    assert extra['status'] == 'ERROR'
    fault = api.server(extra['id'])['fault']
    assert 'ServerGroupAntiAffinityFilter: 4 in, 0 out' in fault['details']
    assert fx.consumer_allocations(api.cloud, extra['id']) == {}


@pytest.mark.slow
def test_anti_affinity_max_server_per_host_rule(make_cloud):
    # 2.64 shape: "policy" plus "rules" {"max_server_per_host": 2}.
    api = _cloud(make_cloud, hosts=2, filter_scheduler=STACK)
    group = fx.create_group(
        api, 'anti2', 'anti-affinity', rules={'max_server_per_host': 2}
    )
    shown = api.get('/os-server-groups/%s' % group['id'])['server_group']
    assert shown['policy'] == 'anti-affinity'
    assert shown['rules'] == {'max_server_per_host': 2}
    servers = _boot_in_group(api, group, 4, 'anti2')
    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    per_host = collections.Counter(fx.host_of(s) for s in servers.values())
    assert sorted(per_host.values()) == [2, 2]
    extra = fx.boot_and_settle(
        api, 'anti2-5', api.flavor, api.image, hints={'group': group['id']}
    )
    assert extra['status'] == 'ERROR'
    details = api.server(extra['id'])['fault']['details']
    assert 'ServerGroupAntiAffinityFilter' in details
    assert 'max_server_per_host' in details or '2' in details


def test_anti_affinity_multi_create_with_rule(make_cloud):
    api = _cloud(make_cloud, hosts=2, filter_scheduler=STACK)
    group = fx.create_group(
        api, 'anti3', 'anti-affinity', rules={'max_server_per_host': 2}
    )
    api.create_server(
        'multi',
        api.flavor['id'],
        api.image['id'],
        min_count=4,
        max_count=4,
        hints={'group': group['id']},
    )
    ids = fx.wait_for(
        lambda: (
            [s['id'] for s in api.servers()]
            if len(api.servers()) == 4
            else None
        ),
        timeout=30,
    )
    servers = fx.settle(api, ids)
    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    per_host = collections.Counter(fx.host_of(s) for s in servers.values())
    assert sorted(per_host.values()) == [2, 2]


@pytest.mark.slow
def test_soft_affinity_stacks_against_spreading_weighers(make_cloud):
    # Default RAM/CPU/disk weighers spread; the soft-affinity weigher
    # (multiplier 10) outweighs them and keeps the group together.
    api = _cloud(
        make_cloud, filter_scheduler={'soft_affinity_weight_multiplier': 10.0}
    )
    group = fx.create_group(api, 'soft-aff', 'soft-affinity')
    servers = _boot_in_group(api, group, 3, 'saff')
    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    assert len({fx.host_of(s) for s in servers.values()}) == 1
    # Without the group the same cloud spreads.
    other = fx.boot_and_settle(api, 'loner', api.flavor, api.image)
    assert fx.host_of(other) not in {fx.host_of(s) for s in servers.values()}


@pytest.mark.slow
def test_soft_anti_affinity_spreads_against_stacking_weighers(make_cloud):
    api = _cloud(make_cloud, filter_scheduler=STACK)
    group = fx.create_group(api, 'soft-anti', 'soft-anti-affinity')
    servers = _boot_in_group(api, group, 4, 'santi')
    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    assert len({fx.host_of(s) for s in servers.values()}) == 4
    # A fifth member still lands (soft): on a host with one member.
    extra = fx.boot_and_settle(
        api, 'santi-5', api.flavor, api.image, hints={'group': group['id']}
    )
    assert extra['status'] == 'ACTIVE'
    # Outside the group the stacking weighers pile servers together.
    a = fx.boot_and_settle(api, 'plain-1', api.flavor, api.image)
    b = fx.boot_and_settle(api, 'plain-2', api.flavor, api.image)
    assert fx.host_of(a) == fx.host_of(b)
