"""The transaction index (-txindex): follows connects and reorgs, catches up in the
background, resumes after restarts and kill -9, is dropped by -txindex=0; lookups
through ChainAccess.get_transaction with and without it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from typing import List

from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import deferLater
from twisted.trial.unittest import SynchronousTestCase, TestCase

from coin.chain.access import ChainAccess
from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.service import ValidationService
from coin.chainparams import REGTEST
from coin.index.txindex import TxIndex, block_tx_offsets, drop_txindex
from coin.primitives.serialize import ByteReader
from coin.rpc.methods.index import METHODS as INDEX_METHODS
from coin.rpc.methods.rawtransactions import METHODS as RAWTX_METHODS
from coin.primitives.transaction import OutPoint, Transaction
from coin.storage.chainstore import ChainStore
from coin.testing.chainbuilder import ChainBuilder, Spendable, open_chain
from tests.rpcchain import ChainRPCTestCase
from tests import ROOT



def make_chain(datadir: str, blocks: int, spends: bool = True) -> List[bytes]:
    """A regtest chain of ``blocks`` blocks (after 101, each spends an old coinbase)."""
    chain = open_chain(datadir)
    try:
        builder = ChainBuilder(chain)
        for height in range(1, blocks + 1):
            txs = []
            if spends and height > 101:
                txs.append(builder.spend(builder.coinbase_outputs[height - 102]))
            builder.mine(1, txs=txs)
        chain.flush()
        return [chain.at_height(h).hash for h in range(chain.height + 1)]
    finally:
        chain.close()


def indexed_txids(chain: ChainState, upto: int) -> List[tuple]:
    """``(txid, block entry, offset)`` for every non-genesis transaction up to ``upto``."""
    result = []
    for height in range(1, upto + 1):
        entry = chain.at_height(height)
        block = chain.read_block(entry)
        for txid, offset in block_tx_offsets(block):
            result.append((txid, entry, offset))
    return result


class OffsetTests(SynchronousTestCase):
    def test_offsets_point_at_each_transaction(self):
        datadir = self.mktemp()
        make_chain(datadir, 103)
        chain = open_chain(datadir)
        self.addCleanup(chain.close)
        entry = chain.at_height(103)
        raw = chain.store.read_block(entry.file_no, entry.data_pos)
        block = chain.read_block(entry)
        self.assertEqual(len(block.txs), 2)
        for tx, (txid, offset) in zip(block.txs, block_tx_offsets(block)):
            self.assertEqual(Transaction.read(ByteReader(raw, offset)).txid, txid)
            self.assertEqual(tx.txid, txid)


class Node:
    """A validation service with (optionally) a transaction index, in this process."""

    def __init__(self, test: TestCase, datadir: str, txindex: bool = True,
                 **index_options) -> None:
        store = ChainStore(datadir, REGTEST)
        store.open()
        self.service = ValidationService(ChainState(REGTEST, store), reactor)
        self.access = ChainAccess(self.service, NodeClock(), reactor)
        self.txindex = None
        if txindex:
            self.txindex = TxIndex(self.service, reactor, **index_options)
            self.access.txindex = self.txindex
        self._stopped = False
        self.service.startService()
        if self.txindex is not None:
            self.txindex.startService()
        test.addCleanup(self.stop)

    @inlineCallbacks
    def stop(self):
        if self._stopped:
            return
        self._stopped = True
        if self.txindex is not None:
            yield self.txindex.stopService()
        yield self.service.stopService()

    @inlineCallbacks
    def wait_synced(self, timeout: float = 60.0):
        waited = 0.0
        while not self.txindex.synced:
            self.assertTrue(waited < timeout)
            yield deferLater(reactor, 0.02, lambda: None)
            waited += 0.02
        return self.txindex.best_height

    def assertTrue(self, value):
        if not value:
            raise AssertionError("timed out waiting for the transaction index")


class TxIndexTests(TestCase):
    timeout = 300

    @inlineCallbacks
    def test_index_follows_connects_and_reorgs(self):
        datadir = self.mktemp()
        make_chain(datadir, 105)
        node = Node(self, datadir, slice_blocks=7)
        chain = yield node.service.ready
        yield node.wait_synced()
        self.assertEqual(node.txindex.info(), {"synced": True, "best_block_height": 105})
        store = chain.store
        for txid, entry, offset in indexed_txids(chain, 105):
            pos = store.txindex_lookup(txid)
            self.assertEqual((pos.block_hash, pos.file_no, pos.block_pos, pos.tx_offset),
                             (entry.hash, entry.file_no, entry.data_pos, offset))
        # The genesis coinbase is not an ordinary transaction: not indexed.
        self.assertIsNone(store.txindex_lookup(REGTEST.genesis.txs[0].txid))

        # New blocks are indexed as they connect; block 107 carries a spend.
        builder = ChainBuilder(chain)
        cb5 = chain.read_block(chain.at_height(5)).txs[0]
        spend = builder.spend(Spendable(OutPoint(cb5.txid, 0), cb5.vout[0].value,
                                        cb5.vout[0].script_pubkey))
        # The fork's first block (same spend) is built now, while 105 is the tip.
        fork_first = yield node.service.call(lambda cs: builder.build([spend]))
        yield node.service.call(lambda cs: builder.mine(1))
        yield node.service.call(lambda cs: builder.mine(1, txs=[spend]))
        yield node.wait_synced()
        self.assertEqual(node.txindex.best_height, 107)
        old_tip = chain.tip
        old_block = chain.read_block(old_tip)
        self.assertEqual(store.txindex_lookup(old_block.txs[0].txid).block_hash, old_tip.hash)
        self.assertEqual(store.txindex_lookup(spend.txid).block_hash, old_tip.hash)

        # A reorg: a longer fork from height 105 carrying the same spend; the lost
        # blocks' coinbases leave the index, the fork's transactions enter it.
        lost = [chain.read_block(chain.at_height(h)).txs[0].txid for h in (106, 107)]
        parent = chain.at_height(105)
        fork = []
        for i in range(3):
            block = fork_first if i == 0 else (
                yield node.service.call(lambda cs, p=parent: builder.build(parent=p)))
            entry = yield node.service.submit_block(block)
            fork.append(block)
            parent = entry
        self.assertEqual(chain.tip.hash, fork[-1].hash)
        yield node.wait_synced()
        self.assertEqual(node.txindex.best_height, 108)
        for txid in lost:
            self.assertIsNone(store.txindex_lookup(txid))
        for block in fork:
            for tx in block.txs:
                self.assertEqual(store.txindex_lookup(tx.txid).block_hash, block.hash)
        found = yield node.access.get_transaction(spend.txid)
        self.assertEqual(found[1].hash, fork[0].hash)

    @inlineCallbacks
    def test_get_transaction_with_and_without_the_index(self):
        datadir = self.mktemp()
        make_chain(datadir, 104)
        chain = open_chain(datadir)
        # Coinbase of block 1 is spent by block 102: no unspent output left.
        spent_cb = chain.read_block(chain.at_height(1)).txs[0]
        spender = chain.read_block(chain.at_height(102)).txs[1]
        unspent_cb = chain.read_block(chain.at_height(50)).txs[0]
        chain.close()

        node = Node(self, datadir, txindex=False)
        yield node.service.ready
        # Without the index: only transactions with an unspent output.
        found = yield node.access.get_transaction(unspent_cb.txid)
        self.assertEqual((found[0].txid, found[1].height), (unspent_cb.txid, 50))
        found = yield node.access.get_transaction(spender.txid)
        self.assertEqual((found[0].txid, found[1].height), (spender.txid, 102))
        self.assertIsNone((yield node.access.get_transaction(spent_cb.txid)))
        self.assertIsNone((yield node.access.get_transaction(b"\x11" * 32)))
        # A coin created after the last flush is found too (cache overlay).
        builder = ChainBuilder(node.service.chainstate)
        [block] = yield node.service.call(lambda cs: builder.mine(1))
        found = yield node.access.get_transaction(block.txs[0].txid)
        self.assertEqual(found[1].hash, block.hash)
        yield node.stop()

        node = Node(self, datadir)
        yield node.service.ready
        yield node.wait_synced()
        found = yield node.access.get_transaction(spent_cb.txid)
        self.assertEqual((found[0].txid, found[1].height), (spent_cb.txid, 1))
        self.assertEqual(found[0].serialize(), spent_cb.serialize())
        self.assertIsNone((yield node.access.get_transaction(b"\x11" * 32)))

    @inlineCallbacks
    def test_background_catch_up_while_blocks_connect(self):
        datadir = self.mktemp()
        make_chain(datadir, 160)
        node = Node(self, datadir, slice_blocks=5, slice_txs=50)
        chain = yield node.service.ready
        builder = ChainBuilder(chain)
        behind_while_connecting = 0
        for _ in range(6):
            yield node.service.call(lambda cs: builder.mine(1))
            if not node.txindex.synced:
                behind_while_connecting += 1
        self.assertGreater(behind_while_connecting, 0)
        height = yield node.wait_synced()
        self.assertEqual(height, chain.height)
        self.assertEqual(chain.height, 166)
        for txid, entry, _ in indexed_txids(chain, chain.height):
            self.assertEqual(chain.store.txindex_lookup(txid).block_hash, entry.hash)

    @inlineCallbacks
    def test_restart_resumes_and_txindex_0_drops(self):
        datadir = self.mktemp()
        make_chain(datadir, 120)
        # Two slices of ten blocks, then the process "stops".
        chain = open_chain(datadir)
        index = TxIndex(None, None, slice_blocks=10)
        index._load(chain, False)
        best, behind = index._step(chain)
        self.assertEqual((best.height, behind), (19, True))
        chain.close()
        store = ChainStore(datadir, REGTEST)
        store.open()
        marker = store.txindex_best()
        store.close()
        chain = open_chain(datadir)
        self.assertEqual(chain.lookup(marker).height, 19)
        chain.close()

        node = Node(self, datadir, slice_blocks=10)
        chain = yield node.service.ready
        yield node.wait_synced()
        for txid, entry, _ in indexed_txids(chain, 120):
            self.assertEqual(chain.store.txindex_lookup(txid).block_hash, entry.hash)
        some_txid = chain.read_block(chain.at_height(7)).txs[0].txid
        yield node.stop()

        # -txindex=0: dropped at start-up, and only once.
        node = Node(self, datadir, txindex=False)
        chain = yield node.service.ready
        self.assertTrue((yield drop_txindex(node.service)))
        self.assertFalse(chain.store.txindex_has_data())
        self.assertIsNone(chain.store.txindex_lookup(some_txid))
        self.assertIsNone(chain.store.txindex_best())
        self.assertFalse((yield drop_txindex(node.service)))

    @inlineCallbacks
    def test_reindex_rebuilds_the_index(self):
        datadir = self.mktemp()
        make_chain(datadir, 30)
        node = Node(self, datadir)
        yield node.service.ready
        yield node.wait_synced()
        yield node.stop()
        node = Node(self, datadir, reindex=True)
        chain = yield node.service.ready
        yield node.wait_synced()
        for txid, entry, _ in indexed_txids(chain, 30):
            self.assertEqual(chain.store.txindex_lookup(txid).block_hash, entry.hash)


_CHILD = textwrap.dedent("""
    import sys
    from coin.index.txindex import TxIndex
    from coin.testing.chainbuilder import open_chain
    chain = open_chain(sys.argv[1])
    index = TxIndex(None, None, slice_blocks=3)
    best, behind = index._load(chain, False)
    while True:
        print("indexed %d" % best.height, flush=True)
        best, behind = index._step(chain)
        if not behind:
            print("indexed %d" % best.height, flush=True)
            break
    print("done", flush=True)
    sys.stdin.read()
