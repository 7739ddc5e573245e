"""Scheduler cache events, sent through the RPC client as the API-level services send
them (fanout casts on the in-process bus): each lands in the host states."""

import time
import uuid

import pytest

from nimbus.common import context as ctx_mod
from nimbus.common import rpc
from nimbus.common.config import build_conf
from nimbus.common.objects import ServerGroupInfo
from nimbus.messaging_internals import inproc
from nimbus.scheduler import manager, rpcapi, testing
from nimbus.scheduler.host_manager import HostManager


def wait_until(predicate, what):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f'timed out waiting for {what}')


def _source():
    src = testing.make_source(4, seed=2)
    src._instances = {
        'host-1': [{'uuid': 'i-1', 'group_uuid': 'g1'}, {'uuid': 'i-2'}],
        'host-2': [{'uuid': 'i-3', 'group_uuid': 'g1'}],
    }
    src._groups = [
        {
            'uuid': 'g1',
            'name': 'g1',
            'policy': 'anti-affinity',
            'rules': {},
            'members': ['i-1', 'i-3'],
        }
    ]
    return src


@pytest.fixture(scope='module')
def server():
    conf = build_conf([])
    mgr = manager.SchedulerManager(conf, None, host_info_source=_source())
    transport = rpc.get_transport(
        conf, 'inproc:///events-%s' % uuid.uuid4().hex[:8]
    )
    server = rpc.get_server(
        transport, rpcapi.TOPIC, [mgr], 'sched-1', version='1.1'
    )
    server.start()
    try:
        yield rpcapi.SchedulerAPI(transport, conf), mgr
    finally:
        server.stop()
        server.wait()
        inproc.reset_buses()


@pytest.fixture
def bus(server):
    api, mgr = server
    mgr.host_manager = HostManager(mgr.conf, _source())
    mgr.host_manager.refresh()
    return api, mgr.host_manager, ctx_mod.get_admin_context()


def state(hm, host):
    return hm.states_for_host(host)[0]


def test_delete_instance_info(bus):
    api, hm, ctxt = bus
    api.delete_instance_info(ctxt, 'host-1', 'i-1')
    wait_until(
        lambda: 'i-1' not in state(hm, 'host-1').instances, 'delete on host-1'
    )
    assert state(hm, 'host-1').num_instances == 1
    # the deleted instance also leaves its server group
    assert hm.server_group('g1')['members'] == ['i-3']
    # without a host (or with a stale one) every host is searched
    api.delete_instance_info(ctxt, None, 'i-3')
    wait_until(
        lambda: state(hm, 'host-2').num_instances == 0, 'delete without host'
    )
    api.delete_instance_info(ctxt, 'host-3', 'i-2')
    wait_until(
        lambda: state(hm, 'host-1').num_instances == 0,
        'delete with stale host',
    )


def test_sync_instance_info(bus):
    api, hm, ctxt = bus
    api.sync_instance_info(ctxt, 'host-1', ['i-2', 'i-9'])
    wait_until(
        lambda: set(state(hm, 'host-1').instances) == {'i-2', 'i-9'}, 'sync'
    )
    assert state(hm, 'host-1').num_instances == 2


def test_update_compute_node(bus):
    """The host manager's own compute node update (no RPC method sends it
    since the scheduler's update_compute_node cast was removed; the full
    reload uses the same path)."""
    api, hm, ctxt = bus
    cn = dict(
        testing.compute_node(1),
        hypervisor_version=9001000,
        metrics={'cpu.frequency': 3000},
    )
    hm.update_compute_node(cn)
    wait_until(
        lambda: state(hm, 'host-1').hypervisor_version == 9001000,
        'node update',
    )
    assert state(hm, 'host-1').metrics == {'cpu.frequency': 3000}
    new = dict(testing.compute_node(7), cell_uuid='cell-1')
    hm.update_aggregates(
        [
            {
                'uuid': 'a7',
                'name': 'a7',
                'hosts': ['host-7'],
                'metadata': {'availability_zone': 'az7'},
            }
        ]
    )
    hm.update_compute_node(new)
    wait_until(lambda: hm.states_for_host('host-7'), 'new node')
    hs = state(hm, 'host-7')
    assert hs.uuid == new['uuid'] and hs.availability_zone == 'az7'
    assert hm.host_state(new['uuid']) is hs


def test_server_group_update_and_delete(bus):
    api, hm, ctxt = bus
    api.update_server_group(
        ctxt,
        ServerGroupInfo(
            uuid='g2', name='g2', policy='affinity', rules={}, members=[]
        ),
    )
    wait_until(lambda: hm.server_group('g2') is not None, 'group created')
    api.delete_server_group(ctxt, 'g2')
    wait_until(lambda: hm.server_group('g2') is None, 'group deleted')
    api.delete_server_group(ctxt, 'g1')
    wait_until(lambda: hm.server_group('g1') is None, 'group deleted')


def test_deleted_group_no_longer_constrains(conf):
    """After delete_server_group a ``group`` hint naming it resolves to nothing."""
    from nimbus.scheduler import driver

    src = testing.make_source(2, seed=2)
    src._groups = [
        {
            'uuid': 'g1',
            'name': 'g1',
            'policy': 'anti-affinity',
            'rules': {},
            'members': [],
        }
    ]
    hm = HostManager(conf, src)
    hm.refresh()
    sched = driver.Scheduler(conf, None, hm)
    sp = testing.spec(scheduler_hints={'group': 'g1'})
    sched._resolve_group(sp)
    assert sp.instance_group.uuid == 'g1'
    hm.delete_server_group('g1')
    sp = testing.spec(scheduler_hints={'group': 'g1'})
    sched._resolve_group(sp)
    assert sp.instance_group is None


def test_malformed_events_are_dropped(bus):
    api, hm, ctxt = bus
    api._cast(
        ctxt, 'delete_instance_info', host_name='host-1', instance_uuid=None
    )
    api.delete_instance_info(ctxt, 'host-1', 'i-2')  # the next one still works
    wait_until(
        lambda: 'i-2' not in state(hm, 'host-1').instances, 'after a bad cast'
    )
    assert 'i-1' in state(hm, 'host-1').instances
