"""The mempool's own logic on a real chain state (no reactor): acceptance, family
totals, removal for blocks and reorgs, eviction, the rolling fee floor, block
selection by ancestor fee rate, and mempool.dat."""

from __future__ import annotations

import os
import shutil
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet import reactor
from twisted.logger import formatEvent, globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from coin.chain.service import ValidationService
from coin.chainparams import MAX_BLOCK_SIGOPS, MAX_BLOCK_SIZE
from coin.consensus.errors import ValidationError
from coin.mempool.accept import MissingInputs, PoolPolicy, accept_to_mempool
from coin.mempool.persist import (
    MempoolFileError, parse_pool, read_pool_file, serialize_pool,
)
from coin.mempool.policy import FeeRate
from coin.mempool.pool import AncestorLimits, Mempool, entry_usage
from coin.mempool.service import MempoolService
from coin.mining.selection import COINBASE_RESERVED_SIZE, select_transactions
from coin.primitives.transaction import Transaction
from coin.storage.atomicfile import write_file_atomic
from coin.testing.chainbuilder import ChainBuilder, Spendable, open_chain

from tests.rpcchain import TIP_HEIGHT, prepared_chain

NOW = 1_800_000_000


class PoolTestCase(SynchronousTestCase):
    """A copy of the prepared 110-block chain, a pool and a builder; ``now`` is settable."""

    policy = PoolPolicy()

    def setUp(self) -> None:
        template, self.coinbases = prepared_chain()
        datadir = self.mktemp()
        shutil.copytree(template, datadir)
        self.chainstate = open_chain(datadir)
        self.addCleanup(self.chainstate.close)
        self.builder = ChainBuilder(self.chainstate)
        self.now = NOW
        self.pool = Mempool(max_usage=self.policy.max_usage, min_relay_fee=self.policy.min_relay_fee,
                            now=lambda: self.now)

    def accept(self, tx, **options):
        return accept_to_mempool(self.chainstate, self.pool, tx, self.policy, now=self.now,
                                 **options)

    def follow_chain(self) -> None:
        """Keep the pool in step with blocks, as the node's worker hook does."""
        MempoolService(ValidationService(self.chainstate, reactor), self.pool, self.policy,
                       now=lambda: self.now)

    def coinbase(self, height: int) -> Spendable:
        return self.coinbases[height - 1]

    def chain_of(self, spendable: Spendable, length: int, fee: int = 10_000):
        """``length`` transactions, each spending the previous one's only output."""
        txs = []
        for _ in range(length):
            tx = self.builder.spend(spendable, fee=fee)
            txs.append(tx)
            spendable = self.builder.outputs_of(tx)[0]
        return txs

    def fan_out(self, height: int, count: int, fee: int = 10_000):
        """One pooled tx splitting a coinbase into ``count`` outputs; returns them."""
        coin = self.coinbase(height)
        share = (coin.value - fee) // count
        tx = self.builder.spend(coin, [(self.builder.script_pubkey, share)] * count, fee=fee)
        self.accept(tx)
        return self.builder.outputs_of(tx)


