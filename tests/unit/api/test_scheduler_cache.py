"""nimbus.api.scheduler_cache: each event reaches a real scheduler endpoint
(the in-process bus) as its contract, and a failing cast never fails the
request that sent it."""

import logging
import queue
import types
import uuid

import pytest

from nimbus.api import scheduler_cache
from nimbus.api import util
from nimbus.common import context as ctx_mod
from nimbus.common import rpc
from nimbus.common.config import build_conf
from nimbus.common.objects import AggregateInfo
from nimbus.common.objects import ServerGroupInfo
from nimbus.common.objects import ServiceInfo
from nimbus.scheduler import manager
from nimbus.scheduler import rpcapi


class RecordingHostManager:
    """Stands in for the scheduler's host manager: records what the real
    endpoint hands it."""

    def __init__(self):
        self.calls = queue.Queue()

    def __getattr__(self, name):
        if name.startswith('_'):
            raise AttributeError(name)
        return lambda *args: self.calls.put((name, args))

    def next_call(self):
        return self.calls.get(timeout=10)


@pytest.fixture(scope='module')
def scheduler():
    conf = build_conf([])
    hm = RecordingHostManager()
    mgr = manager.SchedulerManager(conf, None, host_manager=hm)
    transport = rpc.get_transport(
        conf, 'inproc:///cache-%s' % uuid.uuid4().hex[:8]
    )
    server = rpc.get_server(
        transport, rpcapi.TOPIC, [mgr], 'sched-1', version='1.2'
    )
    server.start()
    try:
        yield rpcapi.SchedulerAPI(transport, conf), hm
    finally:
        server.stop()
        server.wait()


def _req(scheduler_api):
    deps = types.SimpleNamespace(scheduler_api=scheduler_api)
    return types.SimpleNamespace(
        env={util.ENV_KEY: deps}, context={'ctx': ctx_mod.get_admin_context()}
    )


AGG = AggregateInfo(
    id=3, uuid='agg-3', name='fast', hosts=['h1'], metadata={'ssd': 'true'}
)


def test_aggregate_changed_and_deleted(scheduler):
    api, hm = scheduler
    scheduler_cache.aggregate_changed(_req(api), AGG)
    name, (records,) = hm.next_call()
    assert name == 'update_aggregates'
    assert records == [AGG.to_cache()]
    scheduler_cache.aggregate_deleted(_req(api), AGG)
    assert hm.next_call() == ('delete_aggregate', (AGG.to_cache(),))


def test_service_changed(scheduler):
    api, hm = scheduler
    info = ServiceInfo(
        host='h1',
        binary='nimbus-compute',
        disabled=True,
        disabled_reason='maintenance',
    )
    scheduler_cache.service_changed(_req(api), info)
    assert hm.next_call() == ('update_service', (info.to_cache(),))


def test_server_group_changed_and_deleted(scheduler):
    api, hm = scheduler
    group = ServerGroupInfo(
        uuid='g1', name='web', policy='anti-affinity', members=['i-1']
    )
    scheduler_cache.server_group_changed(_req(api), group)
    assert hm.next_call() == ('update_server_group', (group.to_cache(),))
    scheduler_cache.server_group_deleted(_req(api), 'g1')
    assert hm.next_call() == ('delete_server_group', ('g1',))


def test_instance_deleted(scheduler):
    api, hm = scheduler
    scheduler_cache.instance_deleted(_req(api), 'h1', 'i-1')
    assert hm.next_call() == ('delete_instance_info', ('h1', 'i-1'))


def test_no_scheduler_is_a_no_op():
    scheduler_cache.aggregate_changed(_req(None), AGG)
    scheduler_cache.instance_deleted(_req(None), 'h1', 'i-1')


def test_a_failed_cast_is_logged_not_raised(caplog):
    class BrokenScheduler:
        def update_aggregates(self, ctxt, aggregates):
            raise ConnectionError('broker away')

    with caplog.at_level(logging.WARNING, logger='nimbus.api.scheduler_cache'):
        scheduler_cache.aggregate_changed(_req(BrokenScheduler()), AGG)
    assert 'Could not tell the schedulers that aggregate agg-3 changed' in (
        caplog.text
    )


def test_every_event_names_a_method_the_rpcapi_has():
    """A misspelt rpcapi method is an AttributeError, never a silent
    no-op: send each event to an object that has only the rpcapi's
    methods and records them."""
    sent = []

    class OnlyRpcapiMethods:
        def __getattr__(self, name):
            if not callable(getattr(rpcapi.SchedulerAPI, name, None)):
                raise AttributeError(name)
            return lambda *args: sent.append(name)

    req = _req(OnlyRpcapiMethods())
    scheduler_cache.aggregate_changed(req, AGG)
    scheduler_cache.aggregate_deleted(req, AGG)
    scheduler_cache.service_changed(req, ServiceInfo(host='h1'))
    scheduler_cache.server_group_changed(req, ServerGroupInfo(uuid='g'))
    scheduler_cache.server_group_deleted(req, 'g')
    scheduler_cache.instance_deleted(req, 'h1', 'i-1')
    assert sent == [
        'update_aggregates',
        'delete_aggregate',
        'update_service',
        'update_server_group',
        'delete_server_group',
        'delete_instance_info',
    ]
