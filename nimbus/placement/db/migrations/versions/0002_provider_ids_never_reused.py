"""provider ids never reused on SQLite

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29

SQLite gives a new row the largest id plus one: deleting the newest
provider freed its id for the next one. The snapshot cache of
GET /allocation_candidates follows structure writes by provider id, and
a provider deleted and created again (same uuid, name and parent, written
back to the same generation) under the old id looked unchanged: the cache
kept the deleted provider's inventories and traits. ``AUTOINCREMENT``
makes SQLite keep the largest id ever given, as MariaDB's and
PostgreSQL's counters do; on those this revision changes nothing.
"""

from typing import Sequence, Union

from alembic import op

revision: str = '0002'
down_revision: Union[str, Sequence[str], None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def _recreate(autoincrement):
    # SQLite cannot alter a table's key: batch mode copies the table
    # into a new one (rows, ids, indexes and unique constraints kept; the
    # copied ids seed sqlite_sequence).
    if op.get_context().dialect.name != 'sqlite':
        return
    with op.batch_alter_table(
        'resource_providers',
        recreate='always',
        table_kwargs={'sqlite_autoincrement': autoincrement},
    ):
        pass


def upgrade() -> None:
    _recreate(True)


def downgrade() -> None:
    _recreate(False)
