"""Change sequence of block-index rows, so front ends read only what a flush changed.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("block_index") as batch:
        batch.add_column(sa.Column("seq", sa.BigInteger(), nullable=False, server_default="0"))
        batch.create_index("ix_block_index_seq", ["seq"])


def downgrade() -> None:
    with op.batch_alter_table("block_index") as batch:
        batch.drop_index("ix_block_index_seq")
        batch.drop_column("seq")
