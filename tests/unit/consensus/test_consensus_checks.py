"""Context-free consensus rules: proof of work, subsidy, transaction and block checks."""

from __future__ import annotations

from typing import Optional

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import (
    COIN,
    MAIN,
    MAX_BLOCK_SIGOPS,
    MAX_BLOCK_SIZE,
    MAX_MONEY,
    REGTEST,
    TEST,
)
from coin.consensus.block_check import check_block, check_block_header
from coin.consensus.errors import REJECT_INVALID, ValidationError
from coin.consensus.pow import (
    check_proof_of_work,
    compact_to_target,
    get_difficulty,
    target_to_compact,
)
from coin.consensus.subsidy import block_subsidy
from coin.consensus.tx_check import (
    check_transaction,
    check_tx_inputs,
    is_final_tx,
    legacy_sigops,
    p2sh_sigops,
)
from coin.primitives.block import Block, BlockHeader
from coin.primitives.coin import Coin
from coin.primitives.hashes import hash160, hash_to_hex, sha256, sha256d
from coin.primitives.merkle import merkle_root
from coin.primitives.script import push_data
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut

P2PKH = bytes.fromhex("76a914" + "11" * 20 + "88ac")
T0 = 1_600_000_000


def outpoint(i: int, n: int = 0) -> OutPoint:
    return OutPoint(sha256(i.to_bytes(4, "little")), n)


def spend(*prevouts: OutPoint, values=(COIN,), version: int = 1, tx_type: int = 0,
          locktime: int = 0, sequence: int = 0xFFFFFFFF) -> Transaction:
    return Transaction([TxIn(p, b"\x51", sequence) for p in prevouts],
                       [TxOut(v, P2PKH) for v in values], locktime, version, tx_type)


def coinbase(script_sig: bytes = b"\x01\x01", outputs=None) -> Transaction:
    return Transaction([TxIn(OutPoint(), script_sig)], outputs or [TxOut(50 * COIN, P2PKH)])


def make_block(txs, root: Optional[bytes] = None, bits: int = REGTEST.pow_limit_bits) -> Block:
    if root is None:
        root = merkle_root([tx.txid for tx in txs])[0]
    return Block(BlockHeader(1, b"\x00" * 32, root, T0, bits, 0), txs)


class ReasonMixin:
    def assertRejected(self, reason: str, func, *args, **kwargs) -> ValidationError:
        err = self.assertRaises(ValidationError, func, *args, **kwargs)
        self.assertEqual(err.reason, reason)
        return err


