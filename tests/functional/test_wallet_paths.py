"""Wallet names, paths and files on real nodes (security issue #11: F1, F5, F6, F11): the
issue's exact attack strings, hostile names over RPC and ``-wallet``, a 0-byte wallet file,
backups onto a loaded wallet, and a ``-datadir`` with ``%``.

Nodes run in this process, but those whose start-up must fail: that is a ``coind``
process's exit status and stderr."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from typing import Any, Dict, List

from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import NodeClient, NodeProcess, RPCFailure

NOT_LOADED = "Requested wallet does not exist or is not loaded"
BACKUP_FAILED = "Error: Wallet backup failed!"


def digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def paths_under(top: str, skip: str) -> List[str]:
    found = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(root, d) != skip]
        found += [os.path.join(root, name) for name in dirs + files]
    return sorted(found)


class WalletPathsTestCase(NodeTestCase):
    def start(self, *args: str) -> InProcessNode:
        node = self.start_node(*args, datadir=os.path.join(self.sandbox,
                                                           "node%d" % len(self.nodes)))
        self.nodes.append(node)
        return node

    def setUp(self) -> None:
        self.sandbox = os.path.abspath(self.mktemp())
        self.nodes: List[NodeClient] = []

    def raw(self, node: NodeClient, body: str) -> Dict[str, Any]:
        """A request written by hand (for escapes json.dumps would not send as they are)."""
        status, _, reply = node.post(body.encode("ascii"))
        return json.loads(reply)["error"]

    def fails(self, node: NodeClient, code: int, message: Any, method: str,
              *params: Any) -> None:
        with self.assertRaises(RPCFailure) as caught:
            node.rpc(method, *params)
        self.assertEqual((caught.exception.code, caught.exception.message), (code, message))


class AttackTests(WalletPathsTestCase):
    def test_attack_strings_stay_inside_the_wallet_directory(self):
        node, other = self.start(), self.start()
        walletdir = os.path.join(node.net_datadir, "wallets")
        other_walletdir = os.path.join(other.net_datadir, "wallets")
        node.rpc("createwallet", "victim")
        victim_address = node.rpc("getnewaddress", path="/wallet/victim")
        victim = {"seed": node.rpc("getwalletinfo", path="/wallet/victim")["hdmasterkeyid"],
                  "key": node.rpc("dumpprivkey", victim_address, path="/wallet/victim")}
        other_seed = other.rpc("getwalletinfo")["hdmasterkeyid"]
        other_file = os.path.join(other_walletdir, "wallet.dat")
        other_digest = digest(other_file)
        outside = paths_under(self.sandbox, walletdir)
        # Names are literal: the percent signs and "?" are part of a folder's name.
        for name, parts in [("%2e%2e/%2e%2e/%2e%2e", ["%2e%2e"] * 3),
                            ("x/%2e%2e/victim", ["x", "%2e%2e", "victim"]),
                            ("a?b", ["a?b"])]:
            self.assertEqual(node.rpc("createwallet", name), {"name": name, "warning": ""})
            wallet_file = os.path.join(walletdir, *parts, "wallet.dat")
            self.assertEqual(os.stat(wallet_file).st_mode & 0o777, 0o600)
            self.assertNotEqual(node.rpc("getwalletinfo", path="/wallet/" + name.replace(
                "%", "%25").replace("?", "%3F"))["hdmasterkeyid"], victim["seed"])
        self.assertFalse(os.path.exists(os.path.join(walletdir, "a")))
        # Relative names that point into the other node's datadir are refused, loaded or
        # not; so is an absolute path to a file (Core: only bare names may be data files).
        os.symlink(other_walletdir, os.path.join(walletdir, "link"))
        for name in (os.path.relpath(other_walletdir, walletdir), "link",
                     os.path.relpath(other_file, walletdir), other_file):
            for method in ("createwallet", "loadwallet"):
                with self.assertRaises(RPCFailure) as caught:
                    node.rpc(method, name)
                self.assertEqual(caught.exception.code, -4)
                self.assertIn("Invalid -wallet path '%s'" % name, caught.exception.message)
        # Its wallet folder named absolutely (Core 0.17 accepts it): never written over,
        # never opened while the other node holds it.
        self.fails(node, -4, "Wallet %s already exists." % other_walletdir, "createwallet",
                   other_walletdir)
        with self.assertRaises(RPCFailure) as caught:
            node.rpc("loadwallet", other_walletdir)
        self.assertEqual(caught.exception.code, -4)
        self.assertIn("in use by another wallet or process", caught.exception.message)
        self.fails(node, -4, "Wallet victim already exists.", "createwallet", "victim")
        self.assertEqual(paths_under(self.sandbox, walletdir), outside)
        self.assertEqual(node.rpc("getwalletinfo", path="/wallet/victim")["hdmasterkeyid"],
                         victim["seed"])
        self.assertEqual(node.rpc("dumpprivkey", victim_address, path="/wallet/victim"),
                         victim["key"])
        self.assertEqual(other.rpc("getwalletinfo")["hdmasterkeyid"], other_seed)
        self.assertEqual(digest(other_file), other_digest)

    def test_hostile_names_get_wallet_errors(self):
        node = self.start()
        before = paths_under(self.sandbox, "")
        too_long = "Wallet file verification failed: Error loading wallet %s. File name too long"
        for name in ("x" * 256, "a/" * 2000 + "a"):
            self.fails(node, -4, too_long % name, "createwallet", name)
            self.fails(node, -4, too_long % name, "loadwallet", name)
            self.fails(node, -18, NOT_LOADED, "unloadwallet", name)
        self.fails(node, -4, "Wallet wallet.dat already exists.", "createwallet", "wallet.dat")
        self.fails(node, -4, "Wallet file verification failed: Error loading wallet wallet.dat. "
                   "Duplicate -wallet filename specified.", "loadwallet", "wallet.dat")
        for name in ("a\0b", "../escape", "/", "/abs/../x", "/abs/./x", "/abs/"):
            for method in ("createwallet", "loadwallet"):
                with self.assertRaises(RPCFailure) as caught:
                    node.rpc(method, name)
                self.assertEqual(caught.exception.code, -4)
                self.assertTrue(caught.exception.message.startswith(
                    "Wallet file verification failed: Invalid -wallet path"))
        # Half a surrogate pair is no string: the request does not parse (-32700), as in Core.
        for method in ("createwallet", "loadwallet", "unloadwallet"):
            error = self.raw(node, '{"method":"%s","params":["\\ud800"],"id":1}' % method)
            self.assertEqual(error, {"code": -32700, "message": "Parse error"})
        self.assertEqual(paths_under(self.sandbox, ""), before)  # nothing created anywhere

    def test_a_zero_byte_wallet_file_is_refused_and_left_alone(self):
        node = self.start()
        folder = os.path.join(node.net_datadir, "wallets", "zero")
        os.makedirs(folder)
        open(os.path.join(folder, "wallet.dat"), "wb").close()
        with self.assertRaises(RPCFailure) as caught:
            node.rpc("loadwallet", "zero")
        self.assertEqual(caught.exception.code, -4)
        self.assertIn("is not a coin wallet", caught.exception.message)
        self.fails(node, -4, "Wallet zero already exists.", "createwallet", "zero")
        self.assertEqual(os.listdir(folder), ["wallet.dat"])
        self.assertEqual(os.path.getsize(os.path.join(folder, "wallet.dat")), 0)
        self.assertNotIn("zero", node.rpc("listwallets"))


class BackupTests(WalletPathsTestCase):
    def test_backups_onto_a_loaded_wallet_are_refused_and_block_nothing(self):
        node = self.start()
        node.rpc("createwallet", "b")
        b_file = os.path.join(node.net_datadir, "wallets", "b", "wallet.dat")
        b_digest = digest(b_file)
        genesis = node.rpc("getblockhash", 0)
        errors: List[Any] = []

        def backup(destination: str) -> None:
            try:
                node.rpc("backupwallet", destination, path="/wallet/")
            except Exception as e:  # noqa: BLE001 - collected and checked below
                errors.append(e)

        # More than the reactor's 10 shared threads: they used to hang there for good.
        threads = [threading.Thread(target=backup, args=(d,)) for d in
                   [b_file] * 8 + [b_file + "-wal", os.path.dirname(b_file)] * 3]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual([(e.code, e.message) for e in errors], [(-4, BACKUP_FAILED)] * 14)
        self.assertEqual(digest(b_file), b_digest)
        self.assertEqual(node.rpc("getwalletinfo", path="/wallet/b")["walletname"], "b")
        self.assertEqual(node.rpc("getblock", genesis, 2)["hash"], genesis)
        self.assertEqual(node.rpc("gettxoutsetinfo")["height"], 0)
        status, _, body = node.post(b"", path="/rest/block/%s.json" % genesis, method="GET",
                                    timeout=10)
        self.assertEqual((status, json.loads(body)["hash"]), (200, genesis))
        copy = os.path.join(self.sandbox, "copy.dat")
        self.assertIsNone(node.rpc("backupwallet", copy, path="/wallet/"))
        self.assertIsNone(node.rpc("backupwallet", copy, path="/wallet/"))  # over an old copy
        started = time.monotonic()
        self.assertEqual(node.stop(), 0)
        self.assertLess(time.monotonic() - started, 30)


class StartupTests(WalletPathsTestCase):
    def test_bad_wallet_options_stop_start_up_and_create_nothing(self):
        invalid = "Error: Invalid -wallet path '%s'."
        for name, message in [("../escape", invalid % "../escape"),
                              ("/abs/../x", invalid % "/abs/../x"),
                              ("a//b", invalid % "a//b"),
                              ("x" * 256, "Error: Error loading wallet %s. File name too long"
                               % ("x" * 256)),
                              ("\udcff", "Error: Invalid wallet name: not a valid UTF-8 string")]:
            datadir = os.path.join(self.sandbox, "bad%d" % len(self.nodes))
            node = NodeProcess.start(datadir, ["-wallet=" + name], wait=False)
            self.addCleanup(node.kill)
            self.nodes.append(node)
            self.assertEqual(node.wait(60), 1)
            self.assertIn(message, node.stderr_text())
            # Only the empty wallets folder Core's first run makes with the datadir.
            self.assertEqual(os.listdir(os.path.join(node.net_datadir, "wallets")), [])
            self.assertFalse(os.path.exists(os.path.join(node.net_datadir, "chainstate.sqlite")))
        self.assertEqual(sorted(os.listdir(self.sandbox)),
                         ["bad%d" % i for i in range(len(self.nodes))])

    def test_absolute_wallet_paths_as_core_0_17(self):
        """-wallet=/abs/dir/w and createwallet "/abs/dir/w" land exactly there."""
        started = os.path.join(self.sandbox, "elsewhere", "%2e%2e", "w")
        node = self.start("-wallet=" + started, "-paytxfee=0.0002", "-txconfirmtarget=2")
        self.assertEqual(node.rpc("listwallets"), [started])
        # -paytxfee is each wallet's starting settxfee (a Core-era tool's argument).
        self.assertEqual(node.rpc("getwalletinfo")["paytxfee"], 0.0002)
        self.assertTrue(os.path.isfile(os.path.join(started, "wallet.dat")))
        created = os.path.join(self.sandbox, "other place", "w2")
        self.assertEqual(node.rpc("createwallet", created), {"name": created, "warning": ""})
        self.assertTrue(os.path.isfile(os.path.join(created, "wallet.dat")))
        self.assertEqual(os.listdir(os.path.join(node.net_datadir, "wallets")), [])
        address = node.rpc("getnewaddress", path="/wallet/" + created.replace(
            "%", "%25").replace(" ", "%20"))
        self.assertTrue(node.rpc("validateaddress", address)["isvalid"])
        # Never twice, never over an existing one.
        duplicate = "Wallet file verification failed: Error loading wallet %s. Duplicate " \
                    "-wallet filename specified."
        os.symlink(created, os.path.join(self.sandbox, "alias"))
        alias = os.path.join(self.sandbox, "alias")
        self.fails(node, -4, duplicate % alias, "loadwallet", alias)
        self.fails(node, -4, duplicate % created, "loadwallet", created)
        node.rpc("unloadwallet", created)
        self.fails(node, -4, "Wallet %s already exists." % created, "createwallet", created)
        self.assertEqual(node.rpc("loadwallet", created), {"name": created, "warning": ""})

    def test_two_names_for_one_wallet_stop_start_up(self):
        datadir = os.path.join(self.sandbox, "dup")
        walletdir = os.path.join(datadir, "regtest", "wallets")
        os.makedirs(os.path.join(walletdir, "a"))
        os.symlink("a", os.path.join(walletdir, "alias"))
        node = NodeProcess.start(datadir, ["-wallet=a", "-wallet=alias"], wait=False)
        self.addCleanup(node.kill)
        self.assertEqual(node.wait(60), 1)
        self.assertIn("Error: Error loading wallet alias. Duplicate -wallet filename specified.",
                      node.stderr_text())
        self.assertEqual(os.listdir(os.path.join(walletdir, "a")), [])

    def test_a_datadir_with_url_syntax_is_used_literally(self):
        for name in ("pct%41", "q?x=1#y"):
            datadir = os.path.join(self.sandbox, name)
            node = self.start_node(datadir=datadir)
            node.rpc("createwallet", "w")
            self.assertTrue(os.path.isfile(os.path.join(node.net_datadir, "chainstate.sqlite")))
            self.assertTrue(os.path.isfile(os.path.join(node.net_datadir, "wallets", "w",
                                                        "wallet.dat")))
            self.assertEqual(node.stop(), 0)
        self.assertEqual(sorted(os.listdir(self.sandbox)), ["pct%41", "q?x=1#y"])
