"""Util and network methods through the real stack (tests/rpcchain.py)."""

from __future__ import annotations

import base64
from decimal import Decimal

from twisted.internet.defer import inlineCallbacks

from coin import __version__
from coin.chainparams import MAIN, TEST
from coin.primitives.address import Destination, encode_address, encode_wif
from coin.primitives.hashes import hash160, sha256d
from coin.rpc.methods.network import METHODS as NETWORK_METHODS
from coin.rpc.methods.rawtransactions import METHODS as RAW_METHODS
from coin.rpc.methods.util import METHODS, decode_base64_strict
from coin.script.standard import multisig_script
from coin.testing.chainbuilder import deterministic_key

from tests.rpcchain import ChainRPCTestCase
from tests.rpchelpers import transcript

# rpcm_46's keys, all present ("iswitness" is always false here, as Core 0.17 says it).
VALIDATEADDRESS_KEYS = ["isvalid", "address", "scriptPubKey", "isscript", "iswitness"]
# rpcm_01's keys, all present.
NETWORKINFO_KEYS = ["version", "subversion", "protocolversion", "localservices", "localrelay",
                    "timeoffset", "networkactive", "connections", "networks", "relayfee",
                    "incrementalfee", "localaddresses", "warnings"]
REFERENCE_HELP_LINES = ['createmultisig nrequired ["key",...]',
                        'signmessagewithprivkey "privkey" "message"', 'validateaddress "address"',
                        'verifymessage "address" "signature" "message"', "getconnectioncount",
                        "getnetworkinfo"]


def pubkey(label: str, compressed: bool = True) -> str:
    return deterministic_key(label).public_key.format(compressed).hex()


class UtilTestCase(ChainRPCTestCase):
    methods = METHODS + NETWORK_METHODS + RAW_METHODS


class ValidateAddressTests(UtilTestCase):
    @inlineCallbacks
    def test_valid_addresses(self):
        result = yield self.result("validateaddress", self.address())
        self.assertEqual(list(result), VALIDATEADDRESS_KEYS)
        self.assertEqual(result, {"isvalid": True, "address": self.address(),
                                  "scriptPubKey": self.builder.script_pubkey.hex(),
                                  "isscript": False, "iswitness": False})
        script_address = encode_address(Destination("scripthash", b"\x05" * 20), self.params)
        self.assertEqual((yield self.result("validateaddress", script_address)),
                         {"isvalid": True, "address": script_address,
                          "scriptPubKey": "a914" + "05" * 20 + "87", "isscript": True,
                          "iswitness": False})

    @inlineCallbacks
    def test_invalid_addresses(self):
        main_address = encode_address(Destination("pubkeyhash", b"\x05" * 20), MAIN)
        for text in ("", "x", main_address, self.address()[:-1] + "1", "1" * 200):
            self.assertEqual((yield self.result("validateaddress", text)), {"isvalid": False})
        self.assertEqual((yield self.error("validateaddress", 5)),
                         (500, -1, "JSON value is not a string as expected"))


