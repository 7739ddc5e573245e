"""Placement's snapshot cache after a write: following it vs. rebuilding.

An all-in-one cloud of N simulated hosts with accelerator agents holds
3N providers (each host's root, one FPGA and one GPU child). Placement
answers provider listings and allocation candidates from one in-process
snapshot, which every write makes stale. This measures, on SQLite filled
that way, the CPU one write costs the next request:

- a device report (a child provider created, its inventory and traits
  written): following it (read the provider rows and the changed
  providers, index again) against the full reload it used to cost;
- a claim noted by the cache (one allocation write of this process):
  swapping the claimed providers' entries (``Snapshot.with_usages``)
  against indexing every provider again, which it used to cost.

    python benchmarks/snapshot_follow_bench.py [--hosts 1000] [--rounds 20]
"""

import argparse
import os
import statistics
import tempfile
import time
import uuid
import warnings

warnings.filterwarnings('ignore')

from nimbus.placement import db as placement_db  # noqa: E402
from nimbus.placement.candidates import model  # noqa: E402
from nimbus.placement.objects import allocation  # noqa: E402
from nimbus.placement.objects import base  # noqa: E402
from nimbus.placement.objects import inventory  # noqa: E402
from nimbus.placement.objects import resource_class  # noqa: E402
from nimbus.placement.objects import resource_provider as rp_obj  # noqa: E402
from nimbus.placement.objects import snapshot  # noqa: E402
from nimbus.placement.objects import trait  # noqa: E402

HOST_INVENTORY = {
    'VCPU': {'total': 128, 'allocation_ratio': 4.0},
    'MEMORY_MB': {'total': 131072, 'reserved': 512},
    'DISK_GB': {'total': 2000},
}
DEVICE_TRAITS = ['CUSTOM_OWNER_BENCH', 'CUSTOM_VENDOR_X', 'CUSTOM_PRODUCT_Y']


def _inventory(conn, uuid_, invs):
    rp = rp_obj.get(conn, uuid_)
    return inventory.set_all(conn, rp, rp['generation'], invs)


def _traits(conn, uuid_, names):
    for name in names:
        trait.ensure(conn, name)
    rp = rp_obj.get(conn, uuid_)
    trait.set_provider_traits(conn, rp['id'], rp['generation'], names)


def _device(conn, host_uuid, name, rc):
    child = str(uuid.uuid4())
    rp_obj.create(conn, child, name, host_uuid)
    _inventory(conn, child, {rc: {'total': 1}})
    _traits(conn, child, DEVICE_TRAITS)
    return child


def fill(pdb, hosts):
    """``hosts`` roots with an FPGA and a GPU child each; their uuids."""
    roots = []

    def write(conn):
        resource_class.sync_standard(conn)
        for rc in ('CUSTOM_FPGA', 'CUSTOM_GPU'):
            resource_class.ensure(conn, rc)
        for i in range(hosts):
            root = str(uuid.uuid4())
            rp_obj.create(conn, root, 'host-%d' % i)
            _inventory(conn, root, HOST_INVENTORY)
            _traits(
                conn, root, ['HW_CPU_X86_AVX2', 'COMPUTE_NET_VIF_MODEL_VIRTIO']
            )
            _device(conn, root, 'host-%d_fpga' % i, 'CUSTOM_FPGA')
            _device(conn, root, 'host-%d_gpu' % i, 'CUSTOM_GPU')
            roots.append(root)

    pdb.write(write)
    return roots


def _cpu(fn):
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000


def device_reports(pdb, cache, roots, rounds):
    """ms of CPU for the next get() after one device report, followed and
    reloaded."""
    followed, reloaded = [], []
    for i in range(rounds):
        pdb.write(_device, roots[i], 'extra-%d' % i, 'CUSTOM_FPGA')
        followed.append(_cpu(cache.get))
        fresh = snapshot.SnapshotCache(pdb)
        reloaded.append(_cpu(fresh.get))
    assert cache.loads['structure'] == rounds
    return followed, reloaded


def claims(pdb, cache, roots, rounds):
    """ms of CPU for one noted claim: swapping the claimed providers'
    entries, and indexing the whole snapshot (what it cost before)."""
    swapped, indexed = [], []
    for i in range(rounds):
        request = allocation.Request(
            str(uuid.uuid4()),
            {roots[-1 - i]: {'VCPU': 1, 'MEMORY_MB': 512}},
            'p',
            'u',
            allocation.NO_GENERATION,
            'INSTANCE',
        )
        counters, changes = pdb.write(
            allocation.replace_noting, [request], structure=False, usage=True
        )
        swapped.append(
            _cpu(lambda c=counters, d=changes: cache.note_usage(c, d))
        )
        snap = cache.get()
        indexed.append(
            _cpu(
                lambda snap=snap: model.Snapshot(
                    snap.providers.values(), snap.rc_sequence, snap.traits
                ).inherit_fragments(snap)
            )
        )
    return swapped, indexed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--rounds', type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = 'sqlite:///%s' % os.path.join(tmp, 'placement.sqlite')
        placement_db.sync(url)
        pdb = base.PlacementDB(url)
        roots = fill(pdb, args.hosts)
        cache = snapshot.SnapshotCache(pdb)
        cache.get()
        followed, reloaded = device_reports(pdb, cache, roots, args.rounds)
        swapped, indexed = claims(pdb, cache, roots, args.rounds)
        pdb.database.dispose()
    providers = 3 * args.hosts
    print(
        '%d hosts (%d providers), median CPU ms over %d rounds'
        % (args.hosts, providers, args.rounds)
    )
    print(
        'device report, next request: followed %.1f, full reload %.1f'
        % (statistics.median(followed), statistics.median(reloaded))
    )
    print(
        'noted claim: swapped entries %.2f, whole snapshot indexed %.1f'
        % (statistics.median(swapped), statistics.median(indexed))
    )


if __name__ == '__main__':
    main()
