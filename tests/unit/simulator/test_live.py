"""The simulator's in-place snapshot equals one built afresh."""

import random

import pytest

from nimbus.placement import candidates
from nimbus.simulator import hosts
from nimbus.simulator import placement

QUERIES = [
    {
        'resources': ['DISK_GB:20,MEMORY_MB:4096,VCPU:2'],
        'root_required': ['!COMPUTE_STATUS_DISABLED'],
        'limit': ['5'],
    },
    {
        'resources': ['DISK_GB:160,MEMORY_MB:16384,VCPU:8'],
        'resources_device_profile_0': ['FPGA:1'],
        'resources_device_profile_1': ['FPGA:1'],
        'root_required': ['COMPUTE_ACCELERATORS'],
        'group_policy': ['none'],
    },
    {'resources_device_profile_0': ['PGPU:1'], 'limit': ['3']},
    # unfiltered: the engine uses its memo of providers with room as is
    {'resources': ['VCPU:2,MEMORY_MB:4096']},
    {'resources': ['FPGA:1,VCPU:1']},
]


def _providers(n, devices='devices=FPGA:2+PGPU:1,device_hosts=0.5'):
    spec = hosts.parse_host_spec(
        'vcpus=8,ram=32768,disk=400,reserved_ram=512,' + devices
    )
    _nodes, _services, trees = hosts.build(n, spec, random.Random(1))
    engine = placement.EnginePlacement(
        trees, hosts.resource_classes(spec), placement.options()
    )
    return engine, trees


def _fresh(snap):
    providers = list(snap.providers.values())
    return candidates.Snapshot(providers, snap.rc_sequence, snap.traits)


def _same(a, b):
    assert a.providers == b.providers
    assert a.fit == b.fit
    assert {rc: tuple(rows) for rc, rows in a.by_rc.items()} == b.by_rc
    assert a.summary_resources == b.summary_resources


def test_patched_snapshot_equals_a_fresh_one():
    engine, trees = _providers(12)
    live_snap = engine.live
    rng = random.Random(7)
    providers = [row[0] for tree in trees for row in tree]
    held = []
    opts = placement.options()
    for _step in range(200):
        # answer once so that memo and fragments get filled, then change
        for query in QUERIES:
            candidates.get_allocation_candidates(
                live_snap.snapshot, query, (1, 39), opts
            )
            candidates.get_allocation_candidates_json(
                live_snap.snapshot, query, (1, 39), opts
            )
        if held and rng.random() < 0.4:
            rp, deltas = held.pop(rng.randrange(len(held)))
            live_snap.change(rp, {rc: -n for rc, n in deltas.items()})
        else:
            rp = rng.choice(providers)
            room = live_snap.snapshot.fit[rp]
            # a little, or all that is left: candidates come and go
            deltas = {
                rc: rng.choice((1, room[rc][0]))
                for rc in room
                if room[rc][0] >= 1
            }
            if deltas:
                live_snap.change(rp, deltas)
                held.append((rp, deltas))
        fresh = _fresh(live_snap.snapshot)
        _same(live_snap.snapshot, fresh)
        for query in QUERIES:
            assert candidates.get_allocation_candidates(
                live_snap.snapshot, query, (1, 39), opts
            ) == candidates.get_allocation_candidates(
                fresh, query, (1, 39), opts
            )
            assert candidates.get_allocation_candidates_json(
                live_snap.snapshot, query, (1, 39), opts
            ) == candidates.get_allocation_candidates_json(
                fresh, query, (1, 39), opts
            )
        # the engine's lists of providers with room, patched, equal the
        # ones the fresh snapshot computed
        patched = live_snap.snapshot.memo
        for key, value in fresh.memo.items():
            if key[0] == 'fit' and key in patched:
                assert patched[key] == value, key
    assert held, 'the walk claimed nothing'


def test_claims_check_room_like_placement():
    engine, trees = _providers(2)
    root = trees[0][0][0]
    cap = engine.capacity[root]
    assert cap['MEMORY_MB'] == 32768 - 512
    areq = {'allocations': {root: {'resources': {'VCPU': cap['VCPU']}}}}
    assert engine.claim_resources(None, 'a', areq, 'p', 'u')
    assert not engine.claim_resources(None, 'b', areq, 'p', 'u')
    assert engine.live.free(root, 'VCPU')[0] == 0
    engine.remove_allocations(None, 'a')
    assert engine.live.free(root, 'VCPU')[0] == cap['VCPU']
    assert engine.usage()[root] == {}


@pytest.mark.parametrize('devices', ['', 'devices=FPGA:1,device_hosts=0.5'])
def test_answers_equal_placements_rendered_body(devices):
    """The adapter renders the engine's candidates itself, reusing
    summaries and allocation requests between requests: every answer
    equals the body placement's engine renders afresh, across claims and
    releases (flat hosts, and hosts with device providers)."""
    engine, trees = _providers(12, devices)
    opts = placement.options()
    rng = random.Random(3)
    consumers = []
    for step in range(120):
        for query in QUERIES:
            params = [(k, v) for k, values in query.items() for v in values]
            got = engine.get_allocation_candidates(None, params)
            assert got == candidates.get_allocation_candidates(
                engine.live.snapshot, query, (1, 39), opts
            )
        if consumers and rng.random() < 0.3:
            engine.remove_allocations(
                None, consumers.pop(rng.randrange(len(consumers)))
            )
            continue
        body = engine.get_allocation_candidates(
            None, [('resources', 'VCPU:2,MEMORY_MB:4096'), ('limit', '50')]
        )
        if not body['allocation_requests']:
            continue
        areq = rng.choice(body['allocation_requests'])
        consumer = 'c%d' % step
        if engine.claim_resources(None, consumer, areq, 'p', 'u'):
            consumers.append(consumer)
    assert consumers, 'the walk claimed nothing'
