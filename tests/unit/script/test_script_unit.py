"""Unit tests for script bytes, asm, the solver, the interpreter's edges and signing."""

from __future__ import annotations

from coincurve import PrivateKey
from twisted.trial.unittest import SynchronousTestCase

from coin.primitives.address import Destination
from coin.primitives.hashes import hash160, sha256d
from coin.primitives.script import (
    OP_CHECKMULTISIG,
    OP_CHECKSIG,
    OP_NOP2,
    OP_RESERVED,
    ScriptNumError,
    ScriptParseError,
    decode_script_num,
    encode_script_num,
    find_and_delete,
    is_p2sh,
    is_push_only,
    is_unspendable,
    iter_script,
    legacy_sigop_count,
    opcode_name,
    p2sh_sigop_count,
    parse_asm,
    push_data,
    push_int,
    push_minimal,
    script_to_asm,
)
from coin.primitives.serialize import u32
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.flags import (
    SCRIPT_VERIFY_CLEANSTACK,
    SCRIPT_VERIFY_LOW_S,
    SCRIPT_VERIFY_NULLFAIL,
    SCRIPT_VERIFY_P2SH,
    SCRIPT_VERIFY_SIGPUSHONLY,
    STANDARD_SCRIPT_VERIFY_FLAGS,
    format_flags,
    parse_flags,
)
from coin.script.interpreter import (
    BaseSignatureChecker,
    ScriptError,
    TransactionSignatureChecker,
    parse_der_lax,
    verify_ecdsa,
    verify_script,
)
from coin.script.sighash import (
    SIGHASH_ALL,
    SIGHASH_ANYONECANPAY,
    SIGHASH_NONE,
    SIGHASH_ONE,
    SIGHASH_SINGLE,
    signature_hash,
)
from coin.script.sign import (
    KeyStore, create_signature, sign_and_verify, sign_p2pkh_input, sign_transaction,
)
from coin.script.standard import (
    extract_destinations,
    is_standard,
    multisig_script,
    nulldata_script,
    p2pk_script,
    p2pkh_script,
    p2sh_script,
    solve,
)

# Core's script_GetScriptAsm data: a strict-DER signature (without hashtype) and a key.
DER_SIG = ("304502207fa7a6d1e0ee81132a269ad84e68d695483745cde8b541e3bf630749894e342a02210"
           "0c1f7ab20e13e22fb95281a870f3dcf38d782e53023ee313d741ad0cfbc0c5090")
PUBKEY = "03b0da749730dc9b4b1f4a14d6902877a92541f5368778853d9c4a0cb7802dcfb2"

ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141

KEYS = [PrivateKey(bytes([i + 1]) * 32) for i in range(4)]


def h(text: str) -> bytes:
    return bytes.fromhex(text)


def spending_tx(n_inputs: int = 1, version: int = 1, locktime: int = 0,
                sequence: int = 0xFFFFFFFF) -> Transaction:
    vin = [TxIn(OutPoint(bytes([i + 1]) * 32, i), b"", sequence) for i in range(n_inputs)]
    vout = [TxOut(5000 + i, p2pkh_script(bytes([i]) * 20)) for i in range(2)]
    return Transaction(vin, vout, locktime, version)


def high_s_twin(der: bytes) -> bytes:
    """The same signature with S replaced by ORDER - S, strictly DER-encoded."""
    r, s = parse_der_lax(der)

    def integer(value: int) -> bytes:
        body = value.to_bytes(33, "big").lstrip(b"\x00")
        body = b"\x00" + body if body[0] & 0x80 else body
        return b"\x02" + bytes([len(body)]) + body

    seq = integer(r) + integer(ORDER - s)
    return b"\x30" + bytes([len(seq)]) + seq


