"""DecisionHub (one bus listener fanned out to pages, bounded queues, slow
pages dropped, a cap on open streams) and the snapshot cache."""

import threading

import pytest

from nimbus.api.dashboard import snapshot
from nimbus.api.dashboard import stream
from nimbus.api.handlers import dashboard as handler


class Listener:
    """Stands in for the bus listener: records its start and stop."""

    def __init__(self, callback):
        self.callback = callback
        self.stopped = False

    def stop(self):
        self.stopped = True

    def wait(self):
        pass


@pytest.fixture
def hub():
    started = []

    def listen(callback):
        started.append(Listener(callback))
        return started[-1]

    hub = stream.DecisionHub(listen=listen, queue_size=2, max_streams=3)
    hub.started = started
    return hub


def test_one_listener_serves_every_page(hub):
    pages = [hub.subscribe() for _ in range(3)]
    assert len(hub.started) == 1
    hub.started[0].callback({'request_id': 'req-1'})
    assert [p.get(timeout=1) for p in pages] == [{'request_id': 'req-1'}] * 3
    assert hub.latest() == [{'request_id': 'req-1'}]


def test_a_page_that_lags_is_dropped_and_the_others_keep_going(hub):
    slow, quick = hub.subscribe(), hub.subscribe()
    for n in range(3):
        hub.publish({'n': n})
        assert quick.get(timeout=1) == {'n': n}
    assert slow.dropped.is_set()
    assert not quick.dropped.is_set()
    assert hub.subscribers == 1
    assert hub.dropped == 1
    # Its stream ends with an 'end' event naming why.
    chunks = list(handler._events(slow, keepalive=0.1, lifetime=5))
    assert chunks[0].startswith(b'retry:')
    assert chunks[-1] == b'event: end\ndata: {"reason":"dropped"}\n\n'


def test_open_streams_are_capped(hub):
    pages = [hub.subscribe() for _ in range(3)]
    with pytest.raises(stream.TooManyStreams):
        hub.subscribe()
    pages[0].close()
    hub.subscribe()
    assert hub.subscribers == 3


def test_stop_ends_every_stream_and_the_listener(hub):
    page = hub.subscribe()
    events = handler._events(page, keepalive=30, lifetime=60)
    assert next(events).startswith(b'retry:')
    waiter = threading.Thread(target=lambda: page.result.extend(events))
    page.result = []
    waiter.start()
    hub.stop()
    waiter.join(timeout=5)
    assert not waiter.is_alive()  # woken at once, not after 30 s
    assert page.result[-1].startswith(b'event: end')
    assert hub.started[0].stopped
    with pytest.raises(stream.TooManyStreams):
        hub.subscribe()


def test_stream_carries_decisions_then_ends_at_its_lifetime(hub):
    now = [0.0]
    page = hub.subscribe()
    hub.publish({'request_id': 'req-9', 'outcome': 'scheduled'})
    events = handler._events(
        page, keepalive=1, lifetime=10, clock=lambda: now[0]
    )
    assert next(events).startswith(b'retry:')
    assert next(events) == (
        b'event: decision\ndata: '
        b'{"request_id":"req-9","outcome":"scheduled"}'
        b'\n\n'
    )
    now[0] = 11.0
    assert next(events) == b'event: end\ndata: {"reason":"lifetime"}\n\n'
    assert hub.subscribers == 1
    events.close()
    assert hub.subscribers == 0


def test_snapshot_cache_reads_once_per_interval():
    now = [100.0]
    cache = snapshot.SnapshotCache(ttl=2.0, clock=lambda: now[0])
    reads = []

    def build():
        reads.append(now[0])
        return {'read': len(reads)}

    assert cache.get('hosts', build) == {'read': 1}
    now[0] = 101.5
    assert cache.get('hosts', build) == {'read': 1}
    now[0] = 102.5
    assert cache.get('hosts', build) == {'read': 2}
    assert cache.get('failures', build) == {'read': 3}
