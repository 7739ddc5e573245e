"""The scheduler redoes only what placement's next compact answer changed
(answer_memo.py), and decides as if it had read the whole answer."""

import random

import pytest

from nimbus.common import context as ctx_mod
from nimbus.common.clients import compact_candidates
from nimbus.scheduler import driver, testing
from nimbus.scheduler.host_manager import HostManager
from nimbus.scheduler.host_state import HostState
from tests.unit.scheduler.test_compact_candidates import (
    CompactPlacement,
    Placement,
    _view,
    compact_of,
)


def _answer(rows, traits=(('T',),), rcs=('VCPU',)):
    return compact_candidates.Summaries(
        {u: list(r) for u, r in rows.items()}, rcs, [list(t) for t in traits]
    )


ROWS = {
    'a': [None, 'a', 0, [0, 4, 0]],
    'b': [None, 'b', 0, [0, 8, 1]],
    'c': [None, 'c', 0, [0, 8, 2]],
}


def test_changed_since_names_the_changed_rows():
    before = _answer(ROWS)
    assert _answer(ROWS).changed_since(before) == ([], False)
    moved = dict(ROWS, b=[None, 'b', 0, [0, 8, 3]])
    assert _answer(moved).changed_since(before) == (['b'], False)
    rooted = dict(ROWS, c=['a', 'a', 0, [0, 8, 2]])
    assert _answer(rooted).changed_since(before) == (['c'], True)


def test_changed_since_gives_up_on_other_providers_order_or_tables():
    before = _answer(ROWS)
    assert _answer(ROWS).changed_since(None) is None
    assert _answer(dict(reversed(ROWS.items()))).changed_since(before) is None
    assert _answer({'a': ROWS['a']}).changed_since(before) is None
    assert _answer(ROWS, traits=(('U',),)).changed_since(before) is None
    assert _answer(ROWS, rcs=('PCPU',)).changed_since(before) is None


def test_changed_since_keeps_no_chain_of_answers():
    first = _answer(ROWS)
    second = _answer(ROWS)
    second.changed_since(first)
    third = _answer(ROWS)
    third.changed_since(second)
    assert second._diff is None  # it no longer holds ``first``


def _fixture(conf, n=12):
    hm = HostManager(conf, testing.make_source(n, seed=5))
    hm.refresh()
    placement = CompactPlacement(hm)
    return hm, placement


def _answer_for(placement, want='VCPU:1,MEMORY_MB:512,DISK_GB:1'):
    return placement.get_compact_candidates(None, [('resources', want)])


def _counting(monkeypatch):
    calls = []
    original = HostState.update_from_compact

    def counted(self, summaries, rp):
        calls.append(rp)
        return original(self, summaries, rp)

    monkeypatch.setattr(HostState, 'update_from_compact', counted)
    return calls


def test_an_unchanged_answer_refreshes_only_changed_hosts(conf, monkeypatch):
    hm, placement = _fixture(conf)
    sched = driver.Scheduler(conf, placement, hm)
    calls = _counting(monkeypatch)
    body = _answer_for(placement)
    _order, areqs = sched._requests.by_root(body, driver.candidates_by_root)
    hosts = hm.host_states_for_candidates(body['provider_summaries'], areqs)
    assert len(calls) == len(hosts) == 12
    # one claim moves one host's usage in placement
    claimed = hosts[3]
    placement.used[claimed.uuid]['VCPU'] += 1
    del calls[:]
    body = _answer_for(placement)
    _order, again = sched._requests.by_root(body, driver.candidates_by_root)
    assert list(again) == list(areqs)
    assert again[claimed.uuid] == areqs[claimed.uuid]
    hosts2 = hm.host_states_for_candidates(body['provider_summaries'], again)
    assert calls == [claimed.uuid]
    assert list(hosts2) == list(hosts)
    assert list(hosts2.slots) == list(hosts.slots)
    assert hosts2.drawn_from(again)
    assert claimed.vcpus_used == placement.used[claimed.uuid]['VCPU']


