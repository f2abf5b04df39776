"""Block-file pruning: -prune parsing, automatic and manual pruning, restart and crash safety,
reorgs near pruned data, and the RPC side (getblockchaininfo, getblock, pruneblockchain)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any, Optional

import simplejson
from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.trial.unittest import SynchronousTestCase, TestCase

from coin.chain.access import ChainAccess
from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.index import BLOCK_HAVE_DATA, BLOCK_HAVE_UNDO
from coin.chain.pruning import (
    MIB,
    MIN_BLOCKS_TO_KEEP,
    TIMESTAMP_WINDOW,
    BadPruneHeight,
    PruneConfigError,
    PruneRefused,
    find_files_to_prune,
    prune_target_from_option,
    prune_to,
)
from coin.chain.service import ValidationService
from coin.chainparams import REGTEST
from coin.primitives.hashes import hash_to_hex
from coin.rpc.auth import Whitelist
from coin.rpc.jsonrpc import JSONRPCCore, Warmup
from coin.rpc.methods.blockchain import METHODS
from coin.rpc.methods.control import METHODS as CONTROL_METHODS
from coin.rpc.registry import MethodTable
from coin.storage.blockfiles import BlockFiles
from coin.storage.chainstore import ChainStore
from coin.storage.errors import CorruptionError
from coin.testing.chainbuilder import ChainBuilder
from tests.rpchelpers import FakeNode
from tests import ROOT
from tests.prepared import prepared_datadir

#: About 20 coinbase-only regtest blocks per block file, ~90 undo records per undo file.
FILE_SIZE = 4000
#: Far below the real minimum (tests only): pruning starts after a few files.
TARGET = 12000
CHAIN_LENGTH = 420


def open_pruning_chain(datadir: str, prune: bool = True, target: int = TARGET) -> ChainState:
    store = ChainStore(datadir, REGTEST, max_blockfile_size=FILE_SIZE)
    store.open()
    chain = ChainState(REGTEST, store)
    chain.configure_pruning(prune, target if prune else 0)
    chain.load()
    return chain


def blk_path(datadir: str, n: int) -> str:
    return os.path.join(datadir, "blocks", "blk%05d.dat" % n)


def rev_path(datadir: str, n: int) -> str:
    return os.path.join(datadir, "blocks", "rev%05d.dat" % n)


def files_on_disk(datadir: str, prefix: str) -> list[int]:
    return sorted(int(name[3:8]) for name in os.listdir(os.path.join(datadir, "blocks"))
                  if name.startswith(prefix))


def assert_consistent(test: Any, chain: ChainState, datadir: str) -> None:
    """Every entry that says it has data or undo has its file; the tip's last blocks are kept."""
    for e in chain.index.values():
        if e.status & BLOCK_HAVE_DATA:
            test.assertTrue(os.path.exists(blk_path(datadir, e.file_no)), (e.height, e.file_no))
            test.assertEqual(chain.read_block(e).hash, e.hash)
        if e.status & BLOCK_HAVE_UNDO:
            test.assertTrue(os.path.exists(rev_path(datadir, e.undo_file)), e.height)
            chain.read_undo(e)
    tip = chain.tip
    for e in chain.chain[max(1, tip.height - MIN_BLOCKS_TO_KEEP + 1):]:
        test.assertTrue(e.have_data() and e.status & BLOCK_HAVE_UNDO, e.height)


class PruneOptionTests(SynchronousTestCase):
    """-prune=<n> read as Core 0.17 reads it."""

    def test_values(self) -> None:
        self.assertEqual(prune_target_from_option(0), (False, 0))
        self.assertEqual(prune_target_from_option(1), (True, 0))
        self.assertEqual(prune_target_from_option(550), (True, 550 * MIB))
        self.assertEqual(prune_target_from_option(10000), (True, 10000 * MIB))

    def test_below_minimum(self) -> None:
        for value in (2, 100, 549):
            e = self.assertRaises(PruneConfigError, prune_target_from_option, value)
            self.assertEqual(str(e), "Prune configured below the minimum of 550 MiB.  Please "
                                     "use a higher number.")

    def test_negative(self) -> None:
        e = self.assertRaises(PruneConfigError, prune_target_from_option, -1)
        self.assertEqual(str(e), "Prune cannot be configured with a negative value.")


