"""Hosts refused as down on a stale view of the service records: the
scheduler reads the records again (unless it read them less than a second
ago) and tries once more before answering NoValidHost. After a broker
restart every compute looks down until its next heartbeat lands and the
view is read again; without this, every boot of that window failed (the
RabbitMQ restart fault row: 41 of 200)."""

import pytest

from nimbus.common import context as ctx_mod
from nimbus.common.clients import placement as pc
from nimbus.scheduler import driver, exception, testing
from nimbus.scheduler.host_manager import HostManager


class Candidates:
    """Placement: every host fits; claims always hold."""

    def __init__(self, hm, spec):
        self.hm = hm
        self.spec = spec
        self.queries = 0

    def get_allocation_candidates(self, ctxt, params):
        self.queries += 1
        return testing.candidates_for(self.hm.all_host_states(), self.spec)

    def claim(self, ctxt, consumer, areq, project_id, user_id):
        return pc.ClaimOutcome(pc.CLAIMED)

    def remove_allocations(self, ctxt, consumer):
        pass


class CountingSource:
    """The in-memory source, counting reads of the service records."""

    def __init__(self, source):
        self.source = source
        self.service_reads = 0

    def services(self):
        self.service_reads += 1
        return self.source.services()

    def __getattr__(self, name):
        return getattr(self.source, name)


def _cloud(conf, hosts=3):
    source = CountingSource(testing.make_source(hosts, seed=1))
    hm = HostManager(conf, source)
    hm.refresh()
    spec = testing.spec(vcpus=1, memory_mb=512)
    placement = Candidates(hm, spec)
    return source, hm, spec, driver.Scheduler(conf, placement, hm)


def _all_down(source, up):
    for svc in source.source._services:
        svc['up'] = up


def _pretend_read_long_ago(hm):
    hm.services_read_at -= 60


def test_hosts_down_on_a_stale_view_are_read_again(conf):
    source, hm, spec, sched = _cloud(conf)
    _all_down(source, False)
    hm.refresh_services()  # the view: every compute down (broker gone)
    _all_down(source, True)  # heartbeats landed since
    _pretend_read_long_ago(hm)
    reads = source.service_reads

    out = sched.select_destinations(ctx_mod.get_admin_context(), spec)

    assert out[0][0].service_host.startswith('host-')
    assert source.service_reads == reads + 1


def test_a_fresh_view_of_down_hosts_is_not_read_again(conf):
    source, hm, spec, sched = _cloud(conf)
    _all_down(source, False)
    hm.refresh_services()  # just read: they really are down
    reads = source.service_reads

    with pytest.raises(exception.NoValidHost):
        sched.select_destinations(ctx_mod.get_admin_context(), spec)
    assert source.service_reads == reads
    assert sched.placement.queries == 1


def test_hosts_still_down_after_the_read_fail_once(conf):
    source, hm, spec, sched = _cloud(conf)
    _all_down(source, False)
    hm.refresh_services()
    _pretend_read_long_ago(hm)
    reads = source.service_reads

    with pytest.raises(exception.NoValidHost) as raised:
        sched.select_destinations(ctx_mod.get_admin_context(), spec)
    assert 'compute service is down' in str(raised.value)
    assert source.service_reads == reads + 1  # one read, one retry
    assert sched.placement.queries == 2


def test_other_refusals_do_not_read_the_services(conf):
    source, hm, spec, sched = _cloud(conf)
    _pretend_read_long_ago(hm)
    reads = source.service_reads
    big = testing.spec(vcpus=10_000, memory_mb=512)
    sched.placement.spec = big

    with pytest.raises(exception.NoValidHost):
        sched.select_destinations(ctx_mod.get_admin_context(), big)
    assert source.service_reads == reads