class ScriptParsing(SynchronousTestCase):

    def test_iter_script(self):
        script = h("00") + push_data(b"ab") + h("4c03") + b"xyz" + h("76")
        self.assertEqual(list(iter_script(script)), [
            (0, b"", 0), (2, b"ab", 1), (0x4C, b"xyz", 4), (0x76, None, 9)])

    def test_truncated_push(self):
        for script, position, stop in ((h("0201"), 0, 1), (h("76" "4c"), 1, 2),
                                       (h("4d0500" "00"), 0, 3), (h("4e01"), 0, 1)):
            with self.assertRaises(ScriptParseError) as cm:
                list(iter_script(script))
            self.assertEqual((cm.exception.position, cm.exception.stop), (position, stop))

    def test_predicates(self):
        self.assertTrue(is_push_only(bytes([OP_RESERVED]) + push_int(16) + push_data(b"x" * 80)))
        self.assertFalse(is_push_only(h("61")))
        self.assertFalse(is_push_only(h("0201")))
        self.assertTrue(is_p2sh(p2sh_script(b"\x11" * 20)))
        self.assertFalse(is_p2sh(p2sh_script(b"\x11" * 20) + b"\x00"))
        self.assertTrue(is_unspendable(h("6a")))
        self.assertTrue(is_unspendable(b"\x00" * 10001))
        self.assertFalse(is_unspendable(b""))

    def test_push_helpers(self):
        self.assertEqual(push_data(b""), h("00"))
        self.assertEqual(push_data(b"\x05"), h("0105"))
        self.assertEqual(push_data(b"x" * 76)[:2], h("4c4c"))
        self.assertEqual(push_data(b"x" * 256)[:3], h("4d0001"))
        self.assertEqual(push_data(b"x" * 65536)[:5], h("4e00000100"))
        self.assertEqual(push_minimal(b"\x05"), h("55"))
        self.assertEqual(push_minimal(b"\x81"), h("4f"))
        self.assertEqual(push_minimal(b""), h("00"))
        self.assertEqual([push_int(n) for n in (0, -1, 1, 16, 17, -2, 1000)],
                         [h("00"), h("4f"), h("51"), h("60"), h("0111"), h("0182"), h("02e803")])


class ScriptNumbers(SynchronousTestCase):

    CASES = [(0, ""), (1, "01"), (-1, "81"), (127, "7f"), (128, "8000"), (-128, "8080"),
             (255, "ff00"), (256, "0001"), (-255, "ff80"), (0x7FFFFFFF, "ffffff7f"),
             (-0x80000000, "0000008080")]

    def test_encode_decode(self):
        for n, encoded in self.CASES:
            self.assertEqual(encode_script_num(n).hex(), encoded)
            self.assertEqual(decode_script_num(h(encoded), 5, require_minimal=True), n)

    def test_decode_limits(self):
        self.assertEqual(decode_script_num(h("80")), 0)  # negative zero
        self.assertEqual(decode_script_num(h("0100")), 1)
        for bad in ("00", "80", "0100", "0080", "ff7f80"):
            self.assertRaises(ScriptNumError, decode_script_num, h(bad), 4, True)
        self.assertRaises(ScriptNumError, decode_script_num, h("0000000001"))
        self.assertEqual(decode_script_num(h("0000000001"), max_size=5), 1 << 32)