class AutomaticPruneTests(SynchronousTestCase):

    def setUp(self) -> None:
        self.datadir = self.mktemp()
        self.chain: Optional[ChainState] = open_pruning_chain(self.datadir)
        self.addCleanup(self._close)
        self.builder = ChainBuilder(self.chain)

    def _close(self) -> None:
        if self.chain is not None:
            self.chain.close()

    def reopen(self, **options: Any) -> None:
        self.chain.close()
        self.chain = open_pruning_chain(self.datadir, **options)
        self.builder.chainstate = self.chain

    def test_nothing_pruned_within_288_blocks(self) -> None:
        self.builder.mine(MIN_BLOCKS_TO_KEEP - 1)
        self.chain.flush()
        self.assertEqual(files_on_disk(self.datadir, "blk")[0], 0)
        self.assertFalse(self.chain.have_pruned)
        self.assertEqual(self.chain.prune_height(), 0)

    def test_oldest_files_pruned_and_recent_blocks_kept(self) -> None:
        self.builder.mine(CHAIN_LENGTH)
        self.chain.flush()
        blk = files_on_disk(self.datadir, "blk")
        self.assertNotEqual(blk[0], 0)
        # Oldest first: what is left is one contiguous run up to the current file.
        self.assertEqual(blk, list(range(blk[0], blk[-1] + 1)))
        rev = files_on_disk(self.datadir, "rev")
        self.assertEqual(rev, list(range(rev[0], rev[-1] + 1)))
        self.assertTrue(self.chain.have_pruned)
        assert_consistent(self, self.chain, self.datadir)
        # Pruned entries: no data flags, no positions, but their counts stay.
        genesis_child = self.chain.at_height(1)
        self.assertFalse(genesis_child.status & (BLOCK_HAVE_DATA | BLOCK_HAVE_UNDO))
        self.assertEqual((genesis_child.file_no, genesis_child.data_pos), (0, 0))
        self.assertEqual(genesis_child.tx_count, 1)
        self.assertTrue(self.chain.is_pruned_block(genesis_child))
        height = self.chain.prune_height()
        self.assertGreater(height, 0)
        self.assertLessEqual(height, self.chain.height - MIN_BLOCKS_TO_KEEP + 1)
        self.assertFalse(self.chain.at_height(height - 1).have_data())
        self.assertTrue(all(e.have_data() for e in self.chain.chain[height:]))
        # Under the target, unless only unprunable files are left.
        # (the 288 kept blocks alone outgrow this tiny target, so nothing more can go)
        self.assertEqual(find_files_to_prune(self.chain, TARGET), ([], []))
        infos = self.chain.store.file_infos()
        self.assertEqual([n for n, i in infos.items() if i.size],
                         files_on_disk(self.datadir, "blk"))
        e = self.assertRaises(CorruptionError, self.chain.read_block, genesis_child)
        self.assertIn("pruned data", str(e))

    def test_restart_keeps_pruned_state(self) -> None:
        self.builder.mine(CHAIN_LENGTH)
        self.chain.flush()
        height = self.chain.prune_height()
        tip = self.chain.tip.hash
        statuses = {e.hash: e.status for e in self.chain.index.values()}
        self.reopen()
        self.assertEqual(self.chain.tip.hash, tip)
        self.assertTrue(self.chain.have_pruned)
        self.assertEqual(self.chain.prune_height(), height)
        self.assertEqual({e.hash: e.status for e in self.chain.index.values()}, statuses)
        # Pruned blocks keep their chain tx counts, so the chain goes on growing.
        self.assertEqual(self.chain.tip.chain_tx, self.chain.height + 1)
        self.builder.mine(50)
        assert_consistent(self, self.chain, self.datadir)
        # Without -prune the flag persists (the node refuses to start: test_integration_pruning).
        self.reopen(prune=False)
        self.assertTrue(self.chain.have_pruned)

    def test_interrupted_prune_leaves_files_deleted_on_next_start(self) -> None:
        """Crash after the commit, before the unlink: the next open deletes the leftovers."""
        self.builder.mine(MIN_BLOCKS_TO_KEEP + 5)
        self.chain.flush()
        before = files_on_disk(self.datadir, "blk")
        original = BlockFiles.remove_files
        BlockFiles.remove_files = lambda self, blk, rev: None
        try:
            self.builder.mine(100)
            self.chain.flush()
        finally:
            BlockFiles.remove_files = original
        self.assertTrue(self.chain.have_pruned)
        self.assertEqual(files_on_disk(self.datadir, "blk")[0], before[0])   # not unlinked
        self.chain.store.abandon()
        self.chain = open_pruning_chain(self.datadir)
        self.builder.chainstate = self.chain
        self.assertNotEqual(files_on_disk(self.datadir, "blk")[0], 0)
        self.assertNotEqual(files_on_disk(self.datadir, "rev")[0], 0)
        assert_consistent(self, self.chain, self.datadir)
        self.builder.mine(20)
        assert_consistent(self, self.chain, self.datadir)

    def test_reorg_within_kept_blocks(self) -> None:
        self.builder.mine(CHAIN_LENGTH)
        fork_point = self.chain.at_height(self.chain.height - 10)
        old_tip = self.chain.tip
        fork = self.builder.mine(12, parent=fork_point)
        self.assertEqual(self.chain.tip.hash, fork[-1].hash)
        self.assertFalse(self.chain.contains(old_tip))
        assert_consistent(self, self.chain, self.datadir)

    def test_reorg_into_pruned_data_refused(self) -> None:
        self.builder.mine(CHAIN_LENGTH)
        self.chain.flush()
        height = self.chain.prune_height()
        tip = self.chain.tip
        # invalidateblock below the kept data cannot disconnect: nothing changes.
        deep = self.chain.at_height(height - 1)
        e = self.assertRaises(CorruptionError, self.chain.invalidate_block, deep.hash)
        self.assertIn("pruned data", str(e))
        self.assertIs(self.chain.tip, tip)
        # A competing branch from a pruned block whose work would win is not activated.
        self.assertGreater(height, 5)
        fork_parent = self.chain.at_height(height - 5)
        blocks = [self.builder.build(parent=fork_parent)]
        entry = self.chain.accept_block(blocks[0])
        while entry.chainwork <= tip.chainwork:
            blocks.append(self.builder.build(parent=entry))
            entry = self.chain.accept_block(blocks[-1])
        self.chain.activate_best_chain()
        self.assertIs(self.chain.tip, tip)
        assert_consistent(self, self.chain, self.datadir)


