"""Models and alembic migrations of the API and cell databases."""

import os

from nimbus.common import db as common_db

_HERE = os.path.dirname(os.path.abspath(__file__))
API_MIGRATIONS = os.path.join(_HERE, 'api', 'migrations')
CELL_MIGRATIONS = os.path.join(_HERE, 'cell', 'migrations')


def sync_api(url):
    common_db.sync(url, API_MIGRATIONS)


def sync_cell(url):
    common_db.sync(url, CELL_MIGRATIONS)
