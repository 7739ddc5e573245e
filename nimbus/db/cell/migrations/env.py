"""Alembic environment of the cell database (see nimbus.common.db.sync)."""

from nimbus.common.db import run_alembic_env
from nimbus.db.cell import models

run_alembic_env(models.Base.metadata)
