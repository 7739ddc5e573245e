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
    inventory['CUSTOM_PGPU'] = {
        'total': 8,
        'reserved': 0,
        'min_unit': 1,
        'max_unit': 8,
        'step_size': 1,
        'allocation_ratio': 1.0,
    }
    placement.request(ctxt, 'PUT', '/resource_classes/CUSTOM_PGPU')
    placement.set_inventory(ctxt, root, inventory)
    consumer = str(uuid.uuid4())
    assert placement.claim_resources(
        ctxt,
        consumer,
        {
            'allocations': {
                root: {
                    'resources': {
                        'VCPU': 1,
                        'MEMORY_MB': 512,
                        'CUSTOM_PGPU': 2,
                    }
                }
            }
        },
        'project',
        'user',
    )

    # Restart host-1 with two GPUs as child providers.
    cloud.stop_compute('host-1')
    cloud.host_overrides['host-1'] = {'fake_driver': {'pgpus': 2}}
    cloud.start_compute('host-1')

    tree = {p['uuid']: p for p in placement.get_provider_tree(ctxt, root)}
    assert len(tree) == 3
    assert 'CUSTOM_PGPU' not in tree[root]['inventories']
    children = [
        u for u, p in tree.items() if p['parent_provider_uuid'] == root
    ]
    assert len(children) == 2
    for child in children:
        assert tree[child]['inventories']['CUSTOM_PGPU']['total'] == 4
        assert 'CUSTOM_GPU_PRODUCT_ID_1EB8' in tree[child]['traits']
    allocations = placement.get_allocations_for_consumer(ctxt, consumer)[
        'allocations'
    ]
    assert allocations[root]['resources'] == {'VCPU': 1, 'MEMORY_MB': 512}
    moved = [a['resources'] for rp, a in allocations.items() if rp != root]
    assert moved == [{'CUSTOM_PGPU': 2}]
    # A second restart finds nothing to reshape and changes nothing.
    cloud.stop_compute('host-1')
    cloud.start_compute('host-1')
    again = placement.get_allocations_for_consumer(ctxt, consumer)
    assert again['allocations'] == allocations


# -- seed 002, the rest: races, failures, periodic runs, offline ---------

import logging  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

from nimbus.allinone.cloud import wait_for  # noqa: E402
from nimbus.common.clients import placement as placement_client  # noqa: E402
from nimbus.compute import exception as compute_exception  # noqa: E402
from nimbus.compute.virt import fake  # noqa: E402
from nimbus.placement import direct  # noqa: E402

PGPU = {
    'total': 8,
    'reserved': 0,
    'min_unit': 1,
    'max_unit': 8,
    'step_size': 1,
    'allocation_ratio': 1.0,
}


def _legacy_layout(placement, root, pgpus_used):
    """host-1's root with PGPU inventory, and a consumer using some; the
    consumer's uuid."""
    ctxt = context.get_admin_context()
    placement.ensure_traits(ctxt, ['CUSTOM_GPU_PRODUCT_ID_1EB8'])
    placement.ensure_resource_classes(ctxt, {'CUSTOM_PGPU'})
    inventory = placement.get_provider_tree(ctxt, root)[0]['inventories']
    inventory['CUSTOM_PGPU'] = dict(
        PGPU, total=max(8, pgpus_used), max_unit=max(8, pgpus_used)
    )
    placement.set_inventory(ctxt, root, inventory)
    consumer = str(uuid.uuid4())
    assert placement.claim_resources(
        ctxt,
        consumer,
        {
            'allocations': {
                root: {
                    'resources': {
                        'VCPU': 1,
                        'MEMORY_MB': 512,
                        'CUSTOM_PGPU': pgpus_used,
                    }
                }
            }
        },
        'project',
        'user',
    )
    return consumer


def _snapshot(placement, root, consumers):
    ctxt = context.get_admin_context()
    tree = sorted(
        (p['uuid'], p['generation'], p['inventories'])
        for p in placement.get_provider_tree(ctxt, root)
    )
    return tree, {
        c: placement.get_allocations_for_consumer(ctxt, c)['allocations']
        for c in consumers
    }


