"""nimbus.common.service.RPCService: the size of its executor pool.

oslo.messaging's threading executor starts a new thread for every message
until the pool is full, then hands messages to its threads in turn: a
pool of 64 ends up with 64 threads, each with its own stack and malloc
arena. The scheduler runs its decisions one at a time, so its pool is
``[scheduler] executor_thread_pool_size`` (8), not the 64 of
``[DEFAULT]``.
"""

import threading

import pytest

from nimbus import services
from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc
from nimbus.common import service
from nimbus.messaging_internals import inproc
from nimbus.scheduler import conf as sched_conf


class Recorder:
    """Each cast records the thread that ran it."""

    def __init__(self, expected):
        self.threads = set()
        self.count = 0
        self.expected = expected
        self.lock = threading.Lock()
        self.done = threading.Event()

    @rpc.expose(cast=True, required=('n',), types={'n': int})
    def note(self, ctxt, n):
        with self.lock:
            self.threads.add(threading.current_thread().ident)
            self.count += 1
            if self.count == self.expected:
                self.done.set()


@pytest.fixture
def conf():
    conf = config.build_conf([])
    yield conf
    rpc.cleanup_transports(conf)
    inproc.reset_buses()


def _served_by(conf, threads, messages=200):
    transport = rpc.get_transport(conf, 'inproc:///pool-test')
    recorder = Recorder(messages)
    svc = service.RPCService(
        transport, 'pool', 'p1', [recorder], threads=threads
    ).start()
    try:
        client = rpc.get_client(transport, 'pool', '1.0', conf=conf)
        ctxt = context.get_admin_context()
        for n in range(messages):
            client.cast(ctxt, 'note', n=n)
        assert recorder.done.wait(30), 'only %d of %d casts ran' % (
            recorder.count,
            messages,
        )
    finally:
        svc.stop()
    return recorder.threads


def test_a_pool_of_n_threads_runs_messages_on_at_most_n(conf):
    assert 1 <= len(_served_by(conf, 3)) <= 3


def test_without_a_size_the_pool_is_the_default_options(conf):
    conf.set_override('executor_thread_pool_size', 2)
    assert 1 <= len(_served_by(conf, None)) <= 2


def test_the_scheduler_serves_on_its_own_pool_size(tmp_path):
    conf = config.build_conf([])
    sched_conf.register_opts(conf)
    assert conf.scheduler.executor_thread_pool_size == 8
    assert conf.executor_thread_pool_size == 64
    conf.set_override('transport_url', 'inproc:///sched-pool-test')
    conf.set_override('executor_thread_pool_size', 5, group='scheduler')
    conf.set_override(
        'connection', 'sqlite:///%s' % (tmp_path / 'api.db'), 'api_database'
    )
    try:
        svc = services.scheduler_service(conf, host='s1')
        svc.stop()  # never started: ends the manager's periodic reloads
        assert svc.threads == 5
    finally:
        rpc.cleanup_transports(conf)
        inproc.reset_buses()
