"""the schedule lease of a build request

Revision ID: 0005_build_request_lease
Revises: 0004_flavor_access
Create Date: 2026-11-25 09:20:00

"""

from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0005_build_request_lease'
down_revision: Union[str, Sequence[str], None] = '0004_flavor_access'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('build_requests') as batch:
        batch.add_column(
            sa.Column('schedule_token', sa.String(length=36), nullable=True)
        )
        batch.add_column(
            sa.Column('schedule_started_at', sa.DateTime(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table('build_requests') as batch:
        batch.drop_column('schedule_started_at')
        batch.drop_column('schedule_token')
