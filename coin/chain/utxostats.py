"""Statistics of the UTXO set (Core 0.17's GetUTXOStats, gettxoutsetinfo's figures).

:func:`utxo_set_info` takes a consistent copy of the UTXO set on the validation
worker, hashes it in the node's thread pool (it can take a while on a large set)
and measures the chain-state database on the worker again; the RPC
``gettxoutsetinfo`` only formats the :class:`UTXOSetInfo` it gets.  A GUI or a
plugin calls the same function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Sequence, Tuple

from coin.chain.chainstate import ChainState
from coin.chain.index import BlockIndexEntry
from coin.primitives.coin import Coin
from coin.primitives.hashes import sha256d
from coin.primitives.serialize import var_bytes, varint
from coin.storage.coins import Key

if TYPE_CHECKING:  # pragma: no cover
    from coin.chain.access import ChainAccess


class UTXOStats(NamedTuple):
    """gettxoutsetinfo's figures for one snapshot of the UTXO set."""

    transactions: int
    txouts: int
    bogosize: int
    hash_serialized: bytes
    total_amount: int


class UTXOSetInfo(NamedTuple):
    """The statistics, the tip they hold at, and the chain-state database's size in bytes."""

    tip: BlockIndexEntry
    stats: UTXOStats
    disk_size: int


def utxo_set_stats(best_block: bytes, coins: Sequence[Tuple[Key, Coin]]) -> UTXOStats:
    """Core 0.17's GetUTXOStats over ``coins`` sorted by key (its database order).

    The hash is SHA256d of: the best block hash, then per transaction its txid,
    a VARINT of ``height * 2 + coinbase`` as 0.17 writes it (an operator
    precedence slip makes that 1 for every coin but a non-coinbase one at
    height 0), per output VARINT(n + 1), the script and VARINT(value), and a
    closing VARINT(0).
    """
    parts = [best_block]
    transactions = bogosize = total = 0
    previous = None
    for (txid, n), coin in coins:
        if txid != previous:
            if previous is not None:
                parts.append(b"\x00")
            parts.append(txid + varint(1 if coin.height * 2 + coin.coinbase else 0))
            transactions += 1
            previous = txid
        parts.append(varint(n + 1) + var_bytes(coin.script_pubkey) + varint(coin.value))
        total += coin.value
        bogosize += 32 + 4 + 4 + 8 + 2 + len(coin.script_pubkey)
    if previous is not None:
        parts.append(b"\x00")
    return UTXOStats(transactions, len(coins), bogosize, sha256d(b"".join(parts)), total)


def database_size(chainstate: ChainState) -> int:
    """Bytes the chain-state database takes on disk (see ``ChainStore.database_bytes``)."""
    return chainstate.store.database_bytes()


async def utxo_set_info(chain: "ChainAccess") -> UTXOSetInfo:
    """The :class:`UTXOSetInfo` of the current UTXO set (a coroutine: ``ensureDeferred`` it).

    The copy and the size are read on the validation worker; the hash runs in
    ``chain.in_thread`` (the node's pool), off the reactor and off the writer.
    """
    tip, coins = await chain.utxo_snapshot()
    stats = await chain.in_thread(utxo_set_stats, tip.hash, coins)
    disk_size = await chain.call(database_size)
    return UTXOSetInfo(tip, stats, disk_size)
