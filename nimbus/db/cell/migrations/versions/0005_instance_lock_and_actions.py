"""instance lock and instance actions

Server actions (issue 24): who locked an instance and why (os-lock-server,
2.73), and the os-instance-actions record: one row per user request on an
instance, one event row per step a service took for it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28 16:45:00.000000

"""

from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0005'
down_revision: Union[str, Sequence[str], None] = '0004'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema: two nullable columns (existing rows: unlocked) and
    two new tables."""
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('locked_by', sa.String(length=32), nullable=True)
        )
        batch_op.add_column(
            sa.Column('locked_reason', sa.String(length=255), nullable=True)
        )
    op.create_table(
        'instance_actions',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('action', sa.String(length=255), nullable=False),
        sa.Column('instance_uuid', sa.String(length=36), nullable=False),
        sa.Column('request_id', sa.String(length=255), nullable=False),
        sa.Column('user_id', sa.String(length=255), nullable=True),
        sa.Column('project_id', sa.String(length=255), nullable=True),
        sa.Column('start_time', sa.DateTime(), nullable=False),
        sa.Column('finish_time', sa.DateTime(), nullable=True),
        sa.Column('message', sa.String(length=255), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(
        'instance_actions_instance_uuid_request_id',
        'instance_actions',
        ['instance_uuid', 'request_id'],
    )
    op.create_table(
        'instance_actions_events',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('action_id', sa.Integer(), nullable=False),
        sa.Column('event', sa.String(length=255), nullable=False),
        sa.Column('start_time', sa.DateTime(), nullable=False),
        sa.Column('finish_time', sa.DateTime(), nullable=True),
        sa.Column('result', sa.String(length=255), nullable=True),
        sa.Column('traceback', sa.Text(), nullable=True),
        sa.Column('host', sa.String(length=255), nullable=True),
        sa.Column('details', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(['action_id'], ['instance_actions.id']),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(
        op.f('ix_instance_actions_events_action_id'),
        'instance_actions_events',
        ['action_id'],
    )


def downgrade() -> None:
    """Downgrade schema."""
    # Dropping the table drops its index (MySQL refuses to drop an index
    # a foreign key needs on its own).
    op.drop_table('instance_actions_events')
    op.drop_index(
        'instance_actions_instance_uuid_request_id',
        table_name='instance_actions',
    )
    op.drop_table('instance_actions')
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.drop_column('locked_reason')
        batch_op.drop_column('locked_by')
