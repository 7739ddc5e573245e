"""The periodic resource update works from the tracker's copy of the
provider tree between reads ([compute] provider_tree_refresh_interval):
with nothing changed it asks placement nothing and sends no node record;
what the driver changes is still written at once."""

from nimbus.allinone import client as client_mod
from nimbus.allinone import cloud as cloud_mod
from nimbus.compute import resource_tracker


class _Counting:
    """The real client, with the calls of the named methods counted."""

    def __init__(self, real, *names):
        self._real = real
        self.calls = []
        for name in names:
            setattr(self, name, self._counted(name))

    def _counted(self, name):
        method = getattr(self._real, name)

        def counted(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)

        return counted

    def __getattr__(self, name):
        return getattr(self._real, name)


def _spy(compute):
    placement = _Counting(
        compute.placement,
        'ensure_resource_provider',
        'get_provider_tree',
        'set_inventory',
        'set_traits',
    )
    conductor = _Counting(compute.conductor, 'compute_node_update')
    compute.tracker.placement = placement
    compute.tracker.conductor = conductor
    return placement, conductor


def test_an_update_with_nothing_changed_costs_no_placement_request(make_cloud):
    cloud = make_cloud(hosts=1)
    compute = cloud.computes['host-1']
    placement, conductor = _spy(compute)
    compute._update_resources()
    compute._update_resources()
    assert placement.calls == []
    assert conductor.calls == []
    # A boot changes the node record (its usage): sent once, then quiet.
    api = client_mod.ComputeClient(cloud.api_url)
    flavor = api.create_flavor('m1.tiny', 1, 512, 1)
    image = api.create_image('cirros')
    server = api.create_server('vm', flavor['id'], image['id'])['server']
    cloud_mod.wait_for(
        lambda: (
            api.get('/servers/%s' % server['id'])['server']['status']
            == 'ACTIVE'
        ),
        what='vm ACTIVE',
    )
    compute._update_resources()
    compute._update_resources()
    assert conductor.calls == ['compute_node_update']
    assert placement.calls == []
    # The driver's change is written without reading the tree first.
    compute.driver.vcpus = 48
    compute._update_resources()
    assert placement.calls == ['set_inventory']
    root = resource_tracker.compute_node_uuid('host-1')
    assert (
        compute.placement.get_provider_tree(None, root)[0]['inventories'][
            'VCPU'
        ]['total']
        == 48
    )
    # Past the refresh interval the tree is read again.
    placement.calls.clear()
    compute.tracker.forget()
    compute._update_resources()
    assert placement.calls == ['ensure_resource_provider', 'get_provider_tree']
    assert conductor.calls[-1] == 'compute_node_update'


def test_a_zero_refresh_interval_reads_the_tree_at_every_update(make_cloud):
    cloud = make_cloud(
        hosts=1, overrides={'compute': {'provider_tree_refresh_interval': 0}}
    )
    compute = cloud.computes['host-1']
    placement, conductor = _spy(compute)
    compute._update_resources()
    compute._update_resources()
    assert (
        placement.calls
        == ['ensure_resource_provider', 'get_provider_tree'] * 2
    )
    assert conductor.calls == ['compute_node_update'] * 2


def test_a_refresh_lists_the_tree_and_reads_it_only_when_it_moved(make_cloud):
    cloud = make_cloud(hosts=1)
    compute = cloud.computes['host-1']
    compute._update_resources()
    placement, _conductor = _spy(compute)
    placement.list_tree = placement._counted('list_tree')

    def past_the_refresh():
        compute.tracker._tree_read_at -= 10 * (
            compute.conf.compute.provider_tree_refresh_interval
        )

    # Nothing changed in placement: one listing, the copy stands.
    past_the_refresh()
    compute._update_resources()
    assert placement.calls == ['list_tree']
    # An operator's change moves the generation: the tree is read.
    root = resource_tracker.compute_node_uuid('host-1')
    real = compute.placement
    traits = real.provider_traits(None, root)
    real.set_traits(None, root, set(traits) | {'CUSTOM_OPERATOR'})
    placement.calls.clear()
    past_the_refresh()
    compute._update_resources()
    assert placement.calls[:3] == [
        'list_tree',
        'ensure_resource_provider',
        'get_provider_tree',
    ]
    # A new child under the tree (another agent's device provider): only
    # it is read; the copy keeps the rest and now holds the child too.
    child = '7c0f3d4e-5a6b-4c8d-9e0f-1a2b3c4d5e6f'
    real.ensure_resource_provider(None, child, 'host-1_dev', root)
    real.set_traits(None, child, {'CUSTOM_DEVICE'})
    placement.calls.clear()
    past_the_refresh()
    compute._update_resources()
    assert placement.calls == ['list_tree', 'get_provider_tree']
    assert compute.tracker._tree.data(child).traits == {'CUSTOM_DEVICE'}
    placement.calls.clear()
    past_the_refresh()
    compute._update_resources()
    assert placement.calls == ['list_tree']
