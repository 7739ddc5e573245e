import uuid

import oslo_messaging as messaging
import pytest

from nimbus.common import context as ctx_mod
from nimbus.common import rpc
from nimbus.common.config import build_conf
from nimbus.messaging_internals import inproc
from nimbus.scheduler import exception, manager, rpcapi, testing


class FakePlacement:
    """Answers GET /allocation_candidates from host states; claims in memory."""

    def __init__(self, hm):
        self.hm = hm
        self.claims = testing.InMemoryClaims()
        self.params = []
        self.removed = []

    def get_allocation_candidates(self, ctxt, params):
        self.params.append(params)
        spec = self.current_spec
        return testing.candidates_for(self.hm.all_host_states(), spec)

    def claim_resources(
        self,
        ctxt,
        consumer,
        areq,
        project_id,
        user_id,
        consumer_generation=None,
    ):
        return self.claims.claim(
            type('H', (), {'host': consumer})(), areq, consumer
        )

    def remove_allocations(self, ctxt, consumer):
        self.removed.append(consumer)


@pytest.fixture
def parts():
    conf = build_conf([])
    src = testing.make_source(20, seed=3, az_every=2)
    mgr = manager.SchedulerManager(conf, None, host_info_source=src)
    placement = FakePlacement(mgr.host_manager)
    mgr.driver.placement = placement
    return conf, mgr, placement


def test_select_destinations_direct(parts):
    conf, mgr, placement = parts
    spec = testing.spec(num=3, availability_zone='az1')
    placement.current_spec = spec
    ctxt = ctx_mod.get_admin_context()
    out = mgr.select_destinations(
        ctxt,
        request_spec=spec.to_primitive(),
        instance_uuids=spec.instance_uuids,
        return_alternates=True,
    )
    assert len(out) == 3 and all(len(r) == 3 for r in out)
    assert ('member_of', 'in:agg-az1') in placement.params[0]
    hosts = {r[0]['service_host'] for r in out}
    assert all(
        int(h.split('-')[1]) % 2 == 0 for h in hosts
    )  # az1 = even hosts
    assert set(out[0][0]) == {
        'service_host',
        'nodename',
        'compute_node_uuid',
        'cell_uuid',
        'allocation_request',
        'allocation_request_version',
        'limits',
        'nimbus_object.version',
    }


def test_no_valid_host_and_dry_run(parts):
    conf, mgr, placement = parts
    spec = testing.spec(
        extra_specs={'capabilities:hypervisor_type': 's== xen'}
    )
    placement.current_spec = spec
    ctxt = ctx_mod.get_admin_context()
    with pytest.raises(exception.NoValidHost) as err:
        mgr.select_destinations(ctxt, request_spec=spec.to_primitive())
    assert 'ComputeCapabilitiesFilter' in err.value.reason
    assert err.value.explanation['filters'][-1]['out'] == 0
    spec = testing.spec()
    placement.current_spec = spec
    dry = mgr.dry_run(ctxt, request_spec=spec.to_primitive())
    assert len(dry['ranked']) == 20 and placement.claims.claims == {}


def test_malformed_messages(parts):
    conf, mgr, placement = parts
    ctxt = ctx_mod.get_admin_context()
    # Refused as InvalidMessage (wrapped in ExpectedException, which the RPC server
    # answers to the caller as the InvalidMessage, when rpc.expose does so).
    with pytest.raises(
        (rpc.InvalidMessage, messaging.ExpectedException)
    ) as err:
        mgr.select_destinations(ctxt, request_spec='nope')
    if isinstance(err.value, messaging.ExpectedException):
        assert isinstance(err.value.exc_info[1], rpc.InvalidMessage)
    assert mgr.update_aggregates(ctxt) is None  # cast: dropped, logged


def test_events_update_cache(parts):
    conf, mgr, placement = parts
    ctxt = ctx_mod.get_admin_context()
    mgr.host_manager.refresh()
    mgr.update_aggregates(
        ctxt,
        aggregates=[
            {
                'uuid': 'x',
                'name': 'x',
                'hosts': ['host-1'],
                'metadata': {'availability_zone': 'az9'},
            }
        ],
    )
    hs = mgr.host_manager.states_for_host('host-1')[0]
    assert hs.availability_zone == 'az9'
    mgr.update_instance_info(
        ctxt, host_name='host-1', instance_info={'uuid': 'i1'}
    )
    assert 'i1' in hs.instances and hs.num_instances == 1
    mgr.delete_instance_info(ctxt, host_name='host-1', instance_uuid='i1')
    assert hs.num_instances == 0
    mgr.update_service(
        ctxt, service={'host': 'host-1', 'disabled': True, 'up': True}
    )
    assert hs.service_disabled
    mgr.delete_aggregate(ctxt, aggregate={'uuid': 'x'})
    assert hs.availability_zone == 'nova'


def test_rpc_round_trip(parts):
    conf, mgr, placement = parts
    url = 'inproc:///sched-%s' % uuid.uuid4().hex[:8]
    transport = rpc.get_transport(conf, url)
    server = rpc.get_server(transport, rpcapi.TOPIC, [mgr], 'sched-1')
    server.start()
    try:
        api = rpcapi.SchedulerAPI(transport, conf)
        spec = testing.spec(num=2)
        placement.current_spec = spec
        ctxt = ctx_mod.get_admin_context()
        out = api.select_destinations(ctxt, spec, spec.instance_uuids, True)
        assert len(out) == 2
        bad = testing.spec(
            extra_specs={'capabilities:hypervisor_type': 's== xen'}
        )
        placement.current_spec = bad
        with pytest.raises(exception.NoValidHost) as err:
            api.select_destinations(ctxt, bad, bad.instance_uuids, True)
        assert err.value.explanation['filters']
        assert api.dry_run(ctxt, testing.spec())['ranked']
    finally:
        server.stop()
        server.wait()
        inproc.reset_buses()
