"""Relay policy: fee rates, dust, standardness, standard inputs and priority."""

from __future__ import annotations

from typing import List, Optional, Sequence

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import COIN
from coin.consensus.errors import REJECT_NONSTANDARD, ValidationError
from coin.mempool.policy import (
    MAX_P2SH_SIGOPS,
    MAX_STANDARD_SCRIPTSIG_SIZE,
    MAX_STANDARD_TX_SIGOPS,
    MAX_STANDARD_TX_SIZE,
    FeeRate,
    are_inputs_standard,
    check_standard_tx,
    compute_priority,
    current_priority,
    dust_threshold,
    input_priority,
    is_dust,
    modified_size,
)
from coin.primitives import script as s
from coin.primitives.coin import Coin
from coin.primitives.hashes import hash160, sha256
from coin.primitives.script import push_data
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.sign import sign_p2pkh_input
from coin.script.standard import (
    multisig_script,
    nulldata_script,
    p2pkh_script,
    p2sh_script,
)
from coin.testing.chainbuilder import deterministic_key

KEY = deterministic_key("policy test")
PUBKEY = KEY.public_key.format(compressed=True)
P2PKH = p2pkh_script(hash160(PUBKEY))
RELAY = FeeRate(1000)
#: Distinct well-formed compressed keys for multisig templates.
KEYS = [deterministic_key("policy key %d" % i).public_key.format(compressed=True) for i in range(5)]


def outpoint(i: int, n: int = 0) -> OutPoint:
    return OutPoint(sha256(i.to_bytes(4, "little")), n)


def make_tx(script_sigs: Sequence[bytes] = (b"",), outputs: Optional[List[TxOut]] = None,
            version: int = 1, tx_type: int = 0) -> Transaction:
    vin = [TxIn(outpoint(i), sig) for i, sig in enumerate(script_sigs)]
    return Transaction(vin, outputs if outputs is not None else [TxOut(COIN, P2PKH)],
                       version=version, tx_type=tx_type)


def signed_p2pkh_spend() -> Transaction:
    unsigned = make_tx()
    sig = sign_p2pkh_input(unsigned, 0, KEY, P2PKH)
    return Transaction([TxIn(outpoint(0), sig)], unsigned.vout)


class FeeRateTests(SynchronousTestCase):
    def test_get_fee_truncates(self) -> None:
        self.assertEqual(FeeRate(1000).get_fee(250), 250)
        self.assertEqual(FeeRate(1234).get_fee(1001), 1235)  # 1235.234
        self.assertEqual(FeeRate(1999).get_fee(1), 1)  # 1.999
        self.assertEqual(FeeRate(1000).get_fee(0), 0)

    def test_one_satoshi_rule(self) -> None:
        """A positive rate never makes a non-empty transaction free."""
        self.assertEqual(FeeRate(1).get_fee(999), 1)
        self.assertEqual(FeeRate(1).get_fee(1), 1)
        self.assertEqual(FeeRate(1).get_fee(0), 0)
        self.assertEqual(FeeRate(0).get_fee(100_000), 0)

    def test_negative_rate_truncates_toward_zero(self) -> None:
        self.assertEqual(FeeRate(-1500).get_fee(999), -1498)  # -1498.5
        self.assertEqual(FeeRate(-1).get_fee(10), -1)
        self.assertEqual(FeeRate(-1000).get_fee(1000), -1000)

    def test_from_fee(self) -> None:
        self.assertEqual(FeeRate.from_fee(1000, 250), FeeRate(4000))
        self.assertEqual(FeeRate.from_fee(1, 3), FeeRate(333))
        self.assertEqual(FeeRate.from_fee(-1, 3), FeeRate(-333))
        self.assertEqual(FeeRate.from_fee(5000, 0), FeeRate(0))

    def test_comparison_and_repr(self) -> None:
        self.assertTrue(FeeRate(1) < FeeRate(2) <= FeeRate(2) < FeeRate(3))
        self.assertTrue(FeeRate(3) > FeeRate(2) >= FeeRate(2))
        self.assertNotEqual(FeeRate(1), FeeRate(2))
        self.assertEqual(len({FeeRate(7), FeeRate(7)}), 1)
        self.assertNotEqual(FeeRate(7), 7)
        self.assertEqual(repr(FeeRate(1000)), "FeeRate(1000)")
        self.assertEqual(FeeRate(1000).get_fee_per_k(), 1000)

    def test_to_string(self) -> None:
        self.assertEqual(FeeRate(1000).to_string(), "0.00001000 COIN/kB")
        self.assertEqual(FeeRate(123456789012).to_string(), "1234.56789012 COIN/kB")
        self.assertEqual(FeeRate(0).to_string(), "0.00000000 COIN/kB")
        self.assertEqual(FeeRate(-1000).to_string(), "-0.00001000 COIN/kB")

    @given(st.integers(0, 10 * COIN), st.integers(0, 200_000), st.integers(0, 200_000))
    def test_get_fee_monotonic_in_size(self, rate: int, a: int, b: int) -> None:
        small, large = sorted((a, b))
        self.assertLessEqual(FeeRate(rate).get_fee(small), FeeRate(rate).get_fee(large))

    @given(st.integers(0, 21_000_000 * COIN), st.integers(1, 1_000_000))
    def test_from_fee_round_trip(self, fee: int, size: int) -> None:
        """Truncating twice loses less than one satoshi per kB plus one satoshi."""
        got = FeeRate.from_fee(fee, size).get_fee(size)
        self.assertLessEqual(got, fee)
        self.assertLess((fee - got) * 1000, size + 1000)