class ProofOfWorkTests(SynchronousTestCase):
    def test_genesis_blocks_meet_their_targets(self):
        for params in (MAIN, TEST, REGTEST):
            header = params.genesis.header
            self.assertTrue(check_proof_of_work(header.hash, header.bits, params), params.name)

    def test_limit_bits_encode_the_limit(self):
        for params in (MAIN, TEST, REGTEST):
            self.assertEqual(target_to_compact(params.pow_limit), params.pow_limit_bits)

    def test_hash_compared_as_little_endian_number(self):
        target = compact_to_target(0x1D00FFFF)[0]
        at_target = target.to_bytes(32, "little")
        above = (target + 1).to_bytes(32, "little")
        self.assertTrue(check_proof_of_work(at_target, 0x1D00FFFF, MAIN))
        self.assertFalse(check_proof_of_work(above, 0x1D00FFFF, MAIN))

    def test_bad_bits_rejected(self):
        zero_hash = b"\x00" * 32
        self.assertFalse(check_proof_of_work(zero_hash, 0x01803456, REGTEST))  # negative
        self.assertFalse(check_proof_of_work(zero_hash, 0x00000000, REGTEST))  # zero target
        self.assertFalse(check_proof_of_work(zero_hash, 0x03000000, REGTEST))  # zero mantissa
        self.assertFalse(check_proof_of_work(zero_hash, 0xFF123456, REGTEST))  # overflow
        self.assertFalse(check_proof_of_work(zero_hash, 0x1F00FFFF, MAIN))  # above pow_limit
        self.assertTrue(check_proof_of_work(zero_hash, MAIN.pow_limit_bits, MAIN))
        self.assertFalse(check_proof_of_work(zero_hash, 0x01003456, REGTEST))  # rounds to 0
        self.assertTrue(check_proof_of_work(zero_hash, 0x01013456, REGTEST))  # target 1
        self.assertFalse(check_proof_of_work(b"\x02" + b"\x00" * 31, 0x01013456, REGTEST))

    def test_difficulty_matches_core(self):
        self.assertEqual(get_difficulty(0x1D00FFFF), 1.0)
        self.assertEqual(get_difficulty(0x1B0404CB), 16307.420938523983)
        self.assertEqual(get_difficulty(0x1E0FFFF0), 0.000244140625)
        # Core prints doubles with 16 significant digits (UniValue's setprecision(16)).
        self.assertEqual("%.16g" % get_difficulty(0x207FFFFF), "4.656542373906925e-10")
        # Core's blockchain_tests values (compared there to 1e-6).
        for bits, expected in ((0x1F111111, 0.000001), (0x1EF88F6F, 0.000016),
                               (0x1DF88F6F, 0.004023)):
            self.assertAlmostEqual(get_difficulty(bits), expected, places=6)
        self.assertEqual(get_difficulty(0x12345678), 5913134931067755359633408.0)
        self.assertEqual(get_difficulty(0x12345678 & 0xFF000000), float("inf"))

    @given(st.integers(min_value=0, max_value=(1 << 256) - 1))
    def test_compact_round_trip(self, target):
        bits = target_to_compact(target)
        decoded, negative, overflow = compact_to_target(bits)
        self.assertFalse(negative)
        self.assertFalse(overflow)
        # Only the top (at most 23 significant) bits survive.
        exponent = bits >> 24
        dropped = 8 * (exponent - 3) if exponent > 3 else 0
        self.assertEqual(decoded, (target >> dropped) << dropped)
        self.assertEqual(target_to_compact(decoded), bits)


HASHES = [bytes([i]) * 32 for i in range(3)]


def naive_merkle(hashes):
    """Recursive definition: pair up (last one with itself if odd), hash, repeat."""
    if len(hashes) == 1:
        return hashes[0], False
    mutated = any(hashes[i] == hashes[i + 1] for i in range(0, len(hashes) - 1, 2))
    padded = hashes + hashes[-1:] if len(hashes) % 2 else hashes
    parents = [sha256d(padded[i] + padded[i + 1]) for i in range(0, len(padded), 2)]
    root, deeper = naive_merkle(parents)
    return root, mutated or deeper


class MerkleTests(SynchronousTestCase):
    @given(st.lists(st.sampled_from(HASHES), min_size=1, max_size=24))
    def test_matches_naive_recomputation(self, hashes):
        self.assertEqual(merkle_root(hashes), naive_merkle(hashes))

    @given(st.lists(st.binary(min_size=32, max_size=32), min_size=3, max_size=15, unique=True)
           .filter(lambda h: len(h) % 2 == 1))
    def test_duplicating_odd_tail_keeps_root_and_flags_mutation(self, hashes):
        root, mutated = merkle_root(hashes)
        self.assertFalse(mutated)
        self.assertEqual(merkle_root(hashes + hashes[-1:]), (root, True))


class SubsidyTests(SynchronousTestCase):
    def test_regtest_halves_every_150(self):
        self.assertEqual(block_subsidy(0, REGTEST), 50 * COIN)
        self.assertEqual(block_subsidy(149, REGTEST), 50 * COIN)
        self.assertEqual(block_subsidy(150, REGTEST), 25 * COIN)
        self.assertEqual(block_subsidy(300, REGTEST), 1_250_000_000)

    def test_main_halves_every_210000(self):
        self.assertEqual(block_subsidy(209_999, MAIN), 50 * COIN)
        self.assertEqual(block_subsidy(210_000, MAIN), 25 * COIN)
        self.assertEqual(block_subsidy(33 * 210_000, MAIN), 0)  # 5e9 >> 33 == 0
        self.assertEqual(block_subsidy(32 * 210_000, MAIN), 1)

    def test_zero_after_64_halvings(self):
        self.assertEqual(block_subsidy(64 * 150, REGTEST), 0)
        self.assertEqual(block_subsidy(10 ** 9, REGTEST), 0)


