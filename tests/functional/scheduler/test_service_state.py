"""ComputeFilter through the real services: a disabled compute is never
chosen; a compute whose heartbeats stop drops out within the refresh
interval; both come back."""

import pytest

from nimbus.common import context
from nimbus import services
from tests.functional.scheduler import fixtures as fx


def _traits(cloud, host):
    placement = services.placement(cloud.conf)
    ctxt = context.get_admin_context()
    provider = placement.find_provider_by_name(ctxt, host)
    return set(
        placement.request(
            ctxt, 'GET', '/resource_providers/%s/traits' % provider['uuid']
        ).json()['traits']
    )


def _service(api, host):
    (svc,) = [
        s
        for s in api.get('/os-services')['services']
        if s['host'] == host and s['binary'] == 'nova-compute'
    ]
    return svc


@pytest.mark.slow
def test_disabled_compute_is_never_chosen(make_cloud):
    cloud = make_cloud(hosts=3)
    api = fx.admin_client(cloud)
    flavor = api.create_flavor('f', 1, 512, 1)
    image = api.create_image('img')
    svc = _service(api, 'host-2')
    api._call(
        'PUT',
        api.url + '/os-services/%s' % svc['id'],
        json={'status': 'disabled', 'disabled_reason': 'maintenance'},
    )
    fx.wait_dry_run(
        api,
        flavor,
        lambda r: 'host-2' not in fx.ranked_hosts(r),
        'host-2 to be disabled',
    )
    # The API mirrored the state into placement, so placement itself no
    # longer proposes host-2 (the request filter forbids the trait).
    assert 'COMPUTE_STATUS_DISABLED' in _traits(cloud, 'host-2')
    assert 'COMPUTE_STATUS_DISABLED' not in _traits(cloud, 'host-1')
    ids = [fx.boot(api, 'vm-%d' % i, flavor, image) for i in range(6)]
    servers = fx.settle(api, ids)
    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    assert 'host-2' not in {fx.host_of(s) for s in servers.values()}
    # Re-enabled, it is the emptiest host: the spreading weighers pick it.
    api._call(
        'PUT',
        api.url + '/os-services/%s' % svc['id'],
        json={'status': 'enabled'},
    )
    assert 'COMPUTE_STATUS_DISABLED' not in _traits(cloud, 'host-2')
    fx.wait_dry_run(
        api,
        flavor,
        lambda r: fx.ranked_hosts(r)[:1] == ['host-2'],
        'host-2 to be enabled again',
    )
    server = fx.boot_and_settle(api, 'back', flavor, image)
    assert fx.host_of(server) == 'host-2'


@pytest.mark.slow
def test_compute_without_heartbeats_is_dropped(make_cloud):
    cloud = make_cloud(
        hosts=3,
        overrides={
            'DEFAULT': {'report_interval': 1, 'service_down_time': 3},
            'scheduler': {'host_state_refresh_interval': 1},
        },
    )
    api = fx.admin_client(cloud)
    flavor = api.create_flavor('f', 1, 512, 1)
    image = api.create_image('img')
    assert set(fx.ranked_hosts(fx.dry_run(api, flavor))) == {
        'host-1',
        'host-2',
        'host-3',
    }
    cloud.stop_compute('host-3')
    # service_down_time (3 s) plus one refresh (1 s), with slack.
    result = fx.wait_dry_run(
        api,
        flavor,
        lambda r: 'host-3' not in fx.ranked_hosts(r),
        'host-3 to be seen down',
        timeout=20,
    )
    (rejected,) = [r for r in result['rejected'] if r['host'] == 'host-3']
    assert rejected['filter'] == 'ComputeFilter'
    assert rejected['reason'] == 'compute service is down'
    ids = [fx.boot(api, 'vm-%d' % i, flavor, image) for i in range(4)]
    servers = fx.settle(api, ids)
    assert {s['status'] for s in servers.values()} == {'ACTIVE'}
    assert {fx.host_of(s) for s in servers.values()} == {'host-1', 'host-2'}
    cloud.start_compute('host-3')
    fx.wait_dry_run(
        api,
        flavor,
        lambda r: 'host-3' in fx.ranked_hosts(r),
        'host-3 to come back',
        timeout=20,
    )