class MultisigTests(UtilTestCase):
    @inlineCallbacks
    def test_two_of_three(self):
        keys = [pubkey("a"), pubkey("b"), pubkey("c", compressed=False)]
        result = yield self.result("createmultisig", 2, keys)
        script = multisig_script(2, [bytes.fromhex(k) for k in keys])
        self.assertEqual(result, {
            "address": encode_address(Destination("scripthash", hash160(script)), self.params),
            "redeemScript": script.hex()})
        decoded = yield self.result("decodescript", result["redeemScript"])
        self.assertEqual((decoded["type"], decoded["reqSigs"], decoded["p2sh"]),
                         ("multisig", 2, result["address"]))

    @inlineCallbacks
    def test_errors(self):
        good = pubkey("a")
        note = ("\nNote that from v0.16, createmultisig no longer accepts addresses. Users must "
                "use addmultisigaddress to create multisig addresses with addresses known to the "
                "wallet.")
        off_curve = "02" + "00" * 32
        for params, expected in (
                ((1, [self.address()]), (-5, "Invalid public key: %s%s" % (self.address(), note))),
                ((1, [good[:-2]]), (-5, "Invalid public key: %s%s" % (good[:-2], note))),
                ((1, [off_curve]), (-5, "Invalid public key: " + off_curve)),
                ((1, [5]), (-1, "JSON value is not a string as expected")),
                ((0, [good]), (-8, "a multisignature address must require at least one key to "
                                   "redeem")),
                ((3, [good, good]), (-8, "not enough keys supplied (got 2 keys, but need at "
                                         "least 3 to redeem)")),
                ((1, [good] * 17), (-8, "Number of keys involved in the multisignature address "
                                        "creation > 16\nReduce the number")),
                ((1, [pubkey("u", False)] * 8), (-8, "redeemScript exceeds size limit: 531 > 520")),
                ((1, good), (-1, "JSON value is not an array as expected"))):
            self.assertEqual((yield self.error("createmultisig", *params)), (500,) + expected,
                             params)


class MessageTests(UtilTestCase):
    @inlineCallbacks
    def test_sign_then_verify(self):
        key = deterministic_key("message key")
        for compressed in (True, False):
            wif = encode_wif(key.secret, self.params, compressed)
            address = self.address(hash160(key.public_key.format(compressed)))
            signature = yield self.result("signmessagewithprivkey", wif, "hello")
            self.assertTrue((yield self.result("verifymessage", address, signature, "hello")))
            self.assertFalse((yield self.result("verifymessage", address, signature, "hello!")))
            self.assertFalse((yield self.result("verifymessage", self.address(), signature,
                                                "hello")))
            # The compact signature over sha256d(ser(magic) + ser(message)), RFC 6979.
            digest = sha256d(b"\x15Coin Signed Message:\n\x05hello")
            raw = key.sign_recoverable(digest, hasher=None)
            expected = bytes((27 + raw[64] + (4 if compressed else 0),)) + raw[:64]
            self.assertEqual(base64.b64decode(signature), expected)

    @inlineCallbacks
    def test_unicode_messages(self):
        wif = encode_wif(deterministic_key("k").secret, self.params)
        address = self.address(hash160(deterministic_key("k").public_key.format()))
        signature = yield self.result("signmessagewithprivkey", wif, "d\u00e9j\u00e0 vu \u2603")
        self.assertTrue((yield self.result("verifymessage", address, signature,
                                           "d\u00e9j\u00e0 vu \u2603")))

    @inlineCallbacks
    def test_errors(self):
        wif = encode_wif(deterministic_key("k").secret, self.params)
        signature = yield self.result("signmessagewithprivkey", wif, "m")
        main_wif = encode_wif(deterministic_key("k").secret, MAIN)
        zero_key = encode_wif(b"\x00" * 32, self.params)
        for key in ("", "notakey", main_wif, zero_key, wif[:-1] + "x"):
            self.assertEqual((yield self.error("signmessagewithprivkey", key, "m")),
                             (500, -5, "Invalid private key"), key)
        script_address = encode_address(Destination("scripthash", b"\x05" * 20), self.params)
        for params, expected in (
                (("nope", signature, "m"), (-3, "Invalid address")),
                ((script_address, signature, "m"), (-3, "Address does not refer to key")),
                ((self.address(), "not base64!", "m"), (-5, "Malformed base64 encoding")),
                ((self.address(), "AB==", "m"), (-5, "Malformed base64 encoding")),
                ((self.address(), signature + "A", "m"), (-5, "Malformed base64 encoding"))):
            self.assertEqual((yield self.error("verifymessage", *params)), (500,) + expected,
                             params)
        # Well-formed base64 of the wrong length, or not a signature at all: false.
        for text in ("", "AAAA", base64.b64encode(b"\x1f" + b"\xff" * 64).decode()):
            self.assertFalse((yield self.result("verifymessage", self.address(), text, "m")))

    def test_strict_base64(self):
        for text, expected in (("", b""), ("QQ==", b"A"), ("QUI=", b"AB"), ("QUJD", b"ABC"),
                               ("QR==", None), ("QUJ=", None), ("Q===", None), ("QQ", None),
                               ("QQ=A", None), ("QUJD====", None), ("Q!==", None)):
            self.assertEqual(decode_base64_strict(text), expected, text)


