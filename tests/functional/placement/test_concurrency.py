"""8 processes claim on the same 10 providers through the API: never overcommit.

Each process builds its own placement app on the shared database
(``PlacementDirect``, the full WSGI stack) and races PUT /allocations with
``consumer_generation: null``; afterwards no provider's usage exceeds its
capacity and the successful claims add up exactly to the usages.
"""

import multiprocessing
import random
import uuid

from nimbus.common import db as common_db
from nimbus.placement import direct
from tests.functional.placement import fixtures

PROVIDERS = ['90000000-0000-0000-0000-%012d' % i for i in range(10)]
CAPACITY = 6
CLAIMS_PER_PROCESS = 15


def _claimer(url, seed, queue):
    conf = fixtures.make_conf(url, placement_database={
        'sync_on_startup': False})
    rng = random.Random(seed)
    ok = []
    with direct.PlacementDirect(conf, latest_microversion=True) as client:
        for _ in range(CLAIMS_PER_PROCESS):
            rp = rng.choice(PROVIDERS)
            amount = rng.choice((1, 2))
            consumer = str(uuid.uuid4())
            resp = client.put('/allocations/%s' % consumer, json={
                'allocations': {rp: {'resources': {'VCPU': amount}}},
                'project_id': 'p', 'user_id': 'u',
                'consumer_generation': None, 'consumer_type': 'INSTANCE'})
            assert resp.status_code in (204, 409), resp.text
            if resp.status_code == 204:
                ok.append((rp, amount))
    common_db.dispose_all()
    queue.put(ok)


def test_no_overcommit(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:
        conf = fixtures.make_conf(url)
        with direct.PlacementDirect(conf, latest_microversion=True) as c:
            for i, rp in enumerate(PROVIDERS):
                assert c.post('/resource_providers', json={
                    'uuid': rp, 'name': 'c%d' % i}).status_code == 200
                assert c.put('/resource_providers/%s/inventories' % rp, json={
                    'resource_provider_generation': 0,
                    'inventories': {'VCPU': {'total': CAPACITY}}}
                ).status_code == 200
            ctx = multiprocessing.get_context('spawn')
            queue = ctx.Queue()
            procs = [ctx.Process(target=_claimer, args=(url, seed, queue))
                     for seed in range(8)]
            for p in procs:
                p.start()
            results = [queue.get(timeout=120) for _ in procs]
            for p in procs:
                p.join(30)
                assert p.exitcode == 0
            claimed = {}
            for ok in results:
                for rp, amount in ok:
                    claimed[rp] = claimed.get(rp, 0) + amount
            for rp in PROVIDERS:
                used = c.get('/resource_providers/%s/usages' % rp).json()[
                    'usages']['VCPU']
                assert used <= CAPACITY
                assert used == claimed.get(rp, 0)
            assert sum(claimed.values()) > 0
        common_db.get_database(url).dispose()
