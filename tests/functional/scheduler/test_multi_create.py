"""Multi-create with min_count/max_count: placement claims are all or
(at least min_count) nothing."""

import collections

from tests.functional.scheduler import fixtures as fx


def _api(make_cloud):
    # 10 GB of disk per host, 4 GB per server: two servers fit on a host.
    cloud = make_cloud(
        hosts=3,
        overrides={
            'fake_driver': {'disk_gb': 10},
            'compute': {'initial_disk_allocation_ratio': 1.0},
        },
    )
    api = fx.admin_client(cloud)
    api.flavor = api.create_flavor('f', 1, 512, 4)
    api.image = api.create_image('img')
    return api


def _request(api, name, min_count, max_count):
    api.create_server(
        name,
        api.flavor['id'],
        api.image['id'],
        min_count=min_count,
        max_count=max_count,
    )
    ids = fx.wait_for(
        lambda: (
            [s['id'] for s in api.servers() if s['name'].startswith(name)]
            if len([s for s in api.servers() if s['name'].startswith(name)])
            == max_count
            else None
        ),
        timeout=30,
        what='servers of %s' % name,
    )
    return fx.settle(api, ids)


def _disk_used(api):
    return {
        rp: res['DISK_GB'][0]
        for rp, res in fx.provider_usages(api.cloud).items()
    }


def test_fewer_than_min_fit_releases_every_claim(make_cloud):
    api = _api(make_cloud)
    servers = _request(api, 'too-many', 7, 8)
    assert {s['status'] for s in servers.values()} == {'ERROR'}
    for server_id in servers:
        assert fx.consumer_allocations(api.cloud, server_id) == {}
        details = api.server(server_id)['fault']['details']
        assert 'placed 6 of 8 instances (min_count 7)' in details
    assert set(_disk_used(api).values()) == {0}
    (record, *_rest) = api.get(
        '/os-scheduler/records?instance_uuid=%s' % next(iter(servers))
    )['records']
    assert record['outcome'] == 'failed'
    assert record['detail']['placed'] == 6
    assert record['detail']['min_count'] == 7


def test_between_min_and_max_places_what_fits(make_cloud):
    api = _api(make_cloud)
    servers = _request(api, 'some', 4, 8)
    active = [s for s in servers.values() if s['status'] == 'ACTIVE']
    failed = [s for s in servers.values() if s['status'] == 'ERROR']
    assert len(active) == 6 and len(failed) == 2
    per_host = collections.Counter(fx.host_of(s) for s in active)
    assert sorted(per_host.values()) == [2, 2, 2]
    for server in active:
        (alloc,) = fx.consumer_allocations(api.cloud, server['id']).values()
        assert alloc['resources']['DISK_GB'] == 4
    for server in failed:
        assert fx.consumer_allocations(api.cloud, server['id']) == {}
        fault = api.server(server['id'])['fault']
        assert 'No valid host' in fault['message']
    assert set(_disk_used(api).values()) == {8}
    # Each placed instance's scheduled record lists its own placement only
    # (all N in each of N records grew as N squared).
    for server in active:
        (record,) = api.get(
            '/os-scheduler/records?instance_uuid=%s&outcome=scheduled'
            % server['id']
        )['records']
        (entry,) = record['detail']['instances']
        assert entry['instance_uuid'] == server['id']
        assert entry['host'] == fx.host_of(server)
    usages = fx.provider_usages(api.cloud)
    for res in usages.values():
        for used, capacity in res.values():
            assert used <= capacity


def test_dry_run_simulates_every_instance(make_cloud):
    """A dry run for 8 instances says where each would go (two per host, as the real
    multi-create above), that 6 of 8 fit, and claims nothing."""
    api = _api(make_cloud)
    result = api.post(
        '/os-scheduler/dry-run',
        {
            'flavorRef': api.flavor['id'],
            'imageRef': api.image['id'],
            'num_instances': 8,
        },
    )['dry_run']
    assert result['instances'] == 8
    assert result['placed'] == 6
    per_host = collections.Counter(p['host'] for p in result['placements'])
    assert sorted(per_host.values()) == [2, 2, 2]
    assert result['placements_message'].startswith(
        '6 of 8 instances would be placed'
    )
    assert set(_disk_used(api).values()) == {0}
    # the same dry run again gives the same answer: nothing was left consumed
    again = api.post(
        '/os-scheduler/dry-run',
        {
            'flavorRef': api.flavor['id'],
            'imageRef': api.image['id'],
            'num_instances': 8,
        },
    )['dry_run']
    assert again['placements'] == result['placements']