class DustTests(SynchronousTestCase):
    def test_p2pkh(self) -> None:
        """34-byte output + 148-byte input = 182 bytes; three times 182 sat."""
        out = TxOut(0, P2PKH)
        self.assertEqual(len(out.serialize()), 34)
        self.assertEqual(dust_threshold(out, RELAY), 546)
        self.assertTrue(is_dust(TxOut(545, P2PKH), RELAY))
        self.assertFalse(is_dust(TxOut(546, P2PKH), RELAY))

    def test_p2sh(self) -> None:
        """32-byte output + 148 = 180 bytes."""
        self.assertEqual(dust_threshold(TxOut(0, p2sh_script(b"\x22" * 20)), RELAY), 540)

    def test_other_rates(self) -> None:
        self.assertEqual(dust_threshold(TxOut(0, P2PKH), FeeRate(3000)), 1638)
        # 182 * 3 / 1000 truncates to 0, the one-satoshi rule makes it 1, tripled.
        self.assertEqual(dust_threshold(TxOut(0, P2PKH), FeeRate(3)), 3)
        self.assertEqual(dust_threshold(TxOut(0, P2PKH), FeeRate(0)), 0)

    def test_unspendable_is_never_dust(self) -> None:
        self.assertEqual(dust_threshold(TxOut(0, nulldata_script(b"hello")), RELAY), 0)
        self.assertEqual(dust_threshold(TxOut(0, b"\x6a"), RELAY), 0)
        self.assertEqual(dust_threshold(TxOut(0, b"\x51" * 10_001), RELAY), 0)
        self.assertFalse(is_dust(TxOut(0, b"\x6a"), RELAY))


