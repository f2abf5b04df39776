"""-par: block script checks in worker processes find what the node alone finds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Deque, List, Optional

from twisted.trial.unittest import SynchronousTestCase

from coin.chain.chainstate import FETCH_INPUTS, ChainState
from coin.chain.scriptcheck import first_script_failure, script_failure_error
from coin.chain.workers import (
    BATCH_INPUTS, WORKER_DEPTH, Batch, ScriptCheckPool, ScriptChecks, script_check_threads,
)
from coin.consensus.errors import ValidationError
from coin.consensus.tx_check import check_transaction
from coin.primitives.block import Block, BlockHeader
from coin.primitives.coin import Coin
from coin.primitives.merkle import merkle_root
from coin.primitives.transaction import OutPoint, Transaction, TxIn
from coin.script.flags import SCRIPT_VERIFY_P2SH, parse_flags
from coin.testing.chainbuilder import ChainBuilder, Spendable, open_chain
from tests.unit.script import test_script_vectors as vectors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
#: Inputs in the big test block (the issue's 2,000-input block).
BLOCK_INPUTS = 2000


def forge(tx: Transaction, index: int) -> Transaction:
    """``tx`` with input ``index``'s signature flipped in one bit."""
    vin = list(tx.vin)
    sig = bytearray(vin[index].script_sig)
    sig[10] ^= 1
    vin[index] = TxIn(vin[index].prevout, bytes(sig), vin[index].sequence)
    return Transaction(vin, tx.vout, tx.locktime, tx.version)


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def rss_mib(pid: int) -> float:
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS for %d" % pid)


class ParOptionTest(SynchronousTestCase):
    """-par as Core reads it."""

    def test_core_reading(self) -> None:
        for par, cores, threads in ((0, 2, 2), (0, 8, 8), (-1, 2, 1), (-1, 8, 7), (-9, 2, 1),
                                    (1, 8, 1), (2, 1, 2), (17, 2, 16), (-2, 40, 16)):
            self.assertEqual(script_check_threads(par, cores), threads, (par, cores))


class WideBlockCase(SynchronousTestCase):
    """Two chains fed the same blocks: one checks alone, one with a worker process.

    Both hold 2,000 mature outputs of one fan-out transaction; :meth:`spends`
    signs one spend of each.
    """

    def setUp(self) -> None:
        self.alone = self._chain(None)
        self.pool = ScriptCheckPool(1)
        self.pool.start()
        self.addCleanup(self.pool.stop)
        self.parallel = self._chain(self.pool)
        self.builder = ChainBuilder(self.alone)
        self.feed(self.builder.mine(101))
        fan = self.builder.spend(self.builder.coinbase_outputs[0],
                                 outputs=[(self.builder.script_pubkey, 2_000_000)] * BLOCK_INPUTS)
        self.feed(self.builder.mine(1, txs=[fan]))
        self.outputs: List[Spendable] = ChainBuilder.outputs_of(fan)

    def _chain(self, pool: Optional[ScriptCheckPool]) -> ChainState:
        chain = open_chain(self.mktemp())
        chain.script_workers = pool
        self.addCleanup(chain.close)
        return chain

    def feed(self, blocks: List[Block]) -> None:
        for block in blocks:
            self.parallel.process_block(block)

    def spends(self) -> List[Transaction]:
        return [self.builder.spend(out, fee=1000) for out in self.outputs]

    def rejections(self, block: Block) -> List[ValidationError]:
        """What each chain says of ``block``; both must refuse it and stay where they were."""
        errors = []
        for chain in (self.alone, self.parallel):
            height = chain.height
            errors.append(self.assertRaises(ValidationError, chain.process_block, block))
            self.assertEqual(chain.height, height)
        return errors


