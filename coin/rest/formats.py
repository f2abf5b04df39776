"""Output formats of the REST endpoints: suffixes, content types, trailing bytes.

Every block, header, transaction, chain-info and utxo object comes from
:mod:`coin.views`; this module only decides suffixes, content types and the
trailing bytes (JSON and hex end with ``\\n``, bin with nothing).
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from coin.rpc.jsonrpc import encode_json

JSON = "json"
HEX = "hex"
BIN = "bin"

CONTENT_TYPES = {
    JSON: b"application/json",
    HEX: b"text/plain",
    BIN: b"application/octet-stream",
}

#: Every format, in the order Core names them in "output format not found".
ALL_FORMATS: Tuple[str, ...] = (BIN, HEX, JSON)
JSON_ONLY: Tuple[str, ...] = (JSON,)

#: A reply body: (content type, bytes).
Body = Tuple[bytes, bytes]


def available_text(formats: Tuple[str, ...]) -> str:
    """The list in Core's message: ``.bin, .hex, .json``; json-only endpoints say ``json``."""
    if formats == JSON_ONLY:
        return JSON
    return ", ".join("." + f for f in formats)


def json_body(value: Any) -> Body:
    return CONTENT_TYPES[JSON], encode_json(value) + b"\n"


def block_json_body(obj: Dict[str, Any]) -> Body:
    """A block object's JSON, byte for byte what :func:`json_body` gives, encoded one
    transaction at a time: one encoder call over a big block holds the GIL (and so the
    reactor) for the whole encode; many small calls let the reactor run in between."""
    txs = obj.get("tx")
    if not txs:
        return json_body(obj)
    head = encode_json(dict(obj, tx=[]))
    # "tx" follows hash, confirmations, size, height, version, versionHex and merkleroot,
    # none of which can hold this text, so the first occurrence is the key.
    marker = b'"tx":[]'
    at = head.index(marker)
    parts = [head[:at], b'"tx":[']
    for i, tx in enumerate(txs):
        if i:
            parts.append(b",")
        parts.append(encode_json(tx))
    parts += [b"]", head[at + len(marker):], b"\n"]
    return CONTENT_TYPES[JSON], b"".join(parts)


def binary_body(fmt: str, data: bytes) -> Body:
    """``hex`` (text, ending with a newline) or ``bin`` (raw bytes) of serialized data."""
    if fmt == HEX:
        return CONTENT_TYPES[HEX], data.hex().encode("ascii") + b"\n"
    return CONTENT_TYPES[BIN], data
