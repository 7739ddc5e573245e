"""The scheduler's decision stream on a real RabbitMQ with nobody
consuming it: the backlog trimmer keeps the newest ``keep`` decisions in
``notifications.info`` and drops the older ones, and a tail started
afterwards gets exactly the kept ones, oldest first."""

import threading

import oslo_messaging as messaging
import pytest

from nimbus.common import config
from nimbus.common import rpc
from nimbus.common.rpc import backlog
from nimbus.scheduler import notifications
from nimbus.testing import infra

pytestmark = pytest.mark.integration


@pytest.fixture
def bus():
    url, cleanup = infra.rabbit_vhost()
    conf = config.build_conf([])
    try:
        yield conf, url
    finally:
        rpc.cleanup_transports(conf)
        cleanup()


class _Tail:
    def __init__(self, expected):
        self.payloads = []
        self.expected = expected
        self.done = threading.Event()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.payloads.append(payload['n'])
        if len(self.payloads) >= self.expected:
            self.done.set()


def test_the_oldest_decisions_beyond_the_bound_are_dropped(bus):
    conf, url = bus
    transport = rpc.get_notification_transport(conf, url)
    notifier = notifications.make_notifier(transport, 'sched-1').notifier
    for n in range(30):
        notifier.info({}, notifications.EVENT_TYPE, {'n': n})
    trimmer = backlog.BacklogTrimmer(url, notifications.QUEUES, keep=10)
    assert trimmer.trim() == {
        'notifications.info': 20,
        # never published to: not declared, left alone
        'notifications.error': 0,
    }
    assert trimmer.trim() == {
        'notifications.info': 0,
        'notifications.error': 0,
    }
    tail = _Tail(10)
    listener = messaging.get_notification_listener(
        transport,
        [messaging.Target(topic=notifications.TOPIC)],
        [tail],
        executor='threading',
        serializer=messaging.NoOpSerializer(),
    )
    listener.start()
    try:
        assert tail.done.wait(30), tail.payloads
        # Nothing more arrives than what was kept.
        assert not threading.Event().wait(1) and len(tail.payloads) == 10
    finally:
        listener.stop()
        listener.wait()
    assert tail.payloads == list(range(20, 30))
