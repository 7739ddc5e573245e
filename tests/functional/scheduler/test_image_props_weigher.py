"""ImagePropertiesWeigher through the running cloud: servers booted from an image with
properties make their host preferred for the next server of an alike image, both from
the super conductor's event (image_ref resolved through the API database's images) and
after a full reload of the host states from the databases."""

import pytest

from nimbus import services
from nimbus.scheduler import db_source, host_manager, testing
from nimbus.scheduler.weighers import misc
from tests.functional.scheduler import fixtures as fx


def _weigher(result, host):
    for entry in result['ranked']:
        if entry['host'] == host:
            return entry['weighers']['ImagePropertiesWeigher']
    raise AssertionError('%s not ranked' % host)


@pytest.mark.slow
def test_image_properties_weigher_prefers_alike_instances(make_cloud):
    cloud = make_cloud(
        hosts=3,
        overrides={
            'filter_scheduler': {'image_props_weight_multiplier': 100.0}
        },
    )
    api = fx.admin_client(cloud)
    flavor = api.create_flavor('small', 1, 512, 1)
    ubuntu = api.create_image(
        'ubuntu', properties={'os_distro': 'ubuntu', 'hw_machine_type': 'q35'}
    )
    windows = api.create_image('windows', properties={'os_distro': 'windows'})

    first = fx.boot_and_settle(api, 'u-1', flavor, ubuntu)
    assert first['status'] == 'ACTIVE'
    home = fx.host_of(first)
    win = fx.boot_and_settle(api, 'w-1', flavor, windows)
    assert win['status'] == 'ACTIVE'

    # The super conductor's update_instance_info reaches the scheduler asynchronously.
    result = fx.wait_dry_run(
        api,
        flavor,
        lambda r: r['ranked'] and r['ranked'][0]['host'] == home,
        'the ubuntu host to rank first',
        image=ubuntu,
    )
    assert (
        _weigher(result, home)['raw'] == 2.0
    )  # os_distro and hw_machine_type
    others = [h for h in fx.ranked_hosts(result) if h != home]
    assert all(_weigher(result, h)['raw'] == 0.0 for h in others)

    # A second ubuntu server joins the first one although that host has less room.
    second = fx.boot_and_settle(api, 'u-2', flavor, ubuntu)
    assert fx.host_of(second) == home

    # A full reload from the databases (a fresh host manager over the cloud's API and
    # cell databases) finds the same: image properties come from the API database's
    # images table by each instance's image_ref.
    hm = host_manager.HostManager(
        cloud.conf,
        db_source.DBHostInfoSource(
            services.api_db(cloud.conf), services.cell_directory(cloud.conf)
        ),
    )
    hm.refresh()
    spec = testing.spec(
        vcpus=1,
        memory_mb=512,
        root_gb=1,
        image_props={'os_distro': 'ubuntu', 'hw_machine_type': 'q35'},
    )
    weigher = misc.ImagePropertiesWeigher(cloud.conf)
    raw = {hs.host: weigher.weigh(hs, spec) for hs in hm.all_host_states()}
    assert (
        raw[home] == 4.0 and max(v for h, v in raw.items() if h != home) == 0.0
    )
    (state,) = hm.states_for_host(home)
    assert {
        i['image_properties'].get('os_distro')
        for i in state.instances.values()
    } >= {'ubuntu'}

    # The windows image prefers the windows server's host instead.
    result = fx.dry_run(api, flavor, image=windows)
    assert result['ranked'][0]['host'] == fx.host_of(win)
