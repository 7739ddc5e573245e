"""The snapshot cache follows structure writes instead of reloading.

A structure write (a provider created, renamed, moved or deleted; an
inventory, trait or aggregate written) used to make the next request reload
every provider with its inventories, traits and usages. The cache now reads
again only the providers whose row moved. Oracle: after any run of writes,
the followed snapshot equals one loaded afresh.
"""

from hypothesis import example, given, settings, strategies as st
import pytest

from nimbus.placement import db as placement_db
from nimbus.placement import exception
from nimbus.placement.objects import aggregate
from nimbus.placement.objects import allocation
from nimbus.placement.objects import base
from nimbus.placement.objects import inventory
from nimbus.placement.objects import resource_class
from nimbus.placement.objects import resource_provider as rp_obj
from nimbus.placement.objects import snapshot
from nimbus.placement.objects import trait
from tests.functional.placement import fixtures

OWNER = 'CUSTOM_OWNER_TEST'


def _uuid(n):
    return '00000000-0000-0000-0000-%012d' % n


@pytest.fixture
def pdb(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:
        placement_db.sync(url)
        pdb = base.PlacementDB(url)
        pdb.write(resource_class.sync_standard)
        yield pdb
        pdb.database.dispose()


def _set_inventory(pdb, uuid, invs):
    def write(conn):
        rp = rp_obj.get(conn, uuid)
        return inventory.set_all(conn, rp, rp['generation'], invs)

    pdb.write(write)


def _set_traits(pdb, uuid, names):
    def write(conn):
        for name in names:
            if name.startswith('CUSTOM_'):
                trait.ensure(conn, name)
        rp = rp_obj.get(conn, uuid)
        trait.set_provider_traits(conn, rp['id'], rp['generation'], names)

    pdb.write(write)


def _set_aggregates(pdb, uuid, aggs, increment=True):
    def write(conn):
        rp = rp_obj.get(conn, uuid)
        aggregate.set_provider_aggregates(
            conn, rp['id'], rp['generation'], aggs, increment=increment
        )

    pdb.write(write)


def _device(pdb, host, n, rc='CUSTOM_FPGA'):
    """What an accelerator agent writes for one device of ``host``."""
    uuid = _uuid(host * 100 + n)
    pdb.write(resource_class.ensure, rc)
    pdb.write(rp_obj.create, uuid, 'host%d_dev%d' % (host, n), _uuid(host))
    _set_inventory(pdb, uuid, {rc: {'total': 1}})
    _set_traits(pdb, uuid, [OWNER, 'CUSTOM_VENDOR_%d' % n])
    return uuid


def _view(snap):
    """Everything a snapshot says about its providers, comparable."""
    return {
        u: (
            p.name,
            p.generation,
            p.parent_uuid,
            p.root_uuid,
            {rc: tuple(vars_of(inv)) for rc, inv in p.inventories.items()},
            dict(p.usages),
            p.traits,
            p.aggregates,
        )
        for u, p in snap.providers.items()
    }


def vars_of(inv):
    return (
        inv.total,
        inv.reserved,
        inv.min_unit,
        inv.max_unit,
        inv.step_size,
        inv.allocation_ratio,
    )


def _same_as_fresh(pdb, snap):
    fresh = snapshot.SnapshotCache(pdb).get()
    assert _view(snap) == _view(fresh)
    assert list(snap.providers) == list(fresh.providers)
    assert snap.rc_sequence == fresh.rc_sequence
    assert snap.traits == fresh.traits
    assert snap.fit == fresh.fit
    assert snap.by_rc == fresh.by_rc
    assert snap.summary_resources == fresh.summary_resources
    assert snap.by_trait == fresh.by_trait
    assert snap.by_agg == fresh.by_agg
    assert snap.tree == fresh.tree


def test_device_reports_do_not_reload_every_provider(pdb):
    """Forty hosts' device reports, each followed by a listing (what the
    agents of an all-in-one cloud did at start): the cache reloads
    everything once, and a provider no write touched stays the very
    same object (its serialised summary is kept)."""
    hosts = 40
    for host in range(1, hosts + 1):
        pdb.write(rp_obj.create, _uuid(host), 'host%d' % host, None)
        _set_inventory(pdb, _uuid(host), {'VCPU': {'total': 8}})
    cache = snapshot.SnapshotCache(pdb)
    first = cache.get()
    untouched = first.providers[_uuid(hosts)]
    for host in range(1, hosts):
        _device(pdb, host, 1)
        _device(pdb, host, 2, rc='CUSTOM_GPU')
        snap = cache.get()
        assert snap.providers[_uuid(host * 100 + 2)].traits == {
            OWNER,
            'CUSTOM_VENDOR_2',
        }
    assert cache.loads['all'] == 1
    assert cache.loads['structure'] == hosts - 1
    assert snap.providers[_uuid(hosts)] is untouched
    _same_as_fresh(pdb, snap)


def test_an_allocation_write_keeps_what_usage_does_not_change(pdb):
    """A claim noted by the cache (or seen as a usage-only change) swaps
    the claimed providers' entries; the trees, trait and aggregate
    indexes and the other providers stay the very same objects (the
    whole snapshot was indexed again after every claim)."""
    for host in (1, 2):
        pdb.write(rp_obj.create, _uuid(host), 'host%d' % host, None)
        _set_inventory(
            pdb,
            _uuid(host),
            {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 64}},
        )
        _device(pdb, host, 1)
    cache = snapshot.SnapshotCache(pdb)
    first = cache.get()
    request = allocation.Request(
        _uuid(7001),
        {_uuid(1): {'VCPU': 2}, _uuid(101): {'CUSTOM_FPGA': 1}},
        'p',
        'u',
        allocation.NO_GENERATION,
        'INSTANCE',
    )
    counters, changes = pdb.write(
        allocation.replace_noting, [request], structure=False, usage=True
    )
    assert cache.note_usage(counters, changes)
    snap = cache.get()
    assert snap.fit[_uuid(1)]['VCPU'][0] == 6
    assert snap.fit[_uuid(101)]['CUSTOM_FPGA'][0] == 0
    assert snap.tree is first.tree and snap.by_trait is first.by_trait
    assert snap.providers[_uuid(2)] is first.providers[_uuid(2)]
    _same_as_fresh(pdb, snap)
    # Another process's claim: a usage-only reload, the same way.
    _claim_elsewhere = allocation.Request(
        _uuid(7002),
        {_uuid(2): {'MEMORY_MB': 16}},
        'p',
        'u',
        allocation.NO_GENERATION,
        'INSTANCE',
    )
    pdb.write(
        allocation.replace, [_claim_elsewhere], structure=False, usage=True
    )
    again = cache.get()
    assert again.by_agg is first.by_agg
    assert again.providers[_uuid(1)] is snap.providers[_uuid(1)]
    assert cache.loads == {'all': 1, 'structure': 0, 'usage': 1}
    _same_as_fresh(pdb, again)


