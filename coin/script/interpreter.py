"""The legacy script interpreter (Core 0.12-0.16 EvalScript/VerifyScript, no segwit).

Errors are raised as :class:`ScriptError` whose ``code`` is Core's ScriptError
name without ``SCRIPT_ERR_``, so callers can build Core's reject reasons
(``"mandatory-script-verify-flag-failed (%s)"``) and tests can compare with the
vectors.  Plain P2PKH spends, the bulk of block validation, take a short
path that skips the evaluation loop; the loop itself handles pushes and the
common opcodes inline and dispatches the rest through tables.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Dict, List, Optional, Tuple

from coincurve._libsecp256k1 import ffi, lib
from coincurve.context import GLOBAL_CONTEXT

from coin.primitives import script as s
from coin.primitives.hashes import hash160, ripemd160, sha256, sha256d
from coin.primitives.script import (
    MAX_OPS_PER_SCRIPT,
    MAX_PUBKEYS_PER_MULTISIG,
    MAX_SCRIPT_ELEMENT_SIZE,
    MAX_SCRIPT_SIZE,
    MAX_STACK_SIZE,
    ScriptNumError,
    ScriptParseError,
    decode_script_num,
    encode_script_num,
    find_and_delete,
    is_minimal_push,
    is_p2sh,
    is_push_only,
    is_valid_der_signature,
    iter_script,
    push_data,
    script_num_to_int,
)
from coin.primitives.transaction import (
    LOCKTIME_THRESHOLD,
    SEQUENCE_FINAL,
    SEQUENCE_LOCKTIME_DISABLE_FLAG,
    SEQUENCE_LOCKTIME_MASK,
    SEQUENCE_LOCKTIME_TYPE_FLAG,
    Transaction,
)
from coin.script.flags import (
    SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY,
    SCRIPT_VERIFY_CHECKSEQUENCEVERIFY,
    SCRIPT_VERIFY_CLEANSTACK,
    SCRIPT_VERIFY_DERSIG,
    SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS,
    SCRIPT_VERIFY_LOW_S,
    SCRIPT_VERIFY_MINIMALDATA,
    SCRIPT_VERIFY_NULLDUMMY,
    SCRIPT_VERIFY_NULLFAIL,
    SCRIPT_VERIFY_P2SH,
    SCRIPT_VERIFY_SIGPUSHONLY,
    SCRIPT_VERIFY_STRICTENC,
)
from coin.script.sighash import SighashCache, signature_hash

#: Core's ScriptErrorString texts, which reject reasons quote
#: ("mandatory-script-verify-flag-failed (<message>)").  Codes are the names
#: the test vectors use (Core's SCRIPT_ERR_SIG_NULLFAIL is "NULLFAIL" there).
SCRIPT_ERROR_MESSAGES = {
    "EVAL_FALSE": "Script evaluated without error but finished with a false/empty "
                  "top stack element",
    "VERIFY": "Script failed an OP_VERIFY operation",
    "EQUALVERIFY": "Script failed an OP_EQUALVERIFY operation",
    "CHECKMULTISIGVERIFY": "Script failed an OP_CHECKMULTISIGVERIFY operation",
    "CHECKSIGVERIFY": "Script failed an OP_CHECKSIGVERIFY operation",
    "NUMEQUALVERIFY": "Script failed an OP_NUMEQUALVERIFY operation",
    "SCRIPT_SIZE": "Script is too big",
    "PUSH_SIZE": "Push value size limit exceeded",
    "OP_COUNT": "Operation limit exceeded",
    "STACK_SIZE": "Stack size limit exceeded",
    "SIG_COUNT": "Signature count negative or greater than pubkey count",
    "PUBKEY_COUNT": "Pubkey count negative or limit exceeded",
    "BAD_OPCODE": "Opcode missing or not understood",
    "DISABLED_OPCODE": "Attempted to use a disabled opcode",
    "INVALID_STACK_OPERATION": "Operation not valid with the current stack size",
    "INVALID_ALTSTACK_OPERATION": "Operation not valid with the current altstack size",
    "OP_RETURN": "OP_RETURN was encountered",
    "UNBALANCED_CONDITIONAL": "Invalid OP_IF construction",
    "NEGATIVE_LOCKTIME": "Negative locktime",
    "UNSATISFIED_LOCKTIME": "Locktime requirement not satisfied",
    "SIG_HASHTYPE": "Signature hash type missing or not understood",
    "SIG_DER": "Non-canonical DER signature",
    "MINIMALDATA": "Data push larger than necessary",
    "SIG_PUSHONLY": "Only non-push operators allowed in signatures",
    "SIG_HIGH_S": "Non-canonical signature: S value is unnecessarily high",
    "SIG_NULLDUMMY": "Dummy CHECKMULTISIG argument must be zero",
    "NULLFAIL": "Signature must be zero for failed CHECK(MULTI)SIG operation",
    "DISCOURAGE_UPGRADABLE_NOPS": "NOPx reserved for soft-fork upgrades",
    "PUBKEYTYPE": "Public key is neither compressed or uncompressed",
    "CLEANSTACK": "Extra items left on stack after execution",
}


class ScriptError(Exception):
    """Script evaluation failed.

    ``code`` is the error name (e.g. ``"EVAL_FALSE"``); ``message`` is Core's
    text for it ("unknown error" for UNKNOWN_ERROR, as in Core).
    """

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code
        self.message = SCRIPT_ERROR_MESSAGES.get(code, "unknown error")


# -- stack values ------------------------------------------------------------

TRUE = b"\x01"
FALSE = b""


def cast_to_bool(value: bytes) -> bool:
    """Any non-zero byte is true, except that negative zero (0x..80) is false."""
    if not value:
        return False
    if value[-1] & 0x7F:
        return True
    return value.count(0, 0, -1) < len(value) - 1


# -- signature and key encodings ---------------------------------------------

_SECP256K1_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_HALF_ORDER = _SECP256K1_ORDER // 2


def _der_length(der: bytes, pos: int) -> Tuple[int, int]:
    """Read a lax DER length at ``pos``; return ``(length, next_pos)`` or ``(-1, 0)``."""
    end = len(der)
    if pos >= end:
        return -1, 0
    n = der[pos]
    pos += 1
    if not n & 0x80:
        return n, pos
    n -= 0x80
    if n > end - pos:
        return -1, 0
    while n and der[pos] == 0:
        pos += 1
        n -= 1
    if n >= 4:
        return -1, 0
    return int.from_bytes(der[pos:pos + n], "big"), pos + n


def parse_der_lax(der: bytes) -> Optional[Tuple[int, int]]:
    """Core's ecdsa_signature_parse_der_lax: ``(r, s)`` or None if unparseable.

    Values that do not fit (over 32 bytes or not below the group order)
    come back as ``(0, 0)``, which never verifies, as in Core.
    """
    end = len(der)
    if not end or der[0] != 0x30:
        return None
    pos = 1
    if pos == end:
        return None
    seq_len = der[pos]
    pos += 1
    if seq_len & 0x80:
        seq_len -= 0x80
        if seq_len > end - pos:
            return None
        pos += seq_len
    values = []
    for _ in range(2):
        if pos >= end or der[pos] != 0x02:
            return None
        length, pos = _der_length(der, pos + 1)
        if length < 0 or length > end - pos:
            return None
        values.append(der[pos:pos + length].lstrip(b"\x00"))
        pos += length
    r, sv = values
    if len(r) > 32 or len(sv) > 32:
        return 0, 0
    r_int = int.from_bytes(r, "big")
    s_int = int.from_bytes(sv, "big")
    if r_int >= _SECP256K1_ORDER or s_int >= _SECP256K1_ORDER:
        return 0, 0
    return r_int, s_int


def _check_signature_encoding(sig: bytes, flags: int) -> None:
    """Core's CheckSignatureEncoding (the empty signature always passes)."""
    if not sig:
        return
    if flags & (SCRIPT_VERIFY_DERSIG | SCRIPT_VERIFY_LOW_S | SCRIPT_VERIFY_STRICTENC):
        if not is_valid_der_signature(sig):
            raise ScriptError("SIG_DER")
    if flags & SCRIPT_VERIFY_LOW_S:
        parsed = parse_der_lax(sig[:-1])
        if parsed is None or parsed[1] > _HALF_ORDER:
            raise ScriptError("SIG_HIGH_S")
    if flags & SCRIPT_VERIFY_STRICTENC:
        if not 1 <= (sig[-1] & 0x7F) <= 3:
            raise ScriptError("SIG_HASHTYPE")