class CheckStandardTxTests(SynchronousTestCase):
    def assertReason(self, tx: Transaction, reason: str, **kwargs) -> None:
        err = self.assertRaises(ValidationError, check_standard_tx, tx, RELAY, **kwargs)
        self.assertEqual(err.reason, reason)
        self.assertEqual(err.code, REJECT_NONSTANDARD)
        self.assertEqual(err.dos, 0)

    def test_signed_p2pkh_spend_is_standard(self) -> None:
        self.assertIsNone(check_standard_tx(signed_p2pkh_spend(), RELAY))

    def test_constants(self) -> None:
        self.assertEqual(MAX_STANDARD_TX_SIZE, 100_000)
        self.assertEqual(MAX_STANDARD_SCRIPTSIG_SIZE, 1650)
        self.assertEqual(MAX_P2SH_SIGOPS, 15)
        self.assertEqual(MAX_STANDARD_TX_SIGOPS, 4000)

    def test_version(self) -> None:
        for version in (0, -1, 4):
            self.assertReason(make_tx(version=version), "version")
        for version in (1, 2, 3):
            check_standard_tx(make_tx(version=version), RELAY)

    def test_special_transaction_type(self) -> None:
        self.assertReason(make_tx(version=3, tx_type=1), "bad-txns-type")

    def test_tx_size(self) -> None:
        """Size limit is exclusive, as in Core: 100000 bytes is too big, 99999 is not."""
        # 4 version + 1 + 41 input + 1 + 8 value + 5 length prefix + script + 4 locktime
        tx = make_tx(outputs=[TxOut(COIN, b"\x51" * (MAX_STANDARD_TX_SIZE - 64))])
        self.assertEqual(tx.size, MAX_STANDARD_TX_SIZE)
        self.assertReason(tx, "tx-size")
        tx = make_tx(outputs=[TxOut(COIN, b"\x51" * (MAX_STANDARD_TX_SIZE - 65))])
        self.assertEqual(tx.size, MAX_STANDARD_TX_SIZE - 1)
        self.assertReason(tx, "scriptpubkey")  # got past the size rule

    def test_scriptsig_size(self) -> None:
        # OP_PUSHDATA2 <len> data: 3 bytes of header.
        at_limit = push_data(b"\x01" * (MAX_STANDARD_SCRIPTSIG_SIZE - 3))
        self.assertEqual(len(at_limit), MAX_STANDARD_SCRIPTSIG_SIZE)
        check_standard_tx(make_tx([at_limit]), RELAY)
        over = push_data(b"\x01" * (MAX_STANDARD_SCRIPTSIG_SIZE - 2))
        self.assertReason(make_tx([b"", over]), "scriptsig-size")

    def test_scriptsig_not_pushonly(self) -> None:
        self.assertReason(make_tx([b"\x51\x76"]), "scriptsig-not-pushonly")  # OP_1 OP_DUP
        self.assertReason(make_tx([b"\x4c"]), "scriptsig-not-pushonly")  # truncated push

    def test_scriptpubkey_nonstandard(self) -> None:
        self.assertReason(make_tx(outputs=[TxOut(COIN, b"\x51")]), "scriptpubkey")

    def test_scriptpubkey_large_multisig(self) -> None:
        check_standard_tx(make_tx(outputs=[TxOut(COIN, multisig_script(1, KEYS[:3]))]), RELAY)
        self.assertReason(make_tx(outputs=[TxOut(COIN, multisig_script(1, KEYS[:4]))]),
                          "scriptpubkey")

    def test_scriptpubkey_datacarrier_size(self) -> None:
        at_limit = nulldata_script(b"\x00" * 80)
        self.assertEqual(len(at_limit), 83)
        check_standard_tx(make_tx(outputs=[TxOut(0, at_limit), TxOut(COIN, P2PKH)]), RELAY)
        over = nulldata_script(b"\x00" * 81)
        self.assertReason(make_tx(outputs=[TxOut(0, over)]), "scriptpubkey")
        self.assertReason(make_tx(outputs=[TxOut(0, at_limit)]), "scriptpubkey",
                          max_datacarrier=82)
        self.assertReason(make_tx(outputs=[TxOut(0, at_limit)]), "scriptpubkey",
                          max_datacarrier=None)

    def test_bare_multisig(self) -> None:
        tx = make_tx(outputs=[TxOut(COIN, multisig_script(1, KEYS[:2]))])
        check_standard_tx(tx, RELAY, permit_bare_multisig=True)
        self.assertReason(tx, "bare-multisig", permit_bare_multisig=False)

    def test_dust(self) -> None:
        self.assertReason(make_tx(outputs=[TxOut(COIN, P2PKH), TxOut(545, P2PKH)]), "dust")
        check_standard_tx(make_tx(outputs=[TxOut(546, P2PKH)]), RELAY)
        # Permitted bare multisig is dust-checked too; nulldata is not.
        self.assertReason(make_tx(outputs=[TxOut(1, multisig_script(1, KEYS[:1]))]), "dust")
        check_standard_tx(make_tx(outputs=[TxOut(0, nulldata_script(b"x"))]), RELAY)

    def test_multi_op_return(self) -> None:
        outputs = [TxOut(0, nulldata_script(b"a")), TxOut(COIN, P2PKH), TxOut(0, b"\x6a")]
        self.assertReason(make_tx(outputs=outputs), "multi-op-return")

    def test_order_of_rules(self) -> None:
        """The first broken rule in Core's order names the rejection."""
        self.assertReason(make_tx(version=4, tx_type=1), "version")
        too_long_and_not_push = b"\x76" * (MAX_STANDARD_SCRIPTSIG_SIZE + 1)
        self.assertReason(make_tx([too_long_and_not_push], [TxOut(1, b"\x51")]), "scriptsig-size")
        self.assertReason(make_tx([b"\x76"], [TxOut(1, b"\x51")]), "scriptsig-not-pushonly")
        # Outputs are checked one by one; multi-op-return only after all of them.
        outputs = [TxOut(0, b"\x6a"), TxOut(0, b"\x6a"), TxOut(1, P2PKH)]
        self.assertReason(make_tx(outputs=outputs), "dust")
        outputs = [TxOut(1, P2PKH), TxOut(COIN, b"\x51")]
        self.assertReason(make_tx(outputs=outputs), "dust")


