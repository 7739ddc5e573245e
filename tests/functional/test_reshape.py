"""A compute that reshapes its provider tree at startup (seed 002).

host-1 used to report CUSTOM_PGPU on its root provider, and a consumer holds
2 of them. Restarted with GPUs modelled as child providers, its driver
raises ReshapeNeeded; the resource tracker collects the tree's allocations,
lets the driver move them, and POSTs /reshaper: inventory and allocation
move to the children in one transaction.
"""

import uuid

from nimbus.common import context
from nimbus.compute import resource_tracker
from nimbus import services


def test_startup_reshape_moves_inventory_and_allocations(make_cloud):
    cloud = make_cloud(hosts=1)
    ctxt = context.get_admin_context()
    placement = services.placement(cloud.conf)
    root = resource_tracker.compute_node_uuid('host-1')
    # The legacy layout: PGPU inventory on the root, and a consumer of it.
    placement.ensure_traits(ctxt, ['CUSTOM_GPU_PRODUCT_ID_1EB8'])
    inventory = placement.get_provider_tree(ctxt, root)[0]['inventories']
    inventory['CUSTOM_PGPU'] = {'total': 8, 'reserved': 0, 'min_unit': 1,
                                'max_unit': 8, 'step_size': 1,
                                'allocation_ratio': 1.0}
    placement.request(ctxt, 'PUT', '/resource_classes/CUSTOM_PGPU')
    placement.set_inventory(ctxt, root, inventory)
    consumer = str(uuid.uuid4())
    assert placement.claim_resources(
        ctxt, consumer, {'allocations': {root: {'resources': {
            'VCPU': 1, 'MEMORY_MB': 512, 'CUSTOM_PGPU': 2}}}},
        'project', 'user')

    # Restart host-1 with two GPUs as child providers.
    cloud.stop_compute('host-1')
    cloud.host_overrides['host-1'] = {'fake_driver': {'pgpus': 2}}
    cloud.start_compute('host-1')

    tree = {p['uuid']: p for p in placement.get_provider_tree(ctxt, root)}
    assert len(tree) == 3
    assert 'CUSTOM_PGPU' not in tree[root]['inventories']
    children = [u for u, p in tree.items()
                if p['parent_provider_uuid'] == root]
    assert len(children) == 2
    for child in children:
        assert tree[child]['inventories']['CUSTOM_PGPU']['total'] == 4
        assert 'CUSTOM_GPU_PRODUCT_ID_1EB8' in tree[child]['traits']
    allocations = placement.get_allocations_for_consumer(
        ctxt, consumer)['allocations']
    assert allocations[root]['resources'] == {'VCPU': 1, 'MEMORY_MB': 512}
    moved = [a['resources'] for rp, a in allocations.items() if rp != root]
    assert moved == [{'CUSTOM_PGPU': 2}]
    # A second restart finds nothing to reshape and changes nothing.
    cloud.stop_compute('host-1')
    cloud.start_compute('host-1')
    again = placement.get_allocations_for_consumer(ctxt, consumer)
    assert again['allocations'] == allocations