def _check_pubkey_encoding(pubkey: bytes, flags: int) -> None:
    """STRICTENC admits only 33-byte compressed and 65-byte uncompressed keys."""
    if flags & SCRIPT_VERIFY_STRICTENC:
        n = len(pubkey)
        if not ((n == 33 and pubkey[0] in (2, 3)) or (n == 65 and pubkey[0] == 4)):
            raise ScriptError("PUBKEYTYPE")


# -- checkers ----------------------------------------------------------------

_CTX = GLOBAL_CONTEXT.ctx
_PUBKEY_CACHE: Dict[bytes, object] = {}
_PUBKEY_CACHE_MAX = 32768
_shared_sighash: List[Optional[SighashCache]] = [None]


def _parse_pubkey(pubkey: bytes) -> Any:
    """libsecp256k1 public key for ``pubkey`` (cached), or None if invalid."""
    parsed = _PUBKEY_CACHE.get(pubkey)
    if parsed is None:
        parsed = ffi.new("secp256k1_pubkey *")
        if not lib.secp256k1_ec_pubkey_parse(_CTX, parsed, pubkey, len(pubkey)):
            parsed = False
        if len(_PUBKEY_CACHE) >= _PUBKEY_CACHE_MAX:
            _PUBKEY_CACHE.clear()
        _PUBKEY_CACHE[pubkey] = parsed
    return parsed or None


