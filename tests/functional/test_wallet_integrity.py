"""Wallet integrity on real nodes (security issue #11): abandoned transactions that come
back, corrupted keys, clear keys after a crash during encryption, labels that are not text.

Every test starts private nodes (they restart them, kill them or damage their files): in
this process, but where a ``coind`` process must be killed or fail to start.
"""

from __future__ import annotations

import http.client
import json
import os
import sqlite3
import time
from decimal import Decimal
from typing import Any, Dict, List, Set, Tuple

from tests.inprocess import InProcessNode
from tests.nodeharness import MINER_ADDRESS, NodeClient, NodeProcess
from tests.functional.test_wallet_admin import dumped_secrets, found_secrets, read_if_present
from tests.functional.test_wallet_tx import (
    ARGS, EXTERNAL, UNLOCK_FIRST, RPCCase, call,
)
from tests.unit.wallet.test_wallet import rewrite


def restart(node: InProcessNode, *extra: str) -> None:
    """Stop the node and start it again with ``extra`` instead of the previous extras."""
    node.restart(*[a for a in node.args if not a.startswith("-minrelaytxfee=")] + list(extra))


def abandoned(node: NodeClient, txid: str) -> Set[bool]:
    """The ``abandoned`` flags of a transaction's send entries."""
    return {d["abandoned"] for d in call(node, "gettransaction", txid)["details"]
            if d["category"] == "send"}


def output_paying(node: NodeClient, txid: str, value: str) -> int:
    vouts = call(node, "decoderawtransaction", call(node, "gettransaction", txid)["hex"])["vout"]
    return next(o["n"] for o in vouts if o["value"] == Decimal(value))


def signed(node: NodeClient, inputs: List[Dict[str, Any]], outputs: Dict[str, Any]) -> str:
    raw = call(node, "createrawtransaction", inputs, outputs)
    result = call(node, "signrawtransactionwithwallet", raw)
    assert result["complete"], result
    return result["hex"]


def copy_blocks(source: NodeClient, target: NodeClient, start: int) -> None:
    """Hand ``source``'s blocks from ``start`` to its tip to ``target`` (no P2P)."""
    for height in range(start, call(source, "getblockcount") + 1):
        block = call(source, "getblock", call(source, "getblockhash", height), 0)
        assert call(target, "submitblock", block) is None


