"""Alembic environment of the api database (see nimbus.common.db.sync)."""

from nimbus.common.db import run_alembic_env
from nimbus.db.api import models

run_alembic_env(models.Base.metadata)
