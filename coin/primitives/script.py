"""Script bytes: opcodes, parsing, script numbers, asm text and sigop counting.

Everything here is a pure function of the script bytes; evaluation lives in
``coin.script.interpreter``.  The predicates ``is_push_only``, ``is_p2sh`` and
``is_unspendable`` live here because block and policy checks need them without
the interpreter.  Behaviour mirrors Bitcoin Core 0.12-0.16 (``script.cpp``,
``core_write.cpp``, ``core_read.cpp``), including its quirks where they are
consensus-visible.
"""

from __future__ import annotations

import re
from typing import Dict, Iterator, Optional, Tuple

# -- opcodes ---------------------------------------------------------------

OP_0 = OP_FALSE = 0x00
OP_PUSHDATA1 = 0x4C
OP_PUSHDATA2 = 0x4D
OP_PUSHDATA4 = 0x4E
OP_1NEGATE = 0x4F
OP_RESERVED = 0x50
OP_1 = OP_TRUE = 0x51
OP_2 = 0x52
OP_3 = 0x53
OP_4 = 0x54
OP_5 = 0x55
OP_6 = 0x56
OP_7 = 0x57
OP_8 = 0x58
OP_9 = 0x59
OP_10 = 0x5A
OP_11 = 0x5B
OP_12 = 0x5C
OP_13 = 0x5D
OP_14 = 0x5E
OP_15 = 0x5F
OP_16 = 0x60

OP_NOP = 0x61
OP_VER = 0x62
OP_IF = 0x63
OP_NOTIF = 0x64
OP_VERIF = 0x65
OP_VERNOTIF = 0x66
OP_ELSE = 0x67
OP_ENDIF = 0x68
OP_VERIFY = 0x69
OP_RETURN = 0x6A

OP_TOALTSTACK = 0x6B
OP_FROMALTSTACK = 0x6C
OP_2DROP = 0x6D
OP_2DUP = 0x6E
OP_3DUP = 0x6F
OP_2OVER = 0x70
OP_2ROT = 0x71
OP_2SWAP = 0x72
OP_IFDUP = 0x73
OP_DEPTH = 0x74
OP_DROP = 0x75
OP_DUP = 0x76
OP_NIP = 0x77
OP_OVER = 0x78
OP_PICK = 0x79
OP_ROLL = 0x7A
OP_ROT = 0x7B
OP_SWAP = 0x7C
OP_TUCK = 0x7D

OP_CAT = 0x7E
OP_SUBSTR = 0x7F
OP_LEFT = 0x80
OP_RIGHT = 0x81
OP_SIZE = 0x82

OP_INVERT = 0x83
OP_AND = 0x84
OP_OR = 0x85
OP_XOR = 0x86
OP_EQUAL = 0x87
OP_EQUALVERIFY = 0x88
OP_RESERVED1 = 0x89
OP_RESERVED2 = 0x8A

OP_1ADD = 0x8B
OP_1SUB = 0x8C
OP_2MUL = 0x8D
OP_2DIV = 0x8E
OP_NEGATE = 0x8F
OP_ABS = 0x90
OP_NOT = 0x91
OP_0NOTEQUAL = 0x92
OP_ADD = 0x93
OP_SUB = 0x94
OP_MUL = 0x95
OP_DIV = 0x96
OP_MOD = 0x97
OP_LSHIFT = 0x98
OP_RSHIFT = 0x99
OP_BOOLAND = 0x9A
OP_BOOLOR = 0x9B
OP_NUMEQUAL = 0x9C
OP_NUMEQUALVERIFY = 0x9D
OP_NUMNOTEQUAL = 0x9E
OP_LESSTHAN = 0x9F
OP_GREATERTHAN = 0xA0
OP_LESSTHANOREQUAL = 0xA1
OP_GREATERTHANOREQUAL = 0xA2
OP_MIN = 0xA3
OP_MAX = 0xA4
OP_WITHIN = 0xA5