class ManualPruneTests(SynchronousTestCase):

    def setUp(self) -> None:
        self.datadir = self.mktemp()
        self.chain = open_pruning_chain(self.datadir, target=0)
        self.addCleanup(lambda: self.chain.close())
        ChainBuilder(self.chain).mine(CHAIN_LENGTH)

    def test_no_automatic_pruning_with_prune_1(self) -> None:
        self.chain.flush()
        self.assertEqual(files_on_disk(self.datadir, "blk")[0], 0)
        self.assertFalse(self.chain.have_pruned)

    def test_prune_to_height(self) -> None:
        self.assertEqual(self.chain.prune_manual(60), 60)
        self.assertTrue(self.chain.have_pruned)
        height = self.chain.prune_height()
        self.assertGreater(height, 1)
        self.assertLessEqual(height, 61)
        for e in self.chain.chain[height:]:
            self.assertTrue(e.have_data())
        assert_consistent(self, self.chain, self.datadir)

    def test_prune_clamped_to_keep_288(self) -> None:
        self.assertEqual(self.chain.prune_manual(CHAIN_LENGTH),
                         CHAIN_LENGTH - MIN_BLOCKS_TO_KEEP)
        assert_consistent(self, self.chain, self.datadir)
        self.assertLessEqual(self.chain.prune_height(), CHAIN_LENGTH - MIN_BLOCKS_TO_KEEP + 1)


