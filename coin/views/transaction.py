"""Transactions as JSON, in Dash Core 0.13's TxToJSON order (the spec's order).

``txid, hash, size, vsize, version, type, locktime, vin, vout,
[extraPayloadSize, extraPayload], [hex], [blockhash, height, confirmations, time,
blocktime]``; doc/views.md explains each choice (``hash`` and ``vsize`` are Core's,
equal to ``txid`` and ``size`` without witness data).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Protocol, Sequence

from coin.chain.index import BlockIndexEntry
from coin.chainparams import ChainParams
from coin.primitives.address import encode_address
from coin.primitives.hashes import hash_to_hex
from coin.primitives.transaction import Transaction, TxIn
from coin.script.standard import TX_PUBKEYHASH, TX_SCRIPTHASH, extract_destinations
from coin.views.amounts import amount_to_json
from coin.views.chain import ChainView, block_confirmations
from coin.views.encode import JSONView
from coin.views.script import script_pubkey_json, script_sig_json


class SpentOutput(Protocol):
    """The output an input spends: a ``TxOut`` or a ``Coin`` (block undo, UTXO set)."""

    value: int
    script_pubkey: bytes


def _input_json(txin: TxIn, coinbase: bool, spent: Optional[SpentOutput],
                params: ChainParams) -> Dict[str, Any]:
    if coinbase:
        return {"coinbase": txin.script_sig.hex(), "sequence": txin.sequence}
    out: Dict[str, Any] = {
        "txid": hash_to_hex(txin.prevout.txid),
        "vout": txin.prevout.n,
        "scriptSig": script_sig_json(txin.script_sig),
    }
    if spent is not None:
        out["value"] = amount_to_json(spent.value)
        out["valueSat"] = spent.value
        # As Dash's spent index: an address only for P2PKH and P2SH outputs.
        kind, destinations, _ = extract_destinations(spent.script_pubkey)
        if kind in (TX_PUBKEYHASH, TX_SCRIPTHASH):
            out["addresses"] = [encode_address(destinations[0], params)]
    out["sequence"] = txin.sequence
    return out


def tx_json(tx: Transaction, params: ChainParams, *, include_hex: bool = True,
            blockhash: Optional[bytes] = None, height: Optional[int] = None,
            confirmations: Optional[int] = None, time: Optional[int] = None,
            blocktime: Optional[int] = None,
            spent_outputs: Optional[Sequence[Optional[SpentOutput]]] = None) -> JSONView:
    """The transaction object.

    ``blockhash`` (internal byte order) and the other block fields are added,
    in that order, only when given; :func:`tx_block_fields` computes them.
    ``spent_outputs`` has one entry per input (None where unknown) and adds
    ``value``, ``valueSat`` and ``addresses`` to those inputs.
    """
    coinbase = tx.is_coinbase()
    spent: Sequence[Optional[SpentOutput]] = (
        [None] * len(tx.vin) if spent_outputs is None else spent_outputs)
    size, txid = tx.size, tx.txid_hex
    out = JSONView({
        "txid": txid,
        "hash": txid,
        "size": size,
        "vsize": size,
        "version": tx.version,
        "type": tx.tx_type,
        "locktime": tx.locktime,
        "vin": [_input_json(txin, coinbase, prev, params)
                for txin, prev in zip(tx.vin, spent, strict=True)],
        "vout": [{"value": amount_to_json(txout.value), "valueSat": txout.value, "n": n,
                  "scriptPubKey": script_pubkey_json(txout.script_pubkey, params)}
                 for n, txout in enumerate(tx.vout)],
    })
    if tx.has_extra_payload() and tx.extra_payload:
        out["extraPayloadSize"] = len(tx.extra_payload)
        out["extraPayload"] = tx.extra_payload.hex()
    if include_hex:
        out["hex"] = tx.serialize().hex()
    block_fields = (("blockhash", None if blockhash is None else hash_to_hex(blockhash)),
                    ("height", height), ("confirmations", confirmations),
                    ("time", time), ("blocktime", blocktime))
    out.update((key, value) for key, value in block_fields if value is not None)
    return out


def tx_block_fields(entry: BlockIndexEntry, chain: ChainView) -> Dict[str, Any]:
    """Keyword arguments of :func:`tx_json` for a transaction in block ``entry``.

    On the active chain: hash, height, confirmations and the block time twice.
    Off it (Dash's TxToJSON): height -1 and 0 confirmations, no times.
    """
    if not chain.contains(entry):
        return {"blockhash": entry.hash, "height": -1, "confirmations": 0}
    return {"blockhash": entry.hash, "height": entry.height,
            "confirmations": block_confirmations(entry, chain), "time": entry.time,
            "blocktime": entry.time}
