"""Unspent outputs: gettxout's object and REST /getutxos (JSON and BIP64 binary).

A coin from the mempool has height :data:`MEMPOOL_HEIGHT`.
"""

from __future__ import annotations

from typing import Sequence

from coin.chain.index import BlockIndexEntry
from coin.chainparams import ChainParams
from coin.primitives.coin import Coin
from coin.primitives.hashes import hash_to_hex
from coin.primitives.serialize import compact_size, i32, u32, var_bytes
from coin.views.amounts import amount_to_json
from coin.views.encode import JSONView
from coin.views.script import script_pubkey_json

#: Height reported for outputs of mempool transactions (the spec's 0x7FFFFFFF).
MEMPOOL_HEIGHT = 0x7FFFFFFF


def txout_json(coin: Coin, tip: BlockIndexEntry, params: ChainParams) -> JSONView:
    """Core 0.17's gettxout object; a mempool coin has 0 confirmations."""
    confirmations = 0 if coin.height == MEMPOOL_HEIGHT else tip.height - coin.height + 1
    return JSONView({
        "bestblock": hash_to_hex(tip.hash),
        "confirmations": confirmations,
        "value": amount_to_json(coin.value),
        "scriptPubKey": script_pubkey_json(coin.script_pubkey, params),
        "coinbase": coin.coinbase,
    })


def getutxos_json(chain_height: int, tip_hash: bytes, found: Sequence[bool],
                  coins: Sequence[Coin], params: ChainParams) -> JSONView:
    """``{chainHeight, chaintipHash, bitmap, utxos}``.

    ``found`` has one flag per requested outpoint, in request order;
    ``coins`` holds the unspent ones, in the same order.
    """
    return JSONView({
        "chainHeight": chain_height,
        "chaintipHash": hash_to_hex(tip_hash),
        "bitmap": "".join("1" if hit else "0" for hit in found),
        "utxos": [{"txvers": coin.tx_version, "height": coin.height,
                   "value": amount_to_json(coin.value),
                   "scriptPubKey": script_pubkey_json(coin.script_pubkey, params)}
                  for coin in coins],
    })


def getutxos_bin(chain_height: int, tip_hash: bytes, found: Sequence[bool],
                 coins: Sequence[Coin]) -> bytes:
    """The same result serialized as BIP64 / Core's rest.cpp does it.

    int32 height, the tip hash (internal order), the bitmap as a byte vector
    (outpoint i is bit i % 8 of byte i // 8), then the coins as a vector of
    (uint32 tx version, uint32 height, output).
    """
    bitmap = bytearray((len(found) + 7) // 8)
    for i, hit in enumerate(found):
        if hit:
            bitmap[i // 8] |= 1 << (i % 8)
    parts = [i32(chain_height), tip_hash, var_bytes(bytes(bitmap)), compact_size(len(coins))]
    parts.extend(u32(coin.tx_version & 0xFFFFFFFF) + u32(coin.height) + coin.txout().serialize()
                 for coin in coins)
    return b"".join(parts)
