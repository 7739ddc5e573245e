"""The scheduler decides the same from placement's compact answer.

Two schedulers over the same hosts, one reading the standard body of GET
/allocation_candidates and one the compact body (``X-Nimbus-Candidates:
compact-1``, read by ``compact_candidates.expand``), get the same
requests in the same order and must choose the same hosts, alternates and
allocation requests, while placement's usage moves with their claims and
computes' reports move the hosts' figures under unchanged summaries.
"""

import random

import pytest

from nimbus.common import context as ctx_mod
from nimbus.common.clients import compact_candidates
from nimbus.scheduler import driver, testing
from nimbus.scheduler.host_manager import HostManager


def compact_of(body):
    """The compact body placement would write for a standard ``body``."""
    requests, flat = [], None
    for areq in body['allocation_requests']:
        allocs = areq['allocations']
        mappings = areq.get('mappings', {})
        if len(allocs) == 1 and len(mappings) == 1:
            ((rp, alloc),) = allocs.items()
            ((suffix, rps),) = mappings.items()
            if rps == [rp]:
                if flat is None:
                    flat = {'resources': alloc['resources'], 'suffix': suffix}
                if flat == {'resources': alloc['resources'], 'suffix': suffix}:
                    requests.append(rp)
                    continue
        requests.append(areq)
    rcs, trait_sets, summaries = {}, {}, {}
    for rp, s in body['provider_summaries'].items():
        row = []
        for rc, v in s['resources'].items():
            row += (rcs.setdefault(rc, len(rcs)), v['capacity'], v['used'])
        j = trait_sets.setdefault(tuple(s['traits']), len(trait_sets))
        summaries[rp] = [
            s['parent_provider_uuid'],
            s['root_provider_uuid'],
            j,
            row,
        ]
    return {
        'compact': 1,
        'flat': flat,
        'allocation_requests': requests,
        'resource_classes': list(rcs),
        'trait_sets': [list(t) for t in trait_sets],
        'provider_summaries': summaries,
    }


class Placement:
    """Candidates for every host with room, usage moved by claims."""

    def __init__(self, hm):
        self.hosts = [
            (h.uuid, h.vcpus_total, h.memory_mb, h.local_gb, h.vcpus_used)
            for h in hm.all_host_states()
        ]
        self.used = {}
        self.traits = {
            u: (['COMPUTE_STATUS_ENABLED'] + (['HW_X'] if i % 3 else []))
            for i, (u, *_r) in enumerate(self.hosts)
        }

    def get_allocation_candidates(self, ctxt, params):
        q = dict(params)
        want = dict(
            (rc, int(n))
            for rc, n in (
                kv.split(':') for kv in q['resources'].split(',') if kv
            )
        )
        areqs, summaries = [], {}
        for u, vcpus, ram, disk, vused in self.hosts:
            cap = {'VCPU': vcpus * 4, 'MEMORY_MB': ram, 'DISK_GB': disk}
            used = self.used.setdefault(
                u, {'VCPU': vused, 'MEMORY_MB': 0, 'DISK_GB': 0}
            )
            if any(cap[rc] - used[rc] < n for rc, n in want.items()):
                continue
            areqs.append(
                {
                    'allocations': {u: {'resources': dict(want)}},
                    'mappings': {'': [u]},
                }
            )
            summaries[u] = {
                'resources': {
                    rc: {'capacity': cap[rc], 'used': used[rc]} for rc in cap
                },
                'traits': list(self.traits[u]),
                'parent_provider_uuid': None,
                'root_provider_uuid': u,
            }
        return {'allocation_requests': areqs, 'provider_summaries': summaries}

    def claim_resources(self, ctxt, consumer, areq, project_id, user_id):
        for rp, alloc in areq['allocations'].items():
            for rc, n in alloc['resources'].items():
                self.used[rp][rc] += n
        return True

    def remove_allocations(self, ctxt, consumer):
        pass


class CompactPlacement(Placement):
    def get_compact_candidates(self, ctxt, params):
        body = self.get_allocation_candidates(ctxt, params)
        return compact_candidates.expand(compact_of(body))


def _scheduler(conf, cls, n, seed):
    hm = HostManager(conf, testing.make_source(n, seed=seed))
    hm.refresh()
    placement = cls(hm)
    return driver.Scheduler(conf, placement, hm), placement


def _view(result):
    return [
        [
            (s.compute_node_uuid, s.allocation_request)
            if s is not None
            else None
            for s in (row or [])
        ]
        for row in result
    ]


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_same_decisions_from_the_compact_answer(conf, seed):
    rng = random.Random(seed)
    plain, _p = _scheduler(conf, Placement, 30, seed)
    brief, _c = _scheduler(conf, CompactPlacement, 30, seed)
    ctxt = ctx_mod.get_admin_context()
    decided = 0
    for step in range(40):
        if step % 4 == 3:
            # a compute's report moves a host's figures under the summaries
            cn = testing.compute_node(step % 30, random.Random(step))
            plain.host_manager.update_compute_node(dict(cn))
            brief.host_manager.update_compute_node(dict(cn))
        kw = dict(
            vcpus=rng.choice([1, 2, 4]),
            memory_mb=rng.choice([512, 2048]),
            root_gb=rng.choice([1, 10]),
            num=rng.choice([1, 1, 1, 3]),
        )
        a, b = testing.spec(**kw), testing.spec(**kw)
        b.instance_uuids = list(a.instance_uuids)
        try:
            want = _view(plain.select_destinations(ctxt, a))
        except Exception as exc:  # noqa: BLE001 - the same must happen
            with pytest.raises(type(exc)):
                brief.select_destinations(ctxt, b)
            continue
        assert _view(brief.select_destinations(ctxt, b)) == want
        decided += 1
    assert decided > 10


def test_requests_by_root_are_the_standard_ones():
    body = {
        'allocation_requests': [
            {
                'allocations': {'a': {'resources': {'VCPU': 1}}},
                'mappings': {'': ['a']},
            },
            {
                'allocations': {
                    'b': {'resources': {'VCPU': 1}},
                    'b-gpu': {'resources': {'VGPU': 1}},
                },
                'mappings': {'': ['b'], '1': ['b-gpu']},
            },
            {
                'allocations': {'b': {'resources': {'VCPU': 1}}},
                'mappings': {'': ['b']},
            },
            {
                'allocations': {'c': {'resources': {'VCPU': 2}}},
                'mappings': {'': ['c']},
            },
        ],
        'provider_summaries': {
            rp: {
                'resources': {'VCPU': {'capacity': 4, 'used': 0}},
                'traits': [],
                'parent_provider_uuid': None if rp != 'b-gpu' else 'b',
                'root_provider_uuid': 'b' if rp == 'b-gpu' else rp,
            }
            for rp in ('a', 'b', 'b-gpu', 'c')
        },
    }
    order, want = driver.candidates_by_root(body)
    lazy = compact_candidates.expand(compact_of(body))
    got_order, got = driver.candidates_by_root(lazy)
    assert got_order == order == ['a', 'b', 'c']
    assert list(got) == list(want)
    assert 'a' in got and 'x' not in got and len(got) == 3
    assert got.get('x') is None
    assert {r: got.get(r) for r in order} == want
    assert dict(got.items()) == want
    assert got['a'] is got.get('a')
    assert (
        dict(lazy['provider_summaries'].items())
        == (body['provider_summaries'])
    )
