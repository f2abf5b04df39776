"""Transaction index table (-txindex).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tx_index",
        sa.Column("txid", sa.LargeBinary(32), nullable=False),
        sa.Column("block_hash", sa.LargeBinary(32), nullable=False),
        sa.Column("file_no", sa.Integer(), nullable=False),
        sa.Column("block_pos", sa.BigInteger(), nullable=False),
        sa.Column("tx_offset", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("txid", name="pk_tx_index"),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("tx_index")
