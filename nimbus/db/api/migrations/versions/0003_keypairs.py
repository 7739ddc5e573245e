"""key pairs

Revision ID: 0003_keypairs
Revises: 0002_quotas
Create Date: 2026-11-25 09:15:00

"""

from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0003_keypairs'
down_revision: Union[str, Sequence[str], None] = '0002_quotas'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        'key_pairs',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('user_id', sa.String(length=255), nullable=False),
        sa.Column('fingerprint', sa.String(length=255), nullable=False),
        sa.Column('public_key', sa.Text(), nullable=False),
        sa.Column('type', sa.String(length=8), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('user_id', 'name'),
    )
    op.create_index(op.f('ix_key_pairs_user_id'), 'key_pairs', ['user_id'])


def downgrade() -> None:
    op.drop_index(op.f('ix_key_pairs_user_id'), table_name='key_pairs')
    op.drop_table('key_pairs')
