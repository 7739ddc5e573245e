"""Three schedulers with their own host-state caches, 100 concurrent requests, 20 hosts:
placement claims (here an in-memory arbiter) keep every host within capacity, and every
request either lands or fails with a reason."""

import threading

from nimbus.scheduler import driver, exception, testing
from nimbus.scheduler.host_manager import HostManager


class SharedPlacement:
    def __init__(self, capacity):
        self.capacity = capacity
        self.claims = testing.InMemoryClaims(capacity)

    def get_allocation_candidates(self, ctxt, params):
        res = dict(
            kv.split(':') for kv in dict(params)['resources'].split(',')
        )
        res = {k: int(v) for k, v in res.items()}
        with self.claims.lock:
            areqs, summaries = [], {}
            for rp, cap in self.capacity.items():
                used = self.claims.used.get(rp, {})
                if all(
                    used.get(rc, 0) + amt <= cap.get(rc, 0)
                    for rc, amt in res.items()
                ):
                    areqs.append(
                        {
                            'allocations': {rp: {'resources': dict(res)}},
                            'mappings': {'': [rp]},
                        }
                    )
                    summaries[rp] = {
                        'resources': {
                            rc: {'capacity': cap[rc], 'used': used.get(rc, 0)}
                            for rc in cap
                        }
                    }
        return {'allocation_requests': areqs, 'provider_summaries': summaries}

    def claim_resources(
        self,
        ctxt,
        consumer,
        areq,
        project_id,
        user_id,
        consumer_generation=None,
    ):
        return self.claims.claim(
            type('H', (), {'host': consumer})(), areq, consumer
        )

    def remove_allocations(self, ctxt, consumer):
        with self.claims.lock:
            for key in [k for k in self.claims.claims if k[0] == consumer]:
                areq = self.claims.claims[key]
                self.claims._unclaim(
                    type('H', (), {'host': key[1]})(), areq, consumer
                )


def test_three_schedulers_never_overcommit(conf):
    src = testing.make_source(20, seed=5)
    nodes = src.compute_nodes()
    capacity = {
        cn['uuid']: {
            'VCPU': cn['vcpus'] * cn['cpu_allocation_ratio']
            - cn['vcpus_used'],
            'MEMORY_MB': cn['memory_mb'] - cn['memory_mb_used'],
            'DISK_GB': cn['local_gb'] - cn['local_gb_used'],
        }
        for cn in nodes
    }
    for cap in capacity.values():  # start empty in placement's books
        for rc in cap:
            cap[rc] = int(cap[rc])
    placement = SharedPlacement(capacity)
    scheds = []
    for _ in range(3):
        hm = HostManager(conf, src)
        hm.refresh()
        scheds.append(driver.Scheduler(conf, placement, hm))
    outcomes = []
    lock = threading.Lock()

    def run(k):
        spec = testing.spec(vcpus=8, memory_mb=16384, root_gb=100, num=1)
        spec.instance_uuids = [f'inst-{k}']
        try:
            res = scheds[k % 3].select_destinations(None, spec)
            outcome = ('ok', res[0][0].service_host)
        except exception.NoValidHost as exc:
            outcome = ('fail', exc.reason)
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outcomes) == 100
    for rp, used in placement.claims.used.items():
        for rc, amount in used.items():
            assert amount <= capacity[rp][rc], (rp, rc)
    oks = [o for o in outcomes if o[0] == 'ok']
    fails = [o for o in outcomes if o[0] == 'fail']
    assert oks and len(placement.claims.claims) == len(oks)
    assert all(o[1].startswith('No valid host') for o in fails)
