"""The super conductor's ARQ steps of a cross-cell move
(nimbus/conductor/cross_cell_arqs.py): what confirm, revert and an undo
delete, never the ARQs the other end still holds. Real SQLite cell
databases; the accelerator client is a recording fake (the whole move:
tests/functional/test_cross_cell_accelerators.py)."""

import types

import pytest

from nimbus.common import db as common_db
from nimbus.conductor import cross_cell_arqs
from nimbus import db as nimbus_db
from nimbus.db import cell_migrations

UUID = '6a1e8f4e-0000-4000-8000-000000000001'
MIGRATION = '6a1e8f4e-0000-4000-8000-0000000000aa'


class Binder:
    def __init__(self, held=()):
        self.deleted = []
        self.client = types.SimpleNamespace(
            get_arqs_for_instance=lambda ctxt, uuid: list(held)
        )

    def delete(self, ctxt, uuids):
        self.deleted.append(sorted(uuids))


def _migration(details):
    return {
        'uuid': MIGRATION,
        'instance_uuid': UUID,
        'migration_type': 'resize',
        'status': 'pre-migrating',
        'cross_cell_move': True,
        'details': details,
    }


@pytest.fixture
def cells(tmp_path):
    dbs = {}
    for name in ('source', 'target'):
        url = 'sqlite:///%s/%s.db' % (tmp_path, name)
        nimbus_db.sync_cell(url)
        dbs[name] = common_db.get_database(url)
    yield dbs
    common_db.dispose_all()


def _move(cells, binder):
    return types.SimpleNamespace(
        conductor=types.SimpleNamespace(accelerator=binder),
        ctxt=None,
        uuid=UUID,
        source='source',
        target='target',
        db=lambda cell: cells[cell],
    )


def test_confirm_and_revert_free_only_their_side():
    binder = Binder()
    conductor = types.SimpleNamespace(accelerator=binder)
    migration = _migration(
        {
            'source_accel_uuids': ['a', 'shared'],
            'dest_accel_uuids': ['b', 'shared'],
        }
    )
    cross_cell_arqs.confirm(conductor, None, migration)
    cross_cell_arqs.revert(conductor, None, migration)
    assert binder.deleted == [['a'], ['b']]
    assert cross_cell_arqs.switch_updates(migration) == {
        'accel_uuids': ['b', 'shared']
    }


def test_prep_details_only_with_a_device_profile():
    selected = types.SimpleNamespace(
        allocation_request={'mappings': {'_device_profile_0': ['rp-1']}}
    )
    plain = dict(_migration({}), new_flavor={'extra_specs': {}})
    assert cross_cell_arqs.prep_details(plain, selected) == {}
    fpga = dict(
        plain, new_flavor={'extra_specs': {'accel:device_profile': 'fpga'}}
    )
    assert cross_cell_arqs.prep_details(fpga, selected) == {
        'dest_device_mappings': {'_device_profile_0': ['rp-1']}
    }


def test_take_recorded_copies_the_target_record_to_the_source(cells):
    migration = _migration({'source_accel_uuids': ['a']})
    with cells['source'].session() as session:
        cell_migrations.create(session, migration)
    with cells['target'].session() as session:
        cell_migrations.create(
            session,
            _migration(
                {'source_accel_uuids': ['a'], 'dest_accel_uuids': ['b']}
            ),
        )
    cross_cell_arqs.take_recorded(_move(cells, Binder()), migration)
    assert migration['details']['dest_accel_uuids'] == ['b']
    with cells['source'].session() as session:
        stored = cell_migrations.get(session, MIGRATION)
    assert stored['details'] == {
        'source_accel_uuids': ['a'],
        'dest_accel_uuids': ['b'],
    }


def test_undo_deletes_recorded_and_unrecorded_destination_arqs(cells):
    """Recorded in the target only (the source never learnt them), plus
    one the destination bound and never recorded; the source's ARQ (on
    the source host) and another host's are left alone."""
    migration = _migration({'source_accel_uuids': ['a']})
    with cells['source'].session() as session:
        cell_migrations.create(session, migration)
    with cells['target'].session() as session:
        cell_migrations.create(
            session,
            _migration(
                {'source_accel_uuids': ['a'], 'dest_accel_uuids': ['b']}
            ),
        )
    binder = Binder(
        held=[
            {'uuid': 'a', 'hostname': 'src'},
            {'uuid': 'b', 'hostname': 'dst'},
            {'uuid': 'c', 'hostname': 'dst'},
            {'uuid': 'd', 'hostname': 'elsewhere'},
        ]
    )
    assert cross_cell_arqs.undo(_move(cells, binder), migration, 'dst') == [
        'b',
        'c',
    ]
    assert binder.deleted == [['b', 'c']]


def test_undo_without_anything_bound_deletes_nothing(cells):
    binder = Binder(held=[{'uuid': 'a', 'hostname': 'src'}])
    migration = _migration({'source_accel_uuids': ['a']})
    assert cross_cell_arqs.undo(_move(cells, binder), migration, 'dst') == []
    assert binder.deleted == []
