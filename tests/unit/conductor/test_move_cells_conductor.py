"""The super conductor's migrate_server (nimbus/conductor/resize.py) and
the cells of a move: the spec it asks the scheduler with (the source
cell always, the cell limit without the policy), and a destination in
another cell undone with a fault when the computes cannot take it. Real SQLite API and cell databases;
the scheduler, placement and computes are recording fakes."""

import types

import pytest

from nimbus.common import db as common_db
from nimbus.common import instance_states as states
from nimbus.common.objects import RequestSpec
from nimbus.common.objects import selection as selection_obj
from nimbus.conductor import resize
from nimbus import db as nimbus_db
from nimbus.db import cell_instances
from nimbus.db import cell_migrations
from nimbus.db import request_specs
from nimbus.db.cell_instances import queries

UUID = '6a1e8f4e-0000-4000-8000-000000000001'
CELL = '11111111-1111-1111-1111-111111111111'
OTHER = '22222222-2222-2222-2222-222222222222'
FLAVOR = {
    'flavorid': '1',
    'name': 'm1.small',
    'vcpus': 1,
    'memory_mb': 512,
    'root_gb': 1,
    'ephemeral_gb': 0,
    'swap': 0,
    'extra_specs': {},
}


class Cells:
    def __init__(self, db):
        self.cell = types.SimpleNamespace(uuid=CELL, name='cell1')
        self._db = db

    def by_uuid(self, uuid):
        assert uuid == CELL
        return self.cell

    def db(self, cell):
        return self._db


class Scheduler:
    def __init__(self, cell_uuid):
        self.cell_uuid = cell_uuid
        self.specs = []

    def select_destinations(self, ctxt, spec, uuids, alternates):
        self.specs.append(spec)
        return [
            [
                selection_obj.Selection(
                    service_host='host-9',
                    nodename='host-9',
                    cell_uuid=self.cell_uuid,
                    allocation_request={'allocations': {}},
                )
            ]
        ]

    def update_instance_info(self, ctxt, host, info):
        pass


class Recorder:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kw: self.calls.append((name, args, kw))


@pytest.fixture
def conductor(tmp_path):
    api_url = 'sqlite:///%s/api.db' % tmp_path
    cell_url = 'sqlite:///%s/cell.db' % tmp_path
    nimbus_db.sync_api(api_url)
    nimbus_db.sync_cell(cell_url)
    api_db = common_db.get_database(api_url)
    cell_db = common_db.get_database(cell_url)
    with api_db.session() as session:
        request_specs.add(
            session,
            UUID,
            RequestSpec.from_primitive(
                {'flavor': FLAVOR, 'instance_uuids': [UUID]}
            ),
        )
    with cell_db.session() as session:
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
            },
        )
    computes = Recorder()
    yield types.SimpleNamespace(
        cells=Cells(cell_db),
        cell_db=cell_db,
        api_db=api_db,
        conf=types.SimpleNamespace(allow_resize_to_same_host=False),
        placement=Recorder(),
        accelerator=None,
        computes=computes,
        compute_api=lambda cell: computes,
    )
    common_db.dispose_all()


def _migrate(conductor, scheduler, cross_cell):
    conductor.scheduler = scheduler
    resize.migrate_server(
        conductor, None, UUID, CELL, None, None, 'req-1', cross_cell
    )
    with conductor.cell_db.session() as session:
        (migration,) = cell_migrations.for_instance(session, UUID)
        row = cell_instances.get(session, UUID)
        faults = [f.message for f in queries.faults(session, [UUID])]
    return migration, row, faults


def test_without_the_policy_the_scheduler_is_held_to_the_cell(conductor):
    scheduler = Scheduler(CELL)
    migration, row, _ = _migrate(conductor, scheduler, cross_cell=False)
    (spec,) = scheduler.specs
    assert spec.extra['source_cell_uuid'] == CELL
    assert spec.extra['requested_destination'] == {'cell': CELL}
    assert migration['status'] == 'pre-migrating'
    assert migration['dest_compute'] == 'host-9'
    assert [c[0] for c in conductor.computes.calls] == ['prep_resize']


def test_another_cell_the_computes_cannot_take_is_undone(conductor):
    """Computes capped below compute RPC 1.7 cannot take a cross-cell
    move: the move is undone with a fault (a move they can take is
    tests/functional/test_cross_cell_resize.py's)."""
    conductor.computes.takes_cross_cell_moves = lambda: False
    scheduler = Scheduler(OTHER)
    migration, row, faults = _migrate(conductor, scheduler, cross_cell=True)
    (spec,) = scheduler.specs
    assert spec.extra['source_cell_uuid'] == CELL
    assert 'requested_destination' not in spec.extra
    assert migration['status'] == 'error'
    assert (row.host, row.vm_state, row.task_state) == (
        'host-1',
        states.ACTIVE,
        None,
    )
    assert 'another cell' in faults[-1] and '1.7' in faults[-1]
    assert conductor.computes.calls == []
    # The source's allocation went to the migration, then came back.
    moves = [c[1][1:3] for c in conductor.placement.calls]
    assert moves == [(UUID, migration['uuid']), (migration['uuid'], UUID)]


@pytest.mark.parametrize(
    'cap_ok,accelerator,reason',
    [(False, object(), '1.8'), (True, None, 'no accelerator service')],
)
def test_a_server_with_accelerators_needs_1_8_and_the_service(
    conductor, cap_ok, accelerator, reason
):
    """A server with ARQs is carried to another cell only by computes
    that read compute RPC 1.8 and a super conductor with an accelerator
    client (the move itself: tests/functional/test_cross_cell_accelerators.py)."""
    import sqlalchemy as sa

    from nimbus.db.cell import models

    with conductor.cell_db.session() as session:
        session.execute(
            sa.update(models.Instance)
            .where(models.Instance.uuid == UUID)
            .values(accel_uuids=['arq-1'])
        )
    conductor.computes.takes_cross_cell_moves = lambda: True
    conductor.computes.takes_cross_cell_arqs = lambda: cap_ok
    conductor.accelerator = accelerator
    migration, row, faults = _migrate(conductor, Scheduler(OTHER), True)
    assert migration['status'] == 'error'
    assert (row.host, row.task_state) == ('host-1', None)
    assert 'another cell' in faults[-1] and reason in faults[-1]
    assert conductor.computes.calls == []
