"""rpcauth entries (coin.config.rpcauth) and share/rpcuser/rpcuser.py."""

from __future__ import annotations

import os
import subprocess
import sys

from twisted.trial.unittest import SynchronousTestCase

from coin.config import ConfigError
from coin.config.rpcauth import (
    RpcAuth,
    check_rpcauth,
    generate_password,
    make_rpcauth,
    parse_rpcauth,
)
from tests import ROOT

# The entry Core's rpcauth.py produced for the reference node (rpcauth_00).
ALICE = ("alice:87c57cff96c85c17705d96d8a8e716ad$"
         "dc6c00c259a6d5c54bdd97b98609826dcaf1247c5441c938cf316e4bdc78a66b")
SCRIPT = os.path.join(ROOT, "share", "rpcuser", "rpcuser.py")


class RpcAuthTests(SynchronousTestCase):

    def test_same_hash_as_core(self) -> None:
        self.assertEqual(make_rpcauth("alice", "alicepw", "87c57cff96c85c17705d96d8a8e716ad"),
                         ALICE)

    def test_random_salt(self) -> None:
        user, salt, digest = parse_rpcauth(make_rpcauth("bob", "pw"))
        self.assertEqual(user, "bob")
        self.assertEqual(len(salt), 32)
        int(salt, 16)
        self.assertNotEqual(make_rpcauth("bob", "pw"), make_rpcauth("bob", "pw"))

    def test_parse(self) -> None:
        self.assertEqual(parse_rpcauth(ALICE), RpcAuth("alice", ALICE[6:38], ALICE[39:]))
        # Core splits at ':' and '$' alike.
        self.assertEqual(parse_rpcauth("a:b:c"), RpcAuth("a", "b", "c"))
        for bad in ("alice", "alice:salt", "a:b$c$d", "a:b:c:d", ""):
            error = self.assertRaises(ConfigError, parse_rpcauth, bad)
            self.assertEqual(str(error), "Invalid -rpcauth argument.")

    def test_check(self) -> None:
        entries = [parse_rpcauth(make_rpcauth("bob", "bobpw")), parse_rpcauth(ALICE)]
        self.assertTrue(check_rpcauth(entries, "alice", "alicepw"))
        self.assertTrue(check_rpcauth(entries, "bob", "bobpw"))
        self.assertFalse(check_rpcauth(entries, "alice", "wrong"))
        self.assertFalse(check_rpcauth(entries, "alice", "bobpw"))
        self.assertFalse(check_rpcauth(entries, "carol", "alicepw"))
        self.assertFalse(check_rpcauth([], "alice", "alicepw"))

    def test_non_utf8_password_bytes(self) -> None:
        password = b"p\xff".decode("utf-8", "surrogateescape")
        entries = [parse_rpcauth(make_rpcauth("u", password))]
        self.assertTrue(check_rpcauth(entries, "u", password))

    def test_generated_password(self) -> None:
        password = generate_password()
        self.assertEqual(len(password), 44)
        self.assertTrue(set(password) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                             "0123456789-_="))


class ScriptTests(SynchronousTestCase):
    """The script as a user runs it, from the source tree."""

    def run_script(self, *args: str) -> list[str]:
        output = subprocess.run([sys.executable, SCRIPT, *args], check=True, cwd="/",
                                capture_output=True, text=True).stdout
        self.assertTrue(output.endswith("\n"))
        return output.split("\n")[:-1]

    def test_with_password(self) -> None:
        lines = self.run_script("alice", "alicepw")
        self.assertEqual(lines[0], "String to be appended to coin.conf:")
        self.assertTrue(lines[1].startswith("rpcauth=alice:"))
        self.assertEqual(lines[2:], ["Your password:", "alicepw"])
        entry = parse_rpcauth(lines[1][len("rpcauth="):])
        self.assertTrue(check_rpcauth([entry], "alice", "alicepw"))

    def test_generates_password(self) -> None:
        lines = self.run_script("bob")
        self.assertEqual(len(lines), 4)
        entry = parse_rpcauth(lines[1][len("rpcauth="):])
        self.assertTrue(check_rpcauth([entry], "bob", lines[3]))
