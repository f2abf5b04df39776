"""The connect path's data handling: undo records, batched UTXO lookups, -reindex from memory."""

from __future__ import annotations

import hashlib
import threading
from typing import List, Tuple

from twisted.trial.unittest import SynchronousTestCase

from coin.chain import chainstate, workers
from coin.chain.chainstate import ChainState
from coin.chainparams import REGTEST
from coin.primitives.block import Block
from coin.primitives.coin import Coin, deserialize_block_undo
from coin.primitives.serialize import compact_size
from coin.primitives.transaction import Transaction
from coin.storage.chainstore import ChainStore
from coin.storage.errors import StorageError
from coin.storage.utxodb import MAX_FETCH_BATCH
from coin.testing.chainbuilder import ChainBuilder, open_chain

#: sha256 of the undo record of :func:`many_spends_chain`'s last block as the connect path
#: wrote it before it built undo records in one pass (commit 3c6b58d).
UNDO_DIGEST_BEFORE = "3caecbc8aeabfb68792fb21bcbe0c8823423f5ebfc5a46686d7e251179b685cf"
#: Outputs of the fan-out spent in the last block, one per transaction, and the coinbases
#: spent two at a time, version 2.
FANOUT = 1_200
COINBASE_PAIRS = 5


def many_spends_chain(datadir: str) -> Tuple[ChainState, Block, List[Tuple[bytes, int]]]:
    """A deterministic chain whose tip spends 1,200 fan-out outputs and 10 coinbases.

    Returns the chain, the tip block and the outpoints it spends, in block order.
    """
    chain = open_chain(datadir)
    builder = ChainBuilder(chain, start_time=1_700_000_000)
    builder.mine(101 + 2 * COINBASE_PAIRS)
    source = builder.coinbase_outputs[2 * COINBASE_PAIRS]
    each = (source.value - 100_000) // FANOUT
    fanout = builder.spend(source, outputs=[(builder.script_pubkey, each)] * FANOUT,
                           fee=source.value - each * FANOUT)
    builder.mine(1, txs=[fanout])
    txs: List[Transaction] = [builder.spend(s, fee=1_000)
                              for s in ChainBuilder.outputs_of(fanout)]
    coinbases = builder.coinbase_outputs[:2 * COINBASE_PAIRS]
    txs += [builder.spend(coinbases[i:i + 2], version=2)
            for i in range(0, len(coinbases), 2)]
    (block,) = builder.mine(1, txs=txs)
    spent = [(i.prevout.txid, i.prevout.n) for tx in block.txs[1:] for i in tx.vin]
    return chain, block, spent


def chunk_sizes(keys: int) -> List[int]:
    """The sizes of the queries that look ``keys`` keys up, MAX_FETCH_BATCH at most each."""
    return [min(MAX_FETCH_BATCH, keys - start) for start in range(0, keys, MAX_FETCH_BATCH)]


