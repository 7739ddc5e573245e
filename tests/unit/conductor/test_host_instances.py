"""The instances of many hosts in one call (cell conductor RPC 1.15):
the owner module's one-statement read, the endpoint (over the bus too:
a malformed call is refused and the server keeps serving) and the
client's version cap, on a real SQLite cell database."""

from unittest import mock

import oslo_messaging as messaging
import pytest

from nimbus.common import config
from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import rpc
from nimbus.common.objects import Instance
from nimbus.conductor import cell_conductor
from nimbus.conductor import manager
from nimbus.conductor import rpcapi
from nimbus.db import cell_instances as instances
from nimbus.db.cell import models
from nimbus.db.cell_instances import contract
from nimbus import db as nimbus_db
from nimbus.messaging_internals import inproc


@pytest.fixture
def cell_db(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'cell.sqlite')
    nimbus_db.sync_cell(url)
    db = common_db.get_database(url)
    with db.session() as session:
        for n, (host, deleted, hidden) in enumerate(
            [
                ('sim-0001', False, False),
                ('sim-0001', False, False),
                ('sim-0002', False, False),
                ('sim-0002', True, False),  # deleted: not live
                ('sim-0003', False, True),  # a cross-cell move's copy
                ('sim-0009', False, False),  # not asked
            ],
            1,
        ):
            session.add(
                models.Instance(
                    uuid='%08d-1111-4111-8111-111111111111' % n,
                    project_id='p',
                    user_id='u',
                    host=host,
                    vm_state='deleted' if deleted else 'active',
                    flavor={'vcpus': 1, 'memory_mb': 512},
                    deleted=deleted,
                    hidden=hidden,
                )
            )
    yield db
    common_db.dispose_all()


HOSTS = ['sim-0001', 'sim-0002', 'sim-0003', 'sim-0004']


def test_one_read_answers_what_one_read_per_host_answers(cell_db):
    with cell_db.engine.connect() as connection:
        found = contract.on_hosts(connection, HOSTS)
    assert sorted(found) == HOSTS  # every host asked is a key
    with cell_db.session() as session:
        for host in HOSTS:
            one = instances.on_host(session, host)
            key = sorted(d['uuid'] for d in one)
            assert sorted(d['uuid'] for d in found[host]) == key
            assert sorted(found[host], key=lambda d: d['uuid']) == sorted(
                one, key=lambda d: d['uuid']
            )
    assert [len(found[h]) for h in HOSTS] == [2, 1, 0, 0]


def test_the_endpoint_answers_instances_and_refuses_malformed(cell_db):
    endpoint = manager.CellConductorManager(
        cell_conductor.CellConductor(None, cell_db, None, None)
    )
    ctxt = context.get_admin_context()
    answer = endpoint.instances_on_hosts(ctxt, hosts=HOSTS)
    assert {h: len(v) for h, v in answer.items()} == {
        'sim-0001': 2,
        'sim-0002': 1,
        'sim-0003': 0,
        'sim-0004': 0,
    }
    assert Instance.from_primitive(answer['sim-0002'][0]).host == 'sim-0002'
    # The one-host call answers the same records.
    assert (
        endpoint.instances_on_host(ctxt, host='sim-0001') == answer['sim-0001']
    )
    for bad in (['a', 3], ['a', ''], ['h%d' % i for i in range(5001)]):
        with pytest.raises(rpc.InvalidMessage):
            endpoint.instances_on_hosts(ctxt, hosts=bad)
    with pytest.raises(rpc.InvalidMessage):
        endpoint.instances_on_hosts(ctxt, hosts='sim-0001')


def test_over_the_bus_a_malformed_call_is_refused_and_serving_goes_on(cell_db):
    conf = config.build_conf([])
    transport = rpc.get_transport(conf, 'inproc:///host-instances')
    endpoint = manager.CellConductorManager(
        cell_conductor.CellConductor(None, cell_db, None, None)
    )
    server = rpc.get_server(transport, rpcapi.TOPIC, [endpoint], 'cell1')
    server.start()
    try:
        api = rpcapi.CellConductorAPI(transport, conf)
        ctxt = context.get_admin_context()
        with pytest.raises(rpc.InvalidMessage):
            api._client.prepare(version='1.15').call(
                ctxt, 'instances_on_hosts', hosts=['sim-0001', 7]
            )
        with pytest.raises(rpc.InvalidMessage):
            api._client.prepare(version='1.15').call(
                ctxt, 'instances_on_hosts'
            )
        found = api.instances_on_hosts(ctxt, ['sim-0001', 'sim-0004'])
        assert sorted(found) == ['sim-0001', 'sim-0004']
        assert all(isinstance(i, Instance) for i in found['sim-0001'])
        assert len(found['sim-0001']) == 2 and found['sim-0004'] == []
    finally:
        server.stop()
        server.wait()
        rpc.cleanup_transports(conf)
        inproc.reset_buses()


@pytest.mark.parametrize('cap, batches', [(None, True), ('1.14', False)])
def test_the_cap_decides_whether_the_batch_may_go(cap, batches):
    conf = config.build_conf(
        [], overrides={'upgrade_levels': {'conductor': cap}}
    )
    transport = rpc.get_transport(conf, 'inproc:///host-instances-cap')
    try:
        api = rpcapi.CellConductorAPI(transport, conf)
        assert api.takes_host_instance_batches() is batches
        assert api.takes_node_batches() is True
        if not batches:
            with pytest.raises(messaging.RPCVersionCapError):
                api.instances_on_hosts(context.get_admin_context(), ['h'])
    finally:
        rpc.cleanup_transports(conf)


def test_the_client_gives_every_host_asked_a_list():
    api = rpcapi.CellConductorAPI.__new__(rpcapi.CellConductorAPI)
    api._client = mock.Mock()
    prepared = api._client.prepare.return_value
    prepared.call.return_value = {
        'h1': [Instance(uuid='i1', host='h1').to_primitive()]
    }
    found = api.instances_on_hosts(context.get_admin_context(), ['h1', 'h2'])
    assert found == {'h1': [Instance(uuid='i1', host='h1')], 'h2': []}
    api._client.prepare.assert_called_with(version='1.15')
