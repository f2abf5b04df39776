"""Partially signed transactions (BIP174) as Core 0.17 reads and writes them.

Only the legacy (non-witness) fields have meaning on this chain; the witness
key types are kept as unknown entries, so they round-trip untouched like any
other unknown key.  Parsing is strict the way Core 0.17.0's is (the reference node's): bad
magic, a wrong key length for a known type, duplicate keys, truncation or
trailing data raise :class:`PSBTError` with Core's message.
"""

from __future__ import annotations

import base64
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

from coincurve import PublicKey

from coin.primitives.serialize import ByteReader, DeserializationError, u32, var_bytes
from coin.primitives.transaction import Transaction, TxIn, TxOut

PSBT_MAGIC = b"psbt\xff"

GLOBAL_UNSIGNED_TX = 0x00
IN_NON_WITNESS_UTXO = 0x00
IN_PARTIAL_SIG = 0x02
IN_SIGHASH = 0x03
IN_REDEEM_SCRIPT = 0x04
IN_BIP32_DERIVATION = 0x06
IN_FINAL_SCRIPTSIG = 0x07
OUT_REDEEM_SCRIPT = 0x00
OUT_BIP32_DERIVATION = 0x02

#: A key path: the master key fingerprint (as a little-endian u32, Core 0.17) then the indexes.
KeyPath = Tuple[int, ...]


class PSBTError(ValueError):
    """The PSBT is malformed; the message is Core's."""


#: Core's words for what our byte reader reports in its own.
_STREAM_REASONS = {"unexpected end of data": "CDataStream::read(): end of data"}
_BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _valid_pubkey(pubkey: bytes) -> bool:
    try:
        PublicKey(pubkey)
    except ValueError:
        return False
    return True


def _pubkey_key(key: bytes, what: str) -> bytes:
    """The pubkey after a one-byte key type, checked as Core 0.17 does."""
    if len(key) not in (34, 66):
        raise PSBTError("Size of key was not the expected size for the type " + what)
    pubkey = key[1:]
    if not _valid_pubkey(pubkey):
        raise PSBTError("Invalid pubkey")
    return pubkey


def _single_byte(key: bytes, message: str) -> None:
    if len(key) != 1:
        raise PSBTError(message)


def _whole_tx(value: bytes) -> Transaction:
    """A transaction that fills its value exactly (Core's UnserializeFromVector)."""
    r = ByteReader(value)
    tx = Transaction.read(r)
    if r.remaining():
        raise PSBTError("Size of value was not the stated size")
    return tx


