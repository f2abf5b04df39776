"""Property tests (hypothesis) for script parsing, numbers, asm and the interpreter.

Settings come from the profile in ``tests/__init__.py``.
"""

from __future__ import annotations

from coincurve import PrivateKey
from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.primitives.hashes import hash160
from coin.primitives.script import (
    MAX_OPCODE,
    OP_NOP,
    OP_RESERVED,
    OPCODE_NAMES,
    ScriptNumError,
    ScriptParseError,
    decode_script_num,
    encode_script_num,
    find_and_delete,
    is_push_only,
    iter_script,
    parse_asm,
    push_data,
    push_int,
    push_minimal,
    script_to_asm,
)
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.flags import FLAG_NAMES, SCRIPT_VERIFY_CLEANSTACK, SCRIPT_VERIFY_P2SH
from coin.script.interpreter import (
    BaseSignatureChecker,
    ScriptError,
    TransactionSignatureChecker,
    _evaluate,
    _p2pkh_spend,
    verify_script,
)
from coin.script.sign import create_signature
from coin.script.standard import p2pkh_script
from tests.unit.script.test_script_unit import high_s_twin

INT64 = st.integers(-(2 ** 63) + 1, 2 ** 63 - 1)
INT32 = st.integers(-(2 ** 31) + 1, 2 ** 31 - 1)

#: Opcodes Core's ParseScript knows by name (and that asm prints by name).
NAMED_OPS = sorted(op for op in OPCODE_NAMES if OP_NOP <= op <= MAX_OPCODE or op == OP_RESERVED)

#: Scripts asm can print and parse back: minimal number pushes and named opcodes.
ASM_WORDS = st.one_of(INT32.map(push_int), st.sampled_from(NAMED_OPS).map(lambda op: bytes([op])))
PUSH_OPS = st.one_of(st.binary(max_size=80).map(push_data), INT64.map(push_int))
MINIMAL_PUSH_OPS = st.one_of(st.binary(max_size=80).map(push_minimal), INT64.map(push_int))
#: Random bytes rarely get past the first opcodes; this mixes every opcode with pushes.
OPCODE_SOUP = st.lists(st.one_of(st.integers(0x4F, 0xFF).map(lambda op: bytes([op])),
                                 MINIMAL_PUSH_OPS), max_size=25).map(b"".join)
SCRIPTS = st.one_of(st.binary(max_size=60), OPCODE_SOUP)

FLAG_SETS = st.sets(st.sampled_from(sorted(FLAG_NAMES.values()))).map(
    lambda bits: sum(bits) | (SCRIPT_VERIFY_P2SH if SCRIPT_VERIFY_CLEANSTACK in bits else 0))

KEYS = [PrivateKey(bytes([i + 7]) * 32) for i in range(2)]
SPEND_TX = Transaction([TxIn(OutPoint(b"\x07" * 32, 1), b"", 0xFFFFFFFE)], [TxOut(1, b"\x51")])


@st.composite
def p2pkh_spends(draw, tx: Transaction = SPEND_TX, index: int = 0):
    """A signed P2PKH spend of ``tx``'s input ``index``, then maybe broken in one way."""
    key = draw(st.sampled_from(KEYS))
    pubkey = key.public_key.format(draw(st.booleans()))
    script_pubkey = p2pkh_script(hash160(pubkey))
    hash_type = draw(st.sampled_from([0x01, 0x02, 0x03, 0x81, 0x83, 0x00, 0x04, 0x41]))
    sig = create_signature(key, script_pubkey, tx, index, hash_type)
    mutation = draw(st.sampled_from(
        ["none", "flip", "high_s", "random_sig", "random_key", "other_key", "wrong_hash",
         "sig_is_hash", "empty_sig", "unhashed_key"]))
    if mutation == "flip":
        i = draw(st.integers(0, len(sig) - 1))
        sig = sig[:i] + bytes([sig[i] ^ draw(st.integers(1, 255))]) + sig[i + 1:]
    elif mutation == "high_s":
        sig = high_s_twin(sig[:-1]) + sig[-1:]
    elif mutation == "random_sig":
        sig = draw(st.binary(min_size=0, max_size=80))
    elif mutation == "random_key":
        pubkey = draw(st.binary(min_size=0, max_size=80))
        script_pubkey = p2pkh_script(hash160(pubkey))
    elif mutation == "other_key":
        pubkey = KEYS[KEYS.index(key) - 1].public_key.format()
        script_pubkey = p2pkh_script(hash160(pubkey))
    elif mutation == "wrong_hash":
        script_pubkey = p2pkh_script(draw(st.binary(min_size=20, max_size=20)))
    elif mutation == "sig_is_hash":  # FindAndDelete then removes the key hash push
        sig = script_pubkey[3:23]
    elif mutation == "empty_sig":
        sig = b""
    elif mutation == "unhashed_key":  # a good signature, but the output names another key
        script_pubkey = p2pkh_script(hash160(KEYS[KEYS.index(key) - 1].public_key.format()))
        sig = create_signature(key, script_pubkey, tx, index, hash_type)
    return push_data(sig) + push_data(pubkey), script_pubkey