def verify_ecdsa(der: bytes, pubkey: bytes, msg32: bytes) -> bool:
    """Core's CPubKey::Verify: lax DER, high S normalized before verifying.

    Strict-DER signatures (all of them since BIP66) are parsed by
    libsecp256k1 itself, which for that encoding yields exactly what the
    lax parser would, including zero for out-of-range values.
    """
    if is_valid_der_signature(der + b"\x01"):
        return verify_strict_der(der, pubkey, msg32)
    key = _parse_pubkey(pubkey)
    if key is None:
        return False
    rs = parse_der_lax(der)
    if rs is None:
        return False
    sig = ffi.new("secp256k1_ecdsa_signature *")
    lib.secp256k1_ecdsa_signature_parse_compact(
        _CTX, sig, rs[0].to_bytes(32, "big") + rs[1].to_bytes(32, "big"))
    return _verify_parsed(sig, msg32, key)


def verify_strict_der(der: bytes, pubkey: bytes, msg32: bytes) -> bool:
    """:func:`verify_ecdsa` for a signature already known to be strict DER (its hash
    type byte removed): libsecp256k1 parses it as the lax parser would."""
    key = _parse_pubkey(pubkey)
    if key is None:
        return False
    sig = ffi.new("secp256k1_ecdsa_signature *")
    lib.secp256k1_ecdsa_signature_parse_der(_CTX, sig, der, len(der))
    return _verify_parsed(sig, msg32, key)


def _verify_parsed(sig: Any, msg32: bytes, key: Any) -> bool:
    """High S normalized first: Core's CPubKey::Verify accepts either form."""
    lib.secp256k1_ecdsa_signature_normalize(_CTX, sig, sig)
    verified: int = lib.secp256k1_ecdsa_verify(_CTX, sig, msg32, key)
    return verified == 1


class BaseSignatureChecker:
    """A checker with no transaction: every signature and lock check fails."""

    __slots__ = ()

    def check_sig(self, sig: bytes, pubkey: bytes, script_code: bytes) -> bool:
        return False

    def check_locktime(self, locktime: int) -> bool:
        return False

    def check_sequence(self, sequence: int) -> bool:
        return False