class AcceptTests(PoolTestCase):
    def test_entry_fields(self):
        tx = self.builder.spend(self.coinbase(1), fee=12_345)
        result = self.accept(tx)
        entry = self.pool.get(tx.txid)
        self.assertIs(result.entry, entry)
        self.assertEqual((entry.fee, entry.size, entry.time, entry.height),
                         (12_345, tx.size, NOW, TIP_HEIGHT))
        # Core 0.12: value x age / (size - (41 + scriptSig length)) for one input.
        mod_size = tx.size - (41 + len(tx.vin[0].script_sig))
        coin = self.coinbase(1)
        self.assertEqual(entry.starting_priority, coin.value * (TIP_HEIGHT - 1) / mod_size)
        self.assertEqual(entry.current_priority(TIP_HEIGHT + 3),
                         entry.starting_priority + 3 * coin.value / mod_size)
        self.assertEqual((self.pool.total_size, len(self.pool)), (tx.size, 1))

    def test_rejections_leave_the_pool_unchanged(self):
        first = self.builder.spend(self.coinbase(1), fee=10_000)
        self.accept(first)
        before = (dict(self.pool.entries), dict(self.pool.spenders), self.pool.total_usage)
        conflict = self.builder.spend(self.coinbase(1), fee=20_000)
        for tx, reason in ((first, "txn-already-in-mempool"), (conflict, "txn-mempool-conflict"),
                           (self.builder.spend(self.coinbase(2), fee=100), "min relay fee not met"),
                           (self.builder.spend(self.coinbase(TIP_HEIGHT - 5)),
                            "bad-txns-premature-spend-of-coinbase")):
            with self.assertRaises(ValidationError) as caught:
                self.accept(tx)
            self.assertEqual(caught.exception.reason, reason)
        never_sent = self.builder.spend(self.coinbase(3))
        orphan = self.builder.spend(self.builder.outputs_of(never_sent)[0])
        self.assertRaises(MissingInputs, self.accept, orphan)
        self.assertEqual((dict(self.pool.entries), dict(self.pool.spenders),
                          self.pool.total_usage), before)

    def test_test_only_adds_nothing(self):
        tx = self.builder.spend(self.coinbase(1))
        result = self.accept(tx, test_only=True)
        self.assertEqual((result.fee, result.entry, len(self.pool)), (10_000, None, 0))

    def test_absurd_fee_guard(self):
        tx = self.builder.spend(self.coinbase(1), fee=20_000_000)
        with self.assertRaises(ValidationError) as caught:
            self.accept(tx, max_fee=10_000_000)
        self.assertEqual((caught.exception.reason, caught.exception.debug, caught.exception.code),
                         ("absurdly-high-fee", "20000000 > 10000000", 0x100))
        self.accept(tx)

    def test_ancestor_count_limit(self):
        txs = self.chain_of(self.coinbase(1), 26)
        for tx in txs[:25]:
            self.accept(tx)
        with self.assertRaises(ValidationError) as caught:
            self.accept(txs[25])
        self.assertEqual(str(caught.exception),
                         "too-long-mempool-chain, too many unconfirmed ancestors [limit: 25]")
        self.assertEqual(len(self.pool), 25)

    def test_descendant_size_limit(self):
        policy = PoolPolicy(limits=AncestorLimits(descendant_size=500))
        parent, child, grandchild = self.chain_of(self.coinbase(1), 3)
        for tx in (parent, child):
            accept_to_mempool(self.chainstate, self.pool, tx, policy, now=NOW)
        with self.assertRaises(ValidationError) as caught:
            accept_to_mempool(self.chainstate, self.pool, grandchild, policy, now=NOW)
        self.assertEqual(caught.exception.debug,
                         "exceeds descendant size limit for tx %s [limit: 500]"
                         % parent.txid_hex)