class Asm(SynchronousTestCase):

    def test_numbers_and_names(self):
        script = parse_asm("0 -1 1 16 17 -2 0x04 0xffffff7f DUP OP_HASH160")
        self.assertEqual(script_to_asm(script),
                         "0 -1 1 16 17 -2 2147483647 OP_DUP OP_HASH160")
        self.assertEqual(script_to_asm(push_data(h("80"))), "0")
        self.assertEqual(script_to_asm(bytes([OP_NOP2, 0xB2, 0xBA, 0xFF, 0x50])),
                         "OP_CHECKLOCKTIMEVERIFY OP_CHECKSEQUENCEVERIFY OP_UNKNOWN "
                         "OP_INVALIDOPCODE OP_RESERVED")
        self.assertEqual(opcode_name(0x4C), "OP_PUSHDATA1")

    def test_error_marker(self):
        self.assertEqual(script_to_asm(h("76" "0201")), "OP_DUP [error]")
        self.assertEqual(script_to_asm(h("4c")), "[error]")

    def test_sighash_decoding(self):
        pubkey = h(PUBKEY)
        for byte, name in ((0x01, "[ALL]"), (0x02, "[NONE]"), (0x03, "[SINGLE]"),
                           (0x81, "[ALL|ANYONECANPAY]"), (0x82, "[NONE|ANYONECANPAY]"),
                           (0x83, "[SINGLE|ANYONECANPAY]")):
            script = push_data(h(DER_SIG) + bytes([byte])) + push_data(pubkey)
            self.assertEqual(script_to_asm(script, decode_sighash=True),
                             "%s%s %s" % (DER_SIG, name, PUBKEY))
            self.assertEqual(script_to_asm(script), "%s%02x %s" % (DER_SIG, byte, PUBKEY))
        for byte in (0x00, 0x80):  # undefined hashtypes stay hex
            script = push_data(h(DER_SIG) + bytes([byte])) + push_data(pubkey)
            self.assertEqual(script_to_asm(script, True), "%s%02x %s" % (DER_SIG, byte, PUBKEY))
        # Never inside OP_RETURN data.
        script = h("6a") + push_data(h(DER_SIG) + b"\x01")
        self.assertEqual(script_to_asm(script, True), "OP_RETURN %s01" % DER_SIG)

    def test_parse_asm_syntax(self):
        self.assertEqual(parse_asm("'abc' 0x4c01 0x07\tADD\nOP_ADD  "),
                         h("03616263" "4c0107" "9393"))
        self.assertEqual(parse_asm(""), b"")
        self.assertEqual(parse_asm("-"), h("00"))  # atoi64("-") is 0
        self.assertEqual(parse_asm("9223372036854775808"),
                         push_data(encode_script_num(2 ** 63 - 1)))
        self.assertEqual(parse_asm("NOP CHECKLOCKTIMEVERIFY RESERVED"), h("61b150"))
        # Core's ParseScript only knows names from OP_NOP up (and OP_RESERVED).
        for bad in ("NOP2", "OP_1", "TRUE", "INVALIDOPCODE", "0x", "0xabc", "'", "FOO"):
            self.assertRaises(ValueError, parse_asm, bad)


class FindAndDelete(SynchronousTestCase):
    """Core's script_FindAndDelete cases."""

    CASES = [
        ("0302ff03", "0302ff03", ""),
        ("0302ff030302ff03", "0302ff03", ""),
        ("0302ff030302ff03", "02", "0302ff030302ff03"),
        ("0302ff030302ff03", "ff", "0302ff030302ff03"),
        ("0302ff030302ff03", "03", "02ff0302ff03"),
        ("02feed5169", "feed51", "02feed5169"),
        ("02feed5169", "02feed51", "69"),
        ("516902feed5169", "feed51", "516902feed5169"),
        ("516902feed5169", "02feed51", "516969"),
        ("00005151", "0051", "0051"),
        ("000051005151", "0051", "0051"),
        ("0003feed", "03feed", "00"),
        ("0003feed", "00", "03feed"),
        ("0003feed", "", "0003feed"),
    ]

    def test_cases(self):
        for script, pattern, expected in self.CASES:
            self.assertEqual(find_and_delete(h(script), h(pattern)).hex(), expected,
                             (script, pattern))


class SigOps(SynchronousTestCase):

    def test_counts(self):
        pubkeys = [k.public_key.format() for k in KEYS[:3]]
        redeem = multisig_script(2, pubkeys)
        self.assertEqual(legacy_sigop_count(redeem, True), 3)
        self.assertEqual(legacy_sigop_count(redeem, False), 20)
        self.assertEqual(legacy_sigop_count(h("acad") + h("0201"), False), 2)
        spk = p2sh_script(hash160(redeem))
        script_sig = h("00") + push_data(b"s" * 71) + push_data(redeem)
        self.assertEqual(p2sh_sigop_count(script_sig, spk), 3)
        self.assertEqual(p2sh_sigop_count(script_sig + h("61"), spk), 0)
        self.assertEqual(p2sh_sigop_count(h("51"), spk), 0)
        self.assertEqual(p2sh_sigop_count(b"", redeem), 3)


class Flags(SynchronousTestCase):

    def test_parse(self):
        self.assertEqual(parse_flags("P2SH,STRICTENC"), 3)
        self.assertEqual(parse_flags(""), 0)
        self.assertEqual(parse_flags("NONE"), 0)
        self.assertRaises(KeyError, parse_flags, "P2SH,WITNESS")
        self.assertEqual(format_flags(parse_flags("NULLFAIL,P2SH")), "P2SH,NULLFAIL")

    def test_standard(self):
        for name in ("P2SH", "DERSIG", "STRICTENC", "MINIMALDATA", "NULLDUMMY",
                     "DISCOURAGE_UPGRADABLE_NOPS", "CLEANSTACK", "CHECKLOCKTIMEVERIFY",
                     "CHECKSEQUENCEVERIFY", "LOW_S", "NULLFAIL", "SIGPUSHONLY"):
            self.assertTrue(STANDARD_SCRIPT_VERIFY_FLAGS & parse_flags(name), name)