OP_RIPEMD160 = 0xA6
OP_SHA1 = 0xA7
OP_SHA256 = 0xA8
OP_HASH160 = 0xA9
OP_HASH256 = 0xAA
OP_CODESEPARATOR = 0xAB
OP_CHECKSIG = 0xAC
OP_CHECKSIGVERIFY = 0xAD
OP_CHECKMULTISIG = 0xAE
OP_CHECKMULTISIGVERIFY = 0xAF

OP_NOP1 = 0xB0
OP_NOP2 = OP_CHECKLOCKTIMEVERIFY = 0xB1
OP_NOP3 = OP_CHECKSEQUENCEVERIFY = 0xB2
OP_NOP4 = 0xB3
OP_NOP5 = 0xB4
OP_NOP6 = 0xB5
OP_NOP7 = 0xB6
OP_NOP8 = 0xB7
OP_NOP9 = 0xB8
OP_NOP10 = 0xB9

OP_INVALIDOPCODE = 0xFF

#: Highest opcode with a name (Core's MAX_OPCODE).
MAX_OPCODE = OP_NOP10

#: Consensus limits shared by the interpreter and policy code.
MAX_SCRIPT_ELEMENT_SIZE = 520
MAX_OPS_PER_SCRIPT = 201
MAX_PUBKEYS_PER_MULTISIG = 20
MAX_SCRIPT_SIZE = 10000
MAX_STACK_SIZE = 1000


def _build_names() -> Dict[int, str]:
    names = {OP_0: "0", OP_1NEGATE: "-1"}
    names.update((OP_1 + i, str(i + 1)) for i in range(16))
    symbolic = {k: v for k, v in globals().items()
                if k.startswith("OP_") and isinstance(v, int)}
    # Core names NOP2/NOP3 after the soft forks that gave them meaning, and
    # OP_FALSE/OP_TRUE are aliases that GetOpName never prints.
    skip = {"OP_NOP2", "OP_NOP3", "OP_FALSE", "OP_TRUE"}
    for name, value in symbolic.items():
        if name not in skip and value not in names:
            names[value] = name
    return names


#: opcode -> name exactly as Core's GetOpName prints it.
OPCODE_NAMES = _build_names()


def opcode_name(opcode: int) -> str:
    """Core's GetOpName: unnamed opcodes print as ``OP_UNKNOWN``."""
    return OPCODE_NAMES.get(opcode, "OP_UNKNOWN")


def decode_op_n(opcode: int) -> int:
    """Value of OP_0 / OP_1..OP_16 (Core's DecodeOP_N)."""
    return 0 if opcode == OP_0 else opcode - (OP_1 - 1)


# -- parsing ---------------------------------------------------------------

class ScriptParseError(ValueError):
    """A push runs past the end of the script.

    ``position`` is where the bad opcode starts; ``stop`` is where Core's
    GetOp leaves its cursor after failing (past the opcode and any length
    bytes it managed to read), which the signature hash has to reproduce.
    """

    def __init__(self, position: int, stop: int) -> None:
        super().__init__("truncated push at byte %d" % position)
        self.position = position
        self.stop = stop


def iter_script(script: bytes, pos: int = 0) -> Iterator[Tuple[int, Optional[bytes], int]]:
    """Yield ``(opcode, pushdata_or_None, position)`` for each operation.

    Push opcodes (``<= OP_PUSHDATA4``) yield their data (``b""`` for OP_0);
    every other opcode yields ``None``.  A truncated push raises
    :class:`ScriptParseError` after the valid prefix has been yielded.
    Parsing starts at byte ``pos``.
    """
    end = len(script)
    while pos < end:
        start = pos
        op = script[pos]
        pos += 1
        if op > OP_PUSHDATA4:
            yield op, None, start
            continue
        if op < OP_PUSHDATA1:
            size = op
        else:
            width = 1 if op == OP_PUSHDATA1 else (2 if op == OP_PUSHDATA2 else 4)
            if end - pos < width:
                raise ScriptParseError(start, pos)
            size = int.from_bytes(script[pos:pos + width], "little")
            pos += width
        if end - pos < size:
            raise ScriptParseError(start, pos)
        yield op, script[pos:pos + size], start
        pos += size


