"""The copy of an instance between two cell databases for a cross-cell
move (:mod:`nimbus.db.cell_instances.copies`, ``instance_actions``'
copy and purge, ``cell_migrations.copy``; the rows copied by their
tables' columns, :mod:`nimbus.common.db.row_copy`), and a hidden copy
left out of what a cell lists and counts. Real SQLite cell databases."""

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from nimbus import db as nimbus_db
from nimbus.common import db as common_db
from nimbus.common.db import row_copy
from nimbus.common import instance_states as states
from nimbus.db import cell_instances
from nimbus.db import cell_migrations
from nimbus.db import instance_actions
from nimbus.db.cell import models
from nimbus.db.cell_instances import copies
from nimbus.db.cell_instances import queries

UUID = '6a1e8f4e-0000-4000-8000-0000000000c1'
FLAVOR = {'flavorid': '1', 'vcpus': 1, 'memory_mb': 512, 'root_gb': 1}


@pytest.fixture
def cells(tmp_path):
    dbs = []
    for name in ('source', 'target'):
        url = 'sqlite:///%s/%s.db' % (tmp_path, name)
        nimbus_db.sync_cell(url)
        dbs.append(common_db.get_database(url))
    source, _target = dbs
    with source.session() as session:
        cell_instances.create(
            session,
            {
                'uuid': UUID,
                'project_id': 'p1',
                'host': 'host-1',
                'node': 'host-1',
                'vm_state': states.ACTIVE,
                'task_state': states.RESIZE_PREP,
                'flavor': FLAVOR,
                'metadata': {'k': 'v'},
                'accel_uuids': ['arq-1'],
            },
        )
        cell_instances.add_fault(session, UUID, 'an old fault')
        instance_actions.start(session, UUID, 'resize', 'req-1', 'u', 'p1')
        instance_actions.event_finish(
            session, UUID, 'req-1', 'conductor_migrate_server', None, 'Success'
        )
    yield dbs
    common_db.dispose_all()


def test_the_copy_carries_the_row_faults_and_actions_hidden(cells):
    source, target = cells
    with source.session() as s, target.session() as t:
        copies.copy_instance(s, t, UUID, hidden=True)
        instance_actions.copy_missing(s, t, UUID)
        instance_actions.copy_missing(s, t, UUID)  # repeated: no doubles
    with target.session() as session:
        row = cell_instances.get(session, UUID)
        assert row.hidden is True
        copied = cell_instances.to_dict(row)
        assert copied['metadata'] == {'k': 'v'}
        assert copied['accel_uuids'] == ['arq-1']
        assert copied['flavor'] == FLAVOR
        assert copied['task_state'] == states.RESIZE_PREP
        faults = queries.faults(session, [UUID])
        assert [f.message for f in faults] == ['an old fault']
        action = instance_actions.get(session, UUID, 'req-1')
        assert [e['event'] for e in action['events']] == [
            'conductor_migrate_server'
        ]
        # Hidden: not listed, counted or audited in the target.
        assert queries.flavors_of_project(session, 'p1') == []
        assert list(queries.placed(session)) == []
        assert queries.audit_rows(session) == []


def test_copy_again_replaces_and_purge_removes(cells):
    source, target = cells
    for _ in range(2):
        with source.session() as s, target.session() as t:
            copies.copy_instance(s, t, UUID, hidden=True)
    with target.session() as session:
        assert queries.existing(session, [UUID]) == {UUID}
        assert len(queries.faults(session, [UUID])) == 1
        copies.purge(session, UUID)
        instance_actions.purge(session, UUID)
    with target.session() as session:
        assert cell_instances.get(session, UUID) is None
        assert queries.faults(session, [UUID]) == []
    with source.session() as session:  # the source is untouched
        assert cell_instances.get(session, UUID).hidden is False


