"""ComputeCapabilitiesFilter and ImagePropertiesFilter against what the fake
driver reports (per-host ``[fake_driver]`` options)."""

import pytest

from tests.functional.scheduler import fixtures as fx

HOSTS = {
    'host-1': {'fake_driver': {'cpu_features': ['sse4_2']}},
    'host-2': {
        'fake_driver': {
            'cpu_features': ['avx2', 'sse4_2', 'aes'],
            'hypervisor_type': 'XEN',
        }
    },
    'host-3': {
        'fake_driver': {
            'cpu_features': ['avx2', 'aes'],
            'hypervisor_version': 9001000,
        }
    },
}


def _api(make_cloud):
    cloud = make_cloud(hosts=3, host_overrides=HOSTS)
    api = fx.admin_client(cloud)
    api.image = api.create_image('img')
    return api


def _hosts_for(api, flavor, image=None):
    return set(fx.ranked_hosts(fx.dry_run(api, flavor, image=image)))


@pytest.mark.slow
def test_compute_capabilities_extra_specs(make_cloud):
    api = _api(make_cloud)
    avx2 = api.create_flavor(
        'avx2',
        1,
        512,
        1,
        extra_specs={'capabilities:cpu_info:features': '<all-in> avx2 aes'},
    )
    assert _hosts_for(api, avx2) == {'host-2', 'host-3'}
    for i in range(3):
        server = fx.boot_and_settle(api, 'avx-%d' % i, avx2, api.image)
        assert server['status'] == 'ACTIVE'
        assert fx.host_of(server) in ('host-2', 'host-3')
    result = fx.dry_run(api, avx2)
    (rejected,) = result['rejected']
    assert rejected['host'] == 'host-1'
    assert rejected['filter'] == 'ComputeCapabilitiesFilter'
    assert 'cpu_info:features' in rejected['reason']

    xen = api.create_flavor(
        'xen',
        1,
        512,
        1,
        extra_specs={'capabilities:hypervisor_type': 's== XEN'},
    )
    assert _hosts_for(api, xen) == {'host-2'}
    server = fx.boot_and_settle(api, 'xen', xen, api.image)
    assert fx.host_of(server) == 'host-2'

    new = api.create_flavor(
        'new-hv',
        1,
        512,
        1,
        extra_specs={'capabilities:hypervisor_version': '>= 9000000'},
    )
    assert _hosts_for(api, new) == {'host-3'}
    either = api.create_flavor(
        'either',
        1,
        512,
        1,
        extra_specs={'capabilities:hypervisor_type': '<or> XEN <or> FOO'},
    )
    assert _hosts_for(api, either) == {'host-2'}

    nowhere = api.create_flavor(
        'nowhere',
        1,
        512,
        1,
        extra_specs={'capabilities:cpu_info:features': '<in> avx512f'},
    )
    server = fx.boot_and_settle(api, 'nowhere', nowhere, api.image)
    assert server['status'] == 'ERROR'
    details = api.server(server['id'])['fault']['details']
    assert 'placement returned 3 hosts' in details
    assert 'ComputeCapabilitiesFilter: 3 in, 0 out' in details


def test_malformed_extra_spec_is_refused_by_the_api(make_cloud):
    api = _api(make_cloud)
    flavor = api.create_flavor('f', 1, 512, 1)
    try:
        api.post(
            '/flavors/%s/os-extra_specs' % flavor['id'],
            {'extra_specs': {'hw:cpu_policy': 'sideways'}},
        )
    except RuntimeError as exc:
        assert '400' in str(exc)
    else:
        raise AssertionError('a malformed extra spec was accepted')


@pytest.mark.slow
def test_image_properties_filter(make_cloud):
    api = _api(make_cloud)
    flavor = api.create_flavor('f', 1, 512, 1)
    x86 = api.create_image(
        'x86',
        {
            'hw_architecture': 'x86_64',
            'img_hv_type': 'kvm',
            'hw_vm_mode': 'hvm',
        },
    )
    assert _hosts_for(api, flavor, x86) == {'host-1', 'host-2', 'host-3'}
    newer = api.create_image(
        'newer', {'img_hv_requested_version': '>= 9000000'}
    )
    assert _hosts_for(api, flavor, newer) == {'host-3'}
    server = fx.boot_and_settle(api, 'newer', flavor, newer)
    assert server['status'] == 'ACTIVE' and fx.host_of(server) == 'host-3'
    arm = api.create_image('arm', {'hw_architecture': 'aarch64'})
    server = fx.boot_and_settle(api, 'arm', flavor, arm)
    assert server['status'] == 'ERROR'
    details = api.server(server['id'])['fault']['details']
    assert 'ImagePropertiesFilter: 3 in, 0 out' in details
    assert 'aarch64' in details


@pytest.mark.slow
def test_unscoped_extra_specs_match_the_hosts_reported_stats(make_cloud):
    # The fake driver's [fake_driver] stats travel with the compute's node
    # report to its cell conductor, into compute_nodes.stats, and from there
    # into the scheduler's host states.
    cloud = make_cloud(
        hosts=2,
        host_overrides={
            'host-1': {
                'fake_driver': {'stats': {'rack': 'r1', 'gpu_vendor': 'acme'}}
            },
            'host-2': {'fake_driver': {'stats': {'rack': 'r2'}}},
        },
    )
    api = fx.admin_client(cloud)
    image = api.create_image('img')
    r1 = api.create_flavor(
        'rack-r1', 1, 512, 1, extra_specs={'rack': 's== r1'}
    )
    r2 = api.create_flavor(
        'rack-r2', 1, 512, 1, extra_specs={'rack': 's== r2'}
    )
    acme = api.create_flavor(
        'acme', 1, 512, 1, extra_specs={'gpu_vendor': '<in> acm'}
    )
    result = fx.dry_run(api, r1)
    assert fx.ranked_hosts(result) == ['host-1']
    (rejected,) = result['rejected']
    assert rejected['host'] == 'host-2'
    assert rejected['filter'] == 'ComputeCapabilitiesFilter'
    assert "stats rack is 'r2'" in rejected['reason']
    for i in range(2):
        server = fx.boot_and_settle(api, 'r1-%d' % i, r1, image)
        assert server['status'] == 'ACTIVE'
        assert fx.host_of(server) == 'host-1'
    server = fx.boot_and_settle(api, 'r2', r2, image)
    assert fx.host_of(server) == 'host-2'
    # host-2 reports no gpu_vendor stat: it ignores the key (as Nova).
    assert set(fx.ranked_hosts(fx.dry_run(api, acme))) == {'host-1', 'host-2'}
