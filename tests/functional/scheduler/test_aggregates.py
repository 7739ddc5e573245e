"""Aggregates: availability zones, per-aggregate weigher multipliers and
AggregateInstanceExtraSpecsFilter, all set through /os-aggregates."""

import pytest

from tests.functional.scheduler import fixtures as fx


def _api(make_cloud, hosts=4, filters=None, **fs):
    overrides = {'filter_scheduler': dict(fs)}
    if filters:
        overrides['filter_scheduler']['enabled_filters'] = filters
    api = fx.admin_client(make_cloud(hosts=hosts, overrides=overrides))
    api.flavor = api.create_flavor('f', 1, 512, 1)
    api.image = api.create_image('img')
    return api


@pytest.mark.slow
def test_availability_zone_from_aggregate_metadata(make_cloud):
    api = _api(make_cloud)
    fx.create_aggregate(api, 'rack-a', ['host-1', 'host-2'], zone='az-a')
    fx.create_aggregate(
        api, 'rack-b', ['host-3'], metadata={'availability_zone': 'az-b'}
    )
    zones = {
        z['zoneName']
        for z in api.get('/os-availability-zone')['availabilityZoneInfo']
    }
    assert {'az-a', 'az-b'} <= zones
    hosts = set()
    for i in range(4):
        server = fx.boot_and_settle(
            api, 'a-%d' % i, api.flavor, api.image, availability_zone='az-a'
        )
        assert server['status'] == 'ACTIVE'
        assert server['OS-EXT-AZ:availability_zone'] == 'az-a'
        hosts.add(fx.host_of(server))
    assert hosts == {'host-1', 'host-2'}
    server = fx.boot_and_settle(
        api, 'b', api.flavor, api.image, availability_zone='az-b'
    )
    assert server['status'] == 'ACTIVE' and fx.host_of(server) == 'host-3'
    # The dry run agrees, and host-4 (no zone aggregate) sits in the default.
    result = fx.dry_run(api, api.flavor, zone='az-b')
    assert fx.ranked_hosts(result) == ['host-3']


@pytest.mark.slow
def test_aggregate_multiplier_turns_spreading_into_stacking(make_cloud):
    # Only the RAM weigher counts here, so its sign decides.
    api = _api(
        make_cloud,
        cpu_weight_multiplier=0.0,
        disk_weight_multiplier=0.0,
        io_ops_weight_multiplier=0.0,
        hypervisor_version_weight_multiplier=0.0,
    )
    agg = fx.create_aggregate(
        api,
        'stack',
        ['host-1', 'host-2', 'host-3', 'host-4'],
        metadata={'ram_weight_multiplier': '-1.0'},
    )
    # A second aggregate with a higher value: the minimum (-1.0) still wins.
    fx.create_aggregate(
        api,
        'spread',
        ['host-1', 'host-2', 'host-3', 'host-4'],
        metadata={'ram_weight_multiplier': '2.0'},
    )
    fx.wait_dry_run(
        api,
        api.flavor,
        lambda r: (
            r['ranked'][0]['weighers']['RAMWeigher']['multiplier'] == -1.0
        ),
        'the aggregate override to reach the scheduler',
    )
    hosts = [
        fx.host_of(fx.boot_and_settle(api, 's-%d' % i, api.flavor, api.image))
        for i in range(3)
    ]
    assert len(set(hosts)) == 1, hosts
    # Drop the override: the default multiplier (1.0) spreads again.
    api.post(
        '/os-aggregates/%s/action' % agg['id'],
        {'set_metadata': {'metadata': {'ram_weight_multiplier': None}}},
    )
    fx.wait_dry_run(
        api,
        api.flavor,
        lambda r: (
            r['ranked'][0]['weighers']['RAMWeigher']['multiplier'] == 2.0
        ),
        'the override removal to reach the scheduler',
    )
    result = fx.dry_run(api, api.flavor)
    assert fx.ranked_hosts(result)[-1] == hosts[0]
    server = fx.boot_and_settle(api, 'spread', api.flavor, api.image)
    assert fx.host_of(server) != hosts[0]


@pytest.mark.slow
def test_aggregate_instance_extra_specs_filter(make_cloud):
    api = _api(
        make_cloud,
        filters=['ComputeFilter', 'AggregateInstanceExtraSpecsFilter'],
    )
    fx.create_aggregate(
        api,
        'ssd',
        ['host-2', 'host-3'],
        metadata={'storage': 'ssd', 'tier': 'gold'},
    )
    fx.create_aggregate(api, 'hdd', ['host-1'], metadata={'storage': 'hdd'})
    flavor = api.create_flavor(
        'ssd-gold',
        1,
        512,
        1,
        extra_specs={
            'aggregate_instance_extra_specs:storage': 'ssd',
            'aggregate_instance_extra_specs:tier': '<in> gold',
        },
    )
    fx.wait_dry_run(
        api,
        flavor,
        lambda r: set(fx.ranked_hosts(r)) == {'host-2', 'host-3'},
        'aggregate metadata to arrive',
    )
    for i in range(3):
        server = fx.boot_and_settle(api, 'ssd-%d' % i, flavor, api.image)
        assert server['status'] == 'ACTIVE'
        assert fx.host_of(server) in ('host-2', 'host-3')
    result = fx.dry_run(api, flavor)
    reasons = {r['host']: r for r in result['rejected']}
    assert set(reasons) == {'host-1', 'host-4'}
    assert all(
        r['filter'] == 'AggregateInstanceExtraSpecsFilter'
        for r in reasons.values()
    )
    # A value no aggregate has: nowhere to go.
    nowhere = api.create_flavor(
        'nvme',
        1,
        512,
        1,
        extra_specs={'aggregate_instance_extra_specs:storage': 'nvme'},
    )
    server = fx.boot_and_settle(api, 'nvme', nowhere, api.image)
    assert server['status'] == 'ERROR'
    assert (
        'AggregateInstanceExtraSpecsFilter: 4 in, 0 out'
        in api.server(server['id'])['fault']['details']
    )
