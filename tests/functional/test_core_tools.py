"""Calls Core 0.17's own test tooling makes, on a regtest node in the test process (issue #13).

The hidden ``syncwithvalidationinterfacequeue``, ``echo``/``echojson`` with the named
arguments ``arg0``..``arg9``, ``uptime`` under ``setmocktime``, and
``prioritisetransaction``'s answer to a bad txid, each as Core 0.17 gives it.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tests.inprocess import NodeTestCase
from tests.nodeharness import MINER_ADDRESS, RPCFailure


class CoreToolsTests(NodeTestCase):
    def setUp(self) -> None:
        self.node = self.start_node("-listen=0")

    def call(self, method: str, params: Any) -> Any:
        """The raw reply object of one call, ``params`` an array or an object."""
        body = json.dumps({"method": method, "params": params, "id": 1}).encode()
        return json.loads(self.node.post(body)[2])

    def assertError(self, reply: Any, code: int, message: str) -> None:
        self.assertEqual((reply["result"], reply["error"]), (None, {"code": code, "message": message}))

    def test_syncwithvalidationinterfacequeue(self) -> None:
        node = self.node
        hashes = node.rpc("generatetoaddress", 2, MINER_ADDRESS)
        self.assertIsNone(node.rpc("syncwithvalidationinterfacequeue"))
        self.assertEqual(node.rpc("getbestblockhash"), hashes[-1])
        help_text = node.rpc("help", "syncwithvalidationinterfacequeue")
        self.assertTrue(help_text.startswith(
            "syncwithvalidationinterfacequeue\n\nWaits for the validation interface queue to "
            "catch up on everything that was there when we entered this function.\n"), help_text)
        self.assertError(self.call("syncwithvalidationinterfacequeue", [1]), -1, help_text)
        self.assertNotIn("syncwithvalidationinterfacequeue", node.rpc("help"))

    def test_echo_named_arguments(self) -> None:
        self.assertEqual(self.call("echo", {"arg1": 5})["result"], [None, 5])
        self.assertEqual(self.call("echojson", {"arg0": "a", "arg2": [True]})["result"],
                         ["a", None, [True]])
        self.assertEqual(self.call("echo", {"arg9": 9})["result"], [None] * 9 + [9])
        self.assertError(self.call("echo", {"arg10": 1}), -8, "Unknown named parameter arg10")
        # Positional calls still answer every value, nulls and all, past ten.
        values = list(range(11)) + [None]
        self.assertEqual(self.call("echo", values)["result"], values)
        result = self.node.cli("-named", "echojson", "arg0=[1,{\"b\":null}]", "arg1=2")
        self.assertEqual((result.returncode, json.loads(result.stdout), result.stderr),
                         (0, [[1, {"b": None}], 2], ""))

    def test_uptime_follows_mock_time(self) -> None:
        node = self.node
        before = node.rpc("uptime")
        node.rpc("setmocktime", int(time.time()) + 100_000)
        self.assertGreaterEqual(node.rpc("uptime"), 100_000)
        node.rpc("setmocktime", 0)
        self.assertLess(node.rpc("uptime"), before + 60)

    def test_prioritisetransaction_bad_txid(self) -> None:
        # Core 0.17's ParseHashStr: a plain runtime error (-1), and no length check.
        for txid in ("zz", "", "abc", "0x" + "00" * 32):
            self.assertError(self.call("prioritisetransaction", [txid, 0, 1000]), -1,
                             "txid must be hexadecimal string (not '%s')" % txid)
        self.assertIs(self.node.rpc("prioritisetransaction", "ab", 0, 1000), True)
        # Core's order: txid, then the fee delta, then the dummy.
        self.assertError(self.call("prioritisetransaction", ["zz", "x", "y"]), -1,
                         "txid must be hexadecimal string (not 'zz')")
        self.assertError(self.call("prioritisetransaction", ["ab", 1, "y"]), -1,
                         "JSON value is not an integer as expected")
        with self.assertRaises(RPCFailure) as caught:
            self.node.rpc("prioritisetransaction", 5, 0, 1000)
        self.assertEqual((caught.exception.code, caught.exception.message),
                         (-1, "JSON value is not a string as expected"))
