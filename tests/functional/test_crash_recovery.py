"""kill -9 at random moments: the next start recovers and loses no connected block."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from twisted.trial.unittest import SynchronousTestCase

from coin.testing.chainbuilder import open_chain
from tests.nodeharness import ROOT, _env
from tests.pgserver import dbengine_for



class KillNineTests(SynchronousTestCase):
    rounds = 5

    def _run_child(self, datadir: str, blocks: int, delay: float, reported: list) -> None:
        """Kill -9 the miner ``delay`` seconds after it reported ``blocks`` more blocks.

        Counted blocks, not seconds: a loaded machine mines fewer blocks in a given time, and
        the test needs some in every round; the delay (up to a few blocks' time) moves the
        kill around a block's connect and the chain's flushes.
        """
        child = subprocess.Popen([sys.executable, "-m", "tests.kill9_child", datadir,
                                  dbengine_for(self, datadir)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                 env=_env(), text=True)
        ready = child.stdout.readline()
        if not ready.startswith("ready"):
            child.kill()
            self.fail("child did not start: %r %s" % (ready, child.stderr.read()))
        lines = []
        while len(lines) < blocks:
            line = child.stdout.readline()
            if not line:
                self.fail("child stopped: %s" % child.stderr.read())
            lines.append(line)
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        lines.extend(child.stdout)  # what it printed before it died
        child.stdout.close()
        child.stderr.close()
        for line in lines:
            if line.startswith("connected ") and line.endswith("\n"):
                _, height, block_hash = line.split()
                reported.append((int(height), block_hash))

    def test_no_connected_block_is_lost(self) -> None:
        datadir = os.path.abspath(self.mktemp())
        rng = random.Random(20261125)
        reported: list = []
        for _ in range(self.rounds):
            self._run_child(datadir, rng.randrange(5, 15), rng.uniform(0.0, 0.1), reported)
        self.assertGreater(len(reported), 20)

        chain = open_chain(datadir, dbengine=dbengine_for(self, datadir))
        try:
            for height, block_hash in reported:
                entry = chain.lookup(bytes.fromhex(block_hash)[::-1])
                self.assertIsNotNone(entry, "lost block %d %s" % (height, block_hash))
                self.assertTrue(chain.contains(entry), "block %d left the chain" % height)
            recovered = sorted(chain.store.utxo_snapshot())
            tip = chain.tip.hash
        finally:
            chain.close()
        # The recovered UTXO set is exactly what replaying every block yields.
        rebuilt = open_chain(datadir, reindex_chainstate=True,
                             dbengine=dbengine_for(self, datadir))
        try:
            self.assertEqual(rebuilt.tip.hash, tip)
            self.assertEqual(sorted(rebuilt.store.utxo_snapshot()), recovered)
        finally:
            rebuilt.close()