def test_a_noted_delete_of_allocations_needs_no_usage_reload(pdb):
    """DELETE /allocations/{consumer} hands the cache what it left on the
    consumer's providers, as a claim does: the next request reloads no
    usage."""
    for host in (1, 2):
        pdb.write(rp_obj.create, _uuid(host), 'host%d' % host, None)
        _set_inventory(pdb, _uuid(host), {'VCPU': {'total': 8}})
    cache = snapshot.SnapshotCache(pdb)
    cache.get()
    for n, host, vcpu in ((7001, 1, 2), (7002, 1, 3), (7003, 2, 1)):
        request = allocation.Request(
            _uuid(n),
            {_uuid(host): {'VCPU': vcpu}},
            'p',
            'u',
            allocation.NO_GENERATION,
            'INSTANCE',
        )
        assert cache.note_usage(
            *pdb.write(
                allocation.replace_noting,
                [request],
                structure=False,
                usage=True,
            )
        )
    for consumer, free in ((7001, 5), (7002, 8)):
        counters, changes = pdb.write(
            allocation.delete_consumer_noting,
            _uuid(consumer),
            structure=False,
            usage=True,
        )
        assert cache.note_usage(counters, changes)
        snap = cache.get()
        assert snap.fit[_uuid(1)]['VCPU'][0] == free
        assert snap.fit[_uuid(2)]['VCPU'][0] == 7
        _same_as_fresh(pdb, snap)
    assert cache.loads == {'all': 1, 'structure': 0, 'usage': 0}