class FamilyTests(PoolTestCase):
    def test_totals_along_a_chain(self):
        txs = self.chain_of(self.coinbase(1), 4, fee=10_000)
        for tx in txs:
            self.accept(tx)
        sizes = [tx.size for tx in txs]
        entries = [self.pool.get(tx.txid) for tx in txs]
        for i, entry in enumerate(entries):
            self.assertEqual((entry.count_with_ancestors, entry.size_with_ancestors,
                              entry.fees_with_ancestors), (i + 1, sum(sizes[:i + 1]), 10_000 * (i + 1)))
            self.assertEqual((entry.count_with_descendants, entry.size_with_descendants,
                              entry.fees_with_descendants),
                             (4 - i, sum(sizes[i:]), 10_000 * (4 - i)))
        self.assertEqual(entries[1].parents, {entries[0]})
        self.assertEqual(entries[1].children, {entries[2]})

    def test_prioritise_moves_every_total(self):
        txs = self.chain_of(self.coinbase(1), 3)
        for tx in txs:
            self.accept(tx)
        self.pool.prioritise(txs[1].txid, 5_000)
        first, middle, last = (self.pool.get(tx.txid) for tx in txs)
        self.assertEqual((middle.modified_fee, middle.fee), (15_000, 10_000))
        self.assertEqual(first.fees_with_descendants, 35_000)
        self.assertEqual(last.fees_with_ancestors, 35_000)
        self.assertEqual(middle.fees_with_ancestors, 25_000)
        # A delta for a transaction not yet pooled applies when it arrives.
        later = self.builder.spend(self.coinbase(2))
        self.pool.prioritise(later.txid, -3_000)
        self.accept(later)
        self.assertEqual(self.pool.get(later.txid).modified_fee, 7_000)

    def test_prioritise_saturates_at_64_bits(self):
        # prioritisetransaction twice with the largest int64 used to make every later
        # savemempool (and the save at shutdown) fail on the int64 field of mempool.dat.
        tx = self.chain_of(self.coinbase(1), 1)[0]
        self.accept(tx)
        for delta in ((1 << 63) - 1, (1 << 63) - 1):
            self.pool.prioritise(tx.txid, delta)
        self.assertEqual(self.pool.get(tx.txid).fee_delta, (1 << 63) - 1)
        self.pool.prioritise(b"\x01" * 32, -(1 << 63))
        self.pool.prioritise(b"\x01" * 32, -(1 << 63))
        self.assertEqual(self.pool.deltas[b"\x01" * 32], -(1 << 63))
        saved = parse_pool(serialize_pool(self.pool))
        self.assertEqual(saved.deltas, {b"\x01" * 32: -(1 << 63)})
        self.assertEqual(saved.entries[0].fee_delta, (1 << 63) - 1)

    def test_block_removes_confirmed_and_conflicts_keeps_descendants(self):
        parent, child = self.chain_of(self.coinbase(1), 2)
        self.accept(parent)
        self.accept(child)
        rival = self.builder.spend(self.coinbase(2), fee=11_000)
        self.accept(rival)
        double = self.builder.spend(self.coinbase(2), fee=50_000)  # mined instead of rival
        self.follow_chain()
        self.builder.mine(1, txs=[parent, double])
        self.assertEqual(list(self.pool.entries), [child.txid])
        entry = self.pool.get(child.txid)
        self.assertEqual((entry.parents, entry.count_with_ancestors, entry.size_with_ancestors),
                         (set(), 1, child.size))

    def test_remove_recursive_takes_descendants(self):
        txs = self.chain_of(self.coinbase(1), 3)
        for tx in txs:
            self.accept(tx)
        removed = self.pool.remove_recursive(txs[1], "conflict")
        self.assertEqual({e.txid for e in removed}, {txs[1].txid, txs[2].txid})
        first = self.pool.get(txs[0].txid)
        self.assertEqual((first.count_with_descendants, first.children), (1, set()))
        self.assertEqual(self.pool.spenders.keys(), {txs[0].vin[0].prevout.key()})


class ReorgTests(PoolTestCase):
    def test_disconnected_transactions_return_and_reconnect_removes_them(self):
        self.follow_chain()
        parent, child = self.chain_of(self.coinbase(1), 2)
        block = self.builder.mine(1, txs=[parent])[0]
        self.accept(child)
        self.assertEqual(self.pool.get(child.txid).count_with_ancestors, 1)
        self.chainstate.invalidate_block(block.hash)
        self.assertEqual(set(self.pool.entries), {parent.txid, child.txid})
        entry = self.pool.get(child.txid)
        self.assertEqual((entry.count_with_ancestors, entry.size_with_ancestors),
                         (2, parent.size + child.size))
        self.assertEqual(self.pool.get(parent.txid).count_with_descendants, 2)
        self.chainstate.reconsider_block(block.hash)
        self.assertEqual(list(self.pool.entries), [child.txid])

    def test_spends_of_immature_coinbase_leave_after_a_reorg(self):
        self.follow_chain()
        # Block 10's coinbase is mature at height 110 + 1; after one block less it is not.
        tx = self.builder.spend(self.coinbase(TIP_HEIGHT - 99))
        self.accept(tx)
        self.chainstate.invalidate_block(self.chainstate.tip.hash)
        self.assertEqual(len(self.pool), 0)