class CheckTransactionTests(ReasonMixin, SynchronousTestCase):
    def test_valid(self):
        check_transaction(spend(outpoint(1), outpoint(2), values=(1, 2)))
        check_transaction(coinbase())
        check_transaction(spend(outpoint(1), version=3))

    def test_vin_empty(self):
        err = self.assertRejected("bad-txns-vin-empty", check_transaction, spend())
        self.assertEqual((err.dos, err.code, err.corruption_possible), (10, REJECT_INVALID, False))

    def test_vout_empty(self):
        err = self.assertRejected("bad-txns-vout-empty", check_transaction,
                                  spend(outpoint(1), values=()))
        self.assertEqual(err.dos, 10)

    def test_oversize(self):
        fits = Transaction([TxIn(outpoint(1))], [TxOut(0, b"\x6a" * (MAX_BLOCK_SIZE - 64))])
        self.assertEqual(fits.size, MAX_BLOCK_SIZE)
        check_transaction(fits)
        tx = Transaction([TxIn(outpoint(1))], [TxOut(0, b"\x6a" * (MAX_BLOCK_SIZE - 63))])
        self.assertEqual(self.assertRejected("bad-txns-oversize", check_transaction, tx).dos, 100)

    def test_output_values(self):
        self.assertRejected("bad-txns-vout-negative", check_transaction,
                            spend(outpoint(1), values=(-1,)))
        self.assertRejected("bad-txns-vout-toolarge", check_transaction,
                            spend(outpoint(1), values=(MAX_MONEY + 1,)))
        check_transaction(spend(outpoint(1), values=(MAX_MONEY, 0)))
        self.assertRejected("bad-txns-txouttotal-toolarge", check_transaction,
                            spend(outpoint(1), values=(MAX_MONEY, 1)))
        # Outputs are checked in order: a negative output after an overflow is not reached.
        self.assertRejected("bad-txns-txouttotal-toolarge", check_transaction,
                            spend(outpoint(1), values=(MAX_MONEY, MAX_MONEY, -1)))

    def test_inputs_duplicate(self):
        self.assertRejected("bad-txns-inputs-duplicate", check_transaction,
                            spend(outpoint(1), outpoint(2), outpoint(1)))
        check_transaction(spend(outpoint(1, 0), outpoint(1, 1)))

    def test_coinbase_script_length(self):
        for size in (2, 100):
            check_transaction(coinbase(b"\x00" * size))
        for size in (0, 1, 101):
            err = self.assertRejected("bad-cb-length", check_transaction, coinbase(b"\x00" * size))
            self.assertEqual(err.dos, 100)

    def test_prevout_null_outside_coinbase(self):
        err = self.assertRejected("bad-txns-prevout-null", check_transaction,
                                  spend(outpoint(1), OutPoint()))
        self.assertEqual(err.dos, 10)

    def test_special_transaction_types(self):
        tx = Transaction([TxIn(outpoint(1))], [TxOut(1, P2PKH)], version=3, tx_type=1,
                         extra_payload=b"\x00")
        self.assertEqual(self.assertRejected("bad-txns-type", check_transaction, tx).dos, 100)
        # A non-zero type on an older version is no normal transaction either (Dash, DIP3).
        self.assertRejected("bad-txns-type", check_transaction, spend(outpoint(1), tx_type=2))
        self.assertRejected("bad-txns-type", check_transaction,
                            Transaction.deserialize(spend(outpoint(1), version=-1, tx_type=0xFFFF)
                                                    .serialize()))
        check_transaction(spend(outpoint(1), version=-1))

    def test_str(self):
        err = ValidationError("bad-txns-in-belowout", "value in (1.00) < value out (2.00)", dos=100)
        self.assertEqual(str(err), "bad-txns-in-belowout, value in (1.00) < value out (2.00)")
        plain = ValidationError("high-hash")
        self.assertEqual(str(plain), "high-hash")
        self.assertEqual((plain.debug, plain.dos, plain.code, plain.corruption_possible),
                         ("", 0, REJECT_INVALID, False))


