"""compute node stats

The hypervisor's free-form ``stats`` (a JSON object of strings) on each
compute node, which ComputeCapabilitiesFilter matches unscoped extra specs
against.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 10:00:00.000000

"""

from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

import nimbus.common.db.types


# revision identifiers, used by Alembic.
revision: str = '0002'
down_revision: Union[str, Sequence[str], None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema: a nullable JSON ``stats`` column (existing rows:
    NULL, read as no stats until the compute's next report)."""
    with op.batch_alter_table('compute_nodes', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                'stats', nimbus.common.db.types.JSONText(), nullable=True
            )
        )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('compute_nodes', schema=None) as batch_op:
        batch_op.drop_column('stats')
