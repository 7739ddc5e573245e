"""The cell conductor's compare-and-swap in Core
(nimbus.db.cell_instances.swap): the same answer as the ORM's
transition, and no more statements than a build's swap needs. On SQLite,
and on MariaDB or PostgreSQL as ``NIMBUS_TEST_DB`` says."""

import os

import pytest
import sqlalchemy as sa

from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import instance_states as states
from nimbus.common.objects import BuildAttempt
from nimbus.common.objects import Instance
from nimbus.common.objects import InstanceUpdate
from nimbus.common import rpc
from nimbus.conductor import cell_conductor
from nimbus.conductor import manager
from nimbus.db import cell_instances as instances
from nimbus import db as nimbus_db
from nimbus.testing import infra


@pytest.fixture
def cell(tmp_path):
    kind = os.environ.get('NIMBUS_TEST_DB', 'sqlite')
    if kind == 'sqlite':
        url, cleanup = 'sqlite:///%s' % (tmp_path / 'cell.sqlite'), None
    else:
        url, cleanup = infra.database(kind)
    nimbus_db.sync_cell(url)
    db = common_db.get_database(url)
    with db.session() as session:
        for uuid in ('i-1', 'i-2'):
            instances.create(
                session,
                {
                    'uuid': uuid,
                    'display_name': 'vm-' + uuid,
                    'project_id': 'p',
                    'user_id': 'u',
                    'host': 'h0',
                    'node': 'h0',
                    'vm_state': states.BUILDING,
                    'flavor': {'vcpus': 1, 'memory_mb': 64},
                    'image_ref': 'img',
                    'metadata': {'k': 'v'},
                    'accel_uuids': ['a-1'],
                    'build_alternates': {'host_list': [{'host': 'h1'}]},
                },
            )
    yield cell_conductor.CellConductor(None, db, None, None), db
    db.dispose()
    if cleanup is not None:
        cleanup()


@pytest.fixture
def statements(cell):
    _cond, db = cell
    seen = []

    def record(conn, cursor, statement, parameters, context, many):
        seen.append(' '.join(statement.split()).lower())

    sa.event.listen(db.engine, 'before_cursor_execute', record)
    yield seen
    sa.event.remove(db.engine, 'before_cursor_execute', record)


def _spawning(host='h0'):
    return InstanceUpdate.from_primitive(
        {
            'task_state': states.SPAWNING,
            'host': host,
            'node': host,
            'compute_node_uuid': 'rp-' + host,
        }
    )


def _active():
    return InstanceUpdate.from_primitive(
        {
            'vm_state': states.ACTIVE,
            'task_state': None,
            'power_state': 1,
            'launched_at': '2026-11-30T00:00:00',
        }
    )


def test_the_swap_answers_the_record_as_the_orm_reads_it(cell):
    cond, db = cell
    ctxt = context.get_admin_context()
    spawning = cond.instance_update(
        ctxt, 'i-1', [states.BUILDING], _spawning(), 'h0'
    )
    with db.session() as session:
        assert spawning == Instance(
            **instances.to_dict(instances.get(session, 'i-1'))
        )
    assert spawning.task_state == states.SPAWNING
    assert spawning.metadata == {'k': 'v'}
    assert spawning.accel_uuids == ['a-1']
    active = cond.instance_update(
        ctxt, 'i-1', [states.BUILDING], _active(), 'h0'
    )
    with db.session() as session:
        row = instances.get(session, 'i-1')
        assert active == Instance(**instances.to_dict(row))
        assert row.updated_at is not None
    assert active.vm_state == states.ACTIVE and active.launched_at


def test_a_swap_that_does_not_hold_changes_nothing(cell, statements):
    cond, db = cell
    ctxt = context.get_admin_context()
    attempt = BuildAttempt(host='h9', node='h9', result='success')
    assert (
        cond.instance_update(
            ctxt, 'i-1', [states.BUILDING], _active(), 'h9', attempt
        )
        is None
    )
    # ACTIVE cannot come from ERROR: not even an UPDATE is sent.
    statements.clear()
    assert (
        cond.instance_update(ctxt, 'i-1', [states.DELETED], _active(), 'h0')
        is None
    )
    assert not [s for s in statements if s.startswith('update')]
    with db.session() as session:
        assert instances.get(session, 'i-1').vm_state == states.BUILDING
        assert instances.attempts(session, 'i-1') == []


