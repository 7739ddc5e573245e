"""Batched heartbeats (conductor RPC 1.3): the ServiceHeartbeats contract,
its endpoint and the one-transaction write, on a real SQLite cell
database."""

import pytest
import sqlalchemy as sa

from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import rpc
from nimbus.common.objects import base
from nimbus.common.objects import heartbeats as heartbeats_obj
from nimbus.conductor import cell_conductor
from nimbus.conductor import manager
from nimbus.db import cell_services as services
from nimbus.db.cell import models
from nimbus import db as nimbus_db


@pytest.fixture
def cell_db(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'cell.sqlite')
    nimbus_db.sync_cell(url)
    yield common_db.get_database(url)
    common_db.dispose_all()


def _rows(db):
    with db.session() as session:
        return {
            row.host: (row.report_count, row.last_seen_up)
            for row in session.execute(sa.select(models.Service)).scalars()
        }


def test_a_batch_creates_then_refreshes_every_host_in_one_go(cell_db):
    hosts = ['sim-%04d' % i for i in range(1, 6)]
    with cell_db.session() as session:
        assert services.heartbeats(session, hosts[:2], 'nimbus-compute') == {
            'refreshed': 0,
            'created': 2,
        }
    first = _rows(cell_db)
    with cell_db.session() as session:
        assert services.heartbeats(session, hosts, 'nimbus-compute') == {
            'refreshed': 2,
            'created': 3,
        }
    rows = _rows(cell_db)
    assert sorted(rows) == hosts
    assert [rows[h][0] for h in hosts] == [2, 2, 1, 1, 1]
    for host in hosts[:2]:
        assert rows[host][1] >= first[host][1]
    assert all(seen is not None for _count, seen in rows.values())
    # Every host known (the usual beat): one UPDATE does it.
    with cell_db.session() as session:
        assert services.heartbeats(session, hosts, 'nimbus-compute') == {
            'refreshed': 5,
            'created': 0,
        }
    assert [_rows(cell_db)[h][0] for h in hosts] == [3, 3, 2, 2, 2]


def test_a_batch_leaves_other_hosts_and_binaries_alone(cell_db):
    with cell_db.session() as session:
        services.heartbeat(session, 'sim-0001', 'nimbus-compute')
        services.heartbeat(session, 'sim-0002', 'nimbus-compute')
        services.heartbeat(session, 'sim-0001', 'nimbus-conductor')
    with cell_db.session() as session:
        services.heartbeats(session, ['sim-0001'], 'nimbus-compute')
    with cell_db.session() as session:
        counts = {
            (row.host, row.binary): row.report_count
            for row in session.execute(sa.select(models.Service)).scalars()
        }
    assert counts == {
        ('sim-0001', 'nimbus-compute'): 2,
        ('sim-0002', 'nimbus-compute'): 1,
        ('sim-0001', 'nimbus-conductor'): 1,
    }


def test_the_endpoint_writes_a_batch_and_refuses_a_malformed_one(cell_db):
    endpoint = manager.CellConductorManager(
        cell_conductor.CellConductor(None, cell_db, None, None)
    )
    ctxt = context.get_admin_context()
    batch = heartbeats_obj.ServiceHeartbeats('nimbus-compute', ['a', 'b'])
    assert endpoint.service_heartbeats(
        ctxt, heartbeats=batch.to_primitive()
    ) == {'refreshed': 0, 'created': 2}
    for bad in (
        {'binary': 'nimbus-compute', 'hosts': 'a'},
        {'binary': 'nimbus-compute', 'hosts': ['a', 3]},
        {'binary': '', 'hosts': ['a']},
        {'hosts': ['a']},
        {base.VERSION_KEY: '2.0', 'binary': 'x', 'hosts': ['a']},
    ):
        with pytest.raises(rpc.InvalidMessage):
            endpoint.service_heartbeats(ctxt, heartbeats=bad)
    with pytest.raises(rpc.InvalidMessage):
        endpoint.service_heartbeats(ctxt, heartbeats=['a'])
    assert sorted(_rows(cell_db)) == ['a', 'b']


