"""flavor access: the projects granted a private flavor

Revision ID: 0004_flavor_access
Revises: 0003_keypairs
Create Date: 2026-11-25 09:15:00

"""

from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0004_flavor_access'
down_revision: Union[str, Sequence[str], None] = '0003_keypairs'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        'flavor_projects',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('flavor_id', sa.Integer(), nullable=False),
        sa.Column('project_id', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ['flavor_id'], ['flavors.id'], ondelete='CASCADE'
        ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('flavor_id', 'project_id'),
    )
    op.create_index(
        op.f('ix_flavor_projects_project_id'),
        'flavor_projects',
        ['project_id'],
    )


def downgrade() -> None:
    op.drop_index(
        op.f('ix_flavor_projects_project_id'), table_name='flavor_projects'
    )
    op.drop_table('flavor_projects')