class PruneToTests(SynchronousTestCase):
    """pruneblockchain's checks and prune (``prune_to``), with Core's codes and messages."""

    def mined(self, length: int) -> ChainState:
        self.datadir = self.mktemp()
        chain = open_pruning_chain(self.datadir, target=0)
        self.addCleanup(chain.close)
        ChainBuilder(chain).mine(length)
        return chain

    def assertRefused(self, chain: ChainState, kind: type, code: int, message: str,
                      height: int) -> None:
        error = self.assertRaises(kind, prune_to, chain, height)
        self.assertEqual((type(error), error.rpc_code, error.message), (kind, code, message))
        self.assertFalse(chain.have_pruned)

    def test_refusals_on_a_short_chain(self) -> None:
        chain = self.mined(MIN_BLOCKS_TO_KEEP - 1)
        self.assertRefused(chain, BadPruneHeight, -8, "Negative block height.", -1)
        self.assertRefused(chain, PruneRefused, -1, "Blockchain is too short for pruning.", 1)
        self.assertRefused(chain, BadPruneHeight, -8,
                           "Could not find block with at least the specified timestamp.",
                           chain.tip.time_max + TIMESTAMP_WINDOW + 1)
        chain.configure_pruning(False)
        self.assertRefused(chain, PruneRefused, -1,
                           "Cannot prune blocks because node is not in prune mode.", 1)

    def test_prune_by_height_and_by_time(self) -> None:
        chain = self.mined(CHAIN_LENGTH)
        self.assertRefused(chain, BadPruneHeight, -8,
                           "Blockchain is shorter than the attempted prune height.",
                           CHAIN_LENGTH + 1)
        self.assertEqual(prune_to(chain, 60), 60)
        self.assertTrue(chain.have_pruned)
        self.assertEqual(prune_to(chain, CHAIN_LENGTH), CHAIN_LENGTH - MIN_BLOCKS_TO_KEEP)
        # A time: the first block whose time_max is at least two hours before it.
        late = chain.at_height(100)
        self.assertEqual(prune_to(chain, late.time_max + TIMESTAMP_WINDOW), late.height)
        assert_consistent(self, chain, self.datadir)


_CHILD = textwrap.dedent("""
    import sys
    from tests.unit.chain.test_pruning import open_pruning_chain
    from coin.testing.chainbuilder import ChainBuilder
    chain = open_pruning_chain(sys.argv[1])
    builder = ChainBuilder(chain)
    while True:
        builder.mine(1)
        if chain.height % 9 == 0:
            chain.flush()
        print(chain.height, flush=True)
""")


class KillDuringPruneTests(SynchronousTestCase):
    """A child mining with pruning is killed at random moments; every reopen is consistent."""

    def test_kill_9(self) -> None:
        datadir = os.path.abspath(self.mktemp())
        rng = random.Random(1729)
        env = dict(os.environ, PYTHONPATH=ROOT)
        for round_no in range(6):
            child = subprocess.Popen([sys.executable, "-c", _CHILD, datadir],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                     cwd=ROOT)
            try:
                wanted = rng.randint(30, 120) if round_no else MIN_BLOCKS_TO_KEEP + 30
                for _ in range(wanted):
                    if not child.stdout.readline():
                        break
                time.sleep(rng.random() * 0.05)
            finally:
                os.kill(child.pid, signal.SIGKILL)
                child.wait()
                child.stdout.close()
            chain = open_pruning_chain(datadir)
            try:
                assert_consistent(self, chain, datadir)
            finally:
                chain.close()
        chain = open_pruning_chain(datadir)
        try:
            self.assertTrue(chain.have_pruned)
            self.assertNotEqual(files_on_disk(datadir, "blk")[0], 0)
        finally:
            chain.close()


# ---------------------------------------------------------------- RPC

def _pruned_to_100(datadir: str) -> None:
    chain = open_pruning_chain(datadir, target=0)
    ChainBuilder(chain).mine(CHAIN_LENGTH)
    chain.prune_manual(100)
    chain.close()


def template() -> str:
    """A datadir pruned by hand to height 100 (built once per run)."""
    return prepared_datadir(_pruned_to_100, _pruned_to_100)[0]