def is_push_only(script: bytes, start: int = 0) -> bool:
    """Core's IsPushOnly: only opcodes up to OP_16 (OP_RESERVED counts)."""
    try:
        for op, _, _ in iter_script(script, start):
            if op > OP_16:
                return False
    except ScriptParseError:
        return False
    return True


def is_p2sh(script: bytes) -> bool:
    """``OP_HASH160 <20 bytes> OP_EQUAL`` byte for byte (BIP16)."""
    return (len(script) == 23 and script[0] == OP_HASH160
            and script[1] == 0x14 and script[22] == OP_EQUAL)


def is_unspendable(script: bytes) -> bool:
    """Provably unspendable: starts with OP_RETURN or exceeds the size limit."""
    return (len(script) > 0 and script[0] == OP_RETURN) or len(script) > MAX_SCRIPT_SIZE


def _op_starts(script: bytes, pos: int) -> Iterator[int]:
    """Op boundaries from ``pos``: each op start, then the end of the script
    or the start of a truncated push, where GetOp stops."""
    try:
        for _, _, start in iter_script(script, pos):
            yield start
        yield len(script)
    except ScriptParseError as e:
        yield e.position


def find_and_delete(script: bytes, pattern: bytes) -> bytes:
    """Core's FindAndDelete: drop every ``pattern`` that starts on an op boundary.

    After a removal, matching resumes at once and boundaries are re-read from
    there; a truncated push ends the scan (its bytes are kept).
    """
    if not pattern or pattern not in script:
        return script
    n = len(pattern)
    pieces = []
    kept_from = pc = 0
    while True:
        for boundary in _op_starts(script, pc):
            if script.startswith(pattern, boundary):
                break
        else:
            break
        pc = boundary
        pieces.append(script[kept_from:pc])
        while script.startswith(pattern, pc):
            pc += n
        kept_from = pc
    if not pieces:
        return script
    pieces.append(script[kept_from:])
    return b"".join(pieces)


# -- building --------------------------------------------------------------

def push_data(data: bytes) -> bytes:
    """Push ``data`` with the shortest opcode for its length.

    This is Core's ``CScript() << vch``: the choice depends on the length
    only, so a single byte 0x05 becomes ``01 05``, not OP_5.  (FindAndDelete
    and the standard templates depend on exactly this encoding.)
    """
    n = len(data)
    if n < OP_PUSHDATA1:
        return bytes((n,)) + data
    if n <= 0xFF:
        return bytes((OP_PUSHDATA1, n)) + data
    if n <= 0xFFFF:
        return bytes((OP_PUSHDATA2,)) + n.to_bytes(2, "little") + data
    return bytes((OP_PUSHDATA4,)) + n.to_bytes(4, "little") + data


def push_int(n: int) -> bytes:
    """Core's ``CScript() << int64``: small-integer opcodes when possible."""
    if n == 0:
        return bytes((OP_0,))
    if n == -1 or 1 <= n <= 16:
        return bytes((n + (OP_1 - 1),))
    return push_data(encode_script_num(n))


def push_minimal(data: bytes) -> bytes:
    """Push ``data`` the way MINIMALDATA demands (OP_0, OP_1..OP_16, OP_1NEGATE).

    Used for scriptSigs (Core's PushAll), where a non-minimal push would
    make the spend non-standard.
    """
    if not data:
        return bytes((OP_0,))
    if len(data) == 1 and 1 <= data[0] <= 16:
        return bytes((OP_1 + data[0] - 1,))
    if data == b"\x81":
        return bytes((OP_1NEGATE,))
    return push_data(data)


def is_minimal_push(data: bytes, opcode: int) -> bool:
    """Core's CheckMinimalPush (the MINIMALDATA rule for one push)."""
    n = len(data)
    if n == 0:
        return opcode == OP_0
    if n == 1 and 1 <= data[0] <= 16:
        return opcode == OP_1 + data[0] - 1
    if n == 1 and data[0] == 0x81:
        return opcode == OP_1NEGATE
    if n <= 75:
        return opcode == n
    if n <= 255:
        return opcode == OP_PUSHDATA1
    if n <= 65535:
        return opcode == OP_PUSHDATA2
    return True