class TransactionSignatureChecker(BaseSignatureChecker):
    """Checks signatures and lock times against input ``input_index`` of ``tx``.

    The serialized pieces of ``tx`` are shared between checkers of the same
    transaction object (pass ``cache`` explicitly to control it), so
    verifying every input does not re-serialize the transaction each time.
    """

    __slots__ = ("tx", "input_index", "_cache")

    def __init__(self, tx: Transaction, input_index: int,
                 cache: Optional[SighashCache] = None) -> None:
        self.tx = tx
        self.input_index = input_index
        self._cache = cache

    def _sighash_cache(self) -> SighashCache:
        cache = self._cache
        if cache is None:
            cache = _shared_sighash[0]
            if cache is None or cache.tx is not self.tx:
                cache = _shared_sighash[0] = SighashCache(self.tx)
            self._cache = cache
        return cache

    def check_sig(self, sig: bytes, pubkey: bytes, script_code: bytes) -> bool:
        if not sig:
            return False
        msg = signature_hash(script_code, self.tx, self.input_index, sig[-1],
                             self._sighash_cache())
        return verify_ecdsa(sig[:-1], pubkey, msg)

    def check_locktime(self, locktime: int) -> bool:
        tx_locktime = self.tx.locktime
        # Compare heights with heights and times with times only.
        if (tx_locktime < LOCKTIME_THRESHOLD) != (locktime < LOCKTIME_THRESHOLD):
            return False
        if locktime > tx_locktime:
            return False
        # A final input would let the transaction ignore its lock time.
        return self.tx.vin[self.input_index].sequence != SEQUENCE_FINAL

    def check_sequence(self, sequence: int) -> bool:
        tx_sequence = self.tx.vin[self.input_index].sequence
        if (self.tx.version & 0xFFFFFFFF) < 2:
            return False  # BIP68 does not apply
        if tx_sequence & SEQUENCE_LOCKTIME_DISABLE_FLAG:
            return False
        mask = SEQUENCE_LOCKTIME_TYPE_FLAG | SEQUENCE_LOCKTIME_MASK
        tx_masked = tx_sequence & mask
        masked = sequence & mask
        if (tx_masked < SEQUENCE_LOCKTIME_TYPE_FLAG) != (masked < SEQUENCE_LOCKTIME_TYPE_FLAG):
            return False
        return masked <= tx_masked


# -- opcode tables -----------------------------------------------------------

_DISABLED = frozenset((
    s.OP_CAT, s.OP_SUBSTR, s.OP_LEFT, s.OP_RIGHT, s.OP_INVERT, s.OP_AND, s.OP_OR,
    s.OP_XOR, s.OP_2MUL, s.OP_2DIV, s.OP_MUL, s.OP_DIV, s.OP_MOD, s.OP_LSHIFT,
    s.OP_RSHIFT))

_SMALL_INTS = {op: encode_script_num(op - (s.OP_1 - 1))
               for op in range(s.OP_1NEGATE, s.OP_16 + 1) if op != s.OP_RESERVED}

_UPGRADABLE_NOPS = frozenset((s.OP_NOP1, s.OP_NOP4, s.OP_NOP5, s.OP_NOP6, s.OP_NOP7,
                              s.OP_NOP8, s.OP_NOP9, s.OP_NOP10))


def _2rot(st: List[bytes]) -> None:
    moved = st[-6:-4]
    del st[-6:-4]
    st.extend(moved)


def _2swap(st: List[bytes]) -> None:
    st[-4:] = st[-2:] + st[-4:-2]


def _ifdup(st: List[bytes]) -> None:
    if cast_to_bool(st[-1]):
        st.append(st[-1])


def _swap(st: List[bytes]) -> None:
    st[-1], st[-2] = st[-2], st[-1]


#: Pure stack shuffles: opcode -> (items required, action).
_STACK_OPS: Dict[int, Tuple[int, Callable[[List[bytes]], object]]] = {
    s.OP_2DROP: (2, lambda st: st.__delitem__(slice(-2, None))),
    s.OP_2DUP: (2, lambda st: st.extend(st[-2:])),
    s.OP_3DUP: (3, lambda st: st.extend(st[-3:])),
    s.OP_2OVER: (4, lambda st: st.extend(st[-4:-2])),
    s.OP_2ROT: (6, _2rot),
    s.OP_2SWAP: (4, _2swap),
    s.OP_IFDUP: (1, _ifdup),
    s.OP_DEPTH: (0, lambda st: st.append(encode_script_num(len(st)))),
    s.OP_DROP: (1, lambda st: st.pop()),
    s.OP_NIP: (2, lambda st: st.__delitem__(-2)),
    s.OP_OVER: (2, lambda st: st.append(st[-2])),
    s.OP_ROT: (3, lambda st: st.append(st.pop(-3))),
    s.OP_SWAP: (2, _swap),
    s.OP_TUCK: (2, lambda st: st.insert(-2, st[-1])),
    s.OP_SIZE: (1, lambda st: st.append(encode_script_num(len(st[-1])))),
}

