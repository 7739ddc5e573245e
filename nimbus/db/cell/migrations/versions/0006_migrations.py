"""migrations: the record of each move of an instance

Moves (issue 24, section 2): resize, cold and live migration, evacuation.
One row per move, in Nova's shape; its uuid is the placement consumer of
the source's allocation while the move is under way.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28 21:15:00.000000

"""

from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa

from nimbus.common.db.types import JSONText


# revision identifiers, used by Alembic.
revision: str = '0006'
down_revision: Union[str, Sequence[str], None] = '0005'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema: one new table."""
    op.create_table(
        'migrations',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('uuid', sa.String(length=36), nullable=False),
        sa.Column('instance_uuid', sa.String(length=36), nullable=False),
        sa.Column('migration_type', sa.String(length=32), nullable=False),
        sa.Column('status', sa.String(length=32), nullable=False),
        sa.Column('source_compute', sa.String(length=255), nullable=True),
        sa.Column('source_node', sa.String(length=255), nullable=True),
        sa.Column('dest_compute', sa.String(length=255), nullable=True),
        sa.Column('dest_node', sa.String(length=255), nullable=True),
        sa.Column('dest_host', sa.String(length=255), nullable=True),
        sa.Column('old_flavor', JSONText(), nullable=True),
        sa.Column('new_flavor', JSONText(), nullable=True),
        sa.Column('cross_cell_move', sa.Boolean(), nullable=False),
        sa.Column('hidden', sa.Boolean(), nullable=False),
        sa.Column('user_id', sa.String(length=255), nullable=True),
        sa.Column('project_id', sa.String(length=255), nullable=True),
        sa.Column('memory_total', sa.BigInteger(), nullable=True),
        sa.Column('memory_processed', sa.BigInteger(), nullable=True),
        sa.Column('memory_remaining', sa.BigInteger(), nullable=True),
        sa.Column('disk_total', sa.BigInteger(), nullable=True),
        sa.Column('disk_processed', sa.BigInteger(), nullable=True),
        sa.Column('disk_remaining', sa.BigInteger(), nullable=True),
        sa.Column('details', JSONText(), nullable=True),
        sa.Column('deleted', sa.Boolean(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('uuid'),
    )
    op.create_index(
        'migrations_instance_uuid_status',
        'migrations',
        ['instance_uuid', 'status'],
    )
    op.create_index(
        'migrations_source_compute_status',
        'migrations',
        ['source_compute', 'status'],
    )
    op.create_index(
        'migrations_dest_compute_status',
        'migrations',
        ['dest_compute', 'status'],
    )
    op.create_index('migrations_updated_at', 'migrations', ['updated_at'])


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('migrations')