# -- script numbers --------------------------------------------------------

class ScriptNumError(ValueError):
    """A stack element is not a valid script number (too long or non-minimal)."""


def encode_script_num(n: int) -> bytes:
    """Little-endian sign-magnitude encoding of CScriptNum; 0 is empty."""
    if n == 0:
        return b""
    neg = n < 0
    absval = -n if neg else n
    out = bytearray(absval.to_bytes((absval.bit_length() + 7) // 8, "little"))
    if out[-1] & 0x80:
        out.append(0x80 if neg else 0x00)
    elif neg:
        out[-1] |= 0x80
    return bytes(out)


def decode_script_num(b: bytes, max_size: int = 4, require_minimal: bool = False) -> int:
    """Decode a CScriptNum; raise :class:`ScriptNumError` where Core throws."""
    size = len(b)
    if size > max_size:
        raise ScriptNumError("script number overflow")
    if size == 0:
        return 0
    last = b[-1]
    if require_minimal and (last & 0x7F) == 0 and (size == 1 or not b[-2] & 0x80):
        raise ScriptNumError("non-minimally encoded script number")
    value = int.from_bytes(b, "little")
    if last & 0x80:
        return -(value & ~(0x80 << (8 * (size - 1))))
    return value


def script_num_to_int(value: int) -> int:
    """CScriptNum::getint: clamp to the int32 range."""
    return max(-0x80000000, min(0x7FFFFFFF, value))


# -- DER signature encoding (BIP66) -----------------------------------------

def is_valid_der_signature(sig: bytes) -> bool:
    """Core's IsValidSignatureEncoding: strict DER plus one hashtype byte."""
    size = len(sig)
    if size < 9 or size > 73 or sig[0] != 0x30 or sig[1] != size - 3:
        return False
    len_r = sig[3]
    if 5 + len_r >= size:
        return False
    len_s = sig[5 + len_r]
    if len_r + len_s + 7 != size:
        return False
    if sig[2] != 0x02 or len_r == 0 or sig[4] & 0x80:
        return False
    if len_r > 1 and sig[4] == 0 and not sig[5] & 0x80:
        return False
    if sig[len_r + 4] != 0x02 or len_s == 0 or sig[len_r + 6] & 0x80:
        return False
    if len_s > 1 and sig[len_r + 6] == 0 and not sig[len_r + 7] & 0x80:
        return False
    return True


SIGHASH_NAMES = {
    0x01: "ALL", 0x81: "ALL|ANYONECANPAY",
    0x02: "NONE", 0x82: "NONE|ANYONECANPAY",
    0x03: "SINGLE", 0x83: "SINGLE|ANYONECANPAY",
}


# -- asm -------------------------------------------------------------------

def script_to_asm(script: bytes, decode_sighash: bool = False) -> str:
    """Core's ScriptToAsmStr.

    Pushes of up to 4 bytes print as decimal script numbers, longer ones as
    hex.  With ``decode_sighash`` (used for scriptSigs) a push that is a
    strictly encoded signature with a defined hashtype prints as
    ``<hex>[ALL]`` etc.  A truncated push ends the text with ``[error]``.
    """
    words = []
    try_sighash = decode_sighash and not is_unspendable(script)
    try:
        for op, data, _ in iter_script(script):
            if data is None:
                words.append(OPCODE_NAMES.get(op, "OP_UNKNOWN"))
            elif len(data) <= 4:
                words.append(str(decode_script_num(data)))
            elif try_sighash and data[-1] in SIGHASH_NAMES and is_valid_der_signature(data):
                words.append("%s[%s]" % (data[:-1].hex(), SIGHASH_NAMES[data[-1]]))
            else:
                words.append(data.hex())
    except ScriptParseError:
        words.append("[error]")
    return " ".join(words)


def _build_asm_names() -> Dict[str, int]:
    # Core's ParseScript knows OP_NOP and above plus OP_RESERVED, by the
    # GetOpName spelling with or without the OP_ prefix.
    table: Dict[str, int] = {}
    for op, name in OPCODE_NAMES.items():
        if OP_NOP <= op <= MAX_OPCODE or op == OP_RESERVED:
            table[name] = op
            table[name[3:]] = op
    return table


_ASM_NAMES = _build_asm_names()
_DECIMAL = re.compile(r"-?[0-9]*\Z")
_HEX_WORD = re.compile(r"0x((?:[0-9a-fA-F]{2})+)\Z")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def parse_asm(text: str) -> bytes:
    """Core's ParseScript (the test-vector syntax); raise ValueError if malformed.

    Words are separated by spaces, tabs or newlines: decimal numbers are
    pushed as script numbers, ``0x..`` hex is inserted raw, ``'text'`` is
    pushed as data, opcode names work with or without the ``OP_`` prefix.
    """
    out = []
    for word in re.split(r"[ \t\n]+", text):
        if not word:
            continue
        if _DECIMAL.match(word):
            # atoi64 saturates instead of failing, and reads a bare "-" as 0.
            n = max(_INT64_MIN, min(_INT64_MAX, int(word))) if word != "-" else 0
            out.append(push_int(n))
            continue
        m = _HEX_WORD.match(word)
        if m:
            out.append(bytes.fromhex(m.group(1)))
        elif len(word) >= 2 and word[0] == "'" and word[-1] == "'":
            out.append(push_data(word[1:-1].encode("utf-8")))
        elif word in _ASM_NAMES:
            out.append(bytes((_ASM_NAMES[word],)))
        else:
            raise ValueError("script parse error: %r" % word)
    return b"".join(out)


# -- signature operation counting --------------------------------------------

def legacy_sigop_count(script: bytes, accurate: bool) -> int:
    """Core's GetSigOpCount(fAccurate); a truncated push ends the count.

    The shapes nearly every transaction has are counted without walking the script
    (block checks count every scriptSig and scriptPubKey): P2PKH (1), P2SH (0), and a
    scriptSig of two direct pushes (0).
    """
    size = len(script)
    if size == 25 and script[:3] == b"\x76\xa9\x14" and script[23:] == b"\x88\xac":
        return 1
    if size == 23 and script[:2] == b"\xa9\x14" and script[22] == 0x87:
        return 0
    first = script[0] if size else 0
    if 0 < first < OP_PUSHDATA1 and first + 1 < size:
        second = script[first + 1]
        if 0 < second < OP_PUSHDATA1 and first + second + 2 == size:
            return 0
    return walked_sigop_count(script, accurate)


def walked_sigop_count(script: bytes, accurate: bool) -> int:
    """:func:`legacy_sigop_count` by walking every operation (any script)."""
    n = 0
    last = OP_INVALIDOPCODE
    try:
        for op, _, _ in iter_script(script):
            if op == OP_CHECKSIG or op == OP_CHECKSIGVERIFY:
                n += 1
            elif op == OP_CHECKMULTISIG or op == OP_CHECKMULTISIGVERIFY:
                if accurate and OP_1 <= last <= OP_16:
                    n += decode_op_n(last)
                else:
                    n += MAX_PUBKEYS_PER_MULTISIG
            last = op
    except ScriptParseError:
        pass
    return n


def p2sh_sigop_count(script_sig: bytes, script_pubkey: bytes) -> int:
    """Core's GetSigOpCount(scriptSig): accurate count of the redeem script.

    For a non-P2SH ``script_pubkey`` this is its own accurate count; for
    P2SH it counts the last push of a push-only ``script_sig`` (0 otherwise).
    """
    if not is_p2sh(script_pubkey):
        return legacy_sigop_count(script_pubkey, True)
    last = b""
    try:
        for op, data, _ in iter_script(script_sig):
            if op > OP_16:
                return 0
            last = data if data is not None else b""
    except ScriptParseError:
        return 0
    return legacy_sigop_count(last, True)
