"""A build request deleted after its instance was written into a cell: both
the hand-off's one-at-a-time path and its multi-create batch mark the
cell's record deleted and release the claim (one method,
``Handoff.undo_vanished``).

Real SQLite API and cell databases; placement is a recording fake."""

import types as types_ns

import pytest
import sqlalchemy as sa

from nimbus.common import db as common_db
from nimbus.common.db import types
from nimbus.common import instance_states as states
from nimbus.conductor import handoff
from nimbus import db as nimbus_db
from nimbus.db import build_requests
from nimbus.db import cell_instances as instances
from nimbus.db.api import models


class FakePlacement:
    def __init__(self):
        self.removed = []

    def remove_allocations(self, ctxt, consumer):
        self.removed.append(consumer)


class OneCell:
    """The ``cells`` dependency with a single cell database."""

    def __init__(self, database):
        self.database = database

    def db(self, cell):
        return self.database


@pytest.fixture
def cell_db(tmp_path):
    url = 'sqlite:///%s/cell1.db' % tmp_path
    nimbus_db.sync_cell(url)
    yield common_db.get_database(url)
    common_db.dispose_all()


def _building(cell_db, uuid):
    with cell_db.session() as session:
        instances.create(
            session,
            {'uuid': uuid, 'project_id': 'p', 'flavor': {'name': 'm1'}},
        )


def _state(cell_db, uuid):
    with cell_db.session() as session:
        row = instances.get(session, uuid)
        return row.vm_state, row.deleted


def test_undo_marks_the_cell_record_deleted_and_frees_the_claim(cell_db):
    _building(cell_db, 'u1')
    placement = FakePlacement()
    handoff.Handoff(
        None, None, OneCell(cell_db), None, placement
    ).undo_vanished(None, 'cell1', 'u1')

    assert _state(cell_db, 'u1') == (states.DELETED, True)
    assert placement.removed == ['u1']


def test_undo_leaves_an_instance_that_already_left_building(cell_db):
    _building(cell_db, 'u1')
    with cell_db.session() as session:
        instances.transition(
            session, 'u1', [states.BUILDING], {'vm_state': states.ACTIVE}
        )
    placement = FakePlacement()
    handoff.Handoff(
        None, None, OneCell(cell_db), None, placement
    ).undo_vanished(None, 'cell1', 'u1')

    assert _state(cell_db, 'u1')[0] == states.ACTIVE


def test_one_at_a_time_mapping_of_a_vanished_request_undoes_it(
    api_db, cell_db
):
    _building(cell_db, 'u1')
    placement = FakePlacement()
    cells = handoff.Handoff(None, api_db, OneCell(cell_db), None, placement)

    # No build request for u1 in the API database: it was deleted.
    mapped = cells._map_to_cell(None, 'cell1', 'u1', lease='lease-1')

    assert mapped is False
    assert _state(cell_db, 'u1') == (states.DELETED, True)
    assert placement.removed == ['u1']


def _leased_request(api_db, uuid, token):
    with api_db.session() as session:
        session.add(
            models.BuildRequest(
                instance_uuid=uuid,
                project_id='p',
                instance={},
                schedule_token=token,
                schedule_started_at=types.utcnow(),
            )
        )


def _deleted_by_the_user_first(monkeypatch, name):
    """``build_requests.<name>`` deletes the build requests itself before
    its locked delete: the user's DELETE that lands between the hand-off's
    read of a build request and its ending of it."""
    original = getattr(build_requests, name)

    def racing(session, uuids, token):
        many = not isinstance(uuids, str)
        session.execute(
            sa.delete(models.BuildRequest).where(
                models.BuildRequest.instance_uuid.in_(
                    list(uuids) if many else [uuids]
                )
            )
        )
        return original(session, uuids, token)

    monkeypatch.setattr(build_requests, name, racing)


def test_a_request_deleted_before_its_locked_end_is_undone_one_at_a_time(
    api_db, cell_db, monkeypatch
):
    """Before, the locked delete's miss read as a lease taken over: the
    instance stayed BUILDING in its cell with no build sent, and the
    build check later rescheduled it to ACTIVE although its user had
    deleted it (a fault row of test-faults-quick counted it)."""
    _building(cell_db, 'u1')
    _leased_request(api_db, 'u1', 'lease-1')
    _deleted_by_the_user_first(monkeypatch, 'delete_leased')
    placement = FakePlacement()
    cells = handoff.Handoff(None, api_db, OneCell(cell_db), None, placement)

    mapped = cells._map_to_cell(None, 'cell1', 'u1', lease='lease-1')

    assert mapped is False
    assert _state(cell_db, 'u1') == (states.DELETED, True)
    assert placement.removed == ['u1']


def test_a_request_deleted_before_its_locked_end_is_undone_in_a_batch(
    api_db, cell_db, monkeypatch
):
    for uuid in ('u1', 'u2'):
        _building(cell_db, uuid)
        _leased_request(api_db, uuid, 'lease-1')
    _deleted_by_the_user_first(monkeypatch, 'delete_leased_many')
    placement = FakePlacement()
    cells = handoff.Handoff(None, api_db, OneCell(cell_db), None, placement)
    cell = types_ns.SimpleNamespace(id=None, name='cell1')

    mapped = cells._map_many(
        None, {'cell1': (cell, [('u1', []), ('u2', [])])}, 'lease-1'
    )

    assert mapped == set()
    assert _state(cell_db, 'u1') == (states.DELETED, True)
    assert _state(cell_db, 'u2') == (states.DELETED, True)
    assert sorted(placement.removed) == ['u1', 'u2']


def test_a_lease_taken_over_is_still_left_to_its_holder(api_db, cell_db):
    _building(cell_db, 'u1')
    _leased_request(api_db, 'u1', 'the-new-holder')
    placement = FakePlacement()
    cells = handoff.Handoff(None, api_db, OneCell(cell_db), None, placement)

    mapped = cells._map_to_cell(None, 'cell1', 'u1', lease='lease-1')

    assert mapped is False
    assert _state(cell_db, 'u1') == (states.BUILDING, False)
    assert placement.removed == []
