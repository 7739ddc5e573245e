"""Alembic environment of the placement database."""

from nimbus.common.db import run_alembic_env
from nimbus.placement.db import models

run_alembic_env(models.Base.metadata)
