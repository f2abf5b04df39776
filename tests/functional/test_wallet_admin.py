"""Wallet administration RPCs on real nodes in this process: loading and routing, addresses
and labels, imports, dumps and backups, rescans, encryption and message signing.

Each test starts a node of its own with its class's arguments, on a copy of the datadir a
first start with them made (wallets and key pools already written):

- ``MULTI``: ``-wallet=a -wallet=b``; no default wallet, so ``/`` answers -19 for wallet
  methods.  Tests create further wallets under names of their own.
- ``SINGLE``: the default wallet ``""``; encryption and ``coin-cli -rpcwallet``.
- ``LONG``: a small key pool, for a chain long enough (1500 blocks) for a rescan to be
  caught running.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, List, Optional, Tuple

from coin.chainparams import REGTEST
from coin.primitives.address import Destination, decode_wif, encode_address, encode_wif
from coin.primitives.hashes import hash160
from coin.script.standard import multisig_script
from coin.testing.chainbuilder import deterministic_key

from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import RPCFailure

WALLET_INFO_KEYS = ["walletname", "walletversion", "balance", "unconfirmed_balance",
                    "immature_balance", "txcount", "keypoololdest", "keypoolsize",
                    "keypoolsize_hd_internal", "paytxfee", "hdmasterkeyid"]
ENCRYPTED_RESULT = ("wallet encrypted; The keypool has been flushed and a new HD seed was "
                    "generated (if you are using HD). You need to make a new backup.")
NOT_LOADED = "Requested wallet does not exist or is not loaded"
NOT_SPECIFIED = ("Wallet file not specified (must request wallet RPC through /wallet/<filename> "
                 "uri-path).")
UNLOCK_FIRST = "Error: Please enter the wallet passphrase with walletpassphrase first."


def p2pkh(key) -> str:
    return encode_address(Destination("pubkeyhash", hash160(key.public_key.format())), REGTEST)


def started(node: InProcessNode) -> None:
    """Nothing but the first start: what it wrote (the wallets) is what tests copy."""


MULTI = ("-wallet=a", "-wallet=b")
SINGLE: Tuple[str, ...] = ()
LONG = ("-keypool=10",)


class WalletTestCase(NodeTestCase):
    shared: Tuple[str, ...]

    def setUp(self) -> None:
        self.node = self.start_node(*self.shared, chain=started)

    def call(self, wallet: Optional[str], method: str, *params: Any, **named: Any) -> Any:
        path = "/" if wallet is None else "/wallet/" + wallet
        return self.node.rpc(method, *params, path=path, **named)

    def fails(self, code: int, message: Optional[str], wallet: Optional[str], method: str,
              *params: Any, **named: Any) -> RPCFailure:
        with self.assertRaises(RPCFailure) as caught:
            self.call(wallet, method, *params, **named)
        self.assertEqual(caught.exception.code, code, caught.exception.message)
        if message is not None:
            self.assertEqual(caught.exception.message, message)
        return caught.exception

    def walletdir(self) -> str:
        return os.path.join(self.node.net_datadir, "wallets")

    def create(self, name: str, *options: Any) -> str:
        self.assertEqual(self.call(None, "createwallet", name, *options),
                         {"name": name, "warning": ""})
        return name

    def verify(self, address: str, signature: str, message: str) -> bool:
        return self.call(None, "verifymessage", address, signature, message)


# ---------------------------------------------------------------------------------- routing

class MultiWalletTests(WalletTestCase):
    shared = MULTI

    def test_root_path_needs_a_wallet_name(self):
        for method in ("getwalletinfo", "getnewaddress", "generate"):
            params = [1] if method == "generate" else []
            failure = self.fails(-19, NOT_SPECIFIED, None, method, *params)
            self.assertEqual(failure.status, 500)
        # Methods that need no wallet still answer on "/" and on any wallet path.
        self.assertIn("a", self.call(None, "listwallets"))
        self.assertEqual(self.call("nosuch", "getblockcount"), self.call(None, "getblockcount"))

    def test_wallet_paths_route_to_their_wallet(self):
        status, _, body = self.node.post(
            b'{"method":"getwalletinfo","params":[],"id":1}', path="/wallet/b")
        self.assertEqual(status, 200)
        info = json.loads(body)["result"]
        self.assertEqual(list(info), WALLET_INFO_KEYS)
        self.assertEqual(info["walletname"], "b")
        self.assertEqual(info["walletversion"], 159900)
        self.assertEqual(info["keypoolsize"], 1000)
        self.assertEqual(info["keypoolsize_hd_internal"], 1000)
        self.assertIn(b'"paytxfee":0.00000000', body)
        self.assertEqual(len(info["hdmasterkeyid"]), 40)
        self.assertNotEqual(info["hdmasterkeyid"],
                            self.call("a", "getwalletinfo")["hdmasterkeyid"])
        self.assertEqual(self.call("%61", "getwalletinfo")["walletname"], "a")  # URI-decoded
        for path in ("nosuch", "", "a/extra"):
            failure = self.fails(-18, NOT_LOADED, path, "getwalletinfo")
            self.assertEqual(failure.status, 500)
        self.assertEqual(self.call(None, "listwallets")[:2], ["a", "b"])

    def test_create_load_unload(self):
        self.create("c1")
        self.assertIn("c1", self.call(None, "listwallets"))
        self.fails(-4, "Wallet c1 already exists.", None, "createwallet", "c1")
        self.fails(-4, None, None, "createwallet", "../escape")
        address = self.call("c1", "getnewaddress", "kept")
        self.assertIsNone(self.call(None, "unloadwallet", "c1"))
        self.assertNotIn("c1", self.call(None, "listwallets"))
        self.fails(-18, NOT_LOADED, "c1", "getwalletinfo")
        self.fails(-18, NOT_LOADED, None, "unloadwallet", "c1")
        self.assertEqual(self.call(None, "loadwallet", "c1"), {"name": "c1", "warning": ""})
        self.assertEqual(self.call("c1", "getaddressinfo", address)["label"], "kept")
        self.fails(-4, "Wallet file verification failed: Error loading wallet c1. Duplicate "
                   "-wallet filename specified.", None, "loadwallet", "c1")
        self.fails(-18, "Wallet nosuch not found.", None, "loadwallet", "nosuch")
        os.makedirs(os.path.join(self.walletdir(), "emptydir"))
        self.fails(-18, "Directory emptydir does not contain a wallet.dat file.", None,
                   "loadwallet", "emptydir")
        # Endpoint and name together, or neither.
        self.fails(-8, "Both the RPC endpoint wallet and wallet_name parameter were provided "
                   "(only one allowed)", "c1", "unloadwallet", "c1")
        self.fails(-1, "JSON value is not a string as expected", None, "unloadwallet")
        self.assertIsNone(self.call("c1", "unloadwallet"))
        self.fails(-18, NOT_LOADED, "c1", "getnewaddress")

    def test_watch_only_wallet(self):
        self.create("watch", True)
        self.fails(-4, "Error: Private keys are disabled for this wallet", "watch",
                   "getnewaddress")
        self.fails(-4, "Error: Private keys are disabled for this wallet", "watch",
                   "getrawchangeaddress")
        self.fails(-4, "Error: Private keys are disabled for this wallet", "watch",
                   "keypoolrefill")
        wif = encode_wif(deterministic_key("watch").secret, REGTEST)
        self.fails(-4, "Cannot import private keys to a wallet with private keys disabled",
                   "watch", "importprivkey", wif)
        info = self.call("watch", "getwalletinfo")
        self.assertNotIn("hdmasterkeyid", info)
        self.assertEqual(info["keypoolsize"], 0)
        address = p2pkh(deterministic_key("watch"))
        self.assertIsNone(self.call("watch", "importaddress", address, "w", False))
        details = self.call("watch", "getaddressinfo", address)
        self.assertEqual((details["ismine"], details["iswatchonly"]), (False, True))

    def test_backup_then_load_the_copy(self):
        address = self.call("a", "getnewaddress", "backed up")
        target = os.path.join(self.walletdir(), "acopy", "wallet.dat")
        os.makedirs(os.path.dirname(target))
        self.assertIsNone(self.call("a", "backupwallet", target))
        self.assertEqual(os.stat(target).st_mode & 0o777, 0o600)
        self.assertEqual(self.call(None, "loadwallet", "acopy"), {"name": "acopy", "warning": ""})
        info = self.call("acopy", "getaddressinfo", address)
        self.assertTrue(info["ismine"])
        self.assertEqual(info["labels"], [{"name": "backed up", "purpose": "receive"}])
        self.assertEqual(self.call("acopy", "dumpprivkey", address),
                         self.call("a", "dumpprivkey", address))
        self.assertEqual(self.call("acopy", "getwalletinfo")["hdmasterkeyid"],
                         self.call("a", "getwalletinfo")["hdmasterkeyid"])
        self.fails(-4, "Error: Wallet backup failed!", "a", "backupwallet",
                   os.path.join(self.walletdir(), "no", "such", "dir", "x.dat"))
        # Never onto the wallet's own file (which the copy would truncate).
        self.fails(-4, "Error: Wallet backup failed!", "a", "backupwallet",
                   os.path.join(self.walletdir(), "a"))
        self.assertEqual(self.call("a", "getaddressinfo", address)["label"], "backed up")


# ---------------------------------------------------------------------------------- addresses

class AddressTests(WalletTestCase):
    shared = MULTI

    def test_new_addresses_and_labels(self):
        wallet = self.create("addr")
        self.fails(-11, "Invalid label name", wallet, "getnewaddress", "*")
        self.fails(-5, "Unknown address type 'bech32'", wallet, "getnewaddress", "", "bech32")
        self.fails(-5, "Unknown address type 'p2sh-segwit'", wallet, "getrawchangeaddress",
                   "p2sh-segwit")
        address = self.call(wallet, "getnewaddress", "", "legacy")
        info = self.call(wallet, "getaddressinfo", address)
        self.assertEqual(list(info), ["address", "scriptPubKey", "ismine", "iswatchonly",
                                      "isscript", "iswitness", "pubkey", "iscompressed", "label",
                                      "timestamp", "hdkeypath", "hdseedid", "hdmasterkeyid",
                                      "labels"])
        self.assertEqual((info["ismine"], info["iswatchonly"], info["isscript"]),
                         (True, False, False))
        self.assertEqual(info["hdkeypath"], "m/0'/0'/0'")
        self.assertEqual(info["hdseedid"], self.call(wallet, "getwalletinfo")["hdmasterkeyid"])
        self.assertEqual(info["labels"], [{"name": "", "purpose": "receive"}])
        self.assertEqual(encode_address(Destination("pubkeyhash", hash160(
            bytes.fromhex(info["pubkey"]))), REGTEST), address)
        second = self.call(wallet, "getnewaddress", "second")
        self.assertNotEqual(second, address)
        self.assertEqual(self.call(wallet, "getaddressinfo", second)["hdkeypath"], "m/0'/0'/1'")

        change = self.call(wallet, "getrawchangeaddress")
        info = self.call(wallet, "getaddressinfo", change)
        self.assertEqual(info["hdkeypath"], "m/0'/1'/0'")
        self.assertEqual(info["labels"], [])
        self.assertNotIn("label", info)

        self.assertIsNone(self.call(wallet, "setlabel", change, "now labelled"))
        self.assertEqual(self.call(wallet, "getaddressinfo", change)["labels"],
                         [{"name": "now labelled", "purpose": "receive"}])
        foreign = p2pkh(deterministic_key("foreign"))
        self.call(wallet, "setlabel", foreign, "theirs")
        info = self.call(wallet, "getaddressinfo", foreign)
        self.assertEqual((info["ismine"], info["labels"]),
                         (False, [{"name": "theirs", "purpose": "send"}]))
        self.assertNotIn("pubkey", info)
        self.fails(-5, "Invalid Coin address", wallet, "setlabel", "notanaddress", "x")
        self.fails(-11, "Invalid label name", wallet, "setlabel", change, "*")
        self.fails(-5, "Invalid address", wallet, "getaddressinfo", "notanaddress")

    def test_keypoolrefill(self):
        wallet = self.create("pool")
        self.assertIsNone(self.call(wallet, "keypoolrefill", 1005))
        info = self.call(wallet, "getwalletinfo")
        self.assertEqual((info["keypoolsize"], info["keypoolsize_hd_internal"]), (1005, 1005))
        self.call(wallet, "getnewaddress")
        # Taking a key refills to -keypool (1000), which does not shrink the pool.
        self.assertEqual(self.call(wallet, "getwalletinfo")["keypoolsize"], 1004)
        self.fails(-8, "Invalid parameter, expected valid size.", wallet, "keypoolrefill", -1)

    def test_import_pubkey_address_and_script(self):
        wallet = self.create("imports")
        pubkey = deterministic_key("watched pubkey").public_key.format().hex()
        self.fails(-5, "Pubkey must be a hex string", wallet, "importpubkey", "zz")
        self.fails(-5, "Pubkey is not a valid public key", wallet, "importpubkey", "02" + "00" * 32)
        self.assertIsNone(self.call(wallet, "importpubkey", pubkey, "pk", False))
        address = p2pkh(deterministic_key("watched pubkey"))
        info = self.call(wallet, "getaddressinfo", address)
        self.assertEqual((info["ismine"], info["iswatchonly"], info["labels"]),
                         (False, True, [{"name": "pk", "purpose": "receive"}]))

        own = self.call(wallet, "getnewaddress")
        self.fails(-4, "The wallet already contains the private key for this address or script",
                   wallet, "importaddress", own, "", False)
        self.fails(-5, "Cannot use the p2sh flag with an address - use a script instead",
                   wallet, "importaddress", address, "", False, True)
        self.fails(-5, "Invalid Coin address or script", wallet, "importaddress", "zz!", "",
                   False)

        keys = [deterministic_key("ms%d" % i).public_key.format() for i in range(2)]
        redeem = multisig_script(1, keys)
        self.assertIsNone(self.call(wallet, "importaddress", redeem.hex(), "ms", False, True))
        p2sh = encode_address(Destination("scripthash", hash160(redeem)), REGTEST)
        info = self.call(wallet, "getaddressinfo", p2sh)
        self.assertEqual((info["iswatchonly"], info["isscript"], info["script"], info["hex"],
                          info["sigsrequired"], info["pubkeys"]),
                         (True, True, "multisig", redeem.hex(), 1, [k.hex() for k in keys]))
        self.assertEqual(info["labels"], [{"name": "ms", "purpose": "receive"}])
        # Named parameters use Core's name "address" for the first argument.
        named = p2pkh(deterministic_key("named import"))
        self.assertIsNone(self.call(wallet, "importaddress", address=named, rescan=False))
        self.assertTrue(self.call(wallet, "getaddressinfo", named)["iswatchonly"])

    def test_sign_and_dump_errors(self):
        wallet = self.create("signer")
        address = self.call(wallet, "getnewaddress")
        signature = self.call(wallet, "signmessage", address, "hello")
        self.assertTrue(self.verify(address, signature, "hello"))
        self.assertFalse(self.verify(address, signature, "hello!"))
        wif = self.call(wallet, "dumpprivkey", address)
        self.assertEqual(self.call(None, "signmessagewithprivkey", wif, "hello"), signature)
        foreign = p2pkh(deterministic_key("nobody"))
        p2sh = encode_address(Destination("scripthash", bytes(20)), REGTEST)
        self.fails(-3, "Invalid address", wallet, "signmessage", "bad", "m")
        self.fails(-3, "Address does not refer to key", wallet, "signmessage", p2sh, "m")
        self.fails(-4, "Private key not available", wallet, "signmessage", foreign, "m")
        self.fails(-5, "Invalid Coin address", wallet, "dumpprivkey", "bad")
        self.fails(-3, "Address does not refer to a key", wallet, "dumpprivkey", p2sh)
        self.fails(-4, "Private key for address %s is not known" % foreign, wallet,
                   "dumpprivkey", foreign)


# ---------------------------------------------------------------------------------- imports

class ImportTests(WalletTestCase):
    shared = MULTI

    def test_generate_mines_to_the_wallet(self):
        wallet = self.create("miner")
        before = self.call(None, "getblockcount")
        hashes = self.call(wallet, "generate", 2)
        self.assertEqual(len(hashes), 2)
        self.assertEqual(self.call(None, "getbestblockhash"), hashes[-1])
        self.assertEqual(self.call(None, "getblockcount"), before + 2)
        info = self.call(wallet, "getwalletinfo")
        self.assertEqual(info["txcount"], 2)
        self.assertGreater(info["immature_balance"], 0)
        self.assertEqual(self.call(wallet, "generate", 0), [])

    def test_importprivkey_rescan_finds_an_old_payment(self):
        key = deterministic_key("old payment")
        address = p2pkh(key)
        self.call(None, "generatetoaddress", 1, address)
        wallet = self.create("importer")
        self.assertEqual(self.call(wallet, "getwalletinfo")["txcount"], 0)
        self.fails(-5, "Invalid private key encoding", wallet, "importprivkey", "notakey")
        wif = encode_wif(key.secret, REGTEST)
        self.assertIsNone(self.call(wallet, "importprivkey", wif, "old"))
        info = self.call(wallet, "getwalletinfo")
        self.assertEqual(info["txcount"], 1)
        self.assertGreater(info["immature_balance"], 0)
        details = self.call(wallet, "getaddressinfo", address)
        self.assertEqual((details["ismine"], details["timestamp"], details["label"]),
                         (True, 1, "old"))
        self.assertNotIn("hdkeypath", details)
        self.assertEqual(self.call(wallet, "dumpprivkey", address), wif)
        self.assertFalse(self.call(wallet, "abortrescan"))  # nothing is running

    def test_rescanblockchain(self):
        key = deterministic_key("rescan payment")
        self.call(None, "generatetoaddress", 1, p2pkh(key))
        tip = self.call(None, "getblockcount")
        wallet = self.create("rescanner")
        self.call(wallet, "importprivkey", encode_wif(key.secret, REGTEST, False), "", False)
        self.assertEqual(self.call(wallet, "getwalletinfo")["txcount"], 0)  # uncompressed: no
        self.call(wallet, "importprivkey", encode_wif(key.secret, REGTEST), "", False)
        self.assertEqual(self.call(wallet, "getwalletinfo")["txcount"], 0)
        self.assertEqual(self.call(wallet, "rescanblockchain", 0, tip - 1),
                         {"start_height": 0, "stop_height": tip - 1})
        self.assertEqual(self.call(wallet, "getwalletinfo")["txcount"], 0)
        self.assertEqual(self.call(wallet, "rescanblockchain", tip),
                         {"start_height": tip, "stop_height": tip})
        self.assertEqual(self.call(wallet, "getwalletinfo")["txcount"], 1)
        self.assertEqual(self.call(wallet, "rescanblockchain"),
                         {"start_height": 0, "stop_height": tip})
        self.fails(-8, "Invalid start_height", wallet, "rescanblockchain", -1)
        self.fails(-8, "Invalid start_height", wallet, "rescanblockchain", tip + 1)
        self.fails(-8, "Invalid stop_height", wallet, "rescanblockchain", 0, tip + 1)
        self.fails(-8, "stop_height must be greater than start_height", wallet,
                   "rescanblockchain", tip, tip - 1)

    def test_dumpwallet_importwallet_round_trip(self):
        source = self.create("dumped")
        labelled = self.call(source, "getnewaddress", "my label %20 é")
        change = self.call(source, "getrawchangeaddress")
        imported_key = deterministic_key("dumped import")
        self.call(source, "importprivkey", encode_wif(imported_key.secret, REGTEST), "imp", False)
        redeem = multisig_script(1, [imported_key.public_key.format(),
                                     deterministic_key("co-signer").public_key.format()])
        self.call(source, "importaddress", redeem.hex(), "", False, True)
        self.call(source, "generate", 1)

        path = os.path.abspath(self.mktemp())
        self.assertEqual(self.call(source, "dumpwallet", path), {"filename": path})
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        with open(path) as f:
            text = f.read()
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("# Wallet dump created by Coin "))
        self.assertTrue(lines[1].startswith("# * Created on "))
        tip = self.call(None, "getblockcount")
        self.assertEqual(lines[2], "# * Best block at time of backup was %d (%s),"
                         % (tip, self.call(None, "getbestblockhash")))
        self.assertTrue(lines[5].startswith("# extended private masterkey: tprv"))
        self.assertEqual(lines[-1], "# End of dump")
        for fragment in (
                " label=my%20label%20%2520%20%c3%a9 # addr=" + labelled + " hdkeypath=m/0'/0'/0'\n",
                " change=1 # addr=%s hdkeypath=m/0'/1'/0'\n" % change,
                " hdseed=1 # addr=",
                "%s 1970-01-01T00:00:01Z label=imp # addr=%s\n"
                % (encode_wif(imported_key.secret, REGTEST), p2pkh(imported_key)),
                "\n%s 0 script=1 # addr=%s\n" % (redeem.hex(), encode_address(
                    Destination("scripthash", hash160(redeem)), REGTEST))):
            self.assertTrue(fragment in text, "no %r in the dump" % fragment)
        self.assertEqual(text.count(" reserve=1 "), 2000)  # the pool refills as keys are taken
        self.fails(-8, "%s already exists. If you are sure this is what you want, move it out "
                   "of the way first" % path, source, "dumpwallet", path)

        target = self.create("restored")
        self.assertIsNone(self.call(target, "importwallet", path))
        for address in (labelled, change, p2pkh(imported_key)):
            self.assertEqual(self.call(target, "dumpprivkey", address),
                             self.call(source, "dumpprivkey", address))
        info = self.call(target, "getaddressinfo", labelled)
        self.assertEqual((info["ismine"], info["label"]), (True, "my label %20 é"))
        self.assertEqual(self.call(target, "getaddressinfo", change)["labels"], [])
        self.assertEqual(self.call(target, "getaddressinfo", p2pkh(imported_key))["label"], "imp")
        self.assertEqual(self.call(target, "getwalletinfo")["txcount"],
                         self.call(source, "getwalletinfo")["txcount"])  # the rescan ran
        self.fails(-8, "Cannot open wallet dump file", target, "importwallet", path + ".missing")


# ---------------------------------------------------------------------------------- encryption

def dumped_secrets(path: str) -> List[bytes]:
    """Every private key of a dumpwallet file, as 32-byte secrets."""
    secrets = []
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#") and " script=1 " not in line:
                secrets.append(decode_wif(line.split(" ")[0], REGTEST)[0])
    return secrets


def read_if_present(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def found_secrets(data: bytes, secrets: List[bytes]) -> List[bytes]:
    wanted = set(secrets)
    return [data[i:i + 32] for i in range(len(data) - 31) if data[i:i + 32] in wanted]


class EncryptionTests(WalletTestCase):
    shared = SINGLE

    def wait_locked(self, wallet: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while self.call(wallet, "getwalletinfo")["unlocked_until"] != 0:
            self.assertLess(time.monotonic(), deadline, "the wallet did not relock")
            time.sleep(0.05)

    def test_encryption_life_cycle(self):
        wallet = self.create("enc")
        address = self.call(wallet, "getnewaddress", "mine")
        wif = self.call(wallet, "dumpprivkey", address)
        for method, params in (("walletpassphrase", ["p", 1]), ("walletlock", []),
                               ("walletpassphrasechange", ["p", "q"])):
            self.fails(-15, "Error: running with an unencrypted wallet, but %s was called."
                       % method, wallet, method, *params)
        self.assertNotIn("unlocked_until", self.call(wallet, "getwalletinfo"))
        dump = os.path.abspath(self.mktemp())
        self.call(wallet, "dumpwallet", dump)
        secrets = dumped_secrets(dump)
        self.assertGreater(len(secrets), 2000)
        old_seed_id = self.call(wallet, "getwalletinfo")["hdmasterkeyid"]

        base = os.path.join(self.walletdir(), wallet, "wallet.dat")
        self.assertTrue(any(found_secrets(read_if_present(name), secrets[:50])
                            for name in (base, base + "-wal")), "the search finds clear keys")

        self.fails(-1, "encryptwallet <passphrase>\nEncrypts the wallet with <passphrase>.", wallet,
                   "encryptwallet", "")
        self.assertEqual(self.call(wallet, "encryptwallet", "first pass"), ENCRYPTED_RESULT)
        self.fails(-15, "Error: running with an encrypted wallet, but encryptwallet was called.",
                   wallet, "encryptwallet", "again")
        for name in (base, base + "-wal"):
            self.assertEqual(found_secrets(read_if_present(name), secrets), [], name)

        info = self.call(wallet, "getwalletinfo")
        self.assertEqual(info["unlocked_until"], 0)
        self.assertEqual(list(info), WALLET_INFO_KEYS[:9] + ["unlocked_until"]
                         + WALLET_INFO_KEYS[9:])
        self.assertNotEqual(info["hdmasterkeyid"], old_seed_id)
        self.assertEqual(info["keypoolsize"], 1000)
        self.fails(-13, UNLOCK_FIRST, wallet, "signmessage", address, "m")
        self.fails(-13, UNLOCK_FIRST, wallet, "dumpprivkey", address)
        self.fails(-13, UNLOCK_FIRST, wallet, "dumpwallet", dump + ".2")
        self.fails(-13, UNLOCK_FIRST, wallet, "keypoolrefill")
        fresh = self.call(wallet, "getnewaddress")  # the pool still has keys
        self.assertNotIn(fresh, [address])

        self.fails(-14, "Error: The wallet passphrase entered was incorrect.", wallet,
                   "walletpassphrase", "wrong", 10)
        self.fails(-8, "Timeout cannot be negative.", wallet, "walletpassphrase", "first pass", -1)
        self.fails(-1, None, wallet, "walletpassphrase", "", 10)
        self.assertIsNone(self.call(wallet, "walletpassphrase", "first pass", 1))
        self.assertGreater(self.call(wallet, "getwalletinfo")["unlocked_until"], 0)
        signature = self.call(wallet, "signmessage", address, "m")
        self.assertTrue(self.verify(address, signature, "m"))
        self.assertEqual(self.call(wallet, "dumpprivkey", address), wif)
        self.wait_locked(wallet)
        self.fails(-13, UNLOCK_FIRST, wallet, "signmessage", address, "m")

        self.fails(-14, "Error: The wallet passphrase entered was incorrect.", wallet,
                   "walletpassphrasechange", "wrong", "second pass")
        self.assertIsNone(self.call(wallet, "walletpassphrasechange", "first pass",
                                    "second pass"))
        self.fails(-14, None, wallet, "walletpassphrase", "first pass", 100)
        self.call(wallet, "walletpassphrase", "second pass", 100)
        self.assertIsNone(self.call(wallet, "walletlock"))
        self.assertEqual(self.call(wallet, "getwalletinfo")["unlocked_until"], 0)
        self.fails(-13, UNLOCK_FIRST, wallet, "dumpprivkey", address)

        # Encrypted on disk: still encrypted, and under the new passphrase, after a reload.
        self.call(None, "unloadwallet", wallet)
        self.call(None, "loadwallet", wallet)
        self.assertEqual(self.call(wallet, "getwalletinfo")["unlocked_until"], 0)
        self.call(wallet, "walletpassphrase", "second pass", 100)
        self.assertEqual(self.call(wallet, "dumpprivkey", address), wif)
        self.call(wallet, "walletlock")

    def test_rpcwallet_option(self):
        wallet = self.create("clitest")
        result = self.node.cli("-rpcwallet=", "getwalletinfo")
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        self.assertEqual(json.loads(result.stdout)["walletname"], "")
        self.assertTrue(result.stdout.startswith('{\n  "walletname": "",\n  "walletversion": '
                                                 "159900,\n"))
        result = self.node.cli("-rpcwallet=" + wallet, "getwalletinfo")
        self.assertEqual(json.loads(result.stdout)["walletname"], wallet)
        result = self.node.cli("-rpcwallet=" + wallet, "getnewaddress", "from cli")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.call(wallet, "getaddressinfo", result.stdout.strip())["label"],
                         "from cli")
        result = self.node.cli("getwalletinfo")
        self.assertEqual(result.returncode, 19)
        self.assertEqual(result.stderr, "error code: -19\nerror message:\n" + NOT_SPECIFIED
                         + '\nTry adding "-rpcwallet=<filename>" option to coin-cli command '
                         "line.\n")
        result = self.node.cli("-rpcwallet=nosuch", "getwalletinfo")
        self.assertEqual((result.returncode, result.stdout, result.stderr),
                         (18, "", "error code: -18\nerror message:\n" + NOT_LOADED + "\n"))


# ---------------------------------------------------------------------------------- long rescans

class RunningRescanTests(WalletTestCase):
    shared = LONG
    BLOCKS = 1500

    def test_abortrescan_stops_a_running_rescan(self):
        address = p2pkh(deterministic_key("long chain"))
        self.call(None, "generatetoaddress", self.BLOCKS, address)
        for attempt in range(5):
            wallet = self.create("scan%d" % attempt)
            outcome: List[Any] = []

            def run_import() -> None:
                try:
                    outcome.append(self.call(wallet, "importaddress", address, "", True))
                except RPCFailure as e:
                    outcome.append((e.code, e.message))

            thread = threading.Thread(target=run_import)
            thread.start()
            aborted = False
            # The node answers while it rescans: abortrescan catches the import's rescan.
            while thread.is_alive() and not aborted:
                aborted = self.call(wallet, "abortrescan")
            thread.join()
            if aborted:
                break
        else:
            self.fail("no rescan was caught running in 5 attempts")
        self.assertEqual(outcome, [(-1, "Rescan aborted by user.")])
        self.assertLessEqual(self.call(wallet, "getwalletinfo")["txcount"], self.BLOCKS)
        self.assertFalse(self.call(wallet, "abortrescan"))
        self.assertEqual(self.call(wallet, "rescanblockchain"),
                         {"start_height": 0, "stop_height": self.BLOCKS})
        self.assertEqual(self.call(wallet, "getwalletinfo")["txcount"], self.BLOCKS)
        self.assertTrue(self.call(wallet, "getaddressinfo", address)["iswatchonly"])
