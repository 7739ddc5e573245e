"""Accelerator database: models and alembic migrations."""

import os

from nimbus.common import db as common_db

MIGRATIONS = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), 'migrations'
)


def sync(url):
    """Upgrade the accelerator database at ``url`` to the newest schema."""
    common_db.sync(url, MIGRATIONS)