def test_the_contract_round_trips_and_splits():
    batch = heartbeats_obj.ServiceHeartbeats(
        'nimbus-compute', ['a', 'b', 'a', 'c']
    )
    again = heartbeats_obj.ServiceHeartbeats.from_primitive(
        batch.to_primitive()
    )
    assert again.hosts == ['a', 'b', 'c']  # a host once per batch
    assert again.binary == 'nimbus-compute'
    parts = list(
        heartbeats_obj.ServiceHeartbeats(
            'x', ['h%d' % i for i in range(5)]
        ).batches(2)
    )
    assert [p.hosts for p in parts] == [['h0', 'h1'], ['h2', 'h3'], ['h4']]
    too_many = {
        'binary': 'x',
        'hosts': ['h%d' % i for i in range(heartbeats_obj.MAX_HOSTS + 1)],
    }
    with pytest.raises(base.MalformedPrimitive):
        heartbeats_obj.ServiceHeartbeats.from_primitive(too_many)


def test_hosts_with_records_names_the_hosts_an_instance_or_move_names(cell_db):
    endpoint = manager.CellConductorManager(
        cell_conductor.CellConductor(None, cell_db, None, None)
    )
    ctxt = context.get_admin_context()
    with cell_db.session() as session:
        session.add(
            models.Instance(
                uuid='11111111-1111-4111-8111-111111111111',
                project_id='p',
                user_id='u',
                host='sim-0002',
                vm_state='deleted',
                flavor={},
                deleted=True,
            )
        )
        session.add(
            models.Migration(
                uuid='22222222-2222-4222-8222-222222222222',
                instance_uuid='11111111-1111-4111-8111-111111111111',
                migration_type='resize',
                status='confirmed',
                source_compute='sim-0003',
                dest_compute='sim-0004',
            )
        )
    hosts = ['sim-%04d' % i for i in range(1, 6)]
    # Deleted and finished records count: the answer may only be too wide.
    assert endpoint.hosts_with_records(ctxt, hosts=hosts) == [
        'sim-0002',
        'sim-0003',
        'sim-0004',
    ]
    assert endpoint.hosts_with_records(ctxt, hosts=['sim-0001']) == []
    with pytest.raises(rpc.InvalidMessage):
        endpoint.hosts_with_records(ctxt, hosts=['a', 3])


def test_node_records_of_many_hosts_go_in_one_call(cell_db):
    """compute_nodes_update (RPC 1.14): each record written as
    compute_node_update writes one, the answers in order; a malformed
    record refuses the whole call."""
    endpoint = manager.CellConductorManager(
        cell_conductor.CellConductor(None, cell_db, None, None)
    )
    ctxt = context.get_admin_context()

    def node(host, vcpus):
        return {
            'uuid': '0000000%d-0000-4000-8000-000000000000' % vcpus,
            'host': host,
            'hypervisor_hostname': host,
            'vcpus': vcpus,
            'memory_mb': 1024,
        }

    endpoint.compute_node_update(ctxt, node=node('sim-0001', 1))
    answers = endpoint.compute_nodes_update(
        ctxt, nodes=[dict(node('sim-0001', 1), vcpus=4), node('sim-0002', 2)]
    )
    assert [(a['host'], a['uuid']) for a in answers] == [
        ('sim-0001', node('sim-0001', 1)['uuid']),
        ('sim-0002', node('sim-0002', 2)['uuid']),
    ]
    with cell_db.session() as session:
        rows = {
            row.host: row.vcpus
            for row in session.execute(sa.select(models.ComputeNode)).scalars()
        }
    assert rows == {'sim-0001': 4, 'sim-0002': 2}
    with pytest.raises(rpc.InvalidMessage):
        endpoint.compute_nodes_update(ctxt, nodes=[node('sim-0003', 3), {}])
    with cell_db.session() as session:
        hosts = {
            row.host
            for row in session.execute(sa.select(models.ComputeNode)).scalars()
        }
    assert hosts == {'sim-0001', 'sim-0002'}