class AbandonTests(RPCCase):
    """Core's wallet_abandonconflict.py scenario, on one wallet node and a second miner."""

    def test_abandoned_transaction_that_comes_back_is_not_abandoned(self) -> None:
        node, _ = self.private_node()
        sends = []
        for _ in range(3):  # three 10-coin outputs, kept from the next send's coin selection
            sends.append(call(node, "sendtoaddress", call(node, "getnewaddress"), 10))
            call(node, "lockunspent", False, [{"txid": sends[-1],
                                               "vout": output_paying(node, sends[-1], "10")}])
        call(node, "lockunspent", True)
        txa, txb, txc = sends
        call(node, "generatetoaddress", 1, MINER_ADDRESS)
        self.assertError(node, -5, "Invalid or non-wallet transaction id", "abandontransaction",
                         "ff" * 32)
        self.assertError(node, -5, "Transaction not eligible for abandonment",
                         "abandontransaction", txa)
        balance = call(node, "getbalance")
        na, nb, nc = (output_paying(node, txid, "10") for txid in sends)

        # AB1 spends A and B; ABC2 spends AB1's change and C; a child spends ABC2.
        ab1 = signed(node, [{"txid": txa, "vout": na}, {"txid": txb, "vout": nb}],
                     {call(node, "getnewaddress"): Decimal("14.99998"), EXTERNAL: 5})
        txab1 = call(node, "sendrawtransaction", ab1)
        nab = output_paying(node, txab1, "14.99998")
        abc2 = signed(node, [{"txid": txab1, "vout": nab}, {"txid": txc, "vout": nc}],
                      {call(node, "getnewaddress"): Decimal("24.9996")})
        txabc2 = call(node, "sendrawtransaction", abc2)
        child_change = Decimal("24.999")
        child = signed(node, [{"txid": txabc2, "vout": 0}],
                       {call(node, "getnewaddress"): child_change})
        txchild = call(node, "sendrawtransaction", child)
        self.assertEqual(call(node, "getbalance"), balance - 30 + child_change)
        balance = call(node, "getbalance")

        # A higher relay fee floor: AB1 (5 sat/byte) no longer enters the pool, nor its children.
        restart(node, "-minrelaytxfee=0.0001")
        self.assertEqual(call(node, "getrawmempool"), [])
        self.assertEqual(call(node, "getbalance"), balance - child_change)
        self.assertNotIn(txabc2, [u["txid"] for u in call(node, "listunspent", 0)])
        balance -= child_change

        # Abandoning AB1 abandons its descendants and frees A, B and C.
        self.assertIsNone(call(node, "abandontransaction", txab1))
        self.assertEqual([abandoned(node, t) for t in (txab1, txabc2, txchild)], [{True}] * 3)
        self.assertEqual(call(node, "getbalance"), balance + 30)
        balance += 30
        restart(node, "-minrelaytxfee=0.00001")
        self.assertEqual(call(node, "getrawmempool"), [])  # not offered again once abandoned
        self.assertEqual(call(node, "getbalance"), balance)

        # Sent again, AB1 is back in the pool: not abandoned, A and B spent, its change counts.
        call(node, "sendrawtransaction", ab1)
        self.assertEqual(abandoned(node, txab1), {False})
        self.assertEqual(abandoned(node, txabc2), {True})
        self.assertEqual(call(node, "getbalance"), balance - 20 + Decimal("14.99998"))
        unspent = {(u["txid"], u["vout"]) for u in call(node, "listunspent", 0)}
        self.assertEqual(unspent & {(txa, na), (txb, nb), (txc, nc), (txab1, nab)},
                         {(txc, nc), (txab1, nab)})
        balance += Decimal("14.99998") - 20
        call(node, "sendrawtransaction", abc2)
        self.assertEqual(abandoned(node, txabc2), {False})
        self.assertEqual(call(node, "getbalance"),
                         balance - 10 - Decimal("14.99998") + Decimal("24.9996"))

        # Out of the pool again after a restart: still not abandoned (it was written).
        restart(node, "-minrelaytxfee=0.0001")
        self.assertEqual(call(node, "getrawmempool"), [])
        self.assertEqual([abandoned(node, t) for t in (txab1, txabc2, txchild)],
                         [{False}, {False}, {True}])
        self.assertEqual(call(node, "getbalance"), balance - 10 - Decimal("14.99998"))

        # Abandoned once more, then mined by another node: confirmed and not abandoned.
        call(node, "abandontransaction", txab1)
        self.assertEqual(abandoned(node, txabc2), {True})
        balance = call(node, "getbalance")
        miner = self.start_node(*ARGS, "-connect=0")
        copy_blocks(node, miner, 1)
        call(miner, "sendrawtransaction", ab1)
        call(miner, "generatetoaddress", 1, MINER_ADDRESS)
        copy_blocks(miner, node, call(node, "getblockcount") + 1)
        gettx = call(node, "gettransaction", txab1)
        self.assertEqual((gettx["confirmations"], abandoned(node, txab1)), (1, {False}))
        self.assertEqual(abandoned(node, txabc2), {True})
        # The new block also matures one more of the wallet's coinbases.
        balance += 50 - 20 + Decimal("14.99998")
        self.assertEqual(call(node, "getbalance"), balance)
        restart(node)
        self.assertEqual(abandoned(node, txab1), {False})
        self.assertEqual(call(node, "getbalance"), balance)


PARSE_ERROR = b'{"result":null,"error":{"code":-32700,"message":"Parse error"},"id":null}\n'
NOT_TEXT = "\udc80"  # half a surrogate pair: JSON can escape it, UTF-8 cannot hold it


