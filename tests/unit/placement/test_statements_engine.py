"""The direct path answers as SQLAlchemy on the engine ``NIMBUS_TEST_DB``
selects (SQLite by default; MariaDB with ``mysql``): a provider's
inventory rows with their float ``allocation_ratio`` (on MariaDB a column
SQLAlchemy converts, through ``to_float``) and the ids of a few resource
class or trait names (one bound parameter per name instead of an
expanding ``IN``)."""

import pytest

from nimbus.placement import db as placement_db
from nimbus.placement.db import models as m
from nimbus.placement.objects import base
from nimbus.placement.objects import inventory
from nimbus.placement.objects import resource_class
from nimbus.placement.objects import resource_provider as rp_obj
from nimbus.placement.objects import statements
from tests.functional.placement import fixtures

RP = '00000000-0000-0000-0000-0000000000b1'


@pytest.fixture
def pdb(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:
        placement_db.sync(url)
        pdb = base.PlacementDB(url)
        pdb.write(resource_class.sync_standard)
        yield pdb
        pdb.database.dispose()


def _ran_direct(stmt, conn, params):
    plan = statements._plan(
        stmt, conn.dialect, tuple(sorted(params)) if params else ()
    )
    return plan is not statements._SLOW


def test_inventory_rows_with_a_float_ratio_answer_as_sqlalchemy(pdb):
    pdb.write(rp_obj.create, RP, 'b1')
    pdb.write(
        lambda c: inventory.set_all(
            c,
            rp_obj.get_ref(c, RP),
            0,
            {
                'VCPU': {'total': 32, 'allocation_ratio': 16.0},
                'MEMORY_MB': {'total': 1024, 'allocation_ratio': 1.5},
            },
        )
    )
    cols = inventory.EXISTING_COLUMNS

    def both(conn):
        fast = statements.Connection(conn)
        return (
            rp_obj.get_ref_with(fast, RP, *cols),
            rp_obj.get_ref_with(conn, RP, *cols),
            _ran_direct(
                rp_obj._REF_WITH[(True, *map(id, cols))], conn, {'b_uuid': RP}
            ),
        )

    mine, theirs, direct = pdb.read(both)
    assert direct
    assert mine[0] == theirs[0]
    assert sorted(mine[1]) == sorted(theirs[1])
    ratios = sorted(r[-1] for r in mine[1])
    assert ratios == [1.5, 16.0]
    assert all(type(r) is float for r in ratios)


@pytest.mark.parametrize('count', [1, 2, 4, 5])
def test_a_few_names_are_looked_up_as_sqlalchemy_does(pdb, count):
    names = ['CUSTOM_N%d' % i for i in range(count)]
    for n in names:
        pdb.write(resource_class.create, n)

    def both(conn):
        fast = statements.Connection(conn)
        mine = base.name_ids(fast, m.RC, names + ['CUSTOM_MISSING'])
        theirs = dict(
            conn.execute(
                m.RC.select()
                .with_only_columns(m.RC.c.name, m.RC.c.id)
                .where(m.RC.c.name.in_(names))
            ).all()
        )
        return mine, theirs

    mine, theirs = pdb.read(both)
    assert mine == theirs
    assert set(mine) == set(names)


def test_one_name_per_parameter_takes_the_direct_path(pdb):
    stmt = base._NAME_IDS_FEW[('traits', 3)]
    with pdb.engine.connect() as conn:
        assert _ran_direct(stmt, conn, {'n0': 'A', 'n1': 'B', 'n2': 'C'})
