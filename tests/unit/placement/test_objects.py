"""Object layer: capacity checks, generations, consumers, reshaper atomicity.

Runs on the engine ``NIMBUS_TEST_DB`` selects (SQLite by default), each test
on a fresh database.
"""

import pytest

from nimbus.placement import db as placement_db
from nimbus.placement import exception
from nimbus.placement.objects import allocation
from nimbus.placement.objects import write_retry
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


def _provider_view(snap):
    return {
        u: (p.generation, dict(p.usages)) for u, p in snap.providers.items()
    }


def test_noted_writes_match_a_fresh_load(tmp_path):
    """Oracle: after any run of allocation writes (moves, growth, empties,
    other processes' writes in between), the cache that was handed each
    write's changes holds the same generations and usages, and the same
    free capacity per resource class, as a cache loading everything
    afresh; a write it was handed in order needs no reload."""
    from hypothesis import given, settings, strategies as st

    consumers = [C1, C2, '00000000-0000-0000-0000-0000000000c3']
    step = st.tuples(
        st.sampled_from(consumers),
        st.dictionaries(
            st.sampled_from([RP1, RP2]),
            st.fixed_dictionaries(
                {'VCPU': st.integers(1, 3)},
                optional={'MEMORY_MB': st.integers(1, 64)},
            ),
            max_size=2,
        ),
        st.booleans(),  # written by another process (not noted)
    )

    examples = []

    @settings(max_examples=15, deadline=None)
    @given(st.lists(step, min_size=1, max_size=8))
    def run(steps):
        examples.append(1)
        where = tmp_path / ('e%d' % len(examples))
        where.mkdir()
        with fixtures.fresh_database(where) as url:
            placement_db.sync(url)
            pdb = base.PlacementDB(url)
            try:
                pdb.write(resource_class.sync_standard)
                for uuid, name in ((RP1, 'one'), (RP2, 'two')):
                    _provider(
                        pdb,
                        uuid,
                        name,
                        {'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 4096}},
                    )
                cache = snapshot.SnapshotCache(pdb)
                cache.get()
                for consumer, allocs, elsewhere in steps:
                    request = allocation.Request(
                        consumer, allocs, 'p', 'u', allocation.NO_GENERATION
                    )
                    if elsewhere:
                        _claim(pdb, consumer, allocs)
                        continue
                    counters, changes = write_retry.write_retrying(
                        pdb,
                        1,
                        allocation.replace_noting,
                        [request],
                        structure=False,
                        usage=True,
                    )
                    before = cache._state
                    applied = cache.note_usage(counters, changes)
                    assert applied == (counters[1] == before[1] + 1)
                    if applied:
                        assert cache.pdb.state() == cache._state
                    snap = cache.get()
                    fresh = snapshot.SnapshotCache(pdb).get()
                    assert _provider_view(snap) == _provider_view(fresh)
                    assert snap.fit == fresh.fit
                    assert snap.by_rc == fresh.by_rc
                    assert snap.summary_resources == fresh.summary_resources
            finally:
                pdb.database.dispose()

    run()