class AreInputsStandardTests(SynchronousTestCase):
    def coin(self, script_pubkey: bytes) -> Coin:
        return Coin(COIN, script_pubkey, 10, False)

    def p2sh_spend(self, redeem_script: bytes, script_sig: Optional[bytes] = None):
        if script_sig is None:
            script_sig = b"\x00" + push_data(redeem_script)
        return make_tx([script_sig]), [self.coin(p2sh_script(hash160(redeem_script)))]

    def test_p2pkh(self) -> None:
        self.assertTrue(are_inputs_standard(signed_p2pkh_spend(), [self.coin(P2PKH)]))

    def test_nonstandard_prevout(self) -> None:
        tx = make_tx([b"", b""])
        self.assertFalse(are_inputs_standard(tx, [self.coin(P2PKH), self.coin(b"\x51")]))

    def test_bare_multisig_prevout_of_any_size(self) -> None:
        """Spending is judged by template, not by today's output limits (1-of-5 is fine)."""
        tx = make_tx([b"\x00" + push_data(b"\x30" * 71)])
        self.assertTrue(are_inputs_standard(tx, [self.coin(multisig_script(1, KEYS))]))

    def test_coinbase(self) -> None:
        tx = Transaction([TxIn(OutPoint(), b"\x01\x01")], [TxOut(COIN, P2PKH)])
        self.assertTrue(are_inputs_standard(tx, [self.coin(b"\x51")]))

    def test_p2sh_small_redeem_script(self) -> None:
        redeem = multisig_script(2, KEYS[:3])
        self.assertTrue(are_inputs_standard(*self.p2sh_spend(redeem)))

    def test_p2sh_sigop_limit(self) -> None:
        at_limit = bytes((s.OP_CHECKSIG,)) * MAX_P2SH_SIGOPS
        self.assertTrue(are_inputs_standard(*self.p2sh_spend(at_limit)))
        over = bytes((s.OP_CHECKSIG,)) * (MAX_P2SH_SIGOPS + 1)
        self.assertFalse(are_inputs_standard(*self.p2sh_spend(over)))

    def test_p2sh_multisig_counted_accurately(self) -> None:
        # OP_15 CHECKMULTISIG is 15 sigops; without a preceding small int it counts 20.
        ok = bytes((s.OP_15, s.OP_CHECKMULTISIG))
        self.assertTrue(are_inputs_standard(*self.p2sh_spend(ok)))
        inaccurate = bytes((s.OP_CHECKMULTISIG,))
        self.assertFalse(are_inputs_standard(*self.p2sh_spend(inaccurate)))
        too_many = bytes((s.OP_1, s.OP_CHECKMULTISIG)) * 16
        self.assertFalse(are_inputs_standard(*self.p2sh_spend(too_many)))

    def test_p2sh_empty_stack(self) -> None:
        self.assertFalse(are_inputs_standard(*self.p2sh_spend(b"\x51", script_sig=b"")))
        # OP_1 OP_DROP evaluates fine but leaves nothing to use as the redeem script.
        self.assertFalse(are_inputs_standard(*self.p2sh_spend(b"\x51", script_sig=b"\x51\x75")))

    def test_p2sh_script_sig_fails(self) -> None:
        self.assertFalse(are_inputs_standard(*self.p2sh_spend(b"\x51", script_sig=b"\x6a")))
        self.assertFalse(are_inputs_standard(*self.p2sh_spend(b"\x51", script_sig=b"\x4c")))

    def test_every_input_is_checked(self) -> None:
        over = bytes((s.OP_CHECKSIG,)) * 16
        good_sig = signed_p2pkh_spend().vin[0].script_sig
        tx = make_tx([good_sig, push_data(over)])
        spent = [self.coin(P2PKH), self.coin(p2sh_script(hash160(over)))]
        self.assertFalse(are_inputs_standard(tx, spent))

    def test_misaligned_spent_is_an_error(self) -> None:
        self.assertRaises(ValueError, are_inputs_standard, make_tx([b"", b""]), [self.coin(P2PKH)])


