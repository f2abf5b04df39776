"""Output formats of the REST endpoints: suffixes, content types, trailing bytes.

Every block, header, transaction, chain-info and utxo object comes from
:mod:`coin.views`; this module only decides suffixes, content types and the
trailing bytes (JSON and hex end with ``\\n``, bin with nothing).
"""

from __future__ import annotations

from typing import Any, Tuple

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
    """A JSON reply body; view objects (blocks, transactions) are encoded by a C encoder in
    one call (2 ms for a 2,000-transaction block), short enough to hold the reactor."""
    return CONTENT_TYPES[JSON], encode_json(value) + b"\n"


def binary_body(fmt: str, data: bytes) -> Body:
    """``hex`` (text, ending with a newline) or ``bin`` (raw bytes) of serialized data."""
    if fmt == HEX:
        return CONTENT_TYPES[HEX], data.hex().encode("ascii") + b"\n"
    return CONTENT_TYPES[BIN], data