class PruningRPCTests(TestCase):

    prune = True

    def setUp(self):
        datadir = self.mktemp()
        shutil.copytree(template(), datadir)
        store = ChainStore(datadir, REGTEST, max_blockfile_size=FILE_SIZE)
        store.open()
        state = ChainState(REGTEST, store)
        state.configure_pruning(self.prune, 0)
        self.service = ValidationService(state, reactor)
        self.service.startService()
        self.addCleanup(self.service.stopService)
        self.state = state
        access = ChainAccess(self.service, NodeClock(), reactor)
        self.core = JSONRPCCore(MethodTable(CONTROL_METHODS + METHODS),
                                FakeNode(chain=access), whitelist=Whitelist(),
                                warmup=Warmup(None), clock=reactor)
        return self.service.ready

    @inlineCallbacks
    def call(self, method: str, *params: Any):
        body = {"jsonrpc": "1.0", "id": 1, "method": method, "params": list(params)}
        reply = yield self.core.handle(simplejson.dumps(body).encode(), "u")
        answer = simplejson.loads(reply.body)
        return answer["result"], answer["error"]

    @inlineCallbacks
    def test_chain_info(self):
        info, error = yield self.call("getblockchaininfo")
        self.assertIsNone(error)
        self.assertIs(info["pruned"], True)
        self.assertEqual(info["pruneheight"], self.state.prune_height())
        self.assertGreater(info["pruneheight"], 1)

    @inlineCallbacks
    def test_getblock_pruned(self):
        pruned = self.state.at_height(1)
        for verbosity in (0, 1, 2):
            result, error = yield self.call("getblock", hash_to_hex(pruned.hash), verbosity)
            self.assertEqual(error, {"code": -1, "message": "Block not available (pruned data)"})
        kept = self.state.at_height(self.state.prune_height())
        result, error = yield self.call("getblock", hash_to_hex(kept.hash))
        self.assertIsNone(error)
        self.assertEqual(result["height"], kept.height)
        # Headers of pruned blocks are still served.
        result, error = yield self.call("getblockheader", hash_to_hex(pruned.hash))
        self.assertIsNone(error)

    @inlineCallbacks
    def test_pruneblockchain(self):
        result, error = yield self.call("pruneblockchain", CHAIN_LENGTH + 1)
        self.assertEqual(error, {"code": -8, "message":
                                 "Blockchain is shorter than the attempted prune height."})
        result, error = yield self.call("pruneblockchain", -1)
        self.assertEqual(error, {"code": -8, "message": "Negative block height."})
        before = self.state.prune_height()
        result, error = yield self.call("pruneblockchain", 125)
        self.assertIsNone(error)
        self.assertEqual(result, 125)
        self.assertGreater(self.state.prune_height(), before)
        self.assertLessEqual(self.state.prune_height(), 126)
        # Close to the tip: clamped to keep the last 288 blocks.
        result, error = yield self.call("pruneblockchain", CHAIN_LENGTH)
        self.assertEqual(result, CHAIN_LENGTH - MIN_BLOCKS_TO_KEEP)
        # By time: the first block no older than the time less two hours.
        late = self.state.at_height(CHAIN_LENGTH - MIN_BLOCKS_TO_KEEP)
        result, error = yield self.call("pruneblockchain", late.time_max + 2 * 60 * 60)
        self.assertIsNone(error)
        self.assertEqual(result, late.height)


class NotPruningRPCTests(PruningRPCTests):
    """The pruned datadir opened without prune mode (the service refuses; RPC still answers)."""

    prune = False

    @inlineCallbacks
    def test_chain_info(self):
        info, error = yield self.call("getblockchaininfo")
        self.assertIs(info["pruned"], False)
        self.assertNotIn("pruneheight", info)

    @inlineCallbacks
    def test_pruneblockchain(self):
        result, error = yield self.call("pruneblockchain", 10)
        self.assertEqual(error, {"code": -1, "message":
                                 "Cannot prune blocks because node is not in prune mode."})

    test_getblock_pruned = PruningRPCTests.test_getblock_pruned
