"""8 processes race on the same 10 providers through the API: no overcommit.

Each process builds its own placement app on the shared database
(``PlacementDirect``, the full WSGI stack) before a barrier, so all eight
start at once. Then each, in its own random order, mixes:

* new claims of 1 VCPU (``consumer_generation: null``) on every provider,
  many more than fit;
* updates of shared consumers (one per provider, created up front, holding
  1 VCPU each; those of three providers) guarded by the consumer generation
  it just read: the allocation stays the same, the generation moves, so
  concurrent updaters of one consumer collide;
* inventory PUTs guarded by the provider generation it just read (same
  capacity, another ``max_unit``): every claim on the provider moves that
  generation, so these collide with the claims.

Afterwards no provider is over capacity, every provider is exactly full
(demand is far above capacity), the successful claims per provider add up
to its usage, every refusal was a 409 with a Placement error code, and
generation conflicts did happen (the run proves contention).
"""

import collections
import multiprocessing
import random
import uuid

import pytest

from nimbus.common import db as common_db
from nimbus.placement import direct
from tests.functional.placement import fixtures

PROCESSES = 8
PROVIDERS = ['90000000-0000-0000-0000-%012d' % i for i in range(10)]
SHARED = {
    rp: '91000000-0000-0000-0000-%012d' % i for i, rp in enumerate(PROVIDERS)
}
CAPACITY = 6
ROUNDS = 3  # each process tries to claim on every provider 3 times
UPDATES = 12  # shared-consumer updates per process
INVENTORY_PUTS = 8  # inventory PUTs per process
CONSUMER = {'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE'}


def _code(resp):
    try:
        return resp.json()['errors'][0]['code']
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _claim(client, rp):
    resp = client.put(
        '/allocations/%s' % uuid.uuid4(),
        json=dict(
            CONSUMER,
            allocations={rp: {'resources': {'VCPU': 1}}},
            consumer_generation=None,
        ),
    )
    return 'claim', rp, resp.status_code, _code(resp)


def _update_shared(client, rp):
    consumer = SHARED[rp]
    current = client.get('/allocations/%s' % consumer).json()
    resp = client.put(
        '/allocations/%s' % consumer,
        json=dict(
            CONSUMER,
            allocations={rp: {'resources': {'VCPU': 1}}},
            consumer_generation=current['consumer_generation'],
        ),
    )
    return 'update', rp, resp.status_code, _code(resp)


def _put_inventory(client, rp, rng):
    gen = client.get('/resource_providers/%s/inventories' % rp).json()[
        'resource_provider_generation'
    ]
    resp = client.put(
        '/resource_providers/%s/inventories' % rp,
        json={
            'resource_provider_generation': gen,
            'inventories': {
                'VCPU': {
                    'total': CAPACITY,
                    'max_unit': rng.choice((CAPACITY, 4)),
                }
            },
        },
    )
    return 'inventory', rp, resp.status_code, _code(resp)


def _racer(url, seed, barrier, queue):
    conf = fixtures.make_conf(
        url, placement_database={'sync_on_startup': False}
    )
    rng = random.Random(seed)
    ops = [('claim', rp) for rp in PROVIDERS * ROUNDS]
    # the shared consumers of three hot providers: updaters collide there
    ops += [('update', rng.choice(PROVIDERS[:3])) for _ in range(UPDATES)]
    ops += [
        ('inventory', rng.choice(PROVIDERS)) for _ in range(INVENTORY_PUTS)
    ]
    rng.shuffle(ops)
    results = []
    try:
        with direct.PlacementDirect(conf, latest_microversion=True) as c:
            c.get('/resource_providers')  # app and pool warmed up
            barrier.wait(120)
            for kind, rp in ops:
                if kind == 'claim':
                    results.append(_claim(c, rp))
                elif kind == 'update':
                    results.append(_update_shared(c, rp))
                else:
                    results.append(_put_inventory(c, rp, rng))
    finally:
        common_db.dispose_all()
        queue.put(results)


def _setup(c):
    for i, rp in enumerate(PROVIDERS):
        assert (
            c.post(
                '/resource_providers', json={'uuid': rp, 'name': 'c%d' % i}
            ).status_code
            == 200
        )
        assert (
            c.put(
                '/resource_providers/%s/inventories' % rp,
                json={
                    'resource_provider_generation': 0,
                    'inventories': {'VCPU': {'total': CAPACITY}},
                },
            ).status_code
            == 200
        )
        assert (
            c.put(
                '/allocations/%s' % SHARED[rp],
                json=dict(
                    CONSUMER,
                    allocations={rp: {'resources': {'VCPU': 1}}},
                    consumer_generation=None,
                ),
            ).status_code
            == 204
        )


@pytest.mark.slow
def test_racing_claims_updates_and_inventory_never_overcommit(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:
        conf = fixtures.make_conf(url)
        with direct.PlacementDirect(conf, latest_microversion=True) as c:
            _setup(c)
            ctx = multiprocessing.get_context('spawn')
            barrier = ctx.Barrier(PROCESSES)
            queue = ctx.Queue()
            procs = [
                ctx.Process(target=_racer, args=(url, seed, barrier, queue))
                for seed in range(PROCESSES)
            ]
            for p in procs:
                p.start()
            results = [r for _ in procs for r in queue.get(timeout=600)]
            for p in procs:
                p.join(60)
                assert p.exitcode == 0
            usages = {
                rp: c.get('/resource_providers/%s/usages' % rp).json()[
                    'usages'
                ]['VCPU']
                for rp in PROVIDERS
            }
            inventories = {
                rp: c.get(
                    '/resource_providers/%s/inventories/VCPU' % rp
                ).json()
                for rp in PROVIDERS
            }
        common_db.get_database(url).dispose()

    expected_ops = PROCESSES * (
        len(PROVIDERS) * ROUNDS + UPDATES + INVENTORY_PUTS
    )
    assert len(results) == expected_ops, 'a process did not finish its run'
    outcomes = collections.Counter(
        (kind, status, code) for kind, _rp, status, code in results
    )
    allowed = {'claim': 204, 'update': 204, 'inventory': 200}
    for (kind, status, code), _n in outcomes.items():
        if status != allowed[kind]:
            assert status == 409, (kind, status, code)
            assert code and code.startswith('placement.'), (kind, code)
    # every claim that got through is in the usages, and no more
    granted = collections.Counter(
        rp
        for kind, rp, status, _c in results
        if kind == 'claim' and status == 204
    )
    for rp in PROVIDERS:
        assert inventories[rp]['total'] == CAPACITY
        assert usages[rp] <= CAPACITY
        assert usages[rp] == granted[rp] + 1  # + the shared consumer
        # demand was far above capacity: every provider filled up exactly
        assert usages[rp] == CAPACITY
    assert sum(granted.values()) == len(PROVIDERS) * (CAPACITY - 1)
    # generation conflicts really happened: the processes did race
    conflicts = sum(
        n
        for (kind, status, code), n in outcomes.items()
        if kind in ('update', 'inventory')
        and status == 409
        and code == 'placement.concurrent_update'
    )
    assert conflicts > 0, outcomes
    # and so did refusals for lack of capacity
    assert outcomes[('claim', 409, _capacity_code(outcomes))] > 0


def _capacity_code(outcomes):
    codes = {
        code
        for (kind, status, code) in outcomes
        if kind == 'claim' and status == 409
    }
    assert len(codes) == 1, codes
    return codes.pop()
