"""Legacy signature hash (Core's SignatureHash before segwit, with DIP2 fields).

The hashed message is the transaction re-serialized with every scriptSig
blanked except the signed input's, which carries the script code with its
OP_CODESEPARATORs removed; NONE/SINGLE/ANYONECANPAY prune inputs and outputs.
The per-transaction pieces are serialized once (:class:`SighashCache`) and
joined per call, so hashing every input of a large transaction stays cheap.
"""

from __future__ import annotations

import struct
from typing import List, Optional

from coin.primitives.hashes import sha256d
from coin.primitives.script import OP_CODESEPARATOR, ScriptParseError, iter_script
from coin.primitives.serialize import compact_size, u32, var_bytes
from coin.primitives.transaction import Transaction

SIGHASH_ALL = 1
SIGHASH_NONE = 2
SIGHASH_SINGLE = 3
SIGHASH_ANYONECANPAY = 0x80

#: uint256(1) in internal byte order: what Core "signs" for SIGHASH_SINGLE
#: without a matching output (and for an input index out of range).
SIGHASH_ONE = b"\x01" + b"\x00" * 31

_BLANK_OUTPUT = b"\xff" * 8 + b"\x00"  # CTxOut(): value -1, empty script
#: One input with an empty scriptSig: prevout hash, index, 0x00, sequence.
_BLANK_INPUT = struct.Struct("<32sIxI")


class SighashCache:
    """Pieces of one transaction's serialization shared by all of its inputs' hashes.

    Built lazily from ``tx.serialize()`` (already cached for transactions
    read off the wire): the version field and the outputs-to-end section
    are plain slices of it.
    """

    __slots__ = ("tx", "version", "head", "outputs_and_tail", "_tail", "_blank_inputs")

    def __init__(self, tx: Transaction) -> None:
        self.tx = tx
        raw = tx.serialize()
        pos = 4 + len(compact_size(len(tx.vin)))
        #: The version field, and the version field plus the input count.
        self.version = raw[:4]
        self.head = raw[:pos]
        for txin in tx.vin:
            n = len(txin.script_sig)
            pos += 41 + n if n < 0xFD else 40 + len(compact_size(n)) + n
        #: Output count, outputs, lock time and DIP2 payload: the SIGHASH_ALL ending.
        self.outputs_and_tail = raw[pos:]
        self._tail: Optional[bytes] = None
        self._blank_inputs: List[Optional[bytes]] = [None, None]

    def tail(self) -> bytes:
        """Lock time plus the DIP2 extra payload, if the transaction has one."""
        tail = self._tail
        if tail is None:
            tx = self.tx
            tail = u32(tx.locktime)
            if tx.has_extra_payload():
                tail += var_bytes(tx.extra_payload)
            self._tail = tail
        return tail

    def blank_inputs(self, zero_sequences: bool) -> bytes:
        """All inputs with empty scriptSigs, each exactly 41 bytes long."""
        blob = self._blank_inputs[zero_sequences]
        if blob is None:
            pack = _BLANK_INPUT.pack
            blob = b"".join([
                pack(txin.prevout.txid, txin.prevout.n, 0 if zero_sequences else txin.sequence)
                for txin in self.tx.vin])
            self._blank_inputs[zero_sequences] = blob
        return blob


def serialize_script_code(script_code: bytes) -> bytes:
    """The script code as the signed input's scriptSig, OP_CODESEPARATORs removed.

    Reproduces Core's CTransactionSignatureSerializer exactly, including
    its quirk for a truncated push: the length prefix counts the whole
    script but the bytes stop where parsing failed.
    """
    if (len(script_code) == 25 and script_code.startswith(b"\x76\xa9\x14")
            and script_code.endswith(b"\x88\xac")):
        return b"\x19" + script_code  # P2PKH, the hot path: nothing to strip
    separators = []
    stop = len(script_code)
    try:
        for op, _, pos in iter_script(script_code):
            if op == OP_CODESEPARATOR:
                separators.append(pos)
    except ScriptParseError as e:
        stop = e.stop
    if not separators and stop == len(script_code):
        return var_bytes(script_code)
    pieces = [compact_size(len(script_code) - len(separators))]
    begin = 0
    for pos in separators:
        pieces.append(script_code[begin:pos])
        begin = pos + 1
    pieces.append(script_code[begin:stop])
    return b"".join(pieces)


def signature_hash(script_code: bytes, tx: Transaction, input_index: int, hash_type: int,
                   cache: Optional[SighashCache] = None) -> bytes:
    """The 32-byte message an input's signature commits to (internal order).

    ``hash_type`` is the full 32-bit value appended to the preimage; only its
    low five bits and the ANYONECANPAY bit select the variant.  Pass a
    :class:`SighashCache` of ``tx`` when hashing several inputs.
    """
    if input_index >= len(tx.vin):
        return SIGHASH_ONE
    base = hash_type & 0x1F
    if base == SIGHASH_SINGLE and input_index >= len(tx.vout):
        return SIGHASH_ONE
    if cache is None or cache.tx is not tx:
        cache = SighashCache(tx)
    code = serialize_script_code(script_code)
    inputs = cache.blank_inputs(False)
    offset = 41 * input_index
    prevout = inputs[offset:offset + 36]
    sequence = inputs[offset + 37:offset + 41]
    if hash_type & SIGHASH_ANYONECANPAY:
        parts = [cache.version, b"\x01", prevout, code, sequence]
    else:
        if base == SIGHASH_NONE or base == SIGHASH_SINGLE:
            inputs = cache.blank_inputs(True)
        parts = [cache.head, inputs[:offset], prevout, code, sequence, inputs[offset + 41:]]
    if base == SIGHASH_NONE:
        parts += (b"\x00", cache.tail())
    elif base == SIGHASH_SINGLE:
        parts += (compact_size(input_index + 1), _BLANK_OUTPUT * input_index,
                  tx.vout[input_index].serialize(), cache.tail())
    else:
        parts.append(cache.outputs_and_tail)
    parts.append(u32(hash_type & 0xFFFFFFFF))
    return sha256d(b"".join(parts))