class Solver(SynchronousTestCase):

    def setUp(self):
        self.pubkeys = [k.public_key.format() for k in KEYS[:3]]

    def test_templates(self):
        pk = self.pubkeys[0]
        h160 = hash160(pk)
        self.assertEqual(solve(p2pk_script(pk)), ("pubkey", [pk]))
        self.assertEqual(solve(p2pkh_script(h160)), ("pubkeyhash", [h160]))
        self.assertEqual(solve(p2sh_script(h160)), ("scripthash", [h160]))
        self.assertEqual(solve(multisig_script(2, self.pubkeys)),
                         ("multisig", [b"\x02"] + self.pubkeys + [b"\x03"]))
        self.assertEqual(solve(nulldata_script(b"hello")), ("nulldata", []))
        self.assertEqual(solve(h("6a")), ("nulldata", []))

    def test_nonstandard(self):
        pk = self.pubkeys[0]
        for script in (b"", h("51"), h("6a76"), h("6a4c"), p2pk_script(pk)[:-1],
                       h("00") + push_data(pk) + h("51ae"),       # m = 0
                       h("52") + push_data(pk) + h("51ae"),       # m > n
                       h("51") + push_data(pk) + h("52ae"),       # n != key count
                       push_data(b"k" * 32) + bytes([OP_CHECKSIG])):
            self.assertEqual(solve(script), ("nonstandard", []), script.hex())

    def test_core_template_quirks(self):
        # Any push opcode may carry the hash; "pubkeys" are any 33..65-byte push.
        loose = h("76a94c14") + b"\x11" * 20 + h("88ac")
        self.assertEqual(solve(loose), ("pubkeyhash", [b"\x11" * 20]))
        fake = push_int(1) + push_data(b"\x09" * 40) + push_int(1) + bytes([OP_CHECKMULTISIG])
        self.assertEqual(solve(fake)[0], "multisig")

    def test_is_standard(self):
        self.assertTrue(is_standard(multisig_script(1, self.pubkeys)))
        self.assertFalse(is_standard(multisig_script(1, self.pubkeys + [self.pubkeys[0]])))
        self.assertTrue(is_standard(nulldata_script(b"x" * 80)))      # 83 bytes
        self.assertFalse(is_standard(nulldata_script(b"x" * 81)))
        self.assertTrue(is_standard(nulldata_script(b"x" * 81), max_datacarrier_bytes=84))
        self.assertFalse(is_standard(nulldata_script(b""), max_datacarrier_bytes=None))
        self.assertFalse(is_standard(h("51")))

    def test_extract_destinations(self):
        pk = self.pubkeys[0]
        self.assertEqual(extract_destinations(p2pk_script(pk)),
                         ("pubkey", [Destination("pubkeyhash", hash160(pk))], 1))
        self.assertEqual(extract_destinations(p2sh_script(b"\x22" * 20)),
                         ("scripthash", [Destination("scripthash", b"\x22" * 20)], 1))
        kind, dests, required = extract_destinations(multisig_script(2, self.pubkeys))
        self.assertEqual((kind, required), ("multisig", 2))
        self.assertEqual(dests, [Destination("pubkeyhash", hash160(p)) for p in self.pubkeys])
        self.assertEqual(extract_destinations(nulldata_script(b"x")), ("nulldata", [], 0))
        self.assertEqual(extract_destinations(h("51")), ("nonstandard", [], 0))
        # A 40-byte "key" fits the template but is no valid key.
        self.assertEqual(extract_destinations(p2pk_script(b"\x02" * 40)), ("pubkey", [], 0))


