"""Initial chain-state schema: block index, UTXO set, block files, chain state.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "block_index",
        sa.Column("hash", sa.LargeBinary(32), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("prev_hash", sa.LargeBinary(32), nullable=False),
        sa.Column("chainwork", sa.LargeBinary(32), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("tx_count", sa.BigInteger(), nullable=False),
        sa.Column("chain_tx", sa.BigInteger(), nullable=False),
        sa.Column("file_no", sa.Integer(), nullable=False),
        sa.Column("data_pos", sa.BigInteger(), nullable=False),
        sa.Column("undo_file", sa.Integer(), nullable=False),
        sa.Column("undo_pos", sa.BigInteger(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("merkle_root", sa.LargeBinary(32), nullable=False),
        sa.Column("time", sa.BigInteger(), nullable=False),
        sa.Column("bits", sa.BigInteger(), nullable=False),
        sa.Column("nonce", sa.BigInteger(), nullable=False),
        sa.Column("sequence_id", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("hash", name="pk_block_index"),
    )
    op.create_index("ix_block_index_height", "block_index", ["height"])
    op.create_table(
        "utxo",
        sa.Column("txid", sa.LargeBinary(32), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("coinbase", sa.Boolean(), nullable=False),
        sa.Column("tx_version", sa.Integer(), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.Column("script_pubkey", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("txid", "n", name="pk_utxo"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "block_file",
        sa.Column("file_no", sa.Integer(), nullable=False, autoincrement=False),
        sa.Column("blocks", sa.Integer(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("undo_size", sa.BigInteger(), nullable=False),
        sa.Column("height_first", sa.Integer(), nullable=True),
        sa.Column("height_last", sa.Integer(), nullable=True),
        sa.Column("time_first", sa.BigInteger(), nullable=True),
        sa.Column("time_last", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("file_no", name="pk_block_file"),
    )
    op.create_table(
        "chain_state",
        sa.Column("key", sa.String(32), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_chain_state"),
    )


def downgrade() -> None:
    op.drop_table("chain_state")
    op.drop_table("block_file")
    op.drop_table("utxo")
    op.drop_index("ix_block_index_height", table_name="block_index")
    op.drop_table("block_index")
