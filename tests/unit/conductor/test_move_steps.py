"""The cell conductor's side of a cold move (RPC 1.6): move_step swaps
the migration's status and the instance's state together or not at all,
on a real SQLite cell database; the endpoint refuses malformed messages;
take_unconfirmed takes only the moves past the window on their
destination."""

import pytest

from nimbus.common import context
from nimbus.common import db as common_db
from nimbus.common import instance_states as states
from nimbus.common import rpc
from nimbus.conductor import cell_conductor
from nimbus.conductor import cell_moves
from nimbus.conductor import manager
from nimbus.db import cell_instances as instances
from nimbus.db import cell_migrations
from nimbus.db import instance_actions
from nimbus import db as nimbus_db

CTX = context.get_admin_context()


@pytest.fixture
def cell(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'cell.sqlite')
    nimbus_db.sync_cell(url)
    db = common_db.get_database(url)
    with db.session() as session:
        instances.create(
            session,
            {
                'uuid': 'i-1',
                'project_id': 'p',
                'host': 'h1',
                'vm_state': states.ACTIVE,
                'task_state': states.RESIZE_PREP,
                'flavor': {'flavorid': '1', 'vcpus': 1},
            },
        )
        instance_actions.start(session, 'i-1', 'resize', 'req-1', 'u', 'p')
        cell_migrations.create(
            session,
            {
                'uuid': 'm-1',
                'instance_uuid': 'i-1',
                'migration_type': 'resize',
                'status': 'pre-migrating',
                'source_compute': 'h1',
                'dest_compute': 'h2',
            },
        )
    yield cell_conductor.CellConductor(None, db, None, None), db
    db.dispose()


def _step(db, statuses, status, tasks, updates):
    return cell_moves.move_step(
        db, 'i-1', 'm-1', statuses, status, [states.ACTIVE], tasks, updates
    )


def test_both_swaps_or_neither(cell):
    _cond, db = cell
    # The migration is not migrating yet: nothing changes.
    assert (
        _step(
            db,
            ['migrating'],
            'post-migrating',
            [states.RESIZE_PREP],
            {'task_state': states.RESIZE_MIGRATED},
        )
        is None
    )
    # The instance's task is not the expected one: the migration's status
    # is not changed either.
    assert (
        _step(
            db,
            ['pre-migrating'],
            'migrating',
            [states.RESIZE_FINISH],
            {'task_state': states.RESIZE_MIGRATING},
        )
        is None
    )
    assert cell_moves.migration_of(db, 'm-1').status == 'pre-migrating'
    instance, migration = _step(
        db,
        ['pre-migrating'],
        'migrating',
        [states.RESIZE_PREP],
        {'task_state': states.RESIZE_MIGRATING, 'flavor': {'flavorid': '2'}},
    )
    assert migration.status == 'migrating'
    assert instance.task_state == states.RESIZE_MIGRATING
    assert instance.flavor == {'flavorid': '2'}


@pytest.mark.parametrize(
    'changes',
    [
        {'expected_vm_states': ['flying']},
        {'expected_task_states': ['teleporting']},
        {'status': 'teleported'},
        {'updates': {'task_state': 'teleporting'}},
        {'updates': {'colour': 'red'}},
    ],
)
def test_malformed_steps_are_refused(cell, changes):
    endpoint = manager.CellConductorManager(cell[0])
    kwargs = dict(
        instance_uuid='i-1',
        migration_uuid='m-1',
        expected_statuses=['pre-migrating'],
        status='migrating',
        expected_vm_states=[states.ACTIVE],
        expected_task_states=[states.RESIZE_PREP],
        updates={'task_state': states.RESIZE_MIGRATING},
    )
    kwargs.update(changes)
    with pytest.raises(rpc.InvalidMessage):
        endpoint.move_step(CTX, **kwargs)
    assert cell_moves.migration_of(cell[1], 'm-1').status == 'pre-migrating'


def test_take_unconfirmed_on_the_destination_only(cell):
    _cond, db = cell
    with db.session() as session:
        cell_migrations.set_status(session, 'm-1', 'finished')
        instances.transition(
            session,
            'i-1',
            [states.ACTIVE],
            {'vm_state': states.RESIZED, 'task_state': None},
        )
    ids = iter(['req-a', 'req-b'])
    assert cell_moves.take_unconfirmed(db, 'h1', 0, lambda u: next(ids)) == []
    taken = cell_moves.take_unconfirmed(db, 'h2', 0, lambda u: next(ids))
    assert [m.uuid for m in taken] == ['m-1']
    assert taken[0].status == 'confirming'
    assert taken[0].details['request_id'] == 'req-a'
    with db.session() as session:
        row = instances.get(session, 'i-1')
        assert row.task_state == states.RESIZE_CONFIRMING
        assert instance_actions.get(session, 'i-1', 'req-a') is not None
    # Taken once.
    assert cell_moves.take_unconfirmed(db, 'h2', 0, lambda u: 'req-c') == []