class TextTests(RPCCase):
    """Free strings that are not text are refused before any method runs (UniValue's rule)."""

    def test_strings_that_are_not_text_change_nothing(self) -> None:
        node = self.start_node(*ARGS)
        first = call(node, "getnewaddress", "first")
        pubkey = call(node, "getaddressinfo", first)["pubkey"]
        wif = call(node, "dumpprivkey", first)
        for method, params in (
                ("getnewaddress", [NOT_TEXT]), ("setlabel", [first, NOT_TEXT]),
                ("getaddressesbylabel", [NOT_TEXT]),
                ("importprivkey", [wif, NOT_TEXT, False]),
                ("importaddress", [EXTERNAL, NOT_TEXT, False]),
                ("importpubkey", [pubkey, NOT_TEXT, False]),
                ("sendtoaddress", [EXTERNAL, 1, NOT_TEXT]),
                ("sendtoaddress", [EXTERNAL, 1, "", NOT_TEXT]),
                ("sendmany", ["", {EXTERNAL: 1}, 1, NOT_TEXT]),
                ("signmessage", [first, NOT_TEXT]), ("encryptwallet", [NOT_TEXT])):
            body = json.dumps({"method": method, "params": params, "id": 1}).encode()
            self.assertIn(b"\\udc80", body)
            status, _, reply = node.post(body)
            self.assertEqual((status, reply), (500, PARSE_ERROR), method)
        result = node.cli("getnewaddress", NOT_TEXT)  # coin-cli sends the raw byte 0x80
        self.assertIn("Parse error", result.stderr)

        # No key was used up, no label written, nothing encrypted; the same after a restart.
        for _ in range(2):
            self.assertEqual([(e["address"], e["label"])
                              for e in call(node, "listreceivedbyaddress", 0, True, True)],
                             [(first, "first")])
            self.assertNotIn("unlocked_until", call(node, "getwalletinfo"))
            self.assertEqual(call(node, "getwalletinfo")["txcount"], 0)
            restart(node)
        second = call(node, "getnewaddress")
        self.assertEqual([call(node, "getaddressinfo", a)["hdkeypath"] for a in (first, second)],
                         ["m/0'/0'/0'", "m/0'/0'/1'"])


class CorruptKeyTests(RPCCase):
    """A private key that is not its public key's is refused, never exported (Core's
    "CPrivKey corrupt")."""

    def setUp(self) -> None:
        self.node = self.start_node(*ARGS)

    def wallet_file(self, name: str) -> str:
        return os.path.join(self.node.net_datadir, "wallets", name, "wallet.dat")

    def new_key(self, wallet: str) -> Tuple[str, bytes]:
        address = call(self.node, "getnewaddress", path="/wallet/" + wallet)
        info = call(self.node, "getaddressinfo", address, path="/wallet/" + wallet)
        return address, bytes.fromhex(info["pubkey"])

    def test_damaged_clear_key_refuses_loadwallet_and_start_up(self) -> None:
        node = self.node
        call(node, "createwallet", "w")
        address, pubkey = self.new_key("w")
        call(node, "unloadwallet", "w")
        path = self.wallet_file("w")
        damaged = bytes(32 - len(b"damaged")) + b"damaged"
        rewrite(path, "UPDATE keys SET secret = ? WHERE pubkey = ?", damaged, pubkey)
        corrupted = ("Error loading %s: Wallet corrupted: the private key of %s (public key %s) "
                     "does not match it (CPrivKey corrupt)" % (path, address, pubkey.hex()))
        self.assertError(node, -4, "Wallet loading failed: " + corrupted, "loadwallet", "w")
        self.assertEqual(call(node, "listwallets"), [""])

        node.stop()
        # The refused start-up is seen in its exit status and stderr: a coind process's.
        process = NodeProcess.start(node.datadir, ARGS + ["-wallet=w"], wait=False)
        self.addCleanup(process.kill)
        self.assertEqual(process.wait(), 1)
        self.assertIn("Error: Wallet loading failed: " + corrupted + "\n", process.stderr_text())

    def test_damaged_encrypted_key_refuses_the_unlock(self) -> None:
        node = self.node
        call(node, "createwallet", "e")
        call(node, "encryptwallet", "pass", path="/wallet/e")
        address, pubkey = self.new_key("e")
        _, other = self.new_key("e")
        call(node, "unloadwallet", "e")
        path = self.wallet_file("e")
        rewrite(path, "UPDATE keys SET crypted = (SELECT crypted FROM keys WHERE pubkey = ?) "
                      "WHERE pubkey = ?", other, pubkey)
        call(node, "loadwallet", "e")  # locked: nothing can be checked yet
        self.assertError(node, -4, "Error: Wallet corrupted: the private key of %s (public key "
                         "%s) does not match it; it stays locked" % (address, pubkey.hex()),
                         "walletpassphrase", "pass", 60, path="/wallet/e")
        self.assertEqual(call(node, "getwalletinfo", path="/wallet/e")["unlocked_until"], 0)
        self.assertError(node, -13, UNLOCK_FIRST, "dumpprivkey", address, path="/wallet/e")


