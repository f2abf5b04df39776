"""The chain-state database schema: one ``MetaData`` for every table.

Conventions (kept portable so the same schema can run on PostgreSQL):

* Hashes are 32-byte blobs in internal byte order.
* ``block_index.chainwork`` is a 32-byte big-endian blob: it sorts like the
  number it encodes (memcmp order) and holds any value below 2**256, which
  SQL integer types cannot.
* Unsigned 32-bit header fields (time, bits, nonce) and file offsets use
  BIGINT because PostgreSQL's INTEGER is signed 32-bit.
* Changes to this file need a new Alembic revision in ``migrations/versions``.
"""

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
)

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_name)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

block_index = Table(
    "block_index", metadata,
    Column("hash", LargeBinary(32), primary_key=True),
    Column("height", Integer, nullable=False),
    Column("prev_hash", LargeBinary(32), nullable=False),
    Column("chainwork", LargeBinary(32), nullable=False),
    Column("status", Integer, nullable=False),
    Column("tx_count", BigInteger, nullable=False),
    Column("chain_tx", BigInteger, nullable=False),
    Column("file_no", Integer, nullable=False),
    Column("data_pos", BigInteger, nullable=False),
    Column("undo_file", Integer, nullable=False),
    Column("undo_pos", BigInteger, nullable=False),
    Column("version", Integer, nullable=False),
    Column("merkle_root", LargeBinary(32), nullable=False),
    Column("time", BigInteger, nullable=False),
    Column("bits", BigInteger, nullable=False),
    Column("nonce", BigInteger, nullable=False),
    Column("sequence_id", BigInteger, nullable=False),
    # The writer's change counter (``chainmeta.INDEX_SEQ``) when the row was last written.
    Column("seq", BigInteger, nullable=False, server_default="0"),
    Index(None, "height"),
    Index(None, "seq"),
)

# Rows are small and always looked up by the full key: no rowid on SQLite.
utxo = Table(
    "utxo", metadata,
    Column("txid", LargeBinary(32), primary_key=True),
    Column("n", BigInteger, primary_key=True, autoincrement=False),
    Column("height", Integer, nullable=False),
    Column("coinbase", Boolean, nullable=False),
    Column("tx_version", Integer, nullable=False),
    Column("value", BigInteger, nullable=False),
    Column("script_pubkey", LargeBinary, nullable=False),
    sqlite_with_rowid=False,
)

# One row per blkNNNNN.dat / revNNNNN.dat pair; sizes count valid, synced data.
block_file = Table(
    "block_file", metadata,
    Column("file_no", Integer, primary_key=True, autoincrement=False),
    Column("blocks", Integer, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("undo_size", BigInteger, nullable=False),
    Column("height_first", Integer, nullable=True),
    Column("height_last", Integer, nullable=True),
    Column("time_first", BigInteger, nullable=True),
    Column("time_last", BigInteger, nullable=True),
)

# Small key/value facts: best block, reindex flag.
chain_state = Table(
    "chain_state", metadata,
    Column("key", String(32), primary_key=True),
    Column("value", LargeBinary, nullable=False),
)

# Transaction index (-txindex): where each transaction of the indexed chain is stored.
# ``block_pos`` is the block's payload position in blk<file_no>.dat (as in block_index)
# and ``tx_offset`` the transaction's offset inside the block: Core's CDiskTxPos.
tx_index = Table(
    "tx_index", metadata,
    Column("txid", LargeBinary(32), primary_key=True),
    Column("block_hash", LargeBinary(32), nullable=False),
    Column("file_no", Integer, nullable=False),
    Column("block_pos", BigInteger, nullable=False),
    Column("tx_offset", BigInteger, nullable=False),
    sqlite_with_rowid=False,
)

# Raw block and undo records on a database server (-dbengine=postgresql://...), where every
# process reading the database can get them; SQLite nodes keep them in blk/rev files.
# ``seq`` is "blk" or "rev"; (file_no, pos) are the positions the flat files would give.
block_record = Table(
    "block_record", metadata,
    Column("seq", String(3), primary_key=True),
    Column("file_no", Integer, primary_key=True, autoincrement=False),
    Column("pos", BigInteger, primary_key=True, autoincrement=False),
    Column("payload", LargeBinary, nullable=False),
    Column("trailer", LargeBinary, nullable=False),
    sqlite_with_rowid=False,
)