def test_the_migration_copy_keeps_its_uuid(cells):
    source, target = cells
    with source.session() as session:
        migration = cell_migrations.create(
            session,
            {
                'instance_uuid': UUID,
                'migration_type': 'resize',
                'status': 'pre-migrating',
                'cross_cell_move': True,
            },
        )
    with source.session() as s, target.session() as t:
        cell_migrations.copy(s, t, migration['uuid'], hidden=True)
        cell_migrations.copy(s, t, migration['uuid'], hidden=True)
        assert cell_migrations.copy(s, t, 'no-such-migration') is None
    with target.session() as session:
        (copied,) = cell_migrations.for_instance(session, UUID)
        assert copied['uuid'] == migration['uuid']
        assert (copied['hidden'], copied['cross_cell_move']) == (True, True)
        assert cell_migrations.listing(session) == []  # hidden
        cell_migrations.purge(session, migration['uuid'])
        assert cell_migrations.for_instance(session, UUID) == []


def _columns(row, skip=('id',)):
    return {
        c.key: getattr(row, c.key)
        for c in sa.inspect(row).mapper.column_attrs
        if c.key not in skip
    }


def _a_value(column, name):
    try:
        kind = column.type.python_type
    except NotImplementedError:
        kind = None
    values = {int: 7, bool: True, str: 'x-' + name[:30]}
    return values.get(kind, {'k': name})  # JSON text: a dict


def test_every_column_is_carried(cells):
    """Each copied table, column by column (the model's columns, so a
    column added later is checked too)."""
    source, target = cells
    # Every column of the model holds a value, so one the copy drops
    # shows as a difference.
    values = {
        name: _a_value(models.Migration.__table__.c[name], name)
        for name in cell_migrations._COLUMNS
    }
    values.update(
        instance_uuid=UUID, migration_type='resize', status='pre-migrating'
    )
    with source.session() as s:
        migration = cell_migrations.create(s, values)
    with source.session() as s, target.session() as t:
        copies.copy_instance(s, t, UUID, hidden=True)
        instance_actions.copy_missing(s, t, UUID)
        cell_migrations.copy(s, t, migration['uuid'], hidden=True)
    with source.session() as s, target.session() as t:
        for model, key, skip in (
            (models.Migration, models.Migration.instance_uuid, ('hidden',)),
            (models.Instance, models.Instance.uuid, ('id', 'hidden')),
            (models.InstanceFault, models.InstanceFault.instance_uuid, ()),
            (models.InstanceAction, models.InstanceAction.instance_uuid, ()),
        ):
            query = sa.select(model).where(key == UUID).order_by(model.id)
            mine = list(s.execute(query).scalars())
            theirs = list(t.execute(query).scalars())
            assert mine and len(mine) == len(theirs)
            for a, b in zip(mine, theirs, strict=True):
                assert _columns(a, ('id',) + skip) == _columns(
                    b, ('id',) + skip
                )
        query = sa.select(models.InstanceActionEvent).order_by(
            models.InstanceActionEvent.id
        )
        (mine,) = s.execute(query).scalars()
        (theirs,) = t.execute(query).scalars()
        assert _columns(mine, ('id', 'action_id')) == _columns(
            theirs, ('id', 'action_id')
        )


class _Base(orm.DeclarativeBase):
    pass


class _Grown(_Base):
    """A table with a column no copy names."""

    __tablename__ = 'grown'
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(32))
    blob = sa.Column(sa.JSON)
    added_later = sa.Column('added_later_col', sa.String(32))


def test_copy_row_follows_the_columns():
    row = _Grown(id=7, name='n', blob={'a': [1]}, added_later='x')
    copy = row_copy.copy_row(row, name='m')
    assert (copy.id, copy.name, copy.added_later) == (None, 'm', 'x')
    assert copy.blob == {'a': [1]} and copy.blob is not row.blob
    assert row_copy.column_values(row, exclude=('id', 'added_later_col')) == {
        'name': 'n',
        'blob': {'a': [1]},
    }
    with pytest.raises(ValueError):
        row_copy.copy_row(row, nope=1)
