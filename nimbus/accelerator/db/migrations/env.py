"""Alembic environment of the accelerator database."""

from nimbus.accelerator.db import models
from nimbus.common.db import run_alembic_env

run_alembic_env(models.Base.metadata)
