"""The governance object: a proposal, trigger or watchdog, serialized and hashed as the
reference node does (CGovernanceObject)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Optional

from coin.governance.params import MAX_OBJECT_DATA_SIZE
from coin.primitives.hashes import hash_to_hex, sha256d
from coin.primitives.serialize import ByteReader, DeserializationError, i32, i64, var_bytes
from coin.primitives.transaction import SEQUENCE_FINAL, OutPoint, TxIn

NULL_HASH = bytes(32)

OBJECT_UNKNOWN = 0
OBJECT_PROPOSAL = 1
OBJECT_TRIGGER = 2
OBJECT_WATCHDOG = 3
OBJECT_TYPES = (OBJECT_PROPOSAL, OBJECT_TRIGGER, OBJECT_WATCHDOG)

_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


class DataError(ValueError):
    """Object data that is not the reference's JSON shape; the text is UniValue's/libstdc++'s
    exception message, which the validator passes on to the user."""


def parse_hex_prefix(text: str) -> bytes:
    """Core's ParseHex: hex digit pairs (whitespace between pairs skipped) until the first misfit."""
    try:
        return bytes.fromhex(text)  # the usual case, whole: the same bytes, much faster
    except ValueError:
        pass
    out = bytearray()
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        pair = text[i:i + 2]
        if len(pair) < 2 or not all(c in _HEX_DIGITS for c in pair):
            return bytes(out)
        out.append(int(pair, 16))
        i += 2


def data_as_string(data_hex: str) -> str:
    """The data's text (GetDataAsString): invalid UTF-8 is shown replaced, never fatal."""
    return parse_hex_prefix(data_hex).decode("utf-8", "replace")


def _values(value: Any) -> list:
    """UniValue::getValues(): the items of an array or the values of an object."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return list(value.values())
    raise DataError("JSON value is not an object or array as expected")


def _at(items: list, index: int) -> Any:
    if index >= len(items):
        raise DataError("vector::_M_range_check: __n (which is %d) >= this->size() (which is %d)"
                        % (index, len(items)))
    return items[index]


def _first_keys(pairs: list) -> dict:
    """An object as UniValue looks keys up: the first of repeated keys wins."""
    found: dict = {}
    for key, value in pairs:
        found.setdefault(key, value)
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity are not JSON


def parse_json_text(text: str) -> Any:
    """JSON as UniValue reads it (numbers with a fraction kept exact); DataError if not JSON."""
    try:
        return json.loads(text, parse_float=Decimal, parse_constant=_no_constant,
                          object_pairs_hook=_first_keys)
    except ValueError:
        raise DataError("JSON value is not an object or array as expected") from None


def inner_object(data_hex: str) -> Any:
    """The object the data describes: ``[["proposal", {...}]]`` -> ``{...}`` (GetJSONObject)."""
    outer = parse_json_text(data_as_string(data_hex))
    return _at(_values(_at(_values(outer), 0)), 1)


def data_object_type(data_hex: str) -> Optional[int]:
    """The ``type`` the data declares; None when the data cannot say (LoadData's
    fUnparsable). Empty data declares nothing and is of OBJECT_UNKNOWN."""
    if not data_hex:
        return OBJECT_UNKNOWN
    try:
        inner = inner_object(data_hex)
    except DataError:
        return None
    value = inner.get("type") if isinstance(inner, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or not -2**31 <= value < 2**31:
        return None
    return value


def _raw(text: str) -> bytes:
    """A std::string's bytes: the text as UTF-8, bytes that were not UTF-8 given back."""
    return text.encode("utf-8", "surrogateescape")


def outpoint_short(outpoint: OutPoint) -> str:
    """COutPoint::ToStringShort: ``txid-n``."""
    return "%s-%d" % (hash_to_hex(outpoint.txid), outpoint.n)


def outpoint_text(outpoint: OutPoint) -> str:
    """COutPoint::ToString as the reference prints it: ``COutPoint(<txid>, n)``."""
    return "COutPoint(%s, %d)" % (hash_to_hex(outpoint.txid), outpoint.n)


def txin_text(txin: TxIn) -> str:
    """CTxIn::ToString."""
    if txin.prevout.is_null():
        script = ", coinbase " + txin.script_sig.hex()
    else:
        script = ", scriptSig=" + txin.script_sig.hex()[:24]
    sequence = ", nSequence=%d" % txin.sequence if txin.sequence != SEQUENCE_FINAL else ""
    return "CTxIn(%s%s%s)" % (outpoint_text(txin.prevout), script, sequence)


class GovernanceObject:
    """One governance object as relayed; the type is read from the data when built locally."""

    __slots__ = ("parent_hash", "revision", "time", "collateral_hash", "data_hex", "object_type",
                 "masternode", "signature", "_hash", "_parsable")

    def __init__(self, parent_hash: bytes, revision: int, time: int, collateral_hash: bytes,
                 data_hex: str, object_type: Optional[int] = None,
                 masternode: Optional[TxIn] = None, signature: bytes = b"") -> None:
        self.parent_hash = parent_hash
        self.revision = revision
        self.time = time
        self.collateral_hash = collateral_hash
        self.data_hex = data_hex
        if object_type is None:
            object_type = data_object_type(data_hex) or OBJECT_UNKNOWN
        self.object_type = object_type
        self.masternode = masternode if masternode is not None else TxIn(OutPoint())
        self.signature = signature
        self._hash: Optional[bytes] = None
        self._parsable: Optional[bool] = None

    @property
    def hash(self) -> bytes:
        """The object's identity: everything but the fee txid (and the type), as the reference."""
        if self._hash is None:
            self._hash = sha256d(self.parent_hash + i32(self.revision) + i64(self.time)
                                 + var_bytes(_raw(self.data_hex))
                                 + self.masternode.serialize() + var_bytes(self.signature))
        return self._hash

    def serialize(self) -> bytes:
        return (self.parent_hash + i32(self.revision) + i64(self.time) + self.collateral_hash
                + var_bytes(_raw(self.data_hex)) + i32(self.object_type)
                + self.masternode.serialize() + var_bytes(self.signature))

    @classmethod
    def read(cls, r: ByteReader) -> "GovernanceObject":
        parent, revision, time, collateral = r.read(32), r.read_i32(), r.read_i64(), r.read(32)
        size = r.read_compact_size()
        if size > MAX_OBJECT_DATA_SIZE:
            raise DeserializationError("String length limit exceeded")
        data = r.read(size).decode("utf-8", "surrogateescape")
        return cls(parent, revision, time, collateral, data, r.read_i32(), TxIn.read(r),
                   r.read_var_bytes())

    def signature_message(self) -> str:
        """What the masternode signs (GetSignatureMessage)."""
        return "|".join((hash_to_hex(self.parent_hash), str(self.revision), str(self.time),
                         self.data_hex, outpoint_short(self.masternode.prevout),
                         hash_to_hex(self.collateral_hash)))

    @property
    def parsable(self) -> bool:
        """Whether the data is JSON of the reference's shape with an integer type."""
        if self._parsable is None:
            self._parsable = data_object_type(self.data_hex) is not None
        return self._parsable

    @property
    def signed(self) -> bool:
        """Whether a masternode signed it (triggers and watchdogs)."""
        return self.masternode != TxIn(OutPoint())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GovernanceObject) and self.serialize() == other.serialize()

    def __hash__(self) -> int:
        return hash(self.hash)

    def __repr__(self) -> str:
        return "GovernanceObject(%s)" % hash_to_hex(self.hash)
