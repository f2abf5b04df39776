"""The ``utxo`` table: batched lookups and the writes of a flush.

Lookups join the wanted keys, given as a ``VALUES`` common table expression,
against the primary key.  The more obvious ``(txid, n) IN (...)`` makes SQLite
scan the whole table (row-value IN lists are not index-assisted; see
``bench/utxo.py``).  Batches are padded to a few fixed sizes so each size's
prepared statement is reused from the driver's statement cache.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from sqlalchemy import Select, and_, bindparam, column, delete, select, values
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.types import BigInteger, LargeBinary

from coin.primitives.coin import Coin
from coin.storage.coins import Key
from coin.storage.compiled import RawStatement, cached, raw_upserts
from coin.storage.dialect import autocommit_connection, close_connection, connection_lost
from coin.storage.schema import utxo

#: A utxo row in column order.
Row = Tuple[bytes, int, int, bool, int, int, bytes]

COLUMNS = ("txid", "n", "height", "coinbase", "tx_version", "value", "script_pubkey")
MAX_FETCH_BATCH = 500
_txid = itemgetter(0)
_FETCH_SIZES = (1, 8, 64, MAX_FETCH_BATCH)


def coin_row(key: Key, coin: Coin) -> Row:
    return (key[0], key[1], coin.height, coin.coinbase, coin.tx_version, coin.value,
            coin.script_pubkey)


def lookup_query(size: int) -> Select:
    """SELECT of the rows whose ``size`` keys are bound as t0, n0, t1, n1, ..."""
    columns = [utxo.c[name] for name in COLUMNS]
    if size == 1:
        return select(*columns).where(utxo.c.txid == bindparam("t0"),
                                      utxo.c.n == bindparam("n0"))
    keys = values(column("txid", LargeBinary), column("n", BigInteger), name="k").data(
        [(bindparam("t%d" % i), bindparam("n%d" % i)) for i in range(size)]).cte("k")
    return select(*columns).select_from(
        keys.join(utxo, and_(utxo.c.txid == keys.c.txid, utxo.c.n == keys.c.n)))


def lookup_param_names(size: int) -> List[str]:
    return [name for i in range(size) for name in ("t%d" % i, "n%d" % i)]


def _lookup_statement(dialect: Dialect, size: int) -> RawStatement:
    return cached(dialect, ("utxo lookup", size), lambda: RawStatement(
        lookup_query(size), dialect, lookup_param_names(size)))


class UtxoTable:
    """Statements for the ``utxo`` table, compiled once for the engine's dialect.

    Lookups run on a DBAPI connection of their own, outside any transaction,
    and must come from one thread (the chain-state writer).
    """

    def __init__(self, engine: Engine) -> None:
        dialect = self._dialect = engine.dialect
        self._insert = RawStatement(utxo.insert(), dialect, COLUMNS)
        self._upserts = raw_upserts(dialect, utxo, COLUMNS)
        self._delete = RawStatement(
            delete(utxo).where(and_(utxo.c.txid == bindparam("txid"),
                                    utxo.c.n == bindparam("n"))),
            dialect, ("txid", "n"))
        self._engine = engine
        self._reader = autocommit_connection(engine)
        self._cursor = self._reader.cursor()

    def _reconnect_if_lost(self) -> bool:
        """Replace the lookup connection if the server ended it (PostgreSQL restarted):
        it is not the pool's, so nothing else would."""
        if not connection_lost(self._reader):
            return False
        self.close()
        self._reader = autocommit_connection(self._engine)
        self._cursor = self._reader.cursor()
        return True

    def close(self) -> None:
        if not connection_lost(self._reader):
            self._cursor.close()
        close_connection(self._reader)

    def fetch(self, keys: Sequence[Key]) -> Dict[Key, Coin]:
        """The stored coins among ``keys`` (at most ``MAX_FETCH_BATCH``), in one query."""
        if not keys:
            return {}
        if len(keys) > MAX_FETCH_BATCH:
            raise ValueError("at most %d keys per lookup" % MAX_FETCH_BATCH)
        size = next(s for s in _FETCH_SIZES if s >= len(keys))
        params: List[object] = [part for key in keys for part in key]
        params.extend(keys[-1] * (size - len(keys)))
        try:
            return self._fetch(size, params)
        except self._dialect.loaded_dbapi.Error:
            if not self._reconnect_if_lost():
                raise
        return self._fetch(size, params)

    def _fetch(self, size: int, params: List[object]) -> Dict[Key, Coin]:
        return {(bytes(txid), n): Coin(value, bytes(script), height, bool(coinbase), tx_version)
                for txid, n, height, coinbase, tx_version, value, script
                in _lookup_statement(self._dialect, size).execute(self._cursor, params)}

    def write_txn(self, conn: Connection, inserts: List[Row], upserts: List[Row],
                  deletes: List[Key]) -> None:
        """Apply a flush's coin changes inside ``conn``'s open transaction.

        ``inserts`` must be new keys (the fast path); ``upserts`` may exist
        already.  The lists are sorted in place: B-tree writes in key order
        run about twice as fast as in the random order txids come in.
        """
        for rows in (inserts, upserts, deletes):
            rows.sort(key=_txid)
        cursor = conn.connection.cursor()
        try:
            if deletes:
                self._delete.executemany(cursor, deletes)
            if inserts:
                self._insert.executemany(cursor, inserts)
            if upserts:
                for stmt in self._upserts:
                    stmt.executemany(cursor, upserts)
        finally:
            cursor.close()


def iter_coins_txn(conn: Connection) -> Iterator[Tuple[Key, Coin]]:
    """Every stored coin, in key order (streamed, not loaded at once)."""
    rows = conn.execution_options(yield_per=2_000).execute(
        select(*(utxo.c[name] for name in COLUMNS)).order_by(utxo.c.txid, utxo.c.n))
    for txid, n, height, coinbase, tx_version, value, script in rows:
        yield (txid, n), Coin(value, script, height, bool(coinbase), tx_version)


def stream_coins(engine: Engine) -> Iterator[Tuple[Key, Coin]]:
    """Every stored coin in key order, from a read transaction of its own begun before
    this returns (its first row is read here, which fixes SQLite's snapshot; PostgreSQL's
    single statement sees one snapshot).  The connection is released when the iterator
    is exhausted, closed or collected."""
    conn = engine.connect()
    try:
        conn.begin()
        rows = iter_coins_txn(conn)
        first = next(rows, None)
    except BaseException:
        conn.close()
        raise
    return _closing(conn, first, rows)


def _closing(conn: Connection, first: Optional[Tuple[Key, Coin]],
             rows: Iterator[Tuple[Key, Coin]]) -> Iterator[Tuple[Key, Coin]]:
    try:
        if first is not None:
            yield first
            yield from rows
    finally:
        conn.close()


def delete_all_txn(conn: Connection) -> None:
    conn.execute(delete(utxo))


def output_numbers_txn(conn: Connection, txid: bytes) -> List[int]:
    """Output numbers of ``txid`` with a stored coin (a range scan of the primary key)."""
    return list(conn.execute(select(utxo.c.n).where(utxo.c.txid == txid)
                             .order_by(utxo.c.n)).scalars())