def test_a_fault_rides_the_swap(cell):
    cond, db = cell
    error = InstanceUpdate.from_primitive(
        {
            'vm_state': states.ERROR,
            'task_state': None,
            'fault': {'message': 'boom', 'details': 'trace', 'code': 500},
        }
    )
    done = cond.instance_update(
        context.get_admin_context(), 'i-2', [states.BUILDING], error
    )
    assert done.vm_state == states.ERROR
    with db.session() as session:
        faults = session.execute(
            sa.text(
                'SELECT message, details FROM instance_faults '
                "WHERE instance_uuid = 'i-2'"
            )
        ).all()
    assert [tuple(f) for f in faults] == [('boom', 'trace')]


def test_a_builds_last_swap_reads_no_attempt_unless_repeated(cell, statements):
    """The first swap to ACTIVE cannot have been recorded before: one
    UPDATE, one SELECT of the record, one INSERT of the attempt. A retry
    (ACTIVE among the expected states: its first reply was lost) looks
    for the attempt first and does not add it again."""
    cond, db = cell
    ctxt = context.get_admin_context()
    attempt = BuildAttempt(host='h0', node='h0', result='success')
    statements.clear()
    done = cond.instance_update(
        ctxt, 'i-1', [states.BUILDING], _active(), 'h0', attempt
    )
    assert done.vm_state == states.ACTIVE
    verbs = [s.split()[0] for s in statements]
    assert verbs.count('update') == 1
    assert verbs.count('insert') == 1
    assert [s for s in statements if 'from build_attempts' in s] == []
    assert len([s for s in statements if s.startswith('select')]) == 1
    statements.clear()
    again = cond.instance_update(
        ctxt, 'i-1', [states.BUILDING, states.ACTIVE], _active(), 'h0', attempt
    )
    assert again.vm_state == states.ACTIVE
    assert [s for s in statements if 'from build_attempts' in s]
    assert not [s for s in statements if s.startswith('insert')]
    with db.session() as session:
        assert [
            (a['host'], a['result'])
            for a in instances.attempts(session, 'i-1')
        ] == [('h0', 'success')]


def test_a_brief_swap_stores_the_same_and_reads_nothing_back(cell, statements):
    """``brief`` (RPC 1.16, a build's last swap): the same UPDATE and
    attempt, no SELECT of the record; the answer is True (None when the
    swap did not hold). What is stored is what a full swap stores."""
    cond, db = cell
    ctxt = context.get_admin_context()
    attempt = BuildAttempt(host='h0', node='h0', result='success')
    statements.clear()
    assert (
        cond.instance_update(
            ctxt,
            'i-1',
            [states.BUILDING],
            _active(),
            'h0',
            attempt,
            None,
            True,
        )
        is True
    )
    assert not [s for s in statements if s.startswith('select')]
    assert [s.split()[0] for s in statements].count('insert') == 1
    full = cond.instance_update(
        ctxt, 'i-2', [states.BUILDING], _active(), 'h0', attempt
    )
    with db.session() as session:
        one, two = (instances.get(session, u) for u in ('i-1', 'i-2'))
        columns = ('vm_state', 'task_state', 'power_state', 'launched_at')
        assert [getattr(one, c) for c in columns] == [
            getattr(two, c) for c in columns
        ]
        assert full.vm_state == one.vm_state == states.ACTIVE
        assert [
            (a['host'], a['result'])
            for a in instances.attempts(session, 'i-1')
        ] == [('h0', 'success')]
    # Not holding any more (ACTIVE now): None, still nothing read.
    assert (
        cond.instance_update(
            ctxt, 'i-1', [states.BUILDING], _active(), 'h0', None, None, True
        )
        is None
    )


def test_the_endpoint_answers_a_brief_swap_and_refuses_a_bad_flag(cell):
    cond, _db = cell
    endpoint = manager.CellConductorManager(cond)
    ctxt = context.get_admin_context()
    kwargs = {
        'instance_uuid': 'i-1',
        'expected_vm_states': [states.BUILDING],
        'updates': _active().to_primitive(),
        'expected_host': 'h0',
    }
    with pytest.raises(rpc.InvalidMessage):
        endpoint.instance_update(ctxt, brief='yes', **kwargs)
    assert endpoint.instance_update(ctxt, brief=True, **kwargs) is True
    assert endpoint.instance_update(ctxt, brief=True, **kwargs) is None