class WorkerCheckTest(WideBlockCase):

    def test_valid_block_connects_on_both(self) -> None:
        block = self.builder.build(txs=self.spends())
        for chain in (self.alone, self.parallel):
            self.assertEqual(chain.process_block(block), chain.tip)
        self.assertEqual(self.parallel.tip.hash, block.hash)
        self.assertLess(rss_mib(self.pool.workers[0].pid), 60)

    def test_bad_last_input_found_as_single_process(self) -> None:
        txs = self.spends()
        txs[-1] = forge(txs[-1], 0)
        alone, parallel = self.rejections(self.builder.build(txs=txs))
        self.assertTrue(alone.reason.startswith("mandatory-script-verify-flag-failed ("))
        self.assertEqual((parallel.reason, parallel.debug, parallel.dos),
                         (alone.reason, alone.debug, alone.dos))
        self.assertIn(txs[-1].txid_hex, parallel.debug)

    def test_coins_put_back_after_a_late_script_failure(self) -> None:
        """The parallel path changes the coins before the workers' last answers and puts
        them back when a script fails: the same transactions, validly signed, then connect
        (nothing left spent, nothing left created) and leave the coins the node alone has."""
        txs = self.spends()
        forged = txs[:-1] + [forge(txs[-1], 0)]
        self.rejections(self.builder.build(txs=forged))
        block = self.builder.build(txs=txs)
        for chain in (self.alone, self.parallel):
            self.assertEqual(chain.process_block(block).hash, block.hash)
            chain.flush()
        keys = [out.outpoint.key() for out in self.outputs]
        keys += [(tx.txid, 0) for tx in txs] + [(forged[-1].txid, 0)]
        self.assertEqual([self.parallel.store.coins.get(k) for k in keys],
                         [self.alone.store.coins.get(k) for k in keys])
        self.assertIsNone(self.parallel.store.coins.get((forged[-1].txid, 0)))

    def test_input_errors_past_the_first_lookup_chunk(self) -> None:
        """Inputs are looked up FETCH_INPUTS at a time as the loop reaches them: a missing
        coin, and a coin spent twice across chunks, are found at the same transaction
        with or without workers."""
        missing = Spendable(OutPoint(b"\x42" * 32, 0), 2_000_000, self.builder.script_pubkey)
        txs = self.spends()
        txs[FETCH_INPUTS + 200] = self.builder.spend(missing, fee=1000)
        block = self.builder.build(txs=txs, fees=0)
        alone, parallel = self.rejections(block)
        self.assertEqual((alone.reason, alone.debug),
                         ("bad-txns-inputs-missingorspent", "inputs missing/spent"))
        self.assertEqual(str(parallel), str(alone))
        txs = self.spends()
        txs[2 * FETCH_INPUTS + 7] = self.builder.spend(self.outputs[3], fee=2000)
        alone, parallel = self.rejections(self.builder.build(txs=txs))
        self.assertEqual((alone.reason, alone.debug),
                         ("bad-txns-inputs-missingorspent", "input spent twice in block"))
        self.assertEqual(str(parallel), str(alone))

    def test_lowest_failure_wins(self) -> None:
        txs = self.spends()
        txs[3] = forge(txs[3], 0)
        txs[-2] = forge(txs[-2], 0)
        alone, parallel = self.rejections(self.builder.build(txs=txs))
        self.assertEqual(str(parallel), str(alone))
        self.assertIn(txs[3].txid_hex, parallel.debug)

    def test_script_failure_wins_over_a_later_error(self) -> None:
        txs = self.spends()
        txs[10] = forge(txs[10], 0)
        # The last transaction spends an output that does not exist: the loop stops
        # there, with the forged signature still waiting in a batch.
        missing = Spendable(OutPoint(b"\x42" * 32, 0), 2_000_000, self.builder.script_pubkey)
        txs[-1] = self.builder.spend(missing, fee=1000)
        alone, parallel = self.rejections(self.builder.build(txs=txs, fees=0))
        self.assertTrue(alone.reason.startswith("mandatory-script-verify-flag-failed ("))
        self.assertEqual(str(parallel), str(alone))

    def test_script_failure_wins_over_the_coinbase_amount(self) -> None:
        """The workers' answers are collected after the coinbase checks: a bad signature
        still wins over a coinbase paying too much, as in one process."""
        txs = self.spends()
        txs[-1] = forge(txs[-1], 0)
        block = self.builder.build(txs=txs, fees=1000 * len(txs) + 1)
        alone, parallel = self.rejections(block)
        self.assertTrue(alone.reason.startswith("mandatory-script-verify-flag-failed ("))
        self.assertEqual(str(parallel), str(alone))
        spends = self.spends()
        valid_scripts = self.builder.build(txs=spends, fees=1000 * len(spends) + 1)
        alone, parallel = self.rejections(valid_scripts)
        self.assertEqual((alone.reason, parallel.reason), ("bad-cb-amount", "bad-cb-amount"))

    def overwriting(self, txs: List[Transaction]) -> Block:
        """A block of ``txs`` whose coinbase is block 2's again, its output still unspent
        (regtest never reaches BIP34, so BIP30 applies)."""
        old_coinbase = self.alone.read_block(self.alone.at_height(2)).txs[0]

        def reuse_coinbase(block: Block) -> Block:
            txs = [old_coinbase] + list(block.txs[1:])
            h = block.header
            return Block(BlockHeader(h.version, h.prev_hash, merkle_root([t.txid for t in txs])[0],
                                     h.time, h.bits, h.nonce), txs)

        return self.builder.build(txs=txs, fees=0, mutate=reuse_coinbase)

    def test_overwriting_an_unspent_coinbase(self) -> None:
        for alone, parallel in (self.rejections(self.overwriting(self.spends())),
                                self.rejections(self.overwriting([]))):
            self.assertEqual((alone.reason, alone.dos), ("bad-txns-BIP30", 100))
            self.assertEqual(str(parallel), str(alone))

    def test_bip30_wins_over_a_script_failure(self) -> None:
        """BIP30 is Core's first connect check: it wins over a bad signature the workers
        would find (a regression guard for any reordering of the BIP30 lookups)."""
        txs = self.spends()
        txs[-1] = forge(txs[-1], 0)
        alone, parallel = self.rejections(self.overwriting(txs))
        self.assertEqual((alone.reason, parallel.reason), ("bad-txns-BIP30", "bad-txns-BIP30"))
        self.assertFalse(self.pool.busy())

    def test_bip30_wins_over_an_error_in_the_loop(self) -> None:
        txs = self.spends()
        txs[10] = forge(txs[10], 0)
        missing = Spendable(OutPoint(b"\x42" * 32, 0), 2_000_000, self.builder.script_pubkey)
        txs[-1] = self.builder.spend(missing, fee=1000)
        alone, parallel = self.rejections(self.overwriting(txs))
        self.assertEqual((alone.reason, parallel.reason), ("bad-txns-BIP30", "bad-txns-BIP30"))
        # The same block without the overwrite fails on the forged signature, as before.
        alone, parallel = self.rejections(self.builder.build(txs=txs, fees=0))
        self.assertTrue(alone.reason.startswith("mandatory-script-verify-flag-failed ("))
        self.assertEqual(str(parallel), str(alone))

    def test_worker_killed_before_a_block(self) -> None:
        old = self.pool.workers[0].pid
        os.kill(old, signal.SIGKILL)
        self.assertTrue(wait_gone(old))
        txs = self.spends()
        txs[-1] = forge(txs[-1], 0)
        alone, parallel = self.rejections(self.builder.build(txs=txs))
        self.assertEqual(str(parallel), str(alone))
        self.assertNotEqual(self.pool.workers[0].pid, old)
        self.assertIsNone(self.pool.workers[0].proc.poll())


