"""quotas and quota classes

Revision ID: 0002_quotas
Revises: 0001
Create Date: 2026-11-25 06:40:00

"""

from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0002_quotas'
down_revision: Union[str, Sequence[str], None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        'quotas',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('project_id', sa.String(length=255), nullable=False),
        sa.Column('resource', sa.String(length=255), nullable=False),
        sa.Column('hard_limit', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('project_id', 'resource'),
    )
    op.create_index(op.f('ix_quotas_project_id'), 'quotas', ['project_id'])
    op.create_table(
        'quota_classes',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('class_name', sa.String(length=255), nullable=False),
        sa.Column('resource', sa.String(length=255), nullable=False),
        sa.Column('hard_limit', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('class_name', 'resource'),
    )
    op.create_index(
        op.f('ix_quota_classes_class_name'), 'quota_classes', ['class_name']
    )


def downgrade() -> None:
    op.drop_index(
        op.f('ix_quota_classes_class_name'), table_name='quota_classes'
    )
    op.drop_table('quota_classes')
    op.drop_index(op.f('ix_quotas_project_id'), table_name='quotas')
    op.drop_table('quotas')