def outcome(fn, *args) -> str:
    try:
        fn(*args)
    except ScriptError as e:
        return e.code
    return "OK"


class ScriptNumProperties(SynchronousTestCase):

    @given(INT64)
    def test_round_trip(self, n):
        encoded = encode_script_num(n)
        self.assertLessEqual(len(encoded), 9)
        self.assertEqual(decode_script_num(encoded, max_size=len(encoded), require_minimal=True), n)

    @given(st.binary(max_size=4))
    def test_decode_then_encode_is_minimal_form(self, data):
        n = decode_script_num(data)
        try:
            decode_script_num(data, require_minimal=True)
        except ScriptNumError:
            self.assertNotEqual(encode_script_num(n), data)
        else:
            self.assertEqual(encode_script_num(n), data)


class ParsingProperties(SynchronousTestCase):

    @given(st.binary(max_size=300))
    def test_iterate_or_parse_error(self, script):
        # Operations tile the script exactly, up to a truncated push if any.
        expected = 0
        try:
            for op, data, start in iter_script(script):
                self.assertEqual((start, script[start]), (expected, op))
                expected = start + 1
                if data is not None:
                    expected += {0x4C: 1, 0x4D: 2, 0x4E: 4}.get(op, 0)
                    self.assertEqual(script[expected:expected + len(data)], data)
                    expected += len(data)
        except ScriptParseError as e:
            self.assertEqual(e.position, expected)
            self.assertLess(e.stop, len(script) + 1)
        else:
            self.assertEqual(expected, len(script))

    @given(st.binary(max_size=120))
    def test_asm_never_raises(self, script):
        text = script_to_asm(script, decode_sighash=True)
        self.assertIsInstance(text, str)

    @given(st.lists(ASM_WORDS, max_size=20))
    def test_asm_round_trip(self, ops):
        script = b"".join(ops)
        self.assertEqual(parse_asm(script_to_asm(script)), script)

    @given(st.lists(PUSH_OPS, max_size=10))
    def test_push_only_scripts(self, ops):
        script = b"".join(ops)
        self.assertTrue(is_push_only(script))
        self.assertEqual(len(script_to_asm(script).split()), len(ops))

    @given(st.binary(max_size=60), st.binary(min_size=1, max_size=4))
    def test_find_and_delete_only_shrinks(self, script, pattern):
        result = find_and_delete(script, pattern)
        self.assertLessEqual(len(result), len(script))
        self.assertEqual((len(script) - len(result)) % len(pattern), 0)
        if pattern not in script:
            self.assertIs(result, script)


class InterpreterProperties(SynchronousTestCase):

    @given(SCRIPTS, SCRIPTS, FLAG_SETS)
    def test_random_scripts_only_raise_script_errors(self, script_sig, script_pubkey, flags):
        try:
            verify_script(script_sig, script_pubkey, flags, BaseSignatureChecker())
        except ScriptError as e:
            self.assertTrue(e.code.isupper())

    @given(st.lists(MINIMAL_PUSH_OPS, max_size=6), FLAG_SETS)
    def test_pushes_then_drop_all(self, ops, flags):
        # Whatever is pushed, dropping it all and pushing 1 verifies (minimal pushes only).
        script_sig = b"".join(ops)
        script_pubkey = b"\x75" * len(ops) + b"\x51"
        verify_script(script_sig, script_pubkey, flags, BaseSignatureChecker())

    @given(p2pkh_spends(), FLAG_SETS)
    def test_p2pkh_fast_path_matches_generic_evaluation(self, spend, flags):
        script_sig, script_pubkey = spend
        checker = TransactionSignatureChecker(SPEND_TX, 0)
        # A successful P2PKH evaluation leaves one item, so CLEANSTACK adds nothing.
        self.assertEqual(outcome(verify_script, script_sig, script_pubkey, flags, checker),
                         outcome(_evaluate, script_sig, script_pubkey, flags, checker))

    def test_p2pkh_fast_path_taken(self):
        key = KEYS[0]
        pubkey = key.public_key.format()
        script_pubkey = p2pkh_script(hash160(pubkey))
        sig = create_signature(key, script_pubkey, SPEND_TX, 0)
        script_sig = push_data(sig) + push_data(pubkey)
        self.assertEqual(_p2pkh_spend(script_sig, script_pubkey), (sig, pubkey))
        self.assertIsNone(_p2pkh_spend(script_sig + b"\x61", script_pubkey))
        self.assertIsNone(_p2pkh_spend(b"\x4c" + script_sig[:1] + script_sig[1:], script_pubkey))
        self.assertIsNone(_p2pkh_spend(b"\x01\x05" + push_data(pubkey), script_pubkey))