#: kill -9 points of encryptwallet: fractions of one call's duration (before its commit,
#: mostly), then milliseconds after its commit is seen (the clear keys' window).
KILL_FRACTIONS = (0.3, 0.6)
KILL_AFTER_COMMIT_MS = (0, 1, 2, 5)


def wait_for_commit(path: str, timeout: float = 30.0) -> None:
    """Until encryptwallet's transaction is in ``path`` (its master key row)."""
    reader = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=timeout)
    try:
        deadline = time.monotonic() + timeout
        while not reader.execute("SELECT 1 FROM meta WHERE name = 'master_key'").fetchone():
            assert time.monotonic() < deadline, "encryptwallet did not commit"
    finally:
        reader.close()  # before the kill: the node's connection stays the last one


class EncryptCrashTests(RPCCase):
    """kill -9 during encryptwallet never leaves a clear key in the wallet's files once the
    wallet is opened again."""

    def test_kill9_during_encryptwallet_leaves_no_clear_key(self) -> None:
        node = NodeProcess.start(self.mktemp(), ["-keypool=300", "-listen=0"])
        self.addCleanup(node.kill)
        call(node, "createwallet", "timing")
        start = time.monotonic()
        call(node, "encryptwallet", "pass", path="/wallet/timing")
        duration = time.monotonic() - start
        kills = [(f * duration, None) for f in KILL_FRACTIONS] + [
            (None, ms / 1000) for ms in KILL_AFTER_COMMIT_MS]
        outcomes = []
        for attempt, (delay, after_commit) in enumerate(kills):
            name = "k%d" % attempt
            call(node, "createwallet", name)
            base = os.path.join(node.net_datadir, "wallets", name, "wallet.dat")
            dump = os.path.abspath(self.mktemp())
            call(node, "dumpwallet", dump, path="/wallet/" + name)
            secrets = dumped_secrets(dump)
            request = http.client.HTTPConnection("127.0.0.1", node.rpcport, timeout=60)
            request.request("POST", "/wallet/" + name, headers={
                "Authorization": node._authorization()}, body=json.dumps(
                {"method": "encryptwallet", "params": ["pass"], "id": 1}).encode())
            if after_commit is None:
                time.sleep(delay)
            else:
                wait_for_commit(base)
                time.sleep(after_commit)
            node.kill()
            request.close()
            node.launch()
            node.wait_ready()
            call(node, "loadwallet", name)
            encrypted = "unlocked_until" in call(node, "getwalletinfo", path="/wallet/" + name)
            outcomes.append(encrypted)
            if not encrypted:  # killed before the encryption committed: the wallet as it was
                again = os.path.abspath(self.mktemp())
                call(node, "dumpwallet", again, path="/wallet/" + name)
                self.assertEqual(set(dumped_secrets(again)), set(secrets))
                continue
            for path in (base, base + "-wal", base + "-shm"):
                self.assertEqual(len(found_secrets(read_if_present(path), secrets)), 0,
                                 "clear keys after kill %d: %s" % (attempt, path))
            # The first unlock decrypts and checks every key: the wallet is whole.
            self.assertIsNone(call(node, "walletpassphrase", "pass", 60, path="/wallet/" + name))
        self.assertEqual(outcomes[len(KILL_FRACTIONS):], [True] * len(KILL_AFTER_COMMIT_MS))