class LimitTests(PoolTestCase):
    def test_trim_evicts_the_lowest_package_and_raises_the_floor(self):
        outputs = self.fan_out(1, 6, fee=100_000)
        txs = [self.builder.spend(out, fee=(i + 1) * 2_000) for i, out in enumerate(outputs)]
        for tx in txs:
            self.accept(tx)
        usage = self.pool.total_usage
        removed = self.pool.trim_to_size(usage - 1)
        # The fan-out pays most per byte, but its package includes every child: the
        # cheapest child (2,000 sat, ~192 bytes) has the lowest descendant score.
        self.assertEqual([e.txid for e in removed], [txs[0].txid])
        floor = FeeRate.from_fee(2_000, txs[0].size).sat_per_kb + 1000
        self.assertEqual(self.pool.get_min_fee().sat_per_kb, floor)
        with self.assertRaises(ValidationError) as caught:
            self.accept(self.builder.spend(self.coinbase(2), fee=1_000))
        self.assertEqual(caught.exception.reason, "mempool min fee not met")

    def test_floor_decays_after_a_block(self):
        self.pool._track_package_removed(20_000)
        self.assertEqual(self.pool.get_min_fee().sat_per_kb, 20_000)
        self.pool.remove_for_block([])
        # An empty pool halves the floor every 3 hours (a quarter of the 12-hour half-life).
        self.now += 3 * 3600
        self.assertEqual(self.pool.get_min_fee().sat_per_kb, 10_000)
        self.now += 3 * 3600 * 5
        self.assertEqual(self.pool.get_min_fee().sat_per_kb, 0)

    def test_expiry(self):
        old, new = (self.builder.spend(self.coinbase(h)) for h in (1, 2))
        self.accept(old)
        child = self.builder.spend(self.builder.outputs_of(old)[0])
        self.now += 100
        self.accept(new)
        self.accept(child)
        self.assertEqual(self.pool.expire(NOW + 50), 2)
        self.assertEqual(list(self.pool.entries), [new.txid])

    def test_usage_estimate_tracks_real_memory(self):
        raw = [self.builder.spend(self.coinbase(h), fee=10_000).serialize() for h in range(1, 11)]
        self.accept(Transaction.deserialize(raw[0]))  # warm caches outside the measurement
        pool = Mempool()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for data in raw:
                accept_to_mempool(self.chainstate, pool, Transaction.deserialize(data),
                                  self.policy, now=NOW)
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        self.assertEqual(pool.total_usage,
                         sum(entry_usage(e.tx, e.size) for e in pool.entries.values()))
        # The estimate covers entries, indexes and the parsed transactions it holds.
        self.assertTrue(0.8 < pool.total_usage / grown < 1.25, (pool.total_usage, grown))