class PriorityTests(SynchronousTestCase):
    def test_modified_size_typical_input(self) -> None:
        # 4 + 1 + (36 + 1 + 107 + 4) + 1 + 34 + 4 = 192; the input's 41 + 107 are not charged.
        tx = make_tx([b"\x01" * 107])
        self.assertEqual(tx.size, 192)
        self.assertEqual(modified_size(tx), 44)

    def test_modified_size_caps_scriptsig(self) -> None:
        # 4 + 1 + (36 + 1 + 200 + 4) + 1 + 34 + 4 = 285; only 41 + 110 are not charged.
        tx = make_tx([b"\x01" * 200])
        self.assertEqual(tx.size, 285)
        self.assertEqual(modified_size(tx), 134)

    def test_modified_size_several_inputs(self) -> None:
        # 4 + 1 + 41 + (41 + 10) + 1 + 34 + 4 = 136; minus 41 and 51.
        tx = make_tx([b"", b"\x01" * 10])
        self.assertEqual(tx.size, 136)
        self.assertEqual(modified_size(tx), 44)

    def test_input_priority(self) -> None:
        spent = [Coin(COIN, P2PKH, 10, False), Coin(2 * COIN, P2PKH, 50, True), None,
                 Coin(5 * COIN, P2PKH, 101, False), Coin(7, P2PKH, 100, False)]
        priority, in_chain = input_priority(spent, 100)
        # 1e8 * 90 + 2e8 * 50 + 7 * 0; the mempool input and the future coin count for nothing.
        self.assertEqual(priority, 19_000_000_000.0)
        self.assertIsInstance(priority, float)
        self.assertEqual(in_chain, 3 * COIN + 7)
        self.assertEqual(input_priority([], 100), (0.0, 0))
        self.assertEqual(input_priority([None], 100), (0.0, 0))

    def test_compute_priority(self) -> None:
        tx = make_tx([b"\x01" * 107])  # modified size 44
        self.assertEqual(compute_priority(19_000_000_000.0, tx), 19_000_000_000.0 / 44)
        self.assertEqual(compute_priority(0.0, tx), 0.0)

    def test_current_priority(self) -> None:
        self.assertEqual(current_priority(100.0, 10, 15, 3 * COIN, 44), 100.0 + 5 * 3e8 / 44)
        self.assertEqual(current_priority(100.0, 10, 10, 3 * COIN, 44), 100.0)
        # Below the entry height (a reorg): floored at zero.
        self.assertEqual(current_priority(100.0, 10, 9, 3 * COIN, 44), 0.0)
        self.assertEqual(current_priority(0.0, 10, 20, 0, 44), 0.0)
        self.assertEqual(current_priority(5.0, 10, 20, COIN, 0), 5.0)

    @given(st.floats(0, 1e15), st.integers(0, 10**6), st.integers(0, 1000),
           st.integers(0, 21_000_000 * COIN), st.integers(1, 100_000))
    def test_current_priority_grows_with_height(self, starting: float, entry: int, blocks: int,
                                                value: int, size: int) -> None:
        before = current_priority(starting, entry, entry + blocks, value, size)
        after = current_priority(starting, entry, entry + blocks + 1, value, size)
        self.assertGreaterEqual(after, before)
        self.assertGreaterEqual(before, starting)
