"""The validation pipeline on a real store: connect, reject, reorganise, recover."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from coin.chain.index import BLOCK_FAILED_CHILD, BLOCK_FAILED_VALID
from coin.chainparams import COIN, REGTEST
from coin.consensus.errors import ValidationError
from coin.mining.assembler import solve
from coin.primitives.block import Block, BlockHeader
from coin.primitives.merkle import merkle_root
from coin.primitives.transaction import Transaction, TxIn
from coin.testing.chainbuilder import ChainBuilder, open_chain


class Recorder:
    """A chain subscriber that records what it is told."""

    def __init__(self) -> None:
        self.events = []

    def block_connected(self, entry, block):
        self.events.append(("connected", entry.height, block.hash))

    def block_disconnected(self, entry, block):
        self.events.append(("disconnected", entry.height, block.hash))

    def tip_changed(self, entry):
        self.events.append(("tip", entry.height, entry.hash))


def utxo_key(spendable):
    return (spendable.outpoint.txid, spendable.outpoint.n)


class ChainTestCase(SynchronousTestCase):
    """A fresh regtest chain with 101 blocks (one mature coinbase)."""

    mature_blocks = 101

    def setUp(self) -> None:
        self.datadir = self.mktemp()
        self.chain = open_chain(self.datadir)
        self.addCleanup(self._close)
        self.builder = ChainBuilder(self.chain)
        if self.mature_blocks:
            self.builder.mine(self.mature_blocks)
        self.recorder = Recorder()
        self.chain.subscribe(self.recorder)

    def _close(self) -> None:
        if self.chain is not None:
            self.chain.close()

    def reopen(self, **options) -> None:
        self.chain.close()
        self.chain = open_chain(self.datadir, **options)
        self.builder.chainstate = self.chain

    def assertRejected(self, reason: str, block: Block) -> ValidationError:
        tip = self.chain.tip
        err = self.assertRaises(ValidationError, self.chain.process_block, block)
        self.assertEqual(err.reason, reason)
        self.assertIs(self.chain.tip, tip)
        return err


class GenesisTests(SynchronousTestCase):
    def test_new_datadir_holds_genesis_only(self) -> None:
        chain = open_chain(self.mktemp())
        self.addCleanup(chain.close)
        self.assertEqual(chain.height, 0)
        self.assertEqual(chain.tip.hash, REGTEST.genesis.hash)
        self.assertEqual(chain.tip.hash[::-1].hex(),
                         "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206")

    def test_genesis_coinbase_is_not_spendable(self) -> None:
        chain = open_chain(self.mktemp())
        self.addCleanup(chain.close)
        cb = REGTEST.genesis.txs[0]
        self.assertIsNone(chain.store.coins.get((cb.txid, 0)))


class ConnectTests(ChainTestCase):
    def test_mined_chain_height_and_subsidy(self) -> None:
        self.assertEqual(self.chain.height, 101)
        first = self.builder.coinbase_outputs[0]
        self.assertEqual(first.value, 50 * COIN)
        coin = self.chain.store.coins.get(utxo_key(first))
        self.assertEqual(coin.height, 1)
        self.assertTrue(coin.coinbase)

    def test_spend_moves_the_utxo(self) -> None:
        source = self.builder.coinbase_outputs[0]
        tx = self.builder.spend(source, fee=1000)
        [block] = self.builder.mine(1, txs=[tx])
        coins = self.chain.store.coins
        self.assertIsNone(coins.get(utxo_key(source)))
        created = coins.get((tx.txid, 0))
        self.assertEqual(created.value, 50 * COIN - 1000)
        self.assertFalse(created.coinbase)
        # The miner collected the fee.
        self.assertEqual(block.txs[0].vout[0].value, 50 * COIN + 1000)

    def test_chained_spends_in_one_block(self) -> None:
        tx1 = self.builder.spend(self.builder.coinbase_outputs[0])
        tx2 = self.builder.spend(ChainBuilder.outputs_of(tx1))
        self.builder.mine(1, txs=[tx1, tx2])
        coins = self.chain.store.coins
        self.assertIsNone(coins.get((tx1.txid, 0)))
        self.assertIsNotNone(coins.get((tx2.txid, 0)))

    def test_events_follow_connection(self) -> None:
        [block] = self.builder.mine(1)
        self.assertEqual(self.recorder.events, [
            ("connected", 102, block.hash), ("tip", 102, block.hash)])

    def test_duplicate_submission_is_harmless(self) -> None:
        [block] = self.builder.mine(1)
        self.recorder.events.clear()
        entry = self.chain.process_block(block)
        self.assertIs(entry, self.chain.tip)
        self.assertEqual(self.recorder.events, [])

    def test_op_return_outputs_are_not_kept(self) -> None:
        source = self.builder.coinbase_outputs[0]
        tx = self.builder.spend(source, outputs=[(b"\x6a\x04test", 0),
                                                 (self.builder.script_pubkey, 49 * COIN)])
        self.builder.mine(1, txs=[tx])
        self.assertIsNone(self.chain.store.coins.get((tx.txid, 0)))
        self.assertIsNotNone(self.chain.store.coins.get((tx.txid, 1)))


class RejectionTests(ChainTestCase):
    def test_immature_coinbase_spend(self) -> None:
        young = self.builder.coinbase_outputs[-1]
        tx = self.builder.spend(young)
        block = self.builder.build(txs=[tx])
        self.assertRejected("bad-txns-premature-spend-of-coinbase", block)
        self.assertTrue(self.chain.lookup(block.hash).status & BLOCK_FAILED_VALID)
        self.assertIsNotNone(self.chain.store.coins.get(utxo_key(young)))

    def test_double_spend_in_one_block(self) -> None:
        source = self.builder.coinbase_outputs[0]
        a = self.builder.spend(source, fee=1000)
        b = self.builder.spend(source, fee=2000)
        block = self.builder.build(txs=[a, b], fees=1000)
        self.assertRejected("bad-txns-inputs-missingorspent", block)
        self.assertIsNotNone(self.chain.store.coins.get(utxo_key(source)))

    def test_spend_of_spent_output(self) -> None:
        source = self.builder.coinbase_outputs[0]
        self.builder.mine(1, txs=[self.builder.spend(source, fee=1000)])
        again = self.builder.spend(source, fee=2000)
        self.assertRejected("bad-txns-inputs-missingorspent",
                            self.builder.build(txs=[again], fees=2000))

    def test_overspend(self) -> None:
        source = self.builder.coinbase_outputs[0]
        tx = self.builder.spend(source, outputs=[(self.builder.script_pubkey, 51 * COIN)])
        self.assertRejected("bad-txns-in-belowout", self.builder.build(txs=[tx], fees=0))

    def test_bad_signature(self) -> None:
        source = self.builder.coinbase_outputs[0]
        tx = self.builder.spend(source)
        sig = bytearray(tx.vin[0].script_sig)
        sig[10] ^= 1
        forged = Transaction([TxIn(tx.vin[0].prevout, bytes(sig))], tx.vout)
        block = self.builder.build(txs=[forged])
        err = self.assertRaises(ValidationError, self.chain.process_block, block)
        self.assertTrue(err.reason.startswith("mandatory-script-verify-flag-failed ("), err.reason)
        self.assertEqual(self.chain.height, 101)

    def test_coinbase_pays_too_much(self) -> None:
        block = self.builder.build(fees=1)
        self.assertRejected("bad-cb-amount", block)

    def test_bad_merkle_root_is_not_marked_invalid(self) -> None:
        good = self.builder.build()
        h = good.header
        header = BlockHeader(h.version, h.prev_hash, b"\x11" * 32, h.time, h.bits, h.nonce)
        bad = solve(Block(header, good.txs), REGTEST)
        self.assertRejected("bad-txnmrklroot", bad)
        # Corruption in transit: the same header with the right transactions is still welcome.
        self.assertFalse(self.chain.lookup(bad.hash).failed())

    def test_duplicated_transaction_mutation(self) -> None:
        # CVE-2012-2459: [cb, t1, t2, t2] has the root of [cb, t1, t2], so the header
        # (and block hash) is that of the valid block.
        t1 = self.builder.spend(self.builder.coinbase_outputs[0])
        t2 = self.builder.spend(self.builder.coinbase_outputs[1])
        good = self.builder.build(txs=[t1, t2])
        mutated = Block(good.header, list(good.txs) + [t2])
        self.assertEqual(mutated.hash, good.hash)
        err = self.assertRejected("bad-txns-duplicate", mutated)
        self.assertTrue(err.corruption_possible)
        self.chain.process_block(good)
        self.assertEqual(self.chain.tip.hash, good.hash)

    def test_high_hash(self) -> None:
        good = self.builder.build()
        nonce = 0
        while True:
            header = good.header.with_nonce(nonce)
            if int.from_bytes(header.hash, "little") > (0x7FFFFF << 232):
                break
            nonce += 1
        self.assertRejected("high-hash", Block(header, good.txs))
        self.assertIsNone(self.chain.lookup(header.hash))

    def test_missing_bip34_height_is_valid_on_regtest(self) -> None:
        def strip_height(block: Block) -> Block:
            cb = block.txs[0]
            script = b"\x02\xff\xff"
            coinbase = Transaction([TxIn(cb.vin[0].prevout, script)], cb.vout)
            txs = [coinbase] + list(block.txs[1:])
            root, _ = merkle_root([t.txid for t in txs])
            h = block.header
            return Block(BlockHeader(h.version, h.prev_hash, root, h.time, h.bits, h.nonce), txs)

        # Regtest never enforces BIP34 (Core 0.17's height 100,000,000; design.md §3), so a
        # coinbase without its height is valid; main and test: see test_consensus_chain.
        block = self.builder.build(mutate=strip_height)
        self.assertEqual(self.chain.process_block(block).hash, block.hash)
        self.assertEqual(self.chain.tip.hash, block.hash)

    def test_unknown_parent(self) -> None:
        block = self.builder.build()
        h = block.header
        orphan = solve(Block(BlockHeader(h.version, b"\x22" * 32, h.merkle_root, h.time, h.bits,
                                         h.nonce), block.txs), REGTEST)
        err = self.assertRaises(ValidationError, self.chain.process_block, orphan)
        self.assertEqual(err.reason, "prev-blk-not-found")

    def test_resubmitted_invalid_block_is_not_retried(self) -> None:
        block = self.builder.build(fees=1)
        self.assertRejected("bad-cb-amount", block)
        self.assertRejected("duplicate", block)

    def test_child_of_invalid_block_is_rejected(self) -> None:
        bad = self.builder.build(fees=1)
        self.assertRejected("bad-cb-amount", bad)
        child = self.builder.build(parent=self.chain.lookup(bad.hash))
        self.assertRejected("bad-prevblk", child)


class ReorgTests(ChainTestCase):
    def test_longer_fork_wins_and_utxos_follow(self) -> None:
        fork_point = self.chain.tip
        source = self.builder.coinbase_outputs[0]
        tx = self.builder.spend(source)
        a_blocks = self.builder.mine(2, txs=[tx])
        self.assertIsNotNone(self.chain.store.coins.get((tx.txid, 0)))
        self.recorder.events.clear()

        b_blocks = self.builder.mine(3, parent=fork_point)
        self.assertEqual(self.chain.tip.hash, b_blocks[-1].hash)
        self.assertEqual(self.chain.height, 104)
        kinds = [e[0] for e in self.recorder.events]
        self.assertEqual(kinds, ["disconnected", "disconnected",
                                 "connected", "connected", "connected", "tip"])
        self.assertEqual([e[2] for e in self.recorder.events[:2]],
                         [a_blocks[1].hash, a_blocks[0].hash])
        # The spend on the losing branch is undone; its source is unspent again.
        self.assertIsNone(self.chain.store.coins.get((tx.txid, 0)))
        self.assertIsNotNone(self.chain.store.coins.get(utxo_key(source)))

    def test_equal_work_fork_does_not_reorg(self) -> None:
        fork_point = self.chain.tip
        [a] = self.builder.mine(1)
        [b] = self.builder.mine(1, parent=fork_point)
        self.assertEqual(self.chain.tip.hash, a.hash)
        self.assertEqual(len(self.chain.chain_tips()), 2)
        self.chain.precious_block(b.hash)
        self.assertEqual(self.chain.tip.hash, b.hash)

    def test_deep_reorg(self) -> None:
        fork_point = self.chain.at_height(20)
        old_coinbases = self.builder.coinbase_outputs[20:]
        fork = self.builder.mine(30, parent=fork_point)
        self.assertEqual(self.chain.height, 101)
        fork += self.builder.mine(60, parent=self.chain.lookup(fork[-1].hash))
        self.assertEqual(self.chain.height, 110)
        self.assertEqual(self.chain.tip.hash, fork[-1].hash)
        disconnected = [e for e in self.recorder.events if e[0] == "disconnected"]
        self.assertEqual(len(disconnected), 81)
        coins = self.chain.store.coins
        self.assertTrue(all(coins.get(utxo_key(s)) is None for s in old_coinbases))
        self.assertIsNotNone(coins.get(utxo_key(self.builder.coinbase_outputs[-1])))

    def test_fork_with_invalid_block_falls_back(self) -> None:
        fork_point = self.chain.at_height(100)
        good_tip = self.chain.tip
        first = self.builder.build(parent=fork_point)
        first_entry = self.chain.accept_block(first)
        bad = self.builder.build(parent=first_entry, fees=1)
        bad_entry = self.chain.accept_header(bad.header)
        third = self.builder.build(parent=bad_entry)
        self.chain.accept_block(third)
        # The fork's data for `bad` is stored raw so the failure shows at connect time.
        self.assertRaises(ValidationError, self.chain.process_block, bad)
        self.assertIs(self.chain.tip, good_tip)
        self.assertTrue(bad_entry.status & BLOCK_FAILED_VALID)
        self.assertTrue(self.chain.lookup(third.hash).status & BLOCK_FAILED_CHILD)

    def test_out_of_order_blocks(self) -> None:
        tip = self.chain.tip
        b1 = self.builder.build(parent=tip)
        e1 = self.chain.accept_header(b1.header)
        b2 = self.builder.build(parent=e1)
        e2 = self.chain.accept_header(b2.header)
        b3 = self.builder.build(parent=e2)
        self.chain.process_block(b3)
        self.chain.process_block(b2)
        self.assertIs(self.chain.tip, tip)
        self.assertEqual(self.chain.best_header.hash, b3.hash)
        self.chain.process_block(b1)
        self.assertEqual(self.chain.tip.hash, b3.hash)
        self.assertEqual(self.chain.height, 104)

    def test_invalidate_and_reconsider(self) -> None:
        self.builder.mine(2)
        target = self.chain.at_height(102)
        old_tip = self.chain.tip
        self.chain.invalidate_block(target.hash)
        self.assertEqual(self.chain.height, 101)
        self.assertTrue(target.status & BLOCK_FAILED_VALID)
        self.assertTrue(old_tip.status & BLOCK_FAILED_CHILD)
        self.chain.reconsider_block(target.hash)
        self.assertIs(self.chain.tip, old_tip)

    def test_invalidate_switches_to_other_fork(self) -> None:
        fork_point = self.chain.tip
        [a] = self.builder.mine(1)
        [b] = self.builder.mine(1, parent=fork_point)
        self.chain.invalidate_block(a.hash)
        self.assertEqual(self.chain.tip.hash, b.hash)


class RestartTests(ChainTestCase):
    def test_clean_restart_keeps_tip_and_coins(self) -> None:
        tx = self.builder.spend(self.builder.coinbase_outputs[0])
        self.builder.mine(1, txs=[tx])
        tip = self.chain.tip.hash
        self.reopen()
        self.assertEqual(self.chain.tip.hash, tip)
        self.assertIsNotNone(self.chain.store.coins.get((tx.txid, 0)))
        self.assertIsNone(self.chain.store.coins.get(utxo_key(self.builder.coinbase_outputs[0])))

    def test_blocks_beyond_last_flush_are_replayed(self) -> None:
        self.chain.flush()
        flushed_height = self.chain.height
        tx = self.builder.spend(self.builder.coinbase_outputs[0])
        self.builder.mine(5, txs=[tx])
        tip = self.chain.tip.hash
        # Abandon the state without flushing, as a crash would.
        self.chain.store.abandon()
        self.chain = open_chain(self.datadir)
        self.builder.chainstate = self.chain
        self.assertEqual(self.chain.height, flushed_height + 5)
        self.assertEqual(self.chain.tip.hash, tip)
        self.assertIsNotNone(self.chain.store.coins.get((tx.txid, 0)))

    def test_reindex_rebuilds_the_same_state(self) -> None:
        fork_point = self.chain.at_height(99)
        self.builder.mine(1, parent=fork_point)
        tx = self.builder.spend(self.builder.coinbase_outputs[0])
        self.builder.mine(2, txs=[tx])
        tip = self.chain.tip.hash
        before = sorted(self.chain.store.utxo_snapshot())
        self.reopen(reindex=True)
        self.assertEqual(self.chain.tip.hash, tip)
        self.assertEqual(sorted(self.chain.store.utxo_snapshot()), before)
        self.assertEqual(len(self.chain.chain_tips()), 2)

    def test_reindex_chainstate_rebuilds_the_same_state(self) -> None:
        tx = self.builder.spend(self.builder.coinbase_outputs[0])
        self.builder.mine(2, txs=[tx])
        tip = self.chain.tip.hash
        before = sorted(self.chain.store.utxo_snapshot())
        self.reopen(reindex_chainstate=True)
        self.assertEqual(self.chain.tip.hash, tip)
        self.assertEqual(sorted(self.chain.store.utxo_snapshot()), before)
