"""coind on the PostgreSQL engine (-dbengine=postgresql://...) against the SQLite default.

Real ``coind`` processes and a real PostgreSQL server (``tests.pgserver``): the same chain,
fed block by block to a node on each engine, must give the same answers through a reorg
and a restart, with the PostgreSQL node's blocks in the database only; kill -9 during
flushes loses nothing; a server that cannot be reached stops start-up with the reason.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any, Dict, List

from twisted.trial.unittest import SynchronousTestCase

from tests.functional import test_crash_recovery
from tests.functional.test_daemon import run_coind
from tests.nodeharness import NodeProcess, free_port
from tests.pgserver import OnPostgreSQL, fresh_database

#: Answers that differ by engine for reasons other than the chain: bytes on disk.
DISK_FIELDS = ("size_on_disk", "disk_size")


def without_disk_sizes(answer: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in DISK_FIELDS}


def chain_answers(node: NodeProcess) -> Dict[str, Any]:
    """Everything a user reads about the chain: blocks, transactions (txindex), coins, tips."""
    answers: Dict[str, Any] = {
        "best": node.rpc("getbestblockhash"),
        "info": without_disk_sizes(node.rpc("getblockchaininfo")),
        "tips": node.rpc("getchaintips"),
        "utxos": without_disk_sizes(node.rpc("gettxoutsetinfo")),
    }
    blocks: List[Any] = []
    for height in range(node.rpc("getblockcount") + 1):
        block_hash = node.rpc("getblockhash", height)
        block = node.rpc("getblock", block_hash, 2)
        blocks.append((block, node.rpc("getblock", block_hash, 0)))
        for tx in block["tx"] if height else ():    # the genesis coinbase is not indexed
            blocks.append(node.rpc("getrawtransaction", tx["txid"], True))
            blocks.append([node.rpc("gettxout", tx["txid"], n) for n in range(len(tx["vout"]))])
    answers["blocks"] = blocks
    return answers


class PostgreSQLNodeTests(OnPostgreSQL, SynchronousTestCase):

    def start(self, *args: str) -> NodeProcess:
        node = NodeProcess.start(self.mktemp(), ["-txindex", "-listen=0", "-connect=0", *args])
        self.addCleanup(node.kill)
        return node

    def relay(self, source: NodeProcess, target: NodeProcess, first: int) -> None:
        """Submit ``source``'s blocks from height ``first`` to its tip to ``target``."""
        for height in range(first, source.rpc("getblockcount") + 1):
            raw = source.rpc("getblock", source.rpc("getblockhash", height), 0)
            self.assertIn(target.rpc("submitblock", raw), (None, "duplicate"))

    def assert_same(self, lite: NodeProcess, pg: NodeProcess) -> None:
        self.assertEqual(chain_answers(pg), chain_answers(lite))

    def test_same_answers_as_sqlite_through_reorg_and_restart(self) -> None:
        lite = self.start()
        pg = self.start("-dbengine=%s" % fresh_database())
        address = lite.rpc("getnewaddress")
        lite.rpc("generatetoaddress", 101, address)
        for _ in range(3):
            lite.rpc("sendtoaddress", address, 1.5)
            lite.rpc("generatetoaddress", 2, address)
        self.relay(lite, pg, 1)
        self.assert_same(lite, pg)

        # Reorg: a shorter branch after invalidateblock, then back to the longer one.
        fork = lite.rpc("getblockhash", 103)
        for node in (lite, pg):
            node.rpc("invalidateblock", fork)
        self.assertEqual(pg.rpc("getblockcount"), 102)
        self.assert_same(lite, pg)
        lite.rpc("generatetoaddress", 2, address)
        self.relay(lite, pg, 103)
        self.assert_same(lite, pg)
        for node in (lite, pg):
            node.rpc("reconsiderblock", fork)
        self.assertEqual(pg.rpc("getblockcount"), 107)
        self.assert_same(lite, pg)

        self.assertEqual(pg.stop(), 0)
        pg.launch()
        pg.wait_ready()
        self.assert_same(lite, pg)
        # Blocks and undo data are in the database: the data directory holds neither.
        self.assertFalse(os.path.exists(os.path.join(pg.net_datadir, "blocks")))
        self.assertFalse(os.path.exists(os.path.join(pg.net_datadir, "chainstate.sqlite")))
        self.assertTrue(os.path.isdir(os.path.join(lite.net_datadir, "blocks")))

    def datadir(self) -> str:
        path = os.path.abspath(self.mktemp())
        os.makedirs(path)
        return path

    def run_on(self, dbengine: str) -> subprocess.CompletedProcess:
        """``coind`` on ``dbengine`` and a new datadir, run until it exits (or times out)."""
        return run_coind("-regtest", "-datadir=%s" % self.datadir(), "-printtoconsole=0",
                         "-rpcport=%d" % free_port(), "-listen=0", "-connect=0",
                         "-dbengine=%s" % dbengine)

    def test_unreachable_database_stops_start_up(self) -> None:
        port = free_port()    # claimed by this process, nothing listens
        result = self.run_on("postgresql://coin:secret@127.0.0.1:%d/chain" % port)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("Error opening block database: cannot connect to the PostgreSQL "
                      "database postgresql://coin:***@127.0.0.1:%d/chain" % port, result.stderr)
        self.assertNotIn("secret", result.stderr)

    def test_second_writer_on_the_database_is_refused(self) -> None:
        url = fresh_database()
        self.start("-dbengine=%s" % url)
        result = self.run_on(url)
        self.assertEqual(result.returncode, 1)
        self.assertIn("Error: Cannot obtain a lock on PostgreSQL database %s. Coin is probably "
                      "already running on it." % url, result.stderr)

    def test_malformed_dbengine_is_refused(self) -> None:
        result = self.run_on("mysql://x@y/z")
        self.assertEqual(result.returncode, 1)
        self.assertIn("Error: -dbengine must be 'sqlite' or "
                      "postgresql://user@host:port/database", result.stderr)


class KillNineTestsOnPostgreSQL(OnPostgreSQL, test_crash_recovery.KillNineTests):
    """kill -9 of a mining chain state at random moments, its index in PostgreSQL."""
