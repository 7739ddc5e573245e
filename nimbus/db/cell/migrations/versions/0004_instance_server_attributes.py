"""instance server attributes

The attributes a user gives at create that only the compute API reads back
(reservation_id, launch_index, key_name, description, hostname, tags,
accessIPv4/v6, security groups, disk config), kept as one JSON object on
the cell's instance so they survive the move from build request to cell.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 06:50:00.000000

"""

from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

import nimbus.common.db.types


# revision identifiers, used by Alembic.
revision: str = '0004'
down_revision: Union[str, Sequence[str], None] = '0003'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema: a nullable JSON column (existing rows: NULL, read as
    no attributes)."""
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                'server_attributes',
                nimbus.common.db.types.JSONText(),
                nullable=True,
            )
        )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.drop_column('server_attributes')