def test_follows_renames_moves_deletes_and_old_aggregates(pdb):
    cache = snapshot.SnapshotCache(pdb)
    pdb.write(rp_obj.create, _uuid(1), 'one', None)
    pdb.write(rp_obj.create, _uuid(2), 'two', None)
    dev = _device(pdb, 1, 1)
    cache.get()
    pdb.write(rp_obj.update, _uuid(2), 'deux')
    _same_as_fresh(pdb, cache.get())
    pdb.write(rp_obj.update, dev, 'moved', _uuid(2), allow_reparent=True)
    snap = cache.get()
    assert snap.providers[dev].root_uuid == _uuid(2)
    _same_as_fresh(pdb, snap)
    # Before 1.19 an aggregate write keeps the generation.
    _set_aggregates(pdb, _uuid(1), [_uuid(999)], increment=False)
    assert cache.get().providers[_uuid(1)].aggregates == {_uuid(999)}
    pdb.write(rp_obj.delete, dev)
    snap = cache.get()
    assert dev not in snap.providers
    _same_as_fresh(pdb, snap)
    assert cache.loads['all'] == 1


def test_renamed_resource_class_reloads_everything(pdb):
    cache = snapshot.SnapshotCache(pdb)
    pdb.write(rp_obj.create, _uuid(1), 'one', None)
    _device(pdb, 1, 1, rc='CUSTOM_OLD')
    cache.get()
    pdb.write(resource_class.rename, 'CUSTOM_OLD', 'CUSTOM_NEW')
    snap = cache.get()
    assert 'CUSTOM_NEW' in snap.providers[_uuid(101)].inventories
    assert cache.loads['all'] == 2
    _same_as_fresh(pdb, snap)


def test_a_provider_deleted_and_created_again_is_read_again(pdb):
    """A provider deleted and created again under the same uuid, name and
    parent, then written once (generation 1 again), between two listings:
    its row matches the cached one but for the id, which must not be
    the old one's (SQLite gave the newest provider's id again to the
    next one; the cache then kept the deleted provider's inventories)."""
    pdb.write(rp_obj.create, _uuid(1), 'one', None)
    pdb.write(rp_obj.create, _uuid(11), 'child', _uuid(1))
    _set_inventory(pdb, _uuid(11), {'VCPU': {'total': 16}})
    cache = snapshot.SnapshotCache(pdb)
    old_id = pdb.read(rp_obj.get, _uuid(11))['id']
    assert cache.get().providers[_uuid(11)].inventories
    pdb.write(rp_obj.delete, _uuid(11))
    pdb.write(rp_obj.create, _uuid(11), 'child', _uuid(1))
    _set_traits(pdb, _uuid(11), [])
    snap = cache.get()
    assert snap.providers[_uuid(11)].inventories == {}
    _same_as_fresh(pdb, snap)
    assert cache.loads['all'] == 1
    assert pdb.read(rp_obj.get, _uuid(11))['id'] != old_id


ROOTS = [_uuid(n) for n in (1, 2, 3)]
CHILDREN = [_uuid(n) for n in (11, 12, 21, 22)]
RCS = ['VCPU', 'MEMORY_MB', 'CUSTOM_FPGA']
TRAITS = ['HW_CPU_X86_AVX2', 'CUSTOM_A', 'CUSTOM_B']
AGGS = [_uuid(n) for n in (901, 902)]

