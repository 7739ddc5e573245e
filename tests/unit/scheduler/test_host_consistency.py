"""Host states stay still for the length of a decision: events that arrive during a
multi-create are queued (their senders never wait) and applied, in order, afterwards."""

import threading
import time

from nimbus.scheduler import driver, testing
from nimbus.scheduler.host_manager import HostManager


class SlowPlacement:
    """Candidates for every host; each claim checks that the host states only changed
    by this decision's own consumption, and yields so the event thread runs."""

    def __init__(self, hm, spec, in_claim):
        self.hm = hm
        self.spec = spec
        self.in_claim = in_claim
        self.claimed = []
        self.violations = []
        self.baseline = None

    def get_allocation_candidates(self, ctxt, params):
        self.baseline = {
            hs.uuid: (set(hs.instances), hs.vcpus_used)
            for hs in self.hm.all_host_states()
        }
        return testing.candidates_for(self.hm.all_host_states(), self.spec)

    def claim_resources(self, ctxt, consumer, areq, project_id, user_id):
        # What the host states must look like: the baseline plus this decision's own
        # consumption (one instance, one vCPU per earlier claim), nothing else.
        placed = {}
        for uuid, rp in self.claimed:
            placed.setdefault(rp, []).append(uuid)
        for hs in self.hm.all_host_states():
            instances, vcpus = self.baseline[hs.uuid]
            want = instances | set(placed.get(hs.uuid, []))
            if set(hs.instances) != want or hs.vcpus_used != vcpus + len(
                placed.get(hs.uuid, [])
            ):
                self.violations.append(hs.host)
        self.in_claim.set()
        time.sleep(0.005)  # give the event thread time to hit the lock
        self.claimed.append((consumer, next(iter(areq['allocations']))))
        return True

    def remove_allocations(self, ctxt, consumer):
        pass


def test_events_during_multi_create_are_deferred(conf):
    src = testing.make_source(12, seed=4)
    hm = HostManager(conf, src)
    hm.refresh()
    spec = testing.spec(vcpus=1, memory_mb=512, root_gb=1, num=15)
    in_claim = threading.Event()
    placement = SlowPlacement(hm, spec, in_claim)
    sched = driver.Scheduler(conf, placement, hm)
    stop = threading.Event()
    sent, errors, during = [], [], []

    def events():
        n = 0
        nodes = src.compute_nodes()
        while not stop.is_set():
            host = f'host-{n % 12}'
            try:
                hm.update_instance_info(host, [{'uuid': f'ev-{n}'}])
                hm.delete_instance_info(host, f'ev-{n - 3}')
                hm.update_compute_node(dict(nodes[n % 12], vcpus_used=n % 7))
                hm.sync_instance_info(host, [])
                hm.update_service(
                    {'host': host, 'disabled': False, 'up': True}
                )
                hm.update_aggregates(
                    [
                        {
                            'uuid': 'a',
                            'name': 'a',
                            'hosts': [host],
                            'metadata': {'k': str(n)},
                        }
                    ]
                )
            except Exception as exc:  # the test fails on any
                errors.append(exc)
            sent.append(n)
            if in_claim.is_set() and len(placement.claimed) < len(
                spec.instance_uuids
            ):
                during.append(n)
            n += 1
            time.sleep(0.0005)

    t = threading.Thread(target=events)
    t.start()
    try:
        result = sched.select_destinations(None, spec)
    finally:
        stop.set()
        t.join()
    assert errors == []
    assert placement.violations == []
    assert len(result) == 15 and all(result)
    assert [u for u, _rp in placement.claimed] == spec.instance_uuids
    # The event thread kept going while the decision held the host states.
    assert len(during) > 5
    # Afterwards every queued event was applied: the last one is visible.
    assert hm.pending_events == 0
    last = sent[-1]
    host = hm.states_for_host(f'host-{last % 12}')[0]
    assert host.aggregate_metadata['k'] == {str(last)}
    assert (
        host.instances == {}
    )  # sync_instance_info([]) came last for that host


def test_event_queued_behind_a_decision_then_applied_in_order(conf):
    hm = HostManager(conf, testing.make_source(2, seed=1))
    hm.refresh()
    hs = hm.states_for_host('host-0')[0]
    done = threading.Event()
    with hm.decision():

        def send():
            hm.update_instance_info('host-0', [{'uuid': 'a'}])
            hm.update_instance_info('host-0', [{'uuid': 'b'}])
            hm.delete_instance_info('host-0', 'a')
            done.set()

        threading.Thread(target=send).start()
        assert done.wait(5)  # the sender did not wait for the decision
        assert hs.instances == {} and hm.pending_events == 3
        # a reload inside the decision (unknown provider) must not drain them either
        hm.refresh()
        assert hm.pending_events == 3
    assert hm.pending_events == 0
    assert set(hs.instances) == {'b'}


def test_refresh_waits_for_decision(conf):
    """A periodic full reload does not overwrite what a decision consumed midway."""
    hm = HostManager(conf, testing.make_source(1, seed=1))
    hm.refresh()
    hs = hm.states_for_host('host-0')[0]
    started = threading.Event()
    finished = threading.Event()

    def reload():
        started.set()
        hm.refresh()
        finished.set()

    with hm.decision():
        before = hs.vcpus_used
        hs.vcpus_used += 3  # consumed by the decision
        t = threading.Thread(target=reload)
        t.start()
        started.wait(5)
        assert not finished.wait(0.05)
        assert hs.vcpus_used == before + 3
    t.join(5)
    assert finished.is_set()
    assert hs.vcpus_used == before  # the reload applied after the decision