class Checkers(SynchronousTestCase):

    def test_base_checker_fails_everything(self):
        checker = BaseSignatureChecker()
        self.assertFalse(checker.check_sig(b"\x01", b"\x02", b""))
        self.assertFalse(checker.check_locktime(0))
        self.assertFalse(checker.check_sequence(0))

    def test_locktime(self):
        checker = TransactionSignatureChecker(spending_tx(locktime=100, sequence=0), 0)
        self.assertTrue(checker.check_locktime(100))
        self.assertFalse(checker.check_locktime(101))
        self.assertFalse(checker.check_locktime(500000000))
        final = TransactionSignatureChecker(spending_tx(locktime=100), 0)
        self.assertFalse(final.check_locktime(50))

    def test_sequence(self):
        checker = TransactionSignatureChecker(spending_tx(version=2, sequence=10), 0)
        self.assertTrue(checker.check_sequence(10))
        self.assertFalse(checker.check_sequence(11))
        self.assertFalse(checker.check_sequence(10 | 1 << 22))
        self.assertFalse(TransactionSignatureChecker(
            spending_tx(version=1, sequence=10), 0).check_sequence(5))
        self.assertFalse(TransactionSignatureChecker(
            spending_tx(version=2, sequence=10 | 1 << 31), 0).check_sequence(5))


class Signatures(SynchronousTestCase):

    def setUp(self):
        self.msg = sha256d(b"message")
        self.key = KEYS[0]
        self.pubkey = self.key.public_key.format()
        self.der = self.key.sign(self.msg, hasher=None)

    def test_high_s_is_normalized(self):
        high = high_s_twin(self.der)
        self.assertTrue(verify_ecdsa(self.der, self.pubkey, self.msg))
        self.assertTrue(verify_ecdsa(high, self.pubkey, self.msg))
        self.assertFalse(verify_ecdsa(high, self.pubkey, sha256d(b"other")))

    def test_lax_der(self):
        # Long-form sequence length and padded integers: not DER, but Core accepts them.
        r, s = parse_der_lax(self.der)
        body = (b"\x02\x21\x00" + r.to_bytes(32, "big")
                + b"\x02\x22\x00\x00" + s.to_bytes(32, "big"))
        lax = b"\x30\x81" + bytes([len(body)]) + body
        self.assertEqual(parse_der_lax(lax), (r, s))
        self.assertTrue(verify_ecdsa(lax, self.pubkey, self.msg))
        self.assertIsNone(parse_der_lax(b"\x31"))
        self.assertIsNone(parse_der_lax(self.der[:-1]))
        self.assertFalse(verify_ecdsa(b"", self.pubkey, self.msg))
        self.assertFalse(verify_ecdsa(self.der, b"\x02" * 33, self.msg))
        overflow = b"\x30\x26\x02\x21" + b"\x01" * 33 + b"\x02\x01\x01"
        self.assertEqual(parse_der_lax(overflow), (0, 0))

    def test_low_s_and_nullfail_flags(self):
        tx = spending_tx()
        spk = p2pk_script(self.pubkey)
        good = create_signature(self.key, spk, tx, 0)
        checker = TransactionSignatureChecker(tx, 0)
        verify_script(push_data(good), spk, SCRIPT_VERIFY_LOW_S, checker)
        high = high_s_twin(good[:-1]) + b"\x01"
        verify_script(push_data(high), spk, 0, checker)
        with self.assertRaises(ScriptError) as cm:
            verify_script(push_data(high), spk, SCRIPT_VERIFY_LOW_S, checker)
        self.assertEqual(cm.exception.code, "SIG_HIGH_S")
        bad = good[:-2] + bytes([good[-2] ^ 1]) + b"\x01"
        with self.assertRaises(ScriptError) as cm:
            verify_script(push_data(bad), spk + b"\x91", SCRIPT_VERIFY_NULLFAIL, checker)
        self.assertEqual(cm.exception.code, "NULLFAIL")
        verify_script(push_data(b""), spk + b"\x91", SCRIPT_VERIFY_NULLFAIL, checker)

    def test_cleanstack_needs_p2sh(self):
        self.assertRaises(ValueError, verify_script, h("51"), h("51"),
                          SCRIPT_VERIFY_CLEANSTACK, BaseSignatureChecker())

    def test_sigpushonly(self):
        with self.assertRaises(ScriptError) as cm:
            verify_script(h("5176"), h("87"), SCRIPT_VERIFY_SIGPUSHONLY, BaseSignatureChecker())
        self.assertEqual(cm.exception.code, "SIG_PUSHONLY")
        self.assertEqual(cm.exception.message, "Only non-push operators allowed in signatures")

    def test_error_messages(self):
        with self.assertRaises(ScriptError) as cm:
            verify_script(h("00"), b"", 0, BaseSignatureChecker())
        self.assertEqual(cm.exception.message, "Script evaluated without error but finished "
                                               "with a false/empty top stack element")
        self.assertEqual(ScriptError("UNKNOWN_ERROR").message, "unknown error")