""")


class KillNineTests(SynchronousTestCase):
    def test_kill_9_during_catch_up_then_reopen_is_consistent(self):
        datadir = os.path.abspath(self.mktemp())
        make_chain(datadir, 150)
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        child = subprocess.Popen([sys.executable, "-c", _CHILD, datadir], stdout=subprocess.PIPE,
                                 stdin=subprocess.PIPE, env=env, text=True)
        reported = -1
        try:
            for line in child.stdout:
                if line.startswith("indexed"):
                    reported = int(line.split()[1])
                    if reported >= 30:
                        break
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            child.stdout.close()
            child.stdin.close()
        self.assertGreaterEqual(reported, 30)

        chain = open_chain(datadir)
        self.addCleanup(chain.close)
        marker = chain.lookup(chain.store.txindex_best())
        self.assertGreaterEqual(marker.height, reported)
        # Exactly the blocks up to the marker are indexed.
        for txid, entry, _ in indexed_txids(chain, chain.height):
            pos = chain.store.txindex_lookup(txid)
            if entry.height <= marker.height:
                self.assertEqual(pos.block_hash, entry.hash)
            else:
                self.assertIsNone(pos)
        # And it resumes to the tip from there.
        index = TxIndex(None, None)
        best, behind = index._load(chain, False)
        while behind:
            best, behind = index._step(chain)
        self.assertEqual(best.height, 150)
        for txid, entry, _ in indexed_txids(chain, 150):
            self.assertEqual(chain.store.txindex_lookup(txid).block_hash, entry.hash)

_WALLET_HINT = ". Use gettransaction for wallet transactions."


class IndexRPCTests(ChainRPCTestCase):
    methods = INDEX_METHODS + RAWTX_METHODS

    @inlineCallbacks
    def test_getindexinfo_and_getrawtransaction_messages(self):
        unknown = "11" * 32
        self.assertEqual((yield self.result("getindexinfo")), {})
        self.assertEqual((yield self.error("getrawtransaction", unknown))[1:],
                         (-5, "No such mempool transaction. Use -txindex to enable blockchain "
                              "transaction queries" + _WALLET_HINT))
        txindex = TxIndex(self.service, reactor)
        self.access.txindex = txindex
        # Not started yet: not synced.
        self.assertEqual((yield self.result("getindexinfo")),
                         {"txindex": {"synced": False, "best_block_height": -1}})
        self.assertEqual((yield self.error("getrawtransaction", unknown))[1:],
                         (-5, "No such mempool transaction. Blockchain transactions are still "
                              "in the process of being indexed" + _WALLET_HINT))
        txindex.startService()
        self.addCleanup(txindex.stopService)
        yield txindex.synced_once
        height = self.state.height
        self.assertEqual((yield self.result("getindexinfo", "txindex")),
                         {"txindex": {"synced": True, "best_block_height": height}})
        self.assertEqual((yield self.result("getindexinfo", "coinstatsindex")), {})
        self.assertEqual((yield self.error("getrawtransaction", unknown))[1:],
                         (-5, "No such mempool or blockchain transaction" + _WALLET_HINT))
        tx = self.state.read_block(self.state.at_height(3)).txs[0]
        verbose = yield self.result("getrawtransaction", tx.txid_hex, True)
        self.assertEqual((verbose["hex"], verbose["height"]), (tx.serialize().hex(), 3))
