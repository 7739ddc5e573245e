"""The generation compare-and-swap of a write whose counter bump is still
pending (``late_lock``), on the engine ``NIMBUS_TEST_DB`` selects. On
MariaDB both are one multi-table UPDATE (``objects.base._BUMP_INCREMENT``):
it must move the counter and the generation together, or neither when
the generation changed meanwhile."""

import pytest

from nimbus.placement import db as placement_db
from nimbus.placement import exception
from nimbus.placement.db import models as m
from nimbus.placement.objects import base
from nimbus.placement.objects import resource_provider as rp_obj
from tests.functional.placement import fixtures

RP = '00000000-0000-0000-0000-0000000000d1'


@pytest.fixture
def pdb(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:
        placement_db.sync(url)
        pdb = base.PlacementDB(url)
        pdb.write(rp_obj.create, RP, 'd1')
        yield pdb
        pdb.database.dispose()


def _generation(pdb):
    return pdb.read(rp_obj.get_ref, RP)['generation']


@pytest.mark.parametrize(
    'structure, usage', [(True, False), (False, True), (True, True)]
)
def test_the_guard_moves_the_counters_and_the_generation(
    pdb, structure, usage
):
    before = pdb.read(base.read_state)

    def write(conn):
        rp = rp_obj.get_ref(conn, RP)
        return base.increment_generation(conn, rp['id'], rp['generation'])

    assert (
        pdb.write(write, structure=structure, usage=usage, late_lock=True) == 1
    )
    assert _generation(pdb) == 1
    after = pdb.read(base.read_state)
    assert after == (before[0] + structure, before[1] + usage)


def test_a_changed_generation_fails_the_write_and_changes_nothing(pdb):
    before = pdb.read(base.read_state)
    seen = {}

    def write(conn):
        rp = rp_obj.get_ref(conn, RP)
        try:
            base.increment_generation(conn, rp['id'], rp['generation'] + 5)
        except exception.ConcurrentUpdate:
            # inside the transaction
            seen['state'] = base.read_state(conn)
            seen['generation'] = rp_obj.get_ref(conn, RP)['generation']
            seen['pending'] = base._PENDING in conn.info
            raise

    with pytest.raises(exception.ConcurrentUpdate):
        pdb.write(write, late_lock=True)
    assert seen['generation'] == 0
    if pdb.dialect in base._MULTI_TABLE_UPDATE:
        # one statement moved nothing, the bump is still pending
        assert seen['state'] == before and seen['pending']
    assert pdb.read(base.read_state) == before
    assert _generation(pdb) == 0


def test_a_second_guard_in_the_same_write_bumps_once(pdb):
    before = pdb.read(base.read_state)

    def write(conn):
        rp = rp_obj.get_ref(conn, RP)
        gen = base.increment_generation(conn, rp['id'], rp['generation'])
        return base.increment_generation(conn, rp['id'], gen)

    assert pdb.write(write, late_lock=True) == 2
    assert pdb.read(base.read_state) == (before[0] + 1, before[1])
    assert _generation(pdb) == 2
    with pdb.engine.connect() as conn:
        assert conn.execute(m.RP.select()).all()[0].generation == 2
