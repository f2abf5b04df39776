"""Raw block and undo records in the database (for -dbengine=postgresql://...).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "block_record",
        sa.Column("seq", sa.String(3), nullable=False),
        sa.Column("file_no", sa.Integer(), nullable=False, autoincrement=False),
        sa.Column("pos", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("trailer", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("seq", "file_no", "pos", name="pk_block_record"),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("block_record")