class SelectionTests(PoolTestCase):
    def test_child_pays_for_parent_and_parents_come_first(self):
        cheap_parent = self.builder.spend(self.coinbase(1), fee=1_000)
        rich_child = self.builder.spend(self.builder.outputs_of(cheap_parent)[0], fee=100_000)
        middle = self.builder.spend(self.coinbase(2), fee=20_000)
        for tx in (cheap_parent, rich_child, middle):
            self.accept(tx)
        chosen = select_transactions(self.pool, MAX_BLOCK_SIZE, MAX_BLOCK_SIGOPS)
        self.assertEqual([tx.txid for tx in chosen.txs],
                         [cheap_parent.txid, rich_child.txid, middle.txid])
        self.assertEqual(chosen.fees, [1_000, 100_000, 20_000])
        self.assertEqual(chosen.depends, [[], [1], []])

    def test_modified_fee_steers_selection_and_size_limit_holds(self):
        low = self.builder.spend(self.coinbase(1), fee=2_000)
        high = self.builder.spend(self.coinbase(2), fee=50_000)
        for tx in (low, high):
            self.accept(tx)
        self.pool.prioritise(low.txid, 100_000)
        chosen = select_transactions(self.pool, MAX_BLOCK_SIZE, MAX_BLOCK_SIGOPS)
        self.assertEqual([tx.txid for tx in chosen.txs], [low.txid, high.txid])
        self.assertEqual(chosen.fees, [2_000, 50_000])  # base fees: what the coinbase may take
        room = COINBASE_RESERVED_SIZE + low.size
        chosen = select_transactions(self.pool, room, MAX_BLOCK_SIGOPS)
        self.assertEqual([tx.txid for tx in chosen.txs], [low.txid])
        self.pool.prioritise(low.txid, -200_000)
        chosen = select_transactions(self.pool, MAX_BLOCK_SIZE, MAX_BLOCK_SIGOPS)
        self.assertEqual([tx.txid for tx in chosen.txs], [high.txid])

    def test_printpriority_logs_modified_fee_rates_in_block_order(self):
        """-printpriority: Core's "fee <rate> txid <txid>" per chosen transaction, with the
        modified fee (prioritisetransaction counts), and nothing without it."""
        low = self.builder.spend(self.coinbase(1), fee=2_000)
        high = self.builder.spend(self.coinbase(2), fee=50_000)
        for tx in (low, high):
            self.accept(tx)
        self.pool.prioritise(low.txid, 100_000)
        events = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        select_transactions(self.pool, MAX_BLOCK_SIZE, MAX_BLOCK_SIGOPS)
        self.assertEqual([e for e in events if e.get("log_format", "").startswith("fee ")], [])
        select_transactions(self.pool, MAX_BLOCK_SIZE, MAX_BLOCK_SIGOPS, print_priority=True)
        self.assertEqual([formatEvent(e) for e in events
                          if e.get("log_format", "").startswith("fee ")],
                         ["fee %s txid %s" % (FeeRate.from_fee(fee, tx.size).to_string(),
                                              tx.txid[::-1].hex())
                          for tx, fee in ((low, 102_000), (high, 50_000))])

    def test_selected_block_connects(self):
        outputs = self.fan_out(1, 20)
        for out in outputs:
            self.accept(self.chain_of(out, 1)[0])
        chosen = select_transactions(self.pool, MAX_BLOCK_SIZE, MAX_BLOCK_SIGOPS)
        self.assertEqual(len(chosen.txs), 21)
        self.builder.mine(1, txs=chosen.txs)
        self.assertEqual(self.chainstate.height, TIP_HEIGHT + 1)


class PersistTests(PoolTestCase):
    def test_saved_parents_first_after_a_reorg(self):
        # The parent returns from a disconnected block after its child entered the pool.
        self.follow_chain()
        parent, child = self.chain_of(self.coinbase(1), 2)
        block = self.builder.mine(1, txs=[parent])[0]
        self.accept(child)
        self.chainstate.invalidate_block(block.hash)
        self.assertLess(self.pool.get(child.txid).sequence, self.pool.get(parent.txid).sequence)
        saved = parse_pool(serialize_pool(self.pool))
        self.assertEqual([e.tx.txid for e in saved.entries], [parent.txid, child.txid])
        fresh = Mempool(now=lambda: self.now)
        for item in saved.entries:  # what loading does: each accepted in file order
            accept_to_mempool(self.chainstate, fresh, item.tx, self.policy, now=self.now)
        self.assertEqual(set(fresh.entries), {parent.txid, child.txid})

    def test_round_trip(self):
        txs = self.chain_of(self.coinbase(1), 3)
        for tx in txs:
            self.accept(tx)
        self.pool.prioritise(txs[1].txid, 777)
        self.pool.prioritise(b"\x42" * 32, -5)  # a delta for a transaction not in the pool
        path = os.path.join(self.mktemp() + "-mempool.dat")
        write_file_atomic(path, serialize_pool(self.pool))
        saved = read_pool_file(path)
        self.assertEqual([(e.tx, e.time, e.fee_delta) for e in saved.entries],
                         [(txs[0], NOW, 0), (txs[1], NOW, 777), (txs[2], NOW, 0)])
        self.assertEqual(saved.deltas, {b"\x42" * 32: -5})

    def test_damaged_files_are_refused(self):
        self.accept(self.builder.spend(self.coinbase(1)))
        data = serialize_pool(self.pool)
        for bad in (b"", data[:-1], data + b"\x00", b"\x02" + data[1:], b"garbage" * 10):
            self.assertRaises(MempoolFileError, parse_pool, bad)

    @settings(max_examples=300, deadline=None)
    @given(st.binary(max_size=400))
    def test_random_bytes_never_raise_anything_else(self, data):
        try:
            parse_pool(data)
        except MempoolFileError:
            pass

