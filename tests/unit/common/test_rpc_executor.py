"""The RPC servers' thread pool: its shutdown still runs what was queued,
and leaves no worker behind (an idle one is woken, not waited out)."""

import threading

import pytest

import oslo_messaging as messaging

from nimbus.common import config
from nimbus.common import context
from nimbus.common import rpc
from nimbus.common.rpc import executor
from nimbus.messaging_internals import inproc


def test_shutdown_runs_the_queued_work_and_ends_every_worker():
    pool = executor.PromptThreadPoolExecutor(max_workers=4)
    release = threading.Event()
    done = []

    def work(n):
        release.wait()
        done.append(n)

    futures = [pool.submit(work, n) for n in range(10)]
    workers = list(pool._workers)
    assert len(workers) == 4
    release.set()
    pool.shutdown(wait=True)
    assert sorted(done) == list(range(10))
    assert all(f.done() and f.exception() is None for f in futures)
    assert not any(w.is_alive() for w in workers)


def test_a_second_shutdown_is_harmless():
    pool = executor.PromptThreadPoolExecutor(max_workers=2)
    pool.submit(lambda: None).result()
    pool.shutdown(wait=True)
    pool.shutdown(wait=True)
    assert not any(w.is_alive() for w in pool._workers)


class _Echo:
    target = messaging.Target(version='1.0')

    @rpc.expose(required=('value',))
    def echo(self, ctxt, value):
        return value


def test_an_rpc_server_runs_on_it_and_stops_with_no_worker_left():
    conf = config.build_conf(
        [], overrides={'rpc': {'transport_url': 'inproc:///executor-test'}}
    )
    transport = rpc.get_transport(conf)
    server = rpc.get_server(transport, 'echo', [_Echo()], 'h1')
    server.start()
    try:
        pool = server._work_executor
        assert isinstance(pool, executor.PromptThreadPoolExecutor)
        client = rpc.get_client(transport, 'echo', '1.0', server='h1')
        ctxt = context.get_admin_context()
        assert [client.call(ctxt, 'echo', value=n) for n in range(3)] == [
            0,
            1,
            2,
        ]
        workers = list(pool._workers)
        assert workers
    finally:
        server.stop()
        server.wait()
        inproc.reset_buses()
    assert not any(w.is_alive() for w in workers)


def test_a_server_without_the_private_pool_hook_is_refused_loudly():
    class Server:
        executor_type = 'threading'

    with pytest.raises(executor.IncompatibleThreadPool) as raised:
        executor.use_prompt_executor(Server())
    assert '_executor_cls' in str(raised.value)
