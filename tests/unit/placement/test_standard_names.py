"""The standard resource classes and traits a Placement database holds
(``sync_standard``): the missing ones added, custom ones kept, a name
that is neither standard nor custom dropped (a trait only when no
provider has it)."""

import pytest
import sqlalchemy as sa

from nimbus.placement import db as placement_db
from nimbus.placement.db import models as m
from nimbus.placement.objects import base
from nimbus.placement.objects import resource_class
from nimbus.placement.objects import trait
from tests.functional.placement import fixtures


@pytest.fixture
def pdb(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:
        placement_db.sync(url)
        pdb = base.PlacementDB(url)
        yield pdb
        pdb.database.dispose()


def _names(conn, table):
    return {r[0] for r in conn.execute(sa.select(table.c.name))}


@pytest.mark.parametrize(
    'module, table, custom',
    [(resource_class, m.RC, 'CUSTOM_GOLD'), (trait, m.TRAIT, 'CUSTOM_RACK')],
)
def test_sync_standard(pdb, module, table, custom):
    now = base.utcnow()

    def seed(conn):
        conn.execute(
            table.insert(),
            [
                {'name': custom, 'created_at': now},
                {'name': 'RETIRED_NAME', 'created_at': now},
            ],
        )

    pdb.write(seed)
    pdb.write(module.sync_standard)
    names = pdb.read(_names, table)
    assert set(module.STANDARD) <= names
    assert custom in names and 'RETIRED_NAME' not in names
    pdb.write(module.sync_standard)  # again: nothing changes
    assert pdb.read(_names, table) == names