class SignatureHash(SynchronousTestCase):

    def test_special_transaction_shape(self):
        # With scriptSig == script code and SIGHASH_ALL, the preimage is the
        # transaction's own serialization: the DIP2 version field and payload included.
        code = p2pkh_script(b"\x33" * 20)
        vin = [TxIn(OutPoint(b"\x01" * 32, 0), code, 7)]
        tx = Transaction(vin, [TxOut(1, b"\x51")], 9, version=3, tx_type=5,
                         extra_payload=b"payload")
        self.assertTrue(tx.has_extra_payload())
        self.assertEqual(signature_hash(code, tx, 0, SIGHASH_ALL),
                         sha256d(tx.serialize() + u32(SIGHASH_ALL)))

    def test_one_bug(self):
        tx = spending_tx(n_inputs=3)
        self.assertEqual(signature_hash(b"", tx, 2, SIGHASH_SINGLE), SIGHASH_ONE)
        self.assertEqual(signature_hash(b"", tx, 3, SIGHASH_ALL), SIGHASH_ONE)
        self.assertNotEqual(signature_hash(b"", tx, 1, SIGHASH_SINGLE), SIGHASH_ONE)

    def test_codeseparators_removed(self):
        tx = spending_tx()
        self.assertEqual(signature_hash(h("ab51ab52"), tx, 0, SIGHASH_ALL),
                         signature_hash(h("5152"), tx, 0, SIGHASH_ALL))