def _keypath(value: bytes) -> KeyPath:
    if not value or len(value) % 4:
        raise PSBTError("Invalid length for HD key path")
    return tuple(struct.unpack("<%dI" % (len(value) // 4), value))


def _record(key: bytes, value: bytes) -> bytes:
    return var_bytes(key) + var_bytes(value)


def _keypath_records(key_type: int, paths: Dict[bytes, KeyPath]) -> bytes:
    return b"".join(_record(bytes((key_type,)) + pubkey, b"".join(u32(i) for i in path))
                    for pubkey, path in sorted(paths.items()))


def _unknown_records(unknown: Dict[bytes, bytes]) -> bytes:
    return b"".join(_record(key, value) for key, value in sorted(unknown.items()))


def _add_unknown(unknown: Dict[bytes, bytes], key: bytes, value: bytes) -> None:
    if key in unknown:
        raise PSBTError("Duplicate Key, key for unknown value already provided")
    unknown[key] = value


def _add_keypath(paths: Dict[bytes, KeyPath], key: bytes, value: bytes) -> None:
    pubkey = _pubkey_key(key, "BIP32 keypath")
    if pubkey in paths:
        raise PSBTError("Duplicate Key, pubkey derivation path already provided")
    paths[pubkey] = _keypath(value)


def _redeem_script(current: bytes, key: bytes, value: bytes, where: str, title: str) -> bytes:
    """A map's redeem script record, checked (Core's messages name the map)."""
    if current:
        raise PSBTError("Duplicate Key, %s redeemScript already provided" % where)
    _single_byte(key, "%s redeemScript key is more than one byte type" % title)
    return value


def _read_map(r: ByteReader) -> List[Tuple[bytes, bytes]]:
    """The key-value records of one map, up to its separator or the end of the data
    (Core 0.17.0 reads a map while data is left; a missing separator is no error there)."""
    records: List[Tuple[bytes, bytes]] = []
    while r.remaining():
        key = r.read_var_bytes()
        if not key:
            break
        records.append((key, r.read_var_bytes()))
    return records


def _fill(mine: Dict[bytes, Any], theirs: Dict[bytes, Any]) -> None:
    """Add the entries of ``theirs`` whose key ``mine`` lacks (a merge keeps what is there)."""
    for key, value in theirs.items():
        mine.setdefault(key, value)


def _merge_scripts_and_maps(mine: "PSBTInput | PSBTOutput", theirs: "PSBTInput | PSBTOutput") -> None:
    """What input and output maps merge alike: key paths, unknown entries, redeem script."""
    _fill(mine.keypaths, theirs.keypaths)
    _fill(mine.unknown, theirs.unknown)
    mine.redeem_script = mine.redeem_script or theirs.redeem_script


class PSBTInput:
    """What a PSBT says about one input."""

    __slots__ = ("non_witness_utxo", "partial_sigs", "sighash", "redeem_script", "keypaths",
                 "final_script_sig", "unknown")

    def __init__(self) -> None:
        self.non_witness_utxo: Optional[Transaction] = None
        self.partial_sigs: Dict[bytes, bytes] = {}
        self.sighash: Optional[int] = None
        self.redeem_script = b""
        self.keypaths: Dict[bytes, KeyPath] = {}
        self.final_script_sig = b""
        self.unknown: Dict[bytes, bytes] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PSBTInput) and self.serialize() == other.serialize()

    def is_final(self) -> bool:
        return bool(self.final_script_sig)

    def finalize(self, script_sig: bytes) -> None:
        """Set the scriptSig and drop what only signers need (Core)."""
        self.final_script_sig = script_sig
        self.partial_sigs.clear()
        self.keypaths.clear()
        self.redeem_script = b""
        self.sighash = None

    def serialize(self) -> bytes:
        out = []
        if self.non_witness_utxo is not None:
            out.append(_record(bytes((IN_NON_WITNESS_UTXO,)), self.non_witness_utxo.serialize()))
        if not self.final_script_sig:
            out.extend(_record(bytes((IN_PARTIAL_SIG,)) + pubkey, sig)
                       for pubkey, sig in sorted(self.partial_sigs.items()))
            if self.sighash is not None and self.sighash > 0:
                out.append(_record(bytes((IN_SIGHASH,)), u32(self.sighash)))
            if self.redeem_script:
                out.append(_record(bytes((IN_REDEEM_SCRIPT,)), self.redeem_script))
            out.append(_keypath_records(IN_BIP32_DERIVATION, self.keypaths))
        else:
            out.append(_record(bytes((IN_FINAL_SCRIPTSIG,)), self.final_script_sig))
        out.append(_unknown_records(self.unknown))
        return b"".join(out) + b"\x00"

    @classmethod
    def read(cls, r: ByteReader) -> "PSBTInput":
        inp = cls()
        for key, value in _read_map(r):
            kind = key[0]
            if kind == IN_NON_WITNESS_UTXO:
                if inp.non_witness_utxo is not None:
                    raise PSBTError("Duplicate Key, input non-witness utxo already provided")
                _single_byte(key, "Non-witness utxo key is more than one byte type")
                inp.non_witness_utxo = _whole_tx(value)
            elif kind == IN_PARTIAL_SIG:
                pubkey = _pubkey_key(key, "partial signature pubkey")
                if pubkey in inp.partial_sigs:
                    raise PSBTError("Duplicate Key, input partial signature for pubkey already provided")
                inp.partial_sigs[pubkey] = value
            elif kind == IN_SIGHASH:
                if inp.sighash is not None:
                    raise PSBTError("Duplicate Key, input sighash type already provided")
                _single_byte(key, "Sighash type key is more than one byte type")
                if len(value) != 4:
                    raise PSBTError("Size of value was not the stated size")
                inp.sighash = struct.unpack("<i", value)[0]
            elif kind == IN_REDEEM_SCRIPT:
                inp.redeem_script = _redeem_script(inp.redeem_script, key, value, "input", "Input")
            elif kind == IN_BIP32_DERIVATION:
                _add_keypath(inp.keypaths, key, value)
            elif kind == IN_FINAL_SCRIPTSIG:
                if inp.final_script_sig:
                    raise PSBTError("Duplicate Key, input final scriptSig already provided")
                _single_byte(key, "Final scriptSig key is more than one byte type")
                inp.final_script_sig = value
            else:
                _add_unknown(inp.unknown, key, value)
        return inp

    def merge(self, other: "PSBTInput") -> None:
        """Core's PSBTInput::Merge: fill what is missing, keep what is there."""
        if self.non_witness_utxo is None:
            self.non_witness_utxo = other.non_witness_utxo
        _fill(self.partial_sigs, other.partial_sigs)
        _merge_scripts_and_maps(self, other)
        self.final_script_sig = self.final_script_sig or other.final_script_sig


class PSBTOutput:
    """What a PSBT says about one output."""

    __slots__ = ("redeem_script", "keypaths", "unknown")

    def __init__(self) -> None:
        self.redeem_script = b""
        self.keypaths: Dict[bytes, KeyPath] = {}
        self.unknown: Dict[bytes, bytes] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PSBTOutput) and self.serialize() == other.serialize()

    def serialize(self) -> bytes:
        out = b""
        if self.redeem_script:
            out += _record(bytes((OUT_REDEEM_SCRIPT,)), self.redeem_script)
        return (out + _keypath_records(OUT_BIP32_DERIVATION, self.keypaths)
                + _unknown_records(self.unknown) + b"\x00")

    @classmethod
    def read(cls, r: ByteReader) -> "PSBTOutput":
        out = cls()
        for key, value in _read_map(r):
            kind = key[0]
            if kind == OUT_REDEEM_SCRIPT:
                out.redeem_script = _redeem_script(out.redeem_script, key, value, "output", "Output")
            elif kind == OUT_BIP32_DERIVATION:
                _add_keypath(out.keypaths, key, value)
            else:
                _add_unknown(out.unknown, key, value)
        return out

    def merge(self, other: "PSBTOutput") -> None:
        _merge_scripts_and_maps(self, other)


class PSBT:
    """The unsigned transaction and one map per input and per output."""

    __slots__ = ("tx", "inputs", "outputs", "unknown")

    def __init__(self, tx: Transaction, inputs: Optional[Sequence[PSBTInput]] = None,
                 outputs: Optional[Sequence[PSBTOutput]] = None,
                 unknown: Optional[Dict[bytes, bytes]] = None) -> None:
        if any(txin.script_sig for txin in tx.vin):
            raise PSBTError("Unsigned tx does not have empty scriptSigs and scriptWitnesses.")
        self.tx = tx
        self.inputs = list(inputs) if inputs is not None else [PSBTInput() for _ in tx.vin]
        self.outputs = list(outputs) if outputs is not None else [PSBTOutput() for _ in tx.vout]
        self.unknown = dict(unknown or {})

    @classmethod
    def from_transaction(cls, tx: Transaction) -> "PSBT":
        """A PSBT for ``tx`` with its scriptSigs removed (converttopsbt)."""
        vin = [TxIn(txin.prevout, b"", txin.sequence) for txin in tx.vin]
        return cls(Transaction(vin, tx.vout, tx.locktime, tx.version, tx.tx_type, tx.extra_payload))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PSBT) and self.serialize() == other.serialize()

    def serialize(self) -> bytes:
        return (PSBT_MAGIC + _record(bytes((GLOBAL_UNSIGNED_TX,)), self.tx.serialize())
                + _unknown_records(self.unknown) + b"\x00"
                + b"".join(i.serialize() for i in self.inputs)
                + b"".join(o.serialize() for o in self.outputs))

    def to_base64(self) -> str:
        return base64.b64encode(self.serialize()).decode("ascii")

    @classmethod
    def deserialize(cls, data: bytes) -> "PSBT":
        """Parse as Core 0.17's DecodePSBT; any flaw raises :class:`PSBTError` with Core's
        text: what its stream threw (std::ios_base::failure, so with libstdc++'s
        ": iostream error" after it), or "extra data after PSBT"."""
        r = ByteReader(data)
        try:
            psbt = cls._parse(r)
        except (PSBTError, DeserializationError) as e:
            reason = _STREAM_REASONS.get(str(e), str(e))
            raise PSBTError(reason + ": iostream error") from None
        if r.remaining():
            raise PSBTError("extra data after PSBT")
        return psbt

    @classmethod
    def from_base64(cls, text: str) -> "PSBT":
        """Core 0.17's DecodeBase64 is lenient: it decodes up to the first character that is
        not base64 (padding included) and ignores the rest; DecodePSBT does not check."""
        length = len(text) - len(text.lstrip(_BASE64_ALPHABET))
        valid = text[:length]
        if len(valid) % 4 == 1:
            valid = valid[:-1]  # six bits make no byte
        return cls.deserialize(base64.b64decode(valid + "=" * (-len(valid) % 4)))

    @classmethod
    def _parse(cls, r: ByteReader) -> "PSBT":
        if r.read(len(PSBT_MAGIC)) != PSBT_MAGIC:
            raise PSBTError("Invalid PSBT magic bytes")
        tx: Optional[Transaction] = None
        unknown: Dict[bytes, bytes] = {}
        for key, value in _read_map(r):
            if key[0] == GLOBAL_UNSIGNED_TX:
                if tx is not None:
                    raise PSBTError("Duplicate Key, unsigned tx already provided")
                _single_byte(key, "Global unsigned tx key is more than one byte type")
                tx = _whole_tx(value)
                if any(txin.script_sig for txin in tx.vin):
                    raise PSBTError("Unsigned tx does not have empty scriptSigs and scriptWitnesses.")
            else:
                _add_unknown(unknown, key, value)
        if tx is None:
            raise PSBTError("No unsigned transcation was provided")
        inputs: List[PSBTInput] = []
        while r.remaining() and len(inputs) < len(tx.vin):
            inp = PSBTInput.read(r)
            utxo = inp.non_witness_utxo
            if utxo is not None and utxo.txid != tx.vin[len(inputs)].prevout.txid:
                raise PSBTError("Non-witness UTXO does not match outpoint hash")
            inputs.append(inp)
        if len(inputs) != len(tx.vin):
            raise PSBTError("Inputs provided does not match the number of inputs in transaction.")
        outputs: List[PSBTOutput] = []
        while r.remaining() and len(outputs) < len(tx.vout):
            outputs.append(PSBTOutput.read(r))
        if len(outputs) != len(tx.vout):
            raise PSBTError("Outputs provided does not match the number of outputs in transaction.")
        return cls(tx, inputs, outputs, unknown)

    def merge(self, other: "PSBT") -> None:
        """Core's PartiallySignedTransaction::Merge (same transaction required)."""
        if other.tx.txid != self.tx.txid:
            raise PSBTError("PSBTs do not refer to the same transactions.")
        for mine, theirs in zip(self.inputs, other.inputs, strict=True):
            mine.merge(theirs)
        for out, other_out in zip(self.outputs, other.outputs, strict=True):
            out.merge(other_out)
        _fill(self.unknown, other.unknown)

    def spent_output(self, index: int) -> Optional[TxOut]:
        """The output input ``index`` spends, when the PSBT carries it."""
        utxo = self.inputs[index].non_witness_utxo
        n = self.tx.vin[index].prevout.n
        if utxo is None or n >= len(utxo.vout):
            return None
        return utxo.vout[n]

    def extract(self) -> Transaction:
        """The network transaction, final scriptSigs in place."""
        vin = [TxIn(txin.prevout, inp.final_script_sig, txin.sequence)
               for txin, inp in zip(self.tx.vin, self.inputs, strict=True)]
        tx = self.tx
        return Transaction(vin, tx.vout, tx.locktime, tx.version, tx.tx_type, tx.extra_payload)


def combine(psbts: Sequence[PSBT]) -> PSBT:
    """Merge copies of the same PSBT into the first one's copy (combinepsbt)."""
    result = PSBT.deserialize(psbts[0].serialize())
    for other in psbts[1:]:
        result.merge(other)
    return result


__all__ = ["PSBT", "PSBTError", "PSBTInput", "PSBTOutput", "combine"]
