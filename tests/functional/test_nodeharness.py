"""The test harnesses: free ports that parallel test processes (``trial -j``) never share,
and nodes run in the test process."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import threading

from twisted.trial.unittest import SynchronousTestCase

from tests import nodeharness
from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import MINER_ADDRESS, ROOT, SHARED_BLOCKS, RPCFailure, _env, free_port

#: Claims one port from the range given in argv and holds it until stdin closes.
CLAIMER = """
import sys
from tests import nodeharness
nodeharness.TEST_PORTS = range(int(sys.argv[1]), int(sys.argv[2]))
print(nodeharness.free_port(), flush=True)
sys.stdin.read()
"""


class FreePortTests(SynchronousTestCase):
    def test_another_process_never_gets_a_claimed_port(self) -> None:
        # Two ports outside the harness's own range, so no concurrent test run holds them.
        low = random.randrange(21000, 21900, 2)
        self.patch(nodeharness, "TEST_PORTS", range(low, low + 2))
        self.patch(nodeharness, "_claimed", set())
        other = subprocess.Popen([sys.executable, "-c", CLAIMER, str(low), str(low + 2)],
                                 cwd=ROOT, env=_env(), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        self.addCleanup(other.wait)
        self.addCleanup(other.stdin.close)
        theirs = int(other.stdout.readline())
        mine = free_port()
        self.assertEqual({theirs, mine}, {low, low + 1})
        # Both ports are now claimed: one by each process.
        self.assertRaises(RuntimeError, free_port)

    def test_a_port_in_use_is_skipped(self) -> None:
        low = random.randrange(21000, 21900, 2)
        self.patch(nodeharness, "TEST_PORTS", range(low, low + 2))
        self.patch(nodeharness, "_claimed", set())
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", low))
            busy.listen()
            self.assertEqual(free_port(), low + 1)
            self.assertRaises(RuntimeError, free_port)


def _tip_and_wallet(node: InProcessNode) -> dict:
    """A prepared build: one block more, and an address of the default wallet."""
    address = node.rpc("getnewaddress")
    [block] = node.rpc("generatetoaddress", 1, address)
    return {"address": address, "block": block}


class InProcessNodeTests(NodeTestCase):
    """The in-process harness: real nodes in this process, driven from the test's thread."""

    def test_the_test_body_runs_off_the_reactor_thread(self) -> None:
        self.assertIsNot(threading.current_thread(), threading.main_thread())
        node = self.start_node("-disablewallet")
        self.assertEqual(node.rpc("getblockcount"), 0)
        # The node is in this process: its pid file holds ours.
        with open(os.path.join(node.net_datadir, "coind.pid")) as f:
            self.assertEqual(int(f.read()), os.getpid())

    def test_the_stop_rpc_stops_the_node_not_the_reactor(self) -> None:
        node = self.start_node("-disablewallet")
        self.assertEqual(node.rpc("stop"), "Coin server stopping")
        self.assertEqual(node.wait(), 0)
        self.assertFalse(node.running)
        self.assertRaises(OSError, node.rpc, "getblockcount")
        # Stopped cleanly: a restart finds the datadir unlocked and the chain as it was.
        self.assertEqual(node.restart().rpc("getblockcount"), 0)

    def test_restart_keeps_the_chain_and_takes_new_arguments(self) -> None:
        node = self.start_node(chain=True)
        self.assertEqual(node.rpc("getblockcount"), SHARED_BLOCKS)
        node.rpc("generatetoaddress", 2, MINER_ADDRESS)
        node.restart("-disablewallet")
        self.assertEqual(node.rpc("getblockcount"), SHARED_BLOCKS + 2)
        with self.assertRaises(RPCFailure) as caught:
            node.rpc("getbalance")
        self.assertEqual(caught.exception.code, -32601)

    def test_prepared_datadirs_are_private_copies(self) -> None:
        first = self.start_node(chain=_tip_and_wallet)
        second = self.start_node(chain=_tip_and_wallet)
        self.assertEqual(first.state, second.state)
        self.assertEqual(first.rpc("getbestblockhash"), first.state["block"])
        # The wallet came with the copy: the build's address is still ours.
        self.assertTrue(second.rpc("getaddressinfo", first.state["address"])["ismine"])
        first.rpc("invalidateblock", first.state["block"])
        self.assertEqual(second.rpc("getbestblockhash"), second.state["block"])
        self.assertNotEqual(first.datadir, second.datadir)

    def test_two_nodes_in_one_process_have_their_own_ports_and_files(self) -> None:
        a = self.start_node("-disablewallet")
        b = self.start_node("-disablewallet")
        self.assertNotEqual(a.rpcport, b.rpcport)
        a.rpc("generatetoaddress", 3, MINER_ADDRESS)
        self.assertEqual((a.rpc("getblockcount"), b.rpc("getblockcount")), (3, 0))

    def test_a_start_that_gives_up_is_an_error(self) -> None:
        node = self.start_node("-disablewallet")
        node.rpc("generatetoaddress", 1, MINER_ADDRESS)
        node.stop()
        # A block file the index points into is gone: the start-up check refuses the chain.
        os.unlink(os.path.join(node.net_datadir, "blocks", "blk00000.dat"))
        with self.assertRaises(RuntimeError) as caught:
            node.start()
        self.assertIn("gave up during start-up", str(caught.exception))
        self.assertFalse(node.running)

    def test_listening_follows_coinds_rules(self) -> None:
        self.assertIsNotNone(self.start_node("-disablewallet").p2p_port)
        self.assertIsNone(self.start_node("-disablewallet", "-listen=0").p2p_port)
        self.assertIsNone(self.start_node("-disablewallet", "-connect=0").p2p_port)
        self.assertIsNotNone(self.start_node("-disablewallet", "-connect=0", "-listen=1").p2p_port)