class UndoRecordTests(SynchronousTestCase):
    """Undo records are built in one pass and read as they always were."""

    def setUp(self) -> None:
        self.datadir = self.mktemp()
        self.chain, self.block, self.spent = many_spends_chain(self.datadir)
        self.addCleanup(lambda: self.chain.close())

    def _undo_bytes(self) -> bytes:
        entry = self.chain.tip
        return self.chain.store.read_undo(entry.undo_file, entry.undo_pos, entry.hash)

    def test_undo_bytes_identical_to_before(self) -> None:
        raw = self._undo_bytes()
        self.assertEqual(hashlib.sha256(raw).hexdigest(), UNDO_DIGEST_BEFORE)

    def test_undo_bytes_follow_the_format(self) -> None:
        """Per spending transaction, its input count and each spent coin (Core's CTxUndo)."""
        undo = deserialize_block_undo(self._undo_bytes())
        self.assertEqual([len(u) for u in undo], [len(tx.vin) for tx in self.block.txs[1:]])
        expected = [compact_size(len(self.block.txs) - 1)]
        for tx_undo in undo:
            expected.append(compact_size(len(tx_undo)))
            expected.extend(coin.serialize() for coin in tx_undo)
        self.assertEqual(b"".join(expected), self._undo_bytes())
        coinbase_heights = [c.height for u in undo[FANOUT:] for c in u]
        self.assertEqual(coinbase_heights, list(range(1, 2 * COINBASE_PAIRS + 1)))
        self.assertTrue(all(c.coinbase for u in undo[FANOUT:] for c in u))

    def test_disconnect_after_restart_restores_the_exact_coins(self) -> None:
        chain = self.chain
        tip = chain.tip
        chain.invalidate_block(tip.hash)
        chain.flush()
        before = chain.store.utxo_snapshot()
        chain.reconsider_block(tip.hash)
        self.assertIs(chain.tip, tip)
        chain.close()
        self.chain = chain = open_chain(self.datadir)
        self.assertEqual(chain.tip.hash, tip.hash)
        chain.invalidate_block(tip.hash)
        after = chain.store.utxo_snapshot()
        self.assertEqual(after, before)
        restored = dict(after)
        self.assertEqual(len([k for k in self.spent if k in restored]), len(self.spent))
        self.assertIsInstance(restored[self.spent[0]], Coin)


class CountingReads:
    """Wraps a store's ``read_block`` and counts the calls (the store still reads)."""

    def __init__(self, store) -> None:
        self.calls = 0
        self._read = store.read_block
        store.read_block = self

    def __call__(self, *args, **kwargs) -> bytes:
        self.calls += 1
        return self._read(*args, **kwargs)


class HeldBlocksTests(SynchronousTestCase):
    """Blocks accepted before one activation connect from memory, not from the block files."""

    def setUp(self) -> None:
        self.datadir = self.mktemp()
        chain, _, _ = many_spends_chain(self.datadir)
        self.blocks = [chain.read_block(chain.at_height(h)) for h in range(1, chain.height + 1)]
        self.tip = chain.tip.hash
        self.coins = chain.store.utxo_snapshot()
        chain.close()

    def _open(self, datadir: str) -> Tuple[ChainState, CountingReads]:
        store = ChainStore(datadir, REGTEST)
        store.open()
        chain = ChainState(REGTEST, store)
        self.addCleanup(chain.close)
        return chain, CountingReads(store)

    def test_batch_accepted_then_activated(self) -> None:
        """The P2P sync's shape: a batch of blocks accepted, then one activation."""
        chain, reads = self._open(self.mktemp())
        chain.load()
        for block in self.blocks:
            chain.accept_block(block)
        chain.activate_best_chain()
        self.assertEqual(chain.tip.hash, self.tip)
        self.assertEqual(reads.calls, 0)
        self.assertEqual(chain.store.utxo_snapshot(), self.coins)

    def test_reindex_connects_the_blocks_it_read(self) -> None:
        chain, reads = self._open(self.datadir)
        chain.load(reindex=True)
        self.assertEqual(chain.tip.hash, self.tip)
        self.assertEqual(reads.calls, 0)
        self.assertEqual(chain.store.utxo_snapshot(), self.coins)

    def test_reindex_activates_before_held_blocks_would_be_dropped(self) -> None:
        """Bigger blocks than the budget holds at once: activations come sooner, no block is
        dropped before it connects."""
        self.patch(chainstate, "HELD_BLOCKS_BYTES", 20 * self.blocks[0].size)
        chain, reads = self._open(self.datadir)
        chain.load(reindex=True)
        self.assertEqual(chain.tip.hash, self.tip)
        self.assertEqual(reads.calls, 0)

    def test_held_blocks_stay_within_the_budget(self) -> None:
        self.patch(chainstate, "HELD_BLOCKS_BYTES", 20 * self.blocks[0].size)
        chain, reads = self._open(self.mktemp())
        chain.load()
        for block in self.blocks:
            chain.accept_block(block)
            if len(chain._held_blocks) > 1:  # one block bigger than the budget is kept alone
                self.assertLessEqual(chain._held_bytes, chainstate.HELD_BLOCKS_BYTES)
        chain.activate_best_chain()
        self.assertEqual(chain.tip.hash, self.tip)
        self.assertGreater(reads.calls, 0)  # the oldest were dropped and read back


