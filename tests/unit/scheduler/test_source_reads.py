"""The host manager reads its source one reload at a time: the periodic
service reload, the full reload and an on-demand one never hold the
databases at once (each would take a connection to every database)."""

import threading
import time

from nimbus.common.config import build_conf
from nimbus.scheduler import testing
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