_UNARY_NUM: Dict[int, Callable[[int], int]] = {
    s.OP_1ADD: lambda a: a + 1,
    s.OP_1SUB: lambda a: a - 1,
    s.OP_NEGATE: lambda a: -a,
    s.OP_ABS: abs,
    s.OP_NOT: lambda a: a == 0,
    s.OP_0NOTEQUAL: lambda a: a != 0,
}

_BINARY_NUM: Dict[int, Callable[[int, int], int]] = {
    s.OP_ADD: lambda a, b: a + b,
    s.OP_SUB: lambda a, b: a - b,
    s.OP_BOOLAND: lambda a, b: a != 0 and b != 0,
    s.OP_BOOLOR: lambda a, b: a != 0 or b != 0,
    s.OP_NUMEQUAL: lambda a, b: a == b,
    s.OP_NUMEQUALVERIFY: lambda a, b: a == b,
    s.OP_NUMNOTEQUAL: lambda a, b: a != b,
    s.OP_LESSTHAN: lambda a, b: a < b,
    s.OP_GREATERTHAN: lambda a, b: a > b,
    s.OP_LESSTHANOREQUAL: lambda a, b: a <= b,
    s.OP_GREATERTHANOREQUAL: lambda a, b: a >= b,
    s.OP_MIN: min,
    s.OP_MAX: max,
}

_HASHES: Dict[int, Callable[[bytes], bytes]] = {
    s.OP_RIPEMD160: ripemd160,
    s.OP_SHA1: lambda data: hashlib.sha1(data).digest(),
    s.OP_SHA256: sha256,
    s.OP_HASH160: hash160,
    s.OP_HASH256: sha256d,
}


def _lock_operand(stack: List[bytes], require_minimal: bool) -> int:
    """Top of stack as a 5-byte CLTV/CSV operand; negative values fail."""
    if not stack:
        raise ScriptError("INVALID_STACK_OPERATION")
    value = decode_script_num(stack[-1], 5, require_minimal)
    if value < 0:
        raise ScriptError("NEGATIVE_LOCKTIME")
    return value


def _check_sig_op(sig: bytes, pubkey: bytes, script_code: bytes, flags: int,
                  checker: BaseSignatureChecker) -> bool:
    """OP_CHECKSIG's verdict: encodings first, then the signature, then NULLFAIL."""
    script_code = find_and_delete(script_code, push_data(sig))
    _check_signature_encoding(sig, flags)
    _check_pubkey_encoding(pubkey, flags)
    ok = checker.check_sig(sig, pubkey, script_code)
    if not ok and sig and flags & SCRIPT_VERIFY_NULLFAIL:
        raise ScriptError("NULLFAIL")
    return ok


def _check_multisig(stack: List[bytes], script_code: bytes, flags: int,
                    checker: BaseSignatureChecker,
                    op_count: int) -> Tuple[bool, int]:
    """OP_CHECKMULTISIG's stack work; returns ``(success, op_count)``.

    Follows Core's index arithmetic so that the NULLFAIL check, the extra
    dummy element and the order of encoding failures match exactly.
    """
    minimal = bool(flags & SCRIPT_VERIFY_MINIMALDATA)
    i = 1
    if len(stack) < i:
        raise ScriptError("INVALID_STACK_OPERATION")
    n_keys = script_num_to_int(decode_script_num(stack[-i], 4, minimal))
    if n_keys < 0 or n_keys > MAX_PUBKEYS_PER_MULTISIG:
        raise ScriptError("PUBKEY_COUNT")
    op_count += n_keys
    if op_count > MAX_OPS_PER_SCRIPT:
        raise ScriptError("OP_COUNT")
    i += 1
    ikey = i
    ikey2 = n_keys + 2  # non-signature items above the signatures
    i += n_keys
    if len(stack) < i:
        raise ScriptError("INVALID_STACK_OPERATION")
    n_sigs = script_num_to_int(decode_script_num(stack[-i], 4, minimal))
    if n_sigs < 0 or n_sigs > n_keys:
        raise ScriptError("SIG_COUNT")
    i += 1
    isig = i
    i += n_sigs
    if len(stack) < i:
        raise ScriptError("INVALID_STACK_OPERATION")

    for k in range(n_sigs):
        script_code = find_and_delete(script_code, push_data(stack[-isig - k]))

    success = True
    while success and n_sigs > 0:
        sig = stack[-isig]
        pubkey = stack[-ikey]
        _check_signature_encoding(sig, flags)
        _check_pubkey_encoding(pubkey, flags)
        if checker.check_sig(sig, pubkey, script_code):
            isig += 1
            n_sigs -= 1
        ikey += 1
        n_keys -= 1
        # More signatures left than keys: too many have failed.
        if n_sigs > n_keys:
            success = False

    nullfail = not success and flags & SCRIPT_VERIFY_NULLFAIL
    while i > 1:
        i -= 1
        if nullfail and not ikey2 and stack[-1]:
            raise ScriptError("NULLFAIL")
        if ikey2 > 0:
            ikey2 -= 1
        stack.pop()

    # The historical off-by-one: one extra, unchecked element is consumed.
    if not stack:
        raise ScriptError("INVALID_STACK_OPERATION")
    if flags & SCRIPT_VERIFY_NULLDUMMY and stack[-1]:
        raise ScriptError("SIG_NULLDUMMY")
    stack[-1] = TRUE if success else FALSE
    return success, op_count