_write = st.one_of(
    st.tuples(
        st.just('provider'),
        st.sampled_from(ROOTS + CHILDREN),
        st.sampled_from(ROOTS),
    ),
    st.tuples(
        st.just('inventory'),
        st.sampled_from(ROOTS + CHILDREN),
        st.dictionaries(st.sampled_from(RCS), st.integers(1, 16)),
    ),
    st.tuples(
        st.just('traits'),
        st.sampled_from(ROOTS + CHILDREN),
        st.sets(st.sampled_from(TRAITS)),
    ),
    st.tuples(
        st.just('aggregates'),
        st.sampled_from(ROOTS + CHILDREN),
        st.sets(st.sampled_from(AGGS)),
        st.booleans(),
    ),
    st.tuples(st.just('rename'), st.sampled_from(ROOTS + CHILDREN)),
    st.tuples(st.just('delete'), st.sampled_from(ROOTS + CHILDREN)),
    st.tuples(
        st.just('claim'),
        st.sampled_from(ROOTS + CHILDREN),
        st.sampled_from(RCS),
    ),
    st.tuples(st.just('read')),
)


def _apply(pdb, step, counter):
    kind = step[0]
    if kind == 'provider':
        _kind, uuid, root = step
        parent = None if uuid in ROOTS else root
        pdb.write(rp_obj.create, uuid, 'p-%s' % uuid[-3:], parent)
    elif kind == 'inventory':
        pdb.write(resource_class.ensure, 'CUSTOM_FPGA')
        _set_inventory(
            pdb, step[1], {rc: {'total': n} for rc, n in step[2].items()}
        )
    elif kind == 'traits':
        _set_traits(pdb, step[1], sorted(step[2]))
    elif kind == 'aggregates':
        _set_aggregates(pdb, step[1], sorted(step[2]), increment=step[3])
    elif kind == 'rename':
        pdb.write(rp_obj.update, step[1], 'renamed-%d' % next(counter))
    elif kind == 'delete':
        pdb.write(rp_obj.delete, step[1])
    elif kind == 'claim':
        consumer = _uuid(5000 + next(counter))
        pdb.write(
            allocation.replace,
            [
                allocation.Request(
                    consumer,
                    {step[1]: {step[2]: 1}},
                    'p',
                    'u',
                    allocation.NO_GENERATION,
                    'INSTANCE',
                )
            ],
            structure=False,
            usage=True,
        )


def test_followed_snapshot_equals_a_fresh_load(tmp_path):
    """Oracle: any run of structure and allocation writes (some refused:
    a missing parent, a provider in use), with listings in between, leaves
    the followed snapshot equal to a fresh load, and reloads everything
    only once."""
    import itertools

    examples = []

    @settings(max_examples=40, deadline=None)
    @given(st.lists(_write, min_size=1, max_size=20))
    # The newest provider deleted and created again, then written once
    # (failed once in make check-tests: the cache kept its inventories).
    @example(
        [
            ('delete', CHILDREN[1]),
            ('provider', CHILDREN[1], ROOTS[0]),
            ('inventory', CHILDREN[1], {}),
        ]
    )
    def run(steps):
        examples.append(1)
        where = tmp_path / ('e%d' % len(examples))
        where.mkdir()
        with fixtures.fresh_database(where) as url:
            placement_db.sync(url)
            pdb = base.PlacementDB(url)
            try:
                pdb.write(resource_class.sync_standard)
                pdb.write(resource_class.ensure, 'CUSTOM_FPGA')
                for uuid in ROOTS + CHILDREN[:2]:
                    parent = None if uuid in ROOTS else ROOTS[0]
                    pdb.write(rp_obj.create, uuid, 'p-%s' % uuid[-3:], parent)
                    _set_inventory(
                        pdb, uuid, {rc: {'total': 16} for rc in RCS}
                    )
                cache = snapshot.SnapshotCache(pdb)
                cache.get()
                counter = itertools.count()
                for step in steps:
                    try:
                        _apply(pdb, step, counter)
                    except (exception.PlacementException, rp_obj._Clash):
                        pass
                    if step[0] == 'read':
                        _same_as_fresh(pdb, cache.get())
                _same_as_fresh(pdb, cache.get())
                assert cache.loads['all'] == 1
            finally:
                pdb.database.dispose()

    run()
