"""instances.hidden: the copy of a cross-cell move's other cell

A resize or cold migrate to another cell (issue 24) copies the instance
into the target cell's database hidden, then hides the source's copy
once the target owns the server; hidden rows are never listed, counted
or audited.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29 05:10:00.000000

"""

from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0007'
down_revision: Union[str, Sequence[str], None] = '0006'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema: one column, false for every existing row."""
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                'hidden',
                sa.Boolean(),
                nullable=False,
                server_default=sa.false(),
            )
        )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.drop_column('hidden')