class Signing(SynchronousTestCase):

    def setUp(self):
        self.store = KeyStore()
        self.pubkeys = [self.store.add_key(k) for k in KEYS[:3]]
        self.uncompressed = self.store.add_key(KEYS[3].secret, compressed=False)

    def _sign_and_check(self, spent, hash_type=SIGHASH_ALL, expect_complete=True):
        tx = spending_tx(n_inputs=len(spent))
        signed, complete = sign_transaction(tx, spent, self.store, hash_type)
        self.assertEqual(complete, expect_complete)
        if expect_complete:
            for i, spk in enumerate(spent):
                verify_script(signed.vin[i].script_sig, spk, STANDARD_SCRIPT_VERIFY_FLAGS,
                              TransactionSignatureChecker(signed, i))
        return signed

    def test_single_key_templates(self):
        self._sign_and_check([p2pkh_script(hash160(self.pubkeys[0])),
                              p2pk_script(self.pubkeys[1]),
                              p2pkh_script(hash160(self.uncompressed)),
                              p2pk_script(self.uncompressed)])

    def test_hash_types(self):
        spent = [p2pkh_script(hash160(self.pubkeys[0])), p2pk_script(self.pubkeys[1])]
        for hash_type in (SIGHASH_NONE, SIGHASH_SINGLE, SIGHASH_ALL | SIGHASH_ANYONECANPAY,
                          SIGHASH_SINGLE | SIGHASH_ANYONECANPAY):
            self._sign_and_check(spent, hash_type)

    def test_multisig_and_p2sh(self):
        bare = multisig_script(2, self.pubkeys)
        redeem = multisig_script(2, [self.pubkeys[2], self.uncompressed, self.pubkeys[0]])
        self.store.add_script(redeem)
        wrapped_p2pkh = p2pkh_script(hash160(self.pubkeys[1]))
        self.store.add_script(wrapped_p2pkh)
        signed = self._sign_and_check([bare, p2sh_script(hash160(redeem)),
                                       p2sh_script(hash160(wrapped_p2pkh))])
        self.assertEqual(script_to_asm(signed.vin[1].script_sig).split()[-1], redeem.hex())

    def test_extra_entropy_gives_other_valid_signatures(self):
        """RFC6979 extra data (Core's CKey::Sign test_case): each value another signature of
        the same message, valid, through P2SH too; 0 is the plain deterministic one."""
        redeem = multisig_script(1, [self.pubkeys[2]])
        self.store.add_script(redeem)
        spent = [p2pkh_script(hash160(self.pubkeys[0])), p2sh_script(hash160(redeem))]
        tx = spending_tx(n_inputs=2)
        plain, _ = sign_transaction(tx, spent, self.store)
        self.assertEqual(sign_transaction(tx, spent, self.store, entropy=0)[0].serialize(),
                         plain.serialize())
        seen = {tuple(i.script_sig for i in plain.vin)}
        for entropy in (1, 2, 3):
            signed, complete = sign_transaction(tx, spent, self.store, entropy=entropy)
            self.assertTrue(complete)
            for i, spk in enumerate(spent):
                verify_script(signed.vin[i].script_sig, spk, STANDARD_SCRIPT_VERIFY_FLAGS,
                              TransactionSignatureChecker(signed, i))
            seen.add(tuple(i.script_sig for i in signed.vin))
        self.assertEqual(len(seen), 4)

    def test_incomplete(self):
        other = KeyStore()
        other.add_key(KEYS[0])
        redeem = multisig_script(2, self.pubkeys)
        other.add_script(redeem)
        spent = [p2sh_script(hash160(redeem)), p2pkh_script(b"\x44" * 20), h("6a")]
        signed, complete = sign_transaction(spending_tx(n_inputs=3), spent, other)
        self.assertFalse(complete)
        # The partial multisig keeps what could be made, padded as Core's SignStep pads it:
        # dummy, one signature, an empty one for the missing signature, redeem script.
        self.assertEqual(len(list(iter_script(signed.vin[0].script_sig))), 4)
        self.assertEqual(signed.vin[1].script_sig, b"")

    def test_unknown_script_hash(self):
        spent = [p2sh_script(b"\x55" * 20)]
        self._sign_and_check(spent, expect_complete=False)

    def test_sign_and_verify_names_each_failing_input(self):
        mine = p2pkh_script(hash160(self.pubkeys[0]))
        spent = [mine, None, p2pkh_script(b"\x44" * 20), h("6a")]
        signed, failures = sign_and_verify(spending_tx(n_inputs=4), spent, self.store)
        missing_key = "Unable to sign input, invalid stack size (possibly missing key)"
        self.assertEqual(failures, [(1, "Input not found or already spent"), (2, missing_key),
                                    (3, "OP_RETURN was encountered")])
        verify_script(signed.vin[0].script_sig, mine, STANDARD_SCRIPT_VERIFY_FLAGS,
                      TransactionSignatureChecker(signed, 0))
        # SIGHASH_SINGLE signs no input past the last output (two here).
        signed, failures = sign_and_verify(spending_tx(n_inputs=3), [mine] * 3, self.store,
                                           SIGHASH_SINGLE)
        self.assertEqual(failures, [(2, missing_key)])
        self.assertEqual(signed.vin[2].script_sig, b"")

    def test_fast_p2pkh(self):
        tx = spending_tx(n_inputs=2)
        for key, compressed in ((KEYS[0], True), (KEYS[3], False)):
            spk = p2pkh_script(hash160(key.public_key.format(compressed)))
            script_sig = sign_p2pkh_input(tx, 1, key, spk)
            verify_script(script_sig, spk, STANDARD_SCRIPT_VERIFY_FLAGS,
                          TransactionSignatureChecker(tx, 1))
        self.assertRaises(ValueError, sign_p2pkh_input, tx, 0, KEYS[1], spk)

    def test_p2sh_sigop_view(self):
        redeem = multisig_script(1, self.pubkeys[:2])
        self.store.add_script(redeem)
        spk = p2sh_script(hash160(redeem))
        signed = self._sign_and_check([spk])
        self.assertEqual(p2sh_sigop_count(signed.vin[0].script_sig, spk), 2)
        with self.assertRaises(ScriptError) as cm:
            verify_script(signed.vin[0].script_sig + h("61"), spk, SCRIPT_VERIFY_P2SH,
                          TransactionSignatureChecker(signed, 0))
        self.assertEqual(cm.exception.code, "SIG_PUSHONLY")