class BatchedLookupTests(SynchronousTestCase):
    """A block's inputs are looked up in one query per chunk, each as the connect loop comes
    to it: the first scripts are checked before the last chunk is looked up."""

    def test_inputs_looked_up_in_chunks_as_the_loop_reaches_them(self) -> None:
        source, block, spent = many_spends_chain(self.mktemp())
        earlier = [source.read_block(source.at_height(h)) for h in range(1, source.height)]
        source.close()
        chain = open_chain(self.mktemp())
        self.addCleanup(chain.close)
        for earlier_block in earlier:
            chain.process_block(earlier_block)
        chain.flush()
        chain.store.coins.clear()  # every coin the block spends is in the database only
        events: List[Tuple[str, int]] = []
        table = chain.store._utxos
        fetch = table.fetch
        verify = workers.verify_transaction_scripts

        def counted_fetch(keys):
            events.append(("query", len(keys)))
            return fetch(keys)

        def counted_verify(tx, coins, flags):
            events.append(("script", len(coins)))
            return verify(tx, coins, flags)

        self.patch(table, "fetch", counted_fetch)
        self.patch(workers, "verify_transaction_scripts", counted_verify)
        chain.process_block(block)
        self.assertEqual(chain.tip.hash, block.hash)
        queries = [size for kind, size in events if kind == "query"]
        # Regtest never reaches BIP34, so BIP30 looks the block's own outputs up first.
        created = [(tx.txid, n) for tx in block.txs for n in range(len(tx.vout))]
        self.assertEqual(len(set(spent)), len(spent))
        self.assertEqual(queries, chunk_sizes(len(created)) + chunk_sizes(len(spent)))
        kinds = [kind for kind, _ in events]
        self.assertLess(kinds.index("script"), len(kinds) - 1 - kinds[::-1].index("query"))
        self.assertEqual(sum(size for kind, size in events if kind == "script"), len(spent))


class EarlySyncTests(SynchronousTestCase):
    """The block files are fsync'd on another thread while the blocks connect, and once more
    (for the rest of the undo data) before any event goes out."""

    def setUp(self) -> None:
        self.chain = open_chain(self.mktemp())
        self.addCleanup(self.chain.close)
        self.builder = ChainBuilder(self.chain)
        self.builder.mine(1)
        self.calls: List[str] = []
        self.real_sync = self.chain.store.sync

    def sync(self, fail_early: bool = False) -> None:
        early = threading.current_thread() is not threading.main_thread()
        self.calls.append("early sync" if early else "sync")
        if early and fail_early:
            raise StorageError("fsync failed")
        self.real_sync()

    def test_synced_while_connecting_then_before_the_events(self) -> None:
        self.patch(self.chain.store, "sync", self.sync)
        self.chain.subscribe(self)
        self.builder.mine(1)
        self.assertEqual(self.calls, ["early sync", "sync", "event"])

    def block_connected(self, *args: object) -> None:
        self.calls.append("event")

    def test_a_failed_early_sync_is_reported(self) -> None:
        """An fsync error may not come back at the next fsync (the kernel may have dropped
        the pages): the early one's is raised, and no event claims the block is stored."""
        self.patch(self.chain.store, "sync", lambda: self.sync(fail_early=True))
        self.chain.subscribe(self)
        self.assertRaises(StorageError, self.builder.mine, 1)
        self.assertEqual(self.calls, ["early sync"])