class StalledWorkerTest(WideBlockCase):
    """A worker stopped (SIGSTOP) with batches in hand, then killed or resumed: what it
    held is checked again, and the lowest failure wins whoever finds it first."""

    def setUp(self) -> None:
        super().setUp()
        self.txs = self.spends()
        self.spent = [[self.parallel.store.coins.get(tx.vin[0].prevout.key())]
                      for tx in self.txs]
        self.worker = self.pool.workers[0]
        os.kill(self.worker.pid, signal.SIGSTOP)
        self.addCleanup(self._resume)

    def _resume(self) -> None:
        if self.worker.proc.poll() is None:
            os.kill(self.worker.pid, signal.SIGCONT)

    def add(self, checks: ScriptChecks, indices: range) -> None:
        for index in indices:
            checks.add(index + 1, self.txs[index], self.spent[index], SCRIPT_VERIFY_P2SH)

    def expected(self, index: int) -> ValidationError:
        _, message = first_script_failure(self.txs[index], [self.spent[index][0].script_pubkey],
                                          SCRIPT_VERIFY_P2SH)
        return script_failure_error(self.txs[index].txid_hex, 0, message)

    def test_batches_of_a_killed_worker_are_checked_again(self) -> None:
        # Both forged inputs sit in the first batches, which go to the worker first.
        for index in (1, BATCH_INPUTS + 1):
            self.txs[index] = forge(self.txs[index], 0)
        checks = ScriptChecks(self.pool)
        half = len(self.txs) // 2
        self.add(checks, range(half))
        self.assertEqual(len(self.worker.outstanding), WORKER_DEPTH, "the worker's pipe is full")
        os.kill(self.worker.pid, signal.SIGKILL)
        self.assertTrue(wait_gone(self.worker.pid))
        self.add(checks, range(half, len(self.txs)))
        self.assertEqual(str(checks.finish()), str(self.expected(1)))
        self.assertIsNot(self.pool.workers[0], self.worker)
        self.assertFalse(self.pool.busy())
        # The new worker serves the next block.
        block = self.builder.build(txs=self.spends())
        self.assertEqual(self.parallel.process_block(block).hash, block.hash)

    def test_worker_killed_while_the_node_connects_a_block(self) -> None:
        # The forged input is in the first batch, which the stalled worker takes: the node
        # cannot finish the block without it, so the kill lands in the middle of connect.
        self.txs[1] = forge(self.txs[1], 0)
        block = self.builder.build(txs=self.txs)
        alone = self.assertRaises(ValidationError, self.alone.process_block, block)
        held = []

        def kill() -> None:
            held.append(len(self.worker.outstanding))
            os.kill(self.worker.pid, signal.SIGKILL)

        killer = threading.Timer(2.0, kill)
        killer.start()
        self.addCleanup(killer.cancel)
        parallel = self.assertRaises(ValidationError, self.parallel.process_block, block)
        self.assertEqual(held, [WORKER_DEPTH], "killed while it held batches of the block")
        self.assertEqual(str(parallel), str(alone))
        self.assertIn(self.txs[1].txid_hex, parallel.debug)
        self.assertEqual(self.parallel.height, self.alone.height)
        self.assertIsNot(self.pool.workers[0], self.worker)

    def test_batches_not_started_are_taken_back(self) -> None:
        """The node takes back a batch waiting in the worker's pipe and the worker skips
        it (its forged input goes unreported by the worker); the oldest batch, which the
        worker may be running, stays with it."""
        for index in (1, BATCH_INPUTS + 1):
            self.txs[index] = forge(self.txs[index], 0)
        checks = ScriptChecks(self.pool)
        self.add(checks, range(2 * BATCH_INPUTS))
        self.assertEqual(len(self.worker.outstanding), 2)
        queue: Deque[Batch] = deque()
        stolen = self.pool.steal(queue)
        self.assertEqual([tx for _, tx, _, _ in stolen], self.txs[BATCH_INPUTS:2 * BATCH_INPUTS])
        self.assertIsNone(self.pool.steal(queue))
        self.assertFalse(queue)
        os.kill(self.worker.pid, signal.SIGCONT)
        batch, failure = self.worker.receive()
        self.assertEqual((batch[0][0], failure[:2]), (1, (2, 0)))
        self.assertEqual(self.worker.receive(), (None, None), "the worker skipped it")
        self.assertFalse(self.pool.busy())

    def test_taking_back_from_a_dead_worker_requeues_its_batches(self) -> None:
        checks = ScriptChecks(self.pool)
        self.add(checks, range(2 * BATCH_INPUTS))
        os.kill(self.worker.pid, signal.SIGKILL)
        self.assertTrue(wait_gone(self.worker.pid))
        queue: Deque[Batch] = deque()
        self.assertIsNone(self.pool.steal(queue))
        self.assertEqual([tx for batch in queue for _, tx, _, _ in batch],
                         self.txs[:2 * BATCH_INPUTS])
        self.assertIsNot(self.pool.workers[0], self.worker)
        self.assertFalse(self.pool.busy())

    def test_lowest_failure_wins_when_it_is_found_last(self) -> None:
        # The node checks the newest batch first and finds txs[-2]; the stalled worker,
        # resumed later, answers with txs[3].
        for index in (3, len(self.txs) - 2):
            self.txs[index] = forge(self.txs[index], 0)
        checks = ScriptChecks(self.pool)
        self.add(checks, range(len(self.txs)))
        resume = threading.Timer(1.0, os.kill, (self.worker.pid, signal.SIGCONT))
        resume.start()
        self.addCleanup(resume.cancel)
        self.assertEqual(str(checks.finish()), str(self.expected(3)))


