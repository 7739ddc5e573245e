"""The scheduler's decision stream on a real RabbitMQ with nobody
consuming it. With the install guide's max-length policy on the vhost
(:func:`nimbus.common.rpc.backlog.policy_args`), the queue keeps the
newest ``bound`` decisions and a tail started afterwards gets exactly
those, oldest first; the scheduler's watch sees the bound hold. Without
the policy the queue keeps everything and the watch warns with the
command that bounds it."""

import logging
import subprocess
import threading

import oslo_messaging as messaging
import pytest

from nimbus.common import config
from nimbus.common import rpc
from nimbus.common.rpc import backlog
from nimbus.scheduler import notifications
from nimbus.testing import infra

pytestmark = pytest.mark.integration

BOUND = 10


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


def _publish(conf, url, count):
    transport = rpc.get_notification_transport(conf, url)
    notifier = notifications.make_notifier(transport, 'sched-1').notifier
    for n in range(count):
        notifier.info({}, notifications.EVENT_TYPE, {'n': n})
    return transport


def _set_policy(url):
    args = backlog.policy_args(
        backlog.vhost_of(url), notifications.QUEUES, BOUND
    )
    subprocess.run(['rabbitmqctl'] + args, check=True, capture_output=True)


def test_the_policy_keeps_the_newest_decisions_within_the_bound(bus):
    conf, url = bus
    _set_policy(url)
    transport = _publish(conf, url, 30)
    watch = backlog.BacklogWatch(url, notifications.QUEUES, BOUND)
    # Policies apply asynchronously to a queue declared just before; the
    # depth settles at the bound.
    for _ in range(50):
        depths = watch.check()
        if depths.get('notifications.info') == BOUND:
            break
        threading.Event().wait(0.1)
    # never published to: not declared, so not listed
    assert depths == {'notifications.info': BOUND}
    tail = _Tail(BOUND)
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
        assert not threading.Event().wait(1) and len(tail.payloads) == BOUND
    finally:
        listener.stop()
        listener.wait()
    assert tail.payloads == list(range(20, 30))


def test_without_the_policy_the_watch_warns_with_the_command(bus, caplog):
    conf, url = bus
    _publish(conf, url, 30)
    watch = backlog.BacklogWatch(url, notifications.QUEUES, BOUND)
    with caplog.at_level(logging.WARNING, 'nimbus.common.rpc.backlog'):
        assert watch.check() == {'notifications.info': 30}
        assert watch.check() == {'notifications.info': 30}
    warnings = [r for r in caplog.records if 'holds 30 messages' in r.message]
    assert len(warnings) == 1  # once, not at every check
    command = backlog.policy_command(
        backlog.vhost_of(url), notifications.QUEUES, BOUND
    )
    assert command in warnings[0].message
    # The command it gives bounds the queue: the oldest are dropped.
    _set_policy(url)
    for _ in range(50):
        if watch.check() == {'notifications.info': BOUND}:
            break
        threading.Event().wait(0.1)
    assert watch.check() == {'notifications.info': BOUND}
