"""Object layer: capacity checks, generations, consumers, reshaper atomicity.

Runs on the engine ``NIMBUS_TEST_DB`` selects (SQLite by default), each test
on a fresh database.
"""

import pytest

from nimbus.placement import db as placement_db
from nimbus.placement import exception
from nimbus.placement.objects import allocation
from nimbus.placement.objects import base
from nimbus.placement.objects import inventory
from nimbus.placement.objects import reshaper
from nimbus.placement.objects import resource_class
from nimbus.placement.objects import resource_provider as rp_obj
from nimbus.placement.objects import snapshot
from nimbus.placement.objects import usage
from tests.functional.placement import fixtures

RP1 = '00000000-0000-0000-0000-0000000000a1'
RP2 = '00000000-0000-0000-0000-0000000000a2'
C1 = '00000000-0000-0000-0000-0000000000c1'
C2 = '00000000-0000-0000-0000-0000000000c2'


@pytest.fixture
def pdb(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:
        placement_db.sync(url)
        pdb = base.PlacementDB(url)
        pdb.write(resource_class.sync_standard)
        yield pdb
        pdb.database.dispose()


def _provider(pdb, uuid, name, invs, parent=None):
    pdb.write(rp_obj.create, uuid, name, parent)
    pdb.write(lambda c: inventory.set_all(c, rp_obj.get(c, uuid), 0, invs))


def _claim(pdb, consumer, allocs, generation=allocation.NO_GENERATION):
    pdb.write(
        allocation.replace,
        [
            allocation.Request(
                consumer, allocs, 'p', 'u', generation, 'INSTANCE'
            )
        ],
        structure=False,
        usage=True,
    )


def test_capacity_uses_ratio_and_reserved(pdb):
    _provider(
        pdb,
        RP1,
        'one',
        {'VCPU': {'total': 4, 'reserved': 1, 'allocation_ratio': 2.0}},
    )
    _claim(pdb, C1, {RP1: {'VCPU': 6}})
    with pytest.raises(exception.CapacityExceeded):
        _claim(pdb, C2, {RP1: {'VCPU': 1}})


def test_replacing_own_allocation_does_not_double_count(pdb):
    _provider(pdb, RP1, 'one', {'VCPU': {'total': 4}})
    _claim(pdb, C1, {RP1: {'VCPU': 4}})
    _claim(pdb, C1, {RP1: {'VCPU': 3}})
    usages = pdb.read(
        lambda c: usage.for_provider(c, rp_obj.get(c, RP1)['id'])
    )
    assert usages == {'VCPU': 3}


@pytest.mark.parametrize('amount', [3, 5, 12])
def test_min_max_step(pdb, amount):
    _provider(
        pdb,
        RP1,
        'one',
        {
            'MEMORY_MB': {
                'total': 64,
                'min_unit': 4,
                'max_unit': 8,
                'step_size': 4,
            }
        },
    )
    with pytest.raises(exception.CapacityExceeded):
        _claim(pdb, C1, {RP1: {'MEMORY_MB': amount}})


def test_generations_move_and_guard(pdb):
    _provider(pdb, RP1, 'one', {'VCPU': {'total': 4}})
    assert pdb.read(rp_obj.get, RP1)['generation'] == 1
    _claim(pdb, C1, {RP1: {'VCPU': 1}})
    assert pdb.read(rp_obj.get, RP1)['generation'] == 2
    with pytest.raises(exception.ConcurrentUpdate):
        pdb.write(
            lambda c: inventory.set_all(
                c, rp_obj.get(c, RP1), 1, {'VCPU': {'total': 8}}
            )
        )


def test_consumer_generation(pdb):
    _provider(pdb, RP1, 'one', {'VCPU': {'total': 4}})
    _claim(pdb, C1, {RP1: {'VCPU': 1}}, generation=None)
    with pytest.raises(exception.ConcurrentUpdate):
        _claim(pdb, C1, {RP1: {'VCPU': 2}}, generation=None)
    _claim(pdb, C1, {RP1: {'VCPU': 2}}, generation=1)
    allocs, consumer = pdb.read(allocation.for_consumer, C1)
    assert consumer['generation'] == 2
    assert allocs[RP1]['resources'] == {'VCPU': 2}
    _claim(pdb, C1, {}, generation=2)
    assert pdb.read(allocation.for_consumer, C1) == ({}, None)


def test_many_consumers_are_atomic(pdb):
    _provider(pdb, RP1, 'one', {'VCPU': {'total': 4}})
    with pytest.raises(exception.CapacityExceeded):
        pdb.write(
            allocation.replace,
            [
                allocation.Request(C1, {RP1: {'VCPU': 3}}),
                allocation.Request(C2, {RP1: {'VCPU': 3}}),
            ],
            usage=True,
        )
    assert pdb.read(allocation.for_consumer, C1) == ({}, None)


def test_reshaper_moves_and_is_atomic(pdb):
    _provider(pdb, RP1, 'root', {'VCPU': {'total': 4}, 'VGPU': {'total': 2}})
    _provider(pdb, RP2, 'child', {}, parent=RP1)
    _claim(pdb, C1, {RP1: {'VCPU': 1, 'VGPU': 1}}, generation=None)
    bad = [
        allocation.Request(
            C1, {RP1: {'VCPU': 1}, RP2: {'VGPU': 5}}, 'p', 'u', 1, 'INSTANCE'
        )
    ]
    invs = {RP1: (2, {'VCPU': {'total': 4}}), RP2: (1, {'VGPU': {'total': 2}})}
    with pytest.raises(exception.CapacityExceeded):
        pdb.write(reshaper.reshape, invs, bad, usage=True)
    # nothing moved
    allocs, _c = pdb.read(allocation.for_consumer, C1)
    assert allocs[RP1]['resources'] == {'VCPU': 1, 'VGPU': 1}
    assert (
        pdb.read(lambda c: inventory.get_all(c, rp_obj.get(c, RP2)['id']))
        == {}
    )
    good = [
        allocation.Request(
            C1, {RP1: {'VCPU': 1}, RP2: {'VGPU': 1}}, 'p', 'u', 1, 'INSTANCE'
        )
    ]
    pdb.write(reshaper.reshape, invs, good, usage=True)
    allocs, consumer = pdb.read(allocation.for_consumer, C1)
    assert allocs[RP2]['resources'] == {'VGPU': 1}
    assert consumer['generation'] == 2


def test_snapshot_cache_follows_changes(pdb):
    cache = snapshot.SnapshotCache(pdb)
    assert cache.get().providers == {}
    _provider(pdb, RP1, 'one', {'VCPU': {'total': 4}})
    snap = cache.get()
    assert snap.providers[RP1].inventories['VCPU'].total == 4
    assert cache.get() is snap  # nothing moved: same object
    _claim(pdb, C1, {RP1: {'VCPU': 3}})
    snap2 = cache.get()
    assert snap2.providers[RP1].usages == {'VCPU': 3}
    assert snap2.providers[RP1].generation == 2
    other = snapshot.SnapshotCache(pdb)  # a second API process
    assert other.get().providers[RP1].usages == {'VCPU': 3}