class FinalityTests(SynchronousTestCase):
    def test_zero_locktime_is_final(self):
        self.assertTrue(is_final_tx(spend(outpoint(1), sequence=0), 0, 0))

    def test_height_locktime(self):
        tx = spend(outpoint(1), locktime=100, sequence=0)
        self.assertFalse(is_final_tx(tx, 100, T0))
        self.assertTrue(is_final_tx(tx, 101, T0))

    def test_time_locktime(self):
        tx = spend(outpoint(1), locktime=T0, sequence=0)
        self.assertFalse(is_final_tx(tx, 10 ** 6, T0))
        self.assertTrue(is_final_tx(tx, 1, T0 + 1))
        threshold = spend(outpoint(1), locktime=500_000_000, sequence=0)
        self.assertFalse(is_final_tx(threshold, 500_000_001, 500_000_000))

    def test_final_sequences_override(self):
        tx = spend(outpoint(1), outpoint(2), locktime=100)
        self.assertTrue(is_final_tx(tx, 50, T0))
        mixed = Transaction([TxIn(outpoint(1)), TxIn(outpoint(2), b"", 0xFFFFFFFE)],
                            [TxOut(1, P2PKH)], 100)
        self.assertFalse(is_final_tx(mixed, 50, T0))


class CheckTxInputsTests(ReasonMixin, SynchronousTestCase):
    def coin(self, value=COIN, height=10, is_coinbase=False, script=P2PKH):
        return Coin(value, script, height, is_coinbase)

    def test_returns_fee(self):
        tx = spend(outpoint(1), outpoint(2), values=(COIN, COIN // 2))
        self.assertEqual(check_tx_inputs(tx, [self.coin(COIN), self.coin(COIN)], 20), COIN // 2)

    def test_missing_input_reported_before_others(self):
        tx = spend(outpoint(1), outpoint(2))
        err = self.assertRejected("bad-txns-inputs-missingorspent", check_tx_inputs, tx,
                                  [self.coin(height=19, is_coinbase=True), None], 20)
        self.assertEqual(err.dos, 100)

    def test_coinbase_maturity(self):
        tx = spend(outpoint(1))
        immature = [self.coin(height=100, is_coinbase=True)]
        err = self.assertRejected("bad-txns-premature-spend-of-coinbase",
                                  check_tx_inputs, tx, immature, 199)
        self.assertEqual((err.dos, err.debug), (0, "tried to spend coinbase at depth 99"))
        self.assertEqual(check_tx_inputs(tx, immature, 200), 0)
        self.assertEqual(check_tx_inputs(tx, [self.coin(height=199)], 199), 0)
        self.assertRejected("bad-txns-premature-spend-of-coinbase", check_tx_inputs, tx,
                            immature, 200, coinbase_maturity=101)

    def test_input_values_out_of_range(self):
        tx = spend(outpoint(1), outpoint(2))
        for coins in ([self.coin(MAX_MONEY + 1), self.coin()],
                      [self.coin(-1), self.coin()],
                      [self.coin(MAX_MONEY), self.coin(1)]):
            err = self.assertRejected("bad-txns-inputvalues-outofrange",
                                      check_tx_inputs, tx, coins, 20)
            self.assertEqual(err.dos, 100)

    def test_in_below_out(self):
        tx = spend(outpoint(1), values=(2 * COIN,))
        err = self.assertRejected("bad-txns-in-belowout", check_tx_inputs, tx,
                                  [self.coin(150_000_000)], 20)
        self.assertEqual((err.dos, err.debug), (100, "value in (1.50) < value out (2.00)"))
        tx = spend(outpoint(1), values=(12_345_678,))
        err = self.assertRejected("bad-txns-in-belowout", check_tx_inputs, tx,
                                  [self.coin(0)], 20)
        self.assertEqual(err.debug, "value in (0.00) < value out (0.12345678)")

    def test_fee_out_of_range_without_check_transaction(self):
        tx = spend(outpoint(1), values=(-1,))
        self.assertRejected("bad-txns-fee-outofrange", check_tx_inputs, tx,
                            [self.coin(MAX_MONEY)], 20)


class SigopTests(SynchronousTestCase):
    def test_legacy_counts_inputs_and_outputs(self):
        tx = Transaction([TxIn(outpoint(1), b"\xac\xad")],
                         [TxOut(0, P2PKH), TxOut(0, b"\x52\xae")], 0)
        self.assertEqual(legacy_sigops(tx), 2 + 1 + 20)

    def test_p2sh_counts_redeem_scripts_accurately(self):
        redeem = b"\x52" + (b"\x21" + b"\x02" * 33) * 3 + b"\x53\xae"
        p2sh = b"\xa9\x14" + hash160(redeem) + b"\x87"
        tx = Transaction([TxIn(outpoint(1), b"\x00" + push_data(redeem)), TxIn(outpoint(2))],
                         [TxOut(0, P2PKH)])
        coins = [Coin(1, p2sh, 1, False), Coin(1, P2PKH, 1, False)]
        self.assertEqual(legacy_sigops(tx), 1)
        self.assertEqual(p2sh_sigops(tx, coins), 3)
        self.assertEqual(p2sh_sigops(coinbase(), [None]), 0)


class CheckBlockTests(ReasonMixin, SynchronousTestCase):
    def setUp(self):
        self.txs = [coinbase(), spend(outpoint(1)), spend(outpoint(2))]

    def check(self, block, **kwargs):
        kwargs.setdefault("check_pow", False)
        check_block(block, REGTEST, **kwargs)

    def test_valid(self):
        self.check(make_block(self.txs))
        check_block(REGTEST.genesis, REGTEST)
        check_block(MAIN.genesis, MAIN)

    def test_high_hash(self):
        block = make_block(self.txs, bits=0x03000001)
        err = self.assertRejected("high-hash", check_block, block, REGTEST)
        self.assertEqual((err.dos, err.corruption_possible), (50, False))
        self.assertRejected("high-hash", check_block_header, block.header, REGTEST)
        check_block_header(block.header, REGTEST, check_pow=False)
        self.check(block)

    def test_bad_merkle_root(self):
        block = make_block(self.txs, root=b"\x01" * 32)
        err = self.assertRejected("bad-txnmrklroot", self.check, block)
        self.assertEqual((err.dos, err.corruption_possible), (100, True))
        self.check(block, check_merkle=False)

    def test_duplicated_last_transaction(self):
        root = merkle_root([tx.txid for tx in self.txs])[0]
        mutated = make_block(self.txs + self.txs[-1:], root=root)
        err = self.assertRejected("bad-txns-duplicate", self.check, mutated)
        self.assertEqual((err.dos, err.corruption_possible), (100, True))

    def test_length(self):
        self.assertRejected("bad-blk-length", self.check, make_block([]))
        half = MAX_BLOCK_SIZE // 2
        big = [coinbase(outputs=[TxOut(0, b"\x6a" * half)]),
               Transaction([TxIn(outpoint(1))], [TxOut(0, b"\x6a" * half)])]
        err = self.assertRejected("bad-blk-length", self.check, make_block(big))
        self.assertEqual((err.dos, err.corruption_possible), (100, False))

    def test_coinbase_position(self):
        self.assertRejected("bad-cb-missing", self.check, make_block(self.txs[1:]))
        txs = self.txs + [coinbase(b"\x01\x02")]
        self.assertRejected("bad-cb-multiple", self.check, make_block(txs))

    def test_transaction_reason_kept(self):
        bad = spend(outpoint(3), values=(-5,))
        err = self.assertRejected("bad-txns-vout-negative", self.check,
                                  make_block(self.txs + [bad]))
        self.assertEqual(err.dos, 100)
        self.assertIn(hash_to_hex(bad.txid), err.debug)
        err = self.assertRejected("bad-txns-prevout-null", self.check,
                                  make_block(self.txs + [spend(outpoint(3), OutPoint())]))
        self.assertEqual(err.dos, 10)

    def test_sigops(self):
        at_limit = [coinbase(outputs=[TxOut(0, b"\xac" * MAX_BLOCK_SIGOPS)])]
        self.check(make_block(at_limit))
        over = [coinbase(outputs=[TxOut(0, b"\xac" * (MAX_BLOCK_SIGOPS - 19))]),
                Transaction([TxIn(outpoint(1))], [TxOut(0, b"\xae")])]
        err = self.assertRejected("bad-blk-sigops", self.check, make_block(over))
        self.assertEqual((err.dos, err.corruption_possible), (100, False))