class OrphanTest(SynchronousTestCase):
    """Workers never outlive their parent (PR_SET_PDEATHSIG, and end of file on stdin)."""

    def test_workers_exit_when_parent_is_killed(self) -> None:
        code = ("import sys; from coin.chain.workers import ScriptCheckPool; p = ScriptCheckPool(2); "
                "p.start(); print(' '.join(str(w.pid) for w in p.workers), flush=True); "
                "sys.stdin.read()")
        parent = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, cwd=ROOT)
        self.addCleanup(parent.stdin.close)
        pids = [int(p) for p in parent.stdout.readline().split()]
        self.assertEqual(len(pids), 2)
        parent.kill()
        parent.wait()
        for pid in pids:
            self.assertTrue(wait_gone(pid), "worker %d outlived its parent" % pid)


class WorkerVectorTest(SynchronousTestCase):
    """Core's tx_valid/tx_invalid vectors: a worker process gives each row the answer the
    node's own check gives (same input, same script error)."""

    def test_tx_vectors_through_a_worker(self) -> None:
        pool = ScriptCheckPool(1)
        pool.start()
        self.addCleanup(pool.stop)
        compared = failing = 0
        for name in ("tx_valid.json", "tx_invalid.json"):
            for row in vectors._load(name):
                if vectors._tx_row_skip(row):
                    continue
                tx = Transaction.from_hex(row[1])
                try:
                    check_transaction(tx)
                except ValidationError:
                    continue
                prevouts = vectors._prevout_scripts(row[0])
                scripts = [prevouts[i.prevout.key()] for i in tx.vin]
                flags = parse_flags(row[2])
                here = first_script_failure(tx, scripts, flags)
                checks = ScriptChecks(pool)
                checks.add(1, tx, [Coin(0, script, 1, False, 1) for script in scripts], flags)
                there = checks.finish()
                expected = None if here is None else str(script_failure_error(
                    tx.txid_hex, *here))
                self.assertEqual(None if there is None else str(there), expected, row)
                compared += 1
                failing += here is not None
        # The rows the vector test applies, less those CheckTransaction refuses.
        self.assertEqual((compared, failing), (137, 54))
