"""Blocks and block headers as JSON, in the spec's order (Core 0.17's blockToJSON):

``hash, confirmations, [strippedsize, size, weight], height, version, versionHex,
merkleroot, [tx], time, mediantime, nonce, bits, difficulty, chainwork, nTx,
previousblockhash, nextblockhash`` — the bracketed fields only in block objects.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from coin.chain.index import BlockIndexEntry
from coin.chainparams import WITNESS_SCALE_FACTOR, ChainParams
from coin.consensus.pow import get_difficulty
from coin.primitives.block import Block
from coin.primitives.hashes import hash_to_hex
from coin.views.amounts import real_to_json
from coin.views.chain import ChainView, block_confirmations
from coin.views.encode import JSONView
from coin.views.transaction import SpentOutput, tx_json


def header_json(entry: BlockIndexEntry, chain: ChainView) -> JSONView:
    """The block header object (getblockheader, REST /headers).

    ``previousblockhash`` is absent for genesis, ``nextblockhash`` unless the
    block is on the active chain below the tip.
    """
    out = JSONView({
        "hash": hash_to_hex(entry.hash),
        "confirmations": block_confirmations(entry, chain),
        "height": entry.height,
        "version": entry.version,
        "versionHex": "%08x" % (entry.version & 0xFFFFFFFF),
        "merkleroot": hash_to_hex(entry.merkle_root),
        "time": entry.time,
        "mediantime": entry.median_time_past(),
        "nonce": entry.nonce,
        "bits": "%08x" % entry.bits,
        "difficulty": real_to_json(get_difficulty(entry.bits)),
        "chainwork": "%064x" % entry.chainwork,
        "nTx": entry.tx_count,
    })
    if entry.prev is not None:
        out["previousblockhash"] = hash_to_hex(entry.prev.hash)
    successor = chain.next_on_chain(entry)
    if successor is not None:
        out["nextblockhash"] = hash_to_hex(successor.hash)
    return out


def block_json(block: Block, entry: BlockIndexEntry, chain: ChainView, params: ChainParams,
               tx_detail: bool = False,
               spent_outputs: Optional[Sequence[Sequence[SpentOutput]]] = None
               ) -> JSONView:
    """The block object: the header object plus the sizes and ``tx``.

    ``strippedsize`` (= ``size``) and ``weight`` (= 4 x ``size``) are Core's; with no
    witness data they cost nothing and explorers read them (doc/views.md).

    ``tx`` lists txids, or with ``tx_detail`` transaction objects (with hex,
    without block fields).  ``spent_outputs`` is the block's undo data (per
    non-coinbase transaction, the outputs its inputs spent); with it the
    inputs also show what they spend.
    """
    txs: List[Any]
    if tx_detail:
        per_tx = [None] * len(block.txs) if spent_outputs is None else [None, *spent_outputs]
        txs = [tx_json(tx, params, spent_outputs=spent)
               for tx, spent in zip(block.txs, per_tx, strict=True)]
    else:
        txs = [tx.txid_hex for tx in block.txs]
    out = JSONView()
    for key, value in header_json(entry, chain).items():
        out[key] = value
        if key == "confirmations":
            size = block.size
            out.update(strippedsize=size, size=size, weight=WITNESS_SCALE_FACTOR * size)
        elif key == "merkleroot":
            out["tx"] = txs
    return out