class MockTimeTests(UtilTestCase):
    @inlineCallbacks
    def test_sets_and_clears_the_clock(self):
        self.assertIsNone((yield self.result("setmocktime", 1900000000)))
        self.assertEqual(self.clock.now(), 1900000000)
        self.assertEqual(self.state.adjusted_time(), 1900000000)
        self.assertIsNone((yield self.result("setmocktime", 0)))
        self.assertNotEqual(self.clock.now(), 0)
        self.assertEqual((yield self.error("setmocktime", "1")),
                         (500, -3, "Expected type number, got string"))
        self.assertEqual((yield self.error("setmocktime", Decimal("1.5"))),
                         (500, -1, "JSON integer out of range"))
        self.assertIn("setmocktime timestamp\n", (yield self.result("help", "setmocktime")))
        self.assertNotIn("setmocktime", (yield self.result("help")))


class TestnetMockTimeTests(UtilTestCase):
    params = TEST

    @inlineCallbacks
    def test_refused_off_regtest_before_the_type_check(self):
        for value in (1, "1"):
            self.assertEqual((yield self.error("setmocktime", value)),
                             (500, -1, "setmocktime for regression testing (-regtest mode) only"))
        self.assertEqual(self.clock.mock_time, 0)


class GetinfoTests(UtilTestCase):
    @inlineCallbacks
    def test_removed_as_recorded(self):
        recorded = transcript("rpcm_43_getinfo")
        for body in (recorded.request.split(b"\r\n\r\n", 1)[1],
                     b'{"id": 43, "method": "getinfo", "params": [1, 2]}'):
            reply = yield self.send_raw(body)
            self.assertEqual((reply.status, reply.body), (404, recorded.body))
        self.assertNotIn("getinfo", (yield self.result("help")))


class NetworkTests(UtilTestCase):
    @inlineCallbacks
    def test_getnetworkinfo(self):
        info = yield self.result("getnetworkinfo")
        self.assertEqual(list(info), NETWORKINFO_KEYS)
        major, minor, revision = (int(p) for p in __version__.split("."))
        self.assertEqual(info["version"], 1000000 * major + 10000 * minor + 100 * revision)
        # The user agent issue #7 asks for (the reference's brand-replaced "/coin:2.3.0/").
        self.assertEqual(info["subversion"], "/Coin:%s/" % __version__)
        self.assertEqual((info["protocolversion"], info["localservices"], info["localrelay"],
                          info["timeoffset"], info["networkactive"], info["connections"]),
                         (70208, "0000000000000000", True, 0, True, 0))
        self.assertEqual(info["networks"], [
            {"name": name, "limited": name == "onion", "reachable": name != "onion",
             "proxy": "", "proxy_randomize_credentials": False}
            for name in ("ipv4", "ipv6", "onion")])
        self.assertEqual((info["relayfee"], info["incrementalfee"]),
                         (Decimal("0.00001000"), Decimal("0.00001000")))
        reply = yield self.send("getnetworkinfo")
        self.assertIn(b'"relayfee":0.00001000,"incrementalfee":0.00001000,"localaddresses":[],'
                      b'"warnings":""}', reply.body)
        self.assertEqual((yield self.result("getconnectioncount")), 0)

    @inlineCallbacks
    def test_help_lines_match_the_reference(self):
        listing = (yield self.result("help")).split("\n")
        for line in REFERENCE_HELP_LINES:
            self.assertIn(line, listing)