# -- evaluation --------------------------------------------------------------

def eval_script(stack: List[bytes], script: bytes, flags: int, checker: BaseSignatureChecker) -> None:
    """Run ``script`` on ``stack`` (modified in place); raise ScriptError on failure."""
    if len(script) > MAX_SCRIPT_SIZE:
        raise ScriptError("SCRIPT_SIZE")
    require_minimal = bool(flags & SCRIPT_VERIFY_MINIMALDATA)
    altstack: List[bytes] = []
    vexec: List[bool] = []
    n_false = 0  # how many entries of vexec are False
    op_count = 0
    code_start = 0  # just after the last executed OP_CODESEPARATOR
    try:
        for op, data, pos in iter_script(script):
            if data is not None:
                if len(data) > MAX_SCRIPT_ELEMENT_SIZE:
                    raise ScriptError("PUSH_SIZE")
                if n_false:
                    continue
                if require_minimal and not is_minimal_push(data, op):
                    raise ScriptError("MINIMALDATA")
                stack.append(data)
                if len(stack) + len(altstack) > MAX_STACK_SIZE:
                    raise ScriptError("STACK_SIZE")
                continue

            if op > s.OP_16:
                op_count += 1
                if op_count > MAX_OPS_PER_SCRIPT:
                    raise ScriptError("OP_COUNT")
                if op in _DISABLED:
                    raise ScriptError("DISABLED_OPCODE")
            if n_false and not s.OP_IF <= op <= s.OP_ENDIF:
                continue

            if op == s.OP_DUP:
                if not stack:
                    raise ScriptError("INVALID_STACK_OPERATION")
                stack.append(stack[-1])
            elif op in _HASHES:
                if not stack:
                    raise ScriptError("INVALID_STACK_OPERATION")
                stack[-1] = _HASHES[op](stack[-1])
            elif op == s.OP_EQUAL or op == s.OP_EQUALVERIFY:
                if len(stack) < 2:
                    raise ScriptError("INVALID_STACK_OPERATION")
                equal = stack.pop() == stack[-1]
                if op == s.OP_EQUAL:
                    stack[-1] = TRUE if equal else FALSE
                elif equal:
                    stack.pop()
                else:
                    raise ScriptError("EQUALVERIFY")
            elif op == s.OP_CHECKSIG or op == s.OP_CHECKSIGVERIFY:
                if len(stack) < 2:
                    raise ScriptError("INVALID_STACK_OPERATION")
                ok = _check_sig_op(stack[-2], stack[-1],
                                   script[code_start:] if code_start else script, flags, checker)
                stack.pop()
                if op == s.OP_CHECKSIG:
                    stack[-1] = TRUE if ok else FALSE
                elif ok:
                    stack.pop()
                else:
                    raise ScriptError("CHECKSIGVERIFY")
            elif op in _SMALL_INTS:
                stack.append(_SMALL_INTS[op])
            elif op in _STACK_OPS:
                need, action = _STACK_OPS[op]
                if len(stack) < need:
                    raise ScriptError("INVALID_STACK_OPERATION")
                action(stack)
            elif op in _UNARY_NUM:
                if not stack:
                    raise ScriptError("INVALID_STACK_OPERATION")
                a = decode_script_num(stack[-1], 4, require_minimal)
                stack[-1] = encode_script_num(int(_UNARY_NUM[op](a)))
            elif op in _BINARY_NUM:
                if len(stack) < 2:
                    raise ScriptError("INVALID_STACK_OPERATION")
                a = decode_script_num(stack[-2], 4, require_minimal)
                b = decode_script_num(stack[-1], 4, require_minimal)
                stack.pop()
                stack[-1] = encode_script_num(int(_BINARY_NUM[op](a, b)))
                if op == s.OP_NUMEQUALVERIFY:
                    if not cast_to_bool(stack[-1]):
                        raise ScriptError("NUMEQUALVERIFY")
                    stack.pop()
            elif op == s.OP_IF or op == s.OP_NOTIF:
                value = False
                if not n_false:
                    if not stack:
                        raise ScriptError("UNBALANCED_CONDITIONAL")
                    value = cast_to_bool(stack.pop()) != (op == s.OP_NOTIF)
                vexec.append(value)
                n_false += not value
            elif op == s.OP_ELSE:
                if not vexec:
                    raise ScriptError("UNBALANCED_CONDITIONAL")
                n_false += 1 if vexec[-1] else -1
                vexec[-1] = not vexec[-1]
            elif op == s.OP_ENDIF:
                if not vexec:
                    raise ScriptError("UNBALANCED_CONDITIONAL")
                n_false -= not vexec.pop()
            elif op == s.OP_VERIFY:
                if not stack:
                    raise ScriptError("INVALID_STACK_OPERATION")
                if not cast_to_bool(stack[-1]):
                    raise ScriptError("VERIFY")
                stack.pop()
            elif op == s.OP_RETURN:
                raise ScriptError("OP_RETURN")
            elif op == s.OP_NOP:
                pass
            elif op == s.OP_TOALTSTACK:
                if not stack:
                    raise ScriptError("INVALID_STACK_OPERATION")
                altstack.append(stack.pop())
            elif op == s.OP_FROMALTSTACK:
                if not altstack:
                    raise ScriptError("INVALID_ALTSTACK_OPERATION")
                stack.append(altstack.pop())
            elif op == s.OP_PICK or op == s.OP_ROLL:
                if len(stack) < 2:
                    raise ScriptError("INVALID_STACK_OPERATION")
                n = script_num_to_int(decode_script_num(stack.pop(), 4, require_minimal))
                if n < 0 or n >= len(stack):
                    raise ScriptError("INVALID_STACK_OPERATION")
                stack.append(stack.pop(-n - 1) if op == s.OP_ROLL else stack[-n - 1])
            elif op == s.OP_WITHIN:
                if len(stack) < 3:
                    raise ScriptError("INVALID_STACK_OPERATION")
                x, lo, hi = (decode_script_num(v, 4, require_minimal) for v in stack[-3:])
                del stack[-2:]
                stack[-1] = TRUE if lo <= x < hi else FALSE
            elif op == s.OP_CODESEPARATOR:
                code_start = pos + 1
            elif op == s.OP_CHECKMULTISIG or op == s.OP_CHECKMULTISIGVERIFY:
                code = script[code_start:] if code_start else script
                ok, op_count = _check_multisig(stack, code, flags, checker, op_count)
                if op == s.OP_CHECKMULTISIGVERIFY:
                    if not ok:
                        raise ScriptError("CHECKMULTISIGVERIFY")
                    stack.pop()
            elif op == s.OP_CHECKLOCKTIMEVERIFY:
                if flags & SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY:
                    if not checker.check_locktime(_lock_operand(stack, require_minimal)):
                        raise ScriptError("UNSATISFIED_LOCKTIME")
                elif flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS:
                    raise ScriptError("DISCOURAGE_UPGRADABLE_NOPS")
            elif op == s.OP_CHECKSEQUENCEVERIFY:
                if flags & SCRIPT_VERIFY_CHECKSEQUENCEVERIFY:
                    sequence = _lock_operand(stack, require_minimal)
                    # With the disable bit set the operand is reserved: a NOP.
                    if (not sequence & SEQUENCE_LOCKTIME_DISABLE_FLAG
                            and not checker.check_sequence(sequence)):
                        raise ScriptError("UNSATISFIED_LOCKTIME")
                elif flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS:
                    raise ScriptError("DISCOURAGE_UPGRADABLE_NOPS")
            elif op in _UPGRADABLE_NOPS:
                if flags & SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS:
                    raise ScriptError("DISCOURAGE_UPGRADABLE_NOPS")
            else:
                raise ScriptError("BAD_OPCODE")

            if len(stack) + len(altstack) > MAX_STACK_SIZE:
                raise ScriptError("STACK_SIZE")
    except ScriptParseError:
        raise ScriptError("BAD_OPCODE") from None
    except ScriptNumError:
        raise ScriptError("UNKNOWN_ERROR") from None
    if vexec:
        raise ScriptError("UNBALANCED_CONDITIONAL")


