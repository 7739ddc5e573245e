"""The alembic migrations build exactly the schema the models describe.

Runs on the engine ``NIMBUS_TEST_DB`` selects (SQLite by default): a fresh
database is migrated to head, then alembic's autogenerate comparison of
that database against ``models.Base.metadata`` must find nothing to do
(tables, columns, types, nullability, indexes, unique constraints).
"""

from alembic import autogenerate
from alembic import migration
import sqlalchemy as sa

from nimbus.common import db as common_db
from nimbus.placement import db as placement_db
from nimbus.placement.db import models
from tests.functional.placement import fixtures


def _diffs(url):
    engine = sa.create_engine(common_db.normalize_url(url))
    try:
        with engine.connect() as conn:
            context = migration.MigrationContext.configure(
                conn,
                opts={'compare_type': True, 'compare_server_default': False},
            )
            return autogenerate.compare_metadata(context, models.Base.metadata)
    finally:
        engine.dispose()


def test_migrated_schema_matches_the_models(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:
        placement_db.sync(url)
        diffs = _diffs(url)
        common_db.get_database(url).dispose()
    assert diffs == []


def test_the_comparison_sees_a_difference(tmp_path):
    """The check above is not vacuous: a column the migration lacks is
    reported."""
    with fixtures.fresh_database(tmp_path) as url:
        placement_db.sync(url)
        engine = sa.create_engine(common_db.normalize_url(url))
        with engine.begin() as conn:
            conn.execute(
                sa.text('ALTER TABLE traits ADD COLUMN extra INTEGER')
            )
        engine.dispose()
        diffs = _diffs(url)
        common_db.get_database(url).dispose()
    assert [d[0] for d in diffs] == ['remove_column']
    assert diffs[0][3].name == 'extra'
