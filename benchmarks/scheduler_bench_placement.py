"""A real placement for ``scheduler_bench.py --multi-create N``.

Starts Nimbus placement in this process (``nimbus.placement.direct``: the same REST
API and SQLite database, without HTTP) and creates one resource provider per synthetic
host (the host's uuid, its VCPU/MEMORY_MB/DISK_GB inventory with its allocation
ratios and current usage as reserved, so placement's room matches the scheduler's
view). ``client`` is the :class:`nimbus.common.clients.placement.PlacementClient` the
benchmark hands to the scheduler's ``select_destinations`` (GET
/allocation_candidates, PUT /allocations/{consumer}); ``claim``/``unclaim`` are the
same claims as callables for ``FilterScheduler.schedule``.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import tempfile
import time

from nimbus.common import config
from nimbus.common import context
from nimbus.common.clients.placement import PlacementClient
from nimbus.placement import db as placement_db
from nimbus.placement import direct


class RealClaims:
    def __init__(self, host_states, workdir=None, threads=4):
        self.workdir = workdir or tempfile.mkdtemp(prefix='sched-bench-')
        url = 'sqlite:///' + os.path.join(self.workdir, 'placement.sqlite')
        placement_db.sync(url)
        conf = config.build_conf(
            [], overrides={'placement_database': {'connection': url}}
        )
        self._direct = direct.PlacementDirect(conf)
        self.session = self._direct.__enter__()
        self.client = PlacementClient(direct.BASE_URL, session=self.session)
        self.ctxt = context.get_admin_context()
        self.claims = 0
        self.refused = 0
        t = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(self._provider, host_states))
        self.populate_s = time.perf_counter() - t

    def _provider(self, hs):
        s = self.session
        r = s.post(
            '/resource_providers', json={'uuid': hs.uuid, 'name': hs.nodename}
        )
        assert r.status_code in (200, 201), r.text
        inv = {
            'VCPU': (hs.vcpus_total, hs.vcpus_used, hs.cpu_allocation_ratio),
            'MEMORY_MB': (
                hs.memory_mb,
                hs.memory_mb_used,
                hs.ram_allocation_ratio,
            ),
            'DISK_GB': (
                hs.local_gb,
                hs.local_gb_used,
                hs.disk_allocation_ratio,
            ),
        }
        # Current usage as reserved: (total - reserved) * ratio ~ total * ratio - used.
        body = {
            'resource_provider_generation': 0,
            'inventories': {
                rc: {
                    'total': int(total),
                    'reserved': min(
                        int(total), math.ceil(used / ratio) if ratio else 0
                    ),
                    'allocation_ratio': float(ratio),
                }
                for rc, (total, used, ratio) in inv.items()
                if total
            },
        }
        r = s.put(f'/resource_providers/{hs.uuid}/inventories', json=body)
        assert r.status_code == 200, r.text

    def claim(self, host, areq, uuid):
        ok = self.client.claim_resources(
            self.ctxt, uuid, areq, 'bench', 'bench'
        )
        self.claims += 1
        self.refused += 0 if ok else 1
        return ok

    def unclaim(self, host, areq, uuid):
        self.client.remove_allocations(self.ctxt, uuid)

    def close(self):
        self._direct.__exit__(None, None, None)