def _evaluate(script_sig: bytes, script_pubkey: bytes, flags: int,
              checker: BaseSignatureChecker) -> List[bytes]:
    """VerifyScript up to (not including) CLEANSTACK; return the final stack."""
    if flags & SCRIPT_VERIFY_SIGPUSHONLY and not is_push_only(script_sig):
        raise ScriptError("SIG_PUSHONLY")
    stack: List[bytes] = []
    eval_script(stack, script_sig, flags, checker)
    p2sh = flags & SCRIPT_VERIFY_P2SH and is_p2sh(script_pubkey)
    saved = list(stack) if p2sh else None
    eval_script(stack, script_pubkey, flags, checker)
    if not stack or not cast_to_bool(stack[-1]):
        raise ScriptError("EVAL_FALSE")
    if saved is not None:
        if not is_push_only(script_sig):
            raise ScriptError("SIG_PUSHONLY")
        stack = saved
        redeem_script = stack.pop()  # non-empty: the P2SH script needs an argument
        eval_script(stack, redeem_script, flags, checker)
        if not stack or not cast_to_bool(stack[-1]):
            raise ScriptError("EVAL_FALSE")
    return stack


def _p2pkh_spend(script_sig: bytes, script_pubkey: bytes) -> Optional[Tuple[bytes, bytes]]:
    """``(sig, pubkey)`` if this is a P2PKH output spent by two direct pushes.

    Pushes of 2..75 bytes with a single-byte opcode are minimal and within
    every limit, so evaluating such a spend cannot fail before the key-hash
    comparison; :func:`_verify_p2pkh` starts there.
    """
    if (len(script_pubkey) != 25 or not script_pubkey.startswith(b"\x76\xa9\x14")
            or not script_pubkey.endswith(b"\x88\xac")):
        return None
    size = len(script_sig)
    sig_len = script_sig[0] if size else 0
    if not 2 <= sig_len <= 75 or size < sig_len + 4:
        return None
    key_len = script_sig[sig_len + 1]
    if not 2 <= key_len <= 75 or size != sig_len + key_len + 2:
        return None
    return script_sig[1:sig_len + 1], script_sig[sig_len + 2:]