def test_a_touched_host_gets_placements_figures_again(conf):
    hm, placement = _fixture(conf)
    body = _answer_for(placement)
    order, areqs = driver.candidates_by_root(body)
    hosts = hm.host_states_for_candidates(body['provider_summaries'], areqs)
    host = hosts[5]
    want = host.vcpus_used
    # a compute's report moves the host's figures; placement's do not move
    cn = testing.compute_node(5, random.Random(5))
    cn['vcpus_used'] = want + 7
    hm.update_compute_node(cn)
    assert host.vcpus_used == want + 7
    body = _answer_for(placement)
    order, areqs = driver.candidates_by_root(body)
    hm.host_states_for_candidates(body['provider_summaries'], areqs)
    assert host.vcpus_used == want
    assert hm.table.cols['free_vcpus'][host._slot] == host.free_vcpus


def test_a_new_host_takes_the_full_pass(conf):
    hm, placement = _fixture(conf)
    body = _answer_for(placement)
    _o, areqs = driver.candidates_by_root(body)
    first = hm.host_states_for_candidates(body['provider_summaries'], areqs)
    hm.remove_compute_node(first[0].uuid)
    body = _answer_for(placement)
    _o, areqs = driver.candidates_by_root(body)
    # placement still lists the removed host: the cells reload, and it is
    # skipped as the full pass does
    second = hm.host_states_for_candidates(body['provider_summaries'], areqs)
    assert [h.uuid for h in second] == [h.uuid for h in first]


class _AllHosts(Placement):
    """Every host, in the same order, whether or not it still fits:
    successive answers differ by the claimed hosts' rows only."""

    def get_allocation_candidates(self, ctxt, params):
        q = dict(params)
        want = dict(
            (rc, int(n))
            for rc, n in (kv.split(':') for kv in q['resources'].split(','))
        )
        areqs, summaries = [], {}
        for u, vcpus, ram, disk, vused in self.hosts:
            cap = {'VCPU': vcpus * 4, 'MEMORY_MB': ram, 'DISK_GB': disk}
            used = self.used.setdefault(
                u, {'VCPU': vused, 'MEMORY_MB': 0, 'DISK_GB': 0}
            )
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


class _AllHostsCompact(_AllHosts):
    def get_compact_candidates(self, ctxt, params):
        body = self.get_allocation_candidates(ctxt, params)
        return compact_candidates.expand(compact_of(body))


@pytest.mark.parametrize('seed', [4, 5, 6])
def test_same_decisions_as_the_standard_body(conf, seed):
    """Events, dry runs and capacity queries between the decisions; the
    compact scheduler mostly reuses its last answer's work."""
    rng = random.Random(seed)
    scheds = []
    for cls in (_AllHosts, _AllHostsCompact):
        hm = HostManager(conf, testing.make_source(20, seed=seed))
        hm.refresh()
        scheds.append(driver.Scheduler(conf, cls(hm), hm))
    plain, brief = scheds
    ctxt = ctx_mod.get_admin_context()
    decided = 0
    for step in range(60):
        kind = rng.random()
        if kind < 0.15:
            cn = testing.compute_node(
                rng.randrange(20), random.Random(step), cell_uuid='cell-1'
            )
            for s in scheds:
                s.host_manager.update_compute_node(dict(cn))
            continue
        kw = dict(
            vcpus=rng.choice([1, 2]),
            memory_mb=512,
            root_gb=1,
            num=rng.choice([1, 1, 2]),
        )
        if kind < 0.25:
            a, b = testing.spec(**kw), testing.spec(**kw)
            want = plain.dry_run(ctxt, a)
            assert brief.dry_run(ctxt, b)['ranked'] == want['ranked']
            assert plain.capacity(ctxt, a) == brief.capacity(ctxt, b)
            continue
        a, b = testing.spec(**kw), testing.spec(**kw)
        a.instance_uuids = [f'{step}-{i}' for i in range(kw['num'])]
        b.instance_uuids = list(a.instance_uuids)
        try:
            want = _view(plain.select_destinations(ctxt, a))
        except Exception as exc:  # noqa: BLE001 - the same must happen
            with pytest.raises(type(exc)):
                brief.select_destinations(ctxt, b)
            continue
        assert _view(brief.select_destinations(ctxt, b)) == want
        decided += 1
    assert decided > 20
