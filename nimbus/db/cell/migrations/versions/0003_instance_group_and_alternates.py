"""instance server group and build alternates

Two columns on ``instances`` for the build path inside a cell:

- ``instance_group_uuid``: the server group the instance was created in
  (the group itself lives in the API database, which a cell never reads).
  The compute's late group check asks the cell conductor where the group's
  members are.
- ``build_alternates``: the request spec and the alternates still untried
  for a build under way (JSON), so the cell conductor's build check can
  reschedule a build whose compute died instead of failing it.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25 06:40:00.000000

"""

from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

import nimbus.common.db.types


# revision identifiers, used by Alembic.
revision: str = '0003'
down_revision: Union[str, Sequence[str], None] = '0002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema: both columns nullable (existing rows: no group, no
    alternates)."""
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('instance_group_uuid', sa.String(36), nullable=True)
        )
        batch_op.add_column(
            sa.Column(
                'build_alternates',
                nimbus.common.db.types.JSONText(),
                nullable=True,
            )
        )
        batch_op.create_index(
            'ix_instances_instance_group_uuid', ['instance_group_uuid']
        )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.drop_index('ix_instances_instance_group_uuid')
        batch_op.drop_column('build_alternates')
        batch_op.drop_column('instance_group_uuid')