class RacingPlacement(placement_client.PlacementClient):
    """A real placement client; right after the tracker gathered the tree's
    allocations, another consumer allocates on the root (as a scheduler
    would at that moment)."""

    racer = None

    def get_allocations_for_provider_tree(self, ctxt, root_uuid):
        gathered = super().get_allocations_for_provider_tree(ctxt, root_uuid)
        self.racer = str(uuid.uuid4())
        assert self.claim_resources(
            ctxt,
            self.racer,
            {
                'allocations': {
                    root_uuid: {'resources': {'VCPU': 1, 'MEMORY_MB': 256}}
                }
            },
            'project',
            'user',
        )
        return gathered


def test_a_concurrent_allocation_makes_the_reshape_fail_and_nothing_is_lost(
    make_cloud,
):
    cloud = make_cloud(hosts=1)
    ctxt = context.get_admin_context()
    placement = services.placement(cloud.conf)
    root = resource_tracker.compute_node_uuid('host-1')
    consumer = _legacy_layout(placement, root, 2)
    cloud.stop_compute('host-1')
    conf = cloud.compute_conf('host-1')
    conf.set_override('pgpus', 2, group='fake_driver')
    racing = RacingPlacement(cloud.placement_url)
    tracker = resource_tracker.ResourceTracker(
        conf, 'host-1', fake.FakeDriver(conf, 'host-1'), racing, None
    )
    with pytest.raises(compute_exception.ReshapeFailed) as caught:
        tracker.update(ctxt, startup=True)
    assert '409' in str(caught.value) or 'onflict' in str(caught.value)
    # Placement is as before the reshape, plus the racer's allocation.
    tree = {p['uuid']: p for p in placement.get_provider_tree(ctxt, root)}
    # The new children were created before the reshape (as Nova does:
    # placement's reshaper does not create providers), but hold nothing.
    assert all(not p['inventories'] for u, p in tree.items() if u != root)
    assert tree[root]['inventories']['CUSTOM_PGPU']['total'] == 8
    assert placement.get_allocations_for_consumer(ctxt, consumer)[
        'allocations'
    ] == {
        root: {
            'resources': {'VCPU': 1, 'MEMORY_MB': 512, 'CUSTOM_PGPU': 2},
            'generation': tree[root]['generation'],
        }
    }
    racer = placement.get_allocations_for_consumer(ctxt, racing.racer)
    assert racer['allocations'][root]['resources'] == {
        'VCPU': 1,
        'MEMORY_MB': 256,
    }
    # The next start reshapes, the racer's allocation included.
    cloud.host_overrides['host-1'] = {'fake_driver': {'pgpus': 2}}
    cloud.start_compute('host-1')
    after = placement.get_allocations_for_consumer(ctxt, consumer)
    assert after['allocations'][root]['resources'] == {
        'VCPU': 1,
        'MEMORY_MB': 512,
    }
    assert placement.get_allocations_for_consumer(ctxt, racing.racer)[
        'allocations'
    ][root]['resources'] == {'VCPU': 1, 'MEMORY_MB': 256}


def test_a_failed_reshape_stops_the_compute_at_startup(make_cloud, caplog):
    cloud = make_cloud(hosts=1)
    placement = services.placement(cloud.conf)
    root = resource_tracker.compute_node_uuid('host-1')
    # 10 PGPUs in use; two children of 4 cannot hold them.
    consumer = _legacy_layout(placement, root, 10)
    cloud.stop_compute('host-1')
    before = _snapshot(placement, root, [consumer])
    cloud.host_overrides['host-1'] = {'fake_driver': {'pgpus': 2}}
    with caplog.at_level(logging.CRITICAL, logger='nimbus.compute.service'):
        with pytest.raises(compute_exception.ReshapeFailed):
            cloud.start_compute('host-1')
    lines = [
        r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL
    ]
    assert any(
        'nimbus-compute host-1 cannot start: the reshape of its '
        'provider tree failed'
        in line
        and 'PGPU capacity' in line
        for line in lines
    )
    assert _snapshot(placement, root, [consumer]) == before