def _verify_p2pkh(sig: bytes, pubkey: bytes, script_pubkey: bytes, flags: int,
                  checker: BaseSignatureChecker) -> None:
    """What ``OP_DUP OP_HASH160 <h> OP_EQUALVERIFY OP_CHECKSIG`` does to ``[sig, pubkey]``."""
    if hash160(pubkey) != script_pubkey[3:23]:
        raise ScriptError("EQUALVERIFY")
    if not _check_sig_op(sig, pubkey, script_pubkey, flags, checker):
        raise ScriptError("EVAL_FALSE")


def verify_script(script_sig: bytes, script_pubkey: bytes, flags: int, checker: BaseSignatureChecker) -> None:
    """Core's VerifyScript without witness: raise ScriptError unless the spend is valid.

    Plain P2PKH spends (the bulk of block validation) skip the generic
    evaluation loop; the outcome is the same, which a differential test checks.
    """
    p2pkh = _p2pkh_spend(script_sig, script_pubkey)
    if p2pkh is None:
        stack_size = len(_evaluate(script_sig, script_pubkey, flags, checker))
    else:
        _verify_p2pkh(p2pkh[0], p2pkh[1], script_pubkey, flags, checker)
        stack_size = 1
    if flags & SCRIPT_VERIFY_CLEANSTACK:
        # CLEANSTACK without P2SH would make P2SH activation a hard fork.
        if not flags & SCRIPT_VERIFY_P2SH:
            raise ValueError("CLEANSTACK requires P2SH")
        if stack_size != 1:
            raise ScriptError("CLEANSTACK")
