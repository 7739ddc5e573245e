"""The host manager reads its source one reload at a time: the periodic
service reload, the full reload and an on-demand one never hold the
databases at once (each would take a connection to every database)."""

import threading
import time

from nimbus.common.config import build_conf
from nimbus.scheduler import testing
from nimbus.scheduler import host_manager
from nimbus.scheduler.host_manager import HostManager


class CountingSource:
    """A HostInfoSource whose reads are slow and count how many overlap."""

    def __init__(self, source):
        self._source = source
        self._guard = threading.Lock()
        self.inside = 0
        self.most = 0

    def __getattr__(self, name):
        read = getattr(self._source, name)

        def counted(*args, **kwargs):
            with self._guard:
                self.inside += 1
                self.most = max(self.most, self.inside)
            try:
                time.sleep(0.01)
                return read(*args, **kwargs)
            finally:
                with self._guard:
                    self.inside -= 1

        return counted


def test_reloads_never_read_the_source_at_once():
    source = CountingSource(testing.make_source(8, seed=3))
    hm = HostManager(build_conf([]), source)
    hm.refresh()
    reloads = [hm.refresh, hm.refresh_services] * 6
    threads = [threading.Thread(target=r) for r in reloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert source.most == 1
    # and every reload still applied: the hosts are all there
    assert len(hm.states_for_host('host-1')) == 1


class ReadCounter:
    """Counts the full reloads (reads of the compute nodes) of a source."""

    def __init__(self, source):
        self._source = source
        self.node_reads = 0

    def compute_nodes(self):
        self.node_reads += 1
        return self._source.compute_nodes()

    def __getattr__(self, name):
        return getattr(self._source, name)


def _registers(source, i, with_node=True):
    """Compute ``host-<i>`` registers its service (and its node)."""
    if with_node:
        source._nodes.append(testing.compute_node(i))
    source._services.append(
        {'host': 'host-%d' % i, 'binary': 'nimbus-compute', 'up': True}
    )


def test_the_service_reload_loads_a_compute_that_registered_since():
    """A compute that registered after the last full load is loaded by the
    periodic service reload, not by the first decision it is a candidate
    of (which would reload everything inside the request)."""
    source = testing.make_source(4, seed=3)
    counted = ReadCounter(source)
    hm = HostManager(build_conf([]), counted)
    hm.refresh()
    hm.refresh_services()
    assert counted.node_reads == 1
    _registers(source, 4)
    hm.refresh_services()
    assert counted.node_reads == 2
    assert hm.host_state(testing.node_uuid(4)) is not None
    hm.refresh_services()
    assert counted.node_reads == 2


def test_a_service_without_its_node_record_reloads_a_few_times():
    source = testing.make_source(4, seed=3)
    counted = ReadCounter(source)
    hm = HostManager(build_conf([]), counted)
    hm.refresh()
    _registers(source, 4, with_node=False)
    for _ in range(6):
        hm.refresh_services()
    # the node may come soon after the service: a few tries, then no more
    tries = host_manager.UNKNOWN_HOST_RELOADS
    assert counted.node_reads == 1 + tries
    assert hm.states_for_host('host-4') == []
    # the services are still applied
    source._services[0] = dict(source._services[0], disabled=True)
    hm.refresh_services()
    assert counted.node_reads == 1 + tries
    assert hm.states_for_host('host-0')[0].service_disabled
    # another compute registering is loaded, the first one's node with it
    source._nodes.append(testing.compute_node(4))
    _registers(source, 5)
    hm.refresh_services()
    assert counted.node_reads == 2 + tries
    assert hm.host_state(testing.node_uuid(4)) is not None
    assert hm.host_state(testing.node_uuid(5)) is not None


def test_a_node_record_after_its_service_is_loaded_by_the_next_try():
    source = testing.make_source(4, seed=3)
    counted = ReadCounter(source)
    hm = HostManager(build_conf([]), counted)
    hm.refresh()
    _registers(source, 4, with_node=False)
    hm.refresh_services()
    source._nodes.append(testing.compute_node(4))
    hm.refresh_services()
    assert hm.host_state(testing.node_uuid(4)) is not None
    assert counted.node_reads == 3
    hm.refresh_services()
    assert counted.node_reads == 3