def test_a_reshape_needed_in_a_periodic_update_stops_the_compute(
    make_cloud, caplog
):
    cloud = make_cloud(
        hosts=1,
        host_overrides={
            'host-1': {
                'fake_driver': {'pgpus': 2},
                # Read the tree at every update: a change behind the
                # compute's back is seen at the next read of it.
                'compute': {
                    'update_resources_interval': 1,
                    'provider_tree_refresh_interval': 0,
                },
            }
        },
    )
    svc = cloud.computes['host-1']
    fatal = []
    svc.on_fatal = fatal.append
    ctxt = context.get_admin_context()
    placement = services.placement(cloud.conf)
    root = resource_tracker.compute_node_uuid('host-1')
    # Someone puts PGPU back on the root behind the compute's back: the
    # driver's next periodic look wants a reshape.
    with caplog.at_level(logging.CRITICAL, logger='nimbus.compute.service'):
        _legacy_layout(placement, root, 1)
        wait_for(lambda: fatal, timeout=30, what='the compute to stop')
    assert svc.fatal == fatal[0]
    assert 'nimbus-compute host-1 stops' in fatal[0]
    assert 'ReshapeNeeded' in fatal[0]
    assert any(
        r.getMessage() == fatal[0]
        for r in caplog.records
        if r.levelno == logging.CRITICAL
    )
    # Stopped: no more periodic updates, the RPC server is gone.
    assert svc._server is None or svc._stop.is_set()
    tree = placement.get_provider_tree(ctxt, root)
    assert [p for p in tree if p['uuid'] == root][0]['inventories'][
        'CUSTOM_PGPU'
    ]['total'] == 8  # nothing reshaped behind its back


@pytest.mark.slow
def test_migrate_compute_inventory_offline_on_a_sqlite_placement(
    make_cloud, tmp_path
):
    cloud = make_cloud(hosts=1)
    placement = services.placement(cloud.conf)
    root = resource_tracker.compute_node_uuid('host-1')
    consumer = _legacy_layout(placement, root, 3)
    # Everything stops, placement's server too: only its database is left.
    cloud.stop()
    assert cloud.db_urls['placement'].startswith('sqlite')
    conf_file = tmp_path / 'compute.conf'
    conf_file.write_text(
        '[DEFAULT]\nstate_path = %s\nhost = host-1\n'
        '[placement_database]\nconnection = %s\n'
        '[fake_driver]\npgpus = 2\n'
        % (tmp_path / 'state', cloud.db_urls['placement'])
    )
    manage = os.path.join(os.path.dirname(sys.executable), 'nimbus-manage')

    def run(*args):
        return subprocess.run(
            [
                manage,
                '--config-file',
                str(conf_file),
                'placement',
                'migrate-compute-inventory',
            ]
            + list(args),
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = run('--host', 'host-1')
    assert done.returncode == 0, done.stderr
    # (The log goes to stdout too: the command's answer is its last line.)
    assert done.stdout.strip().splitlines()[-1] == (
        'host-1: inventories and allocations reshaped'
    )
    again = run('--host', 'host-1')
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().splitlines()[-1] == (
        'host-1: no reshape needed; inventories up to date'
    )
    unknown = run('--host', 'nowhere')
    assert unknown.returncode == 1
    assert 'host nowhere has no resource provider' in unknown.stderr
    missing = run()
    assert missing.returncode == 1 and '--host' in missing.stderr

    # Read the result the same way: straight from the database.
    conf = cloud._conf()
    with direct.PlacementDirect(conf) as session:
        client = placement_client.PlacementClient(
            direct.BASE_URL, session=session
        )
        ctxt = context.get_admin_context()
        tree = {p['uuid']: p for p in client.get_provider_tree(ctxt, root)}
        allocations = client.get_allocations_for_consumer(ctxt, consumer)[
            'allocations'
        ]
    assert len(tree) == 3
    assert 'CUSTOM_PGPU' not in tree[root]['inventories']
    assert allocations[root]['resources'] == {'VCPU': 1, 'MEMORY_MB': 512}
    moved = sorted(
        a['resources']['CUSTOM_PGPU']
        for rp, a in allocations.items()
        if rp != root
    )
    assert sum(moved) == 3 and all(rp in tree for rp in allocations)
