"""Plain P2PKH spends checked straight from a transaction's bytes.

Block connect spends mostly P2PKH outputs signed SIGHASH_ALL.  For those the
interpreter's work reduces to a key-hash compare and one signature check, and the
signed message is the transaction's own bytes with the scriptSigs swapped: so a
``-par`` worker need not build the transaction's objects, and nobody need run the
stack machine.  :meth:`RawSpends.verify_p2pkh` only ever *accepts*: anything it does
not recognise, and any spend that fails, goes to the interpreter
(coin.chain.scriptcheck), which names the error, so the outcome is the interpreter's.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from coin.primitives.hashes import hash160, sha256d
from coin.primitives.script import is_valid_der_signature
from coin.script.flags import SCRIPT_VERIFY_CLEANSTACK, SCRIPT_VERIFY_LOW_S, SCRIPT_VERIFY_P2SH
from coin.script.interpreter import verify_strict_der

#: Flags under which an accepted P2PKH spend could still fail in the interpreter:
#: LOW_S (a high-S signature verifies once normalized) and CLEANSTACK without P2SH
#: (an error of the caller).  With those, the interpreter decides.
_CLEANSTACK_ALONE = SCRIPT_VERIFY_CLEANSTACK | SCRIPT_VERIFY_P2SH
_P2PKH_HEAD = b"\x76\xa9\x14"
_P2PKH_TAIL = b"\x88\xac"


def _compact_size(raw: bytes, pos: int) -> Tuple[int, int]:
    """The CompactSize at ``pos`` and the position after it (not ByteReader's: these bytes
    were parsed, and checked, as a Transaction already; this is the worker's hot path)."""
    first = raw[pos]
    if first < 0xFD:
        return first, pos + 1
    width = 2 if first == 0xFD else 4 if first == 0xFE else 8
    return int.from_bytes(raw[pos + 1:pos + 1 + width], "little"), pos + 1 + width


class RawSpends:
    """Where each input's outpoint and scriptSig sit in a serialized transaction.

    The bytes come from the node's own serialization, so they are well formed; only
    the offsets are read, no objects are built.
    """

    __slots__ = ("raw", "inputs", "_head", "_tail", "_blank")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        count, pos = _compact_size(raw, 4)
        self._head = pos
        #: Per input: (outpoint offset, scriptSig offset, scriptSig end).
        self.inputs: List[Tuple[int, int, int]] = []
        for _ in range(count):
            start = pos
            size, pos = _compact_size(raw, pos + 36)
            self.inputs.append((start, pos, pos + size))
            pos += size + 4
        #: Outputs, lock time and DIP2 payload: the SIGHASH_ALL message's ending.
        self._tail = raw[pos:]
        self._blank: Optional[bytes] = None

    def sighash_all(self, index: int, script_code: bytes, hash_type: int) -> bytes:
        """The signature hash of input ``index`` for a SIGHASH_ALL ``hash_type`` (no
        ANYONECANPAY), ``script_code`` already serialized as a scriptSig would be."""
        raw = self.raw
        start, _, end = self.inputs[index]
        parts = [raw[:self._head], raw[start:start + 36], script_code, raw[end:end + 4],
                 self._tail, hash_type.to_bytes(4, "little")]
        if len(self.inputs) > 1:
            blank = self._blank
            if blank is None:
                blank = self._blank = b"".join([
                    raw[s:s + 36] + b"\x00" + raw[e:e + 4] for s, _, e in self.inputs])
            offset = 41 * index
            parts[1:4] = [blank[:offset]] + parts[1:4] + [blank[offset + 41:]]
        return sha256d(b"".join(parts))

    def verify_p2pkh(self, index: int, script_pubkey: bytes, flags: int) -> bool:
        """True if input ``index`` is a valid SIGHASH_ALL spend of the P2PKH output
        ``script_pubkey``, by two direct pushes (a strict-DER signature, a compressed or
        uncompressed key).  False means "ask the interpreter", not "invalid".

        Such a spend passes every check the interpreter makes under any flags but
        LOW_S and CLEANSTACK without P2SH: direct pushes of 9-73 and 33/65 bytes are minimal and
        push-only, the key encoding is strict, one item is left on the stack.
        """
        if (flags & SCRIPT_VERIFY_LOW_S or flags & _CLEANSTACK_ALONE == SCRIPT_VERIFY_CLEANSTACK
                or len(script_pubkey) != 25
                or not script_pubkey.startswith(_P2PKH_HEAD)
                or not script_pubkey.endswith(_P2PKH_TAIL)):
            return False
        raw = self.raw
        _, pos, end = self.inputs[index]
        sig_len = raw[pos] if pos < end else 0
        # 20 bytes could be the key hash's push, which FindAndDelete would cut out of the
        # script code; no such signature verifies, the interpreter says so.
        if not 9 <= sig_len <= 73 or sig_len == 20 or pos + sig_len + 2 >= end:
            return False
        key_start = pos + sig_len + 2
        key_len = raw[key_start - 1]
        if key_start + key_len != end:
            return False
        pubkey = raw[key_start:end]
        if key_len == 33:
            if pubkey[0] != 2 and pubkey[0] != 3:
                return False
        elif key_len != 65 or pubkey[0] != 4:
            return False
        sig = raw[pos + 1:key_start - 1]
        if sig[-1] != 1 or not is_valid_der_signature(sig):
            return False  # not SIGHASH_ALL, or not strict DER
        if hash160(pubkey) != script_pubkey[3:23]:
            return False
        message = self.sighash_all(index, b"\x19" + script_pubkey, 1)
        return verify_strict_der(sig[:-1], pubkey, message)
