"""Wallet balances, listings, locks, fees, sending, funding and signing on real nodes
(coin.rpc.methods.wallet and signrawtransactionwithkey), driven over JSON-RPC.

Nodes (in this process, but for kill -9):

- ``fund``: the chain most tests start on a copy of: the default wallet owns 20 mature
  coinbases (blocks 1-20 pay its "funding" address); blocks 21-150 pay ``MINER_ADDRESS``,
  outside the wallet, so mining more never changes the wallet's coins and coinbases 21-50
  are mature coins of a key the tests hold (``MINER_WIF``).
- ``wallet_coinbases``: a wallet that mined 101 blocks (reorganisation/abandonment); crash
  recovery builds the same on a ``coind`` process it can kill.

JSON is parsed with ``Decimal`` so amounts and fees are compared exactly.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from typing import Any, Dict, Iterator, Tuple

import simplejson
from twisted.trial.unittest import TestCase

from coin.chainparams import REGTEST
from coin.primitives.address import Destination, encode_address, encode_wif
from coin.primitives.hashes import hash160
from coin.testing.chainbuilder import deterministic_key

from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import MINER_ADDRESS, NodeClient, NodeProcess, RPCFailure

COIN = 100_000_000
#: Signs for MINER_ADDRESS (tests.nodeharness).
MINER_KEY = deterministic_key("coin test chain")
MINER_WIF = encode_wif(MINER_KEY.secret, REGTEST)
MINER_PUBKEY = MINER_KEY.public_key.format().hex()
OTHER_KEY = deterministic_key("wallet tx test: someone else")
OTHER_WIF = encode_wif(OTHER_KEY.secret, REGTEST)
#: An address no test wallet owns.
EXTERNAL = encode_address(Destination("pubkeyhash", hash160(OTHER_KEY.public_key.format())),
                          REGTEST)
#: A small key pool (nodes start faster); no P2P port, so nodes never compete for one.
ARGS = ["-keypool=20", "-listen=0"]
UNLOCK_FIRST = "Error: Please enter the wallet passphrase with walletpassphrase first."
SEND_ENTRY_KEYS = ["address", "category", "amount", "label", "vout", "fee", "confirmations",
                   "trusted", "txid", "walletconflicts", "time", "timereceived",
                   "bip125-replaceable", "abandoned"]
UNSPENT_KEYS = ["txid", "vout", "address", "label", "scriptPubKey", "amount", "confirmations",
                "spendable", "solvable", "safe"]

# ---------------------------------------------------------------------------------------- helpers


def call(node: NodeClient, method: str, *params: Any, path: str = "/") -> Any:
    """One JSON-RPC call; numbers come back as Decimal."""
    body = simplejson.dumps({"method": method, "params": list(params), "id": 1},
                            use_decimal=True).encode()
    status, _, raw = node.post(body, path=path)
    reply = json.loads(raw, parse_float=Decimal)
    if reply.get("error"):
        raise RPCFailure(status, reply["error"]["code"], reply["error"]["message"])
    return reply["result"]


def sat(value: Any) -> int:
    return int(Decimal(value) * COIN)


def coins(satoshis: int) -> Decimal:
    return Decimal(satoshis).scaleb(-8)


def decoded(node: NodeClient, txid: str) -> Dict[str, Any]:
    return call(node, "decoderawtransaction", call(node, "gettransaction", txid)["hex"])


def tx_size(node: NodeClient, txid: str) -> int:
    return len(call(node, "gettransaction", txid)["hex"]) // 2


def paid_fee(node: NodeClient, txid: str) -> int:
    return -sat(call(node, "gettransaction", txid)["fee"])


def fund(node: NodeClient) -> str:
    """The shared chain (module docstring); returns the funding address."""
    funding = call(node, "getnewaddress", "funding")
    call(node, "generatetoaddress", 20, funding)
    call(node, "generatetoaddress", 130, MINER_ADDRESS)
    return funding


class Funded:
    """A test's copy of the ``fund`` chain, its funding address, and the miner's mature
    coinbases to hand out."""

    def __init__(self, node: InProcessNode) -> None:
        self.node = node
        self.funding: str = node.state
        self._miner_heights: Iterator[int] = iter(range(21, 51))

    def miner_coin(self) -> Tuple[str, int]:
        """A mature coinbase output (txid, value) paying MINER_ADDRESS, not used before."""
        block = call(self.node, "getblock", call(self.node, "getblockhash",
                                                 next(self._miner_heights)))
        return block["tx"][0], 50 * COIN


def wallet_coinbases(node: NodeClient) -> str:
    """The node's wallet mines 101 blocks (the first one is mature); returns its address."""
    address = call(node, "getnewaddress")
    call(node, "generatetoaddress", 101, address)
    return address


def private_process(test: TestCase, *extra: str) -> Tuple[NodeProcess, str]:
    """A ``coind`` process of its own (to kill) whose wallet mined 101 blocks."""
    node = NodeProcess.start(os.path.abspath(test.mktemp()), ARGS + list(extra))
    test.addCleanup(node.kill)
    return node, wallet_coinbases(node)


class RPCCase(NodeTestCase):

    def private_node(self) -> Tuple[InProcessNode, str]:
        """A node of its own whose wallet mined 101 blocks (the first one is mature)."""
        node = self.start_node(*ARGS, chain=wallet_coinbases)
        return node, node.state

    def assertError(self, node: NodeClient, code: int, message: str, method: str,
                    *params: Any, path: str = "/") -> None:
        with self.assertRaises(RPCFailure) as caught:
            call(node, method, *params, path=path)
        self.assertEqual((caught.exception.code, caught.exception.message), (code, message))

    def assertErrorStarts(self, node: NodeClient, code: int, prefix: str, method: str,
                          *params: Any) -> None:
        with self.assertRaises(RPCFailure) as caught:
            call(node, method, *params)
        self.assertEqual(caught.exception.code, code)
        self.assertTrue(caught.exception.message.startswith(prefix), caught.exception.message)

    def settxfee(self, node: NodeClient, rate: str) -> None:
        self.assertIs(call(node, "settxfee", rate), True)


class FundedCase(RPCCase):
    """Each test on a copy of the ``fund`` chain: what it changes (settxfee, locks) goes
    with the copy."""

    def setUp(self) -> None:
        self.shared = Funded(self.start_node(*ARGS, chain=fund))


# ---------------------------------------------------------------------------------------- shared


class BalanceTests(FundedCase):

    def test_getbalance_forms_and_dummy(self) -> None:
        node = self.shared.node
        balance = call(node, "getbalance")
        self.assertEqual(call(node, "getbalance", "*"), balance)
        self.assertEqual(call(node, "getbalance", "*", 0), balance)
        self.assertEqual(call(node, "getbalance", "*", 0, True), balance)
        self.assertError(node, -32, 'dummy first argument must be excluded or set to "*".',
                         "getbalance", "")
        self.assertError(node, -32, 'dummy first argument must be excluded or set to "*".',
                         "getbalance", "someaccount", 1)
        self.assertError(node, -1, "JSON value is not an integer as expected",
                         "getbalance", "*", "1")

    def test_send_moves_balance_and_confirmations(self) -> None:
        node = self.shared.node
        before = call(node, "getbalance")
        txid = call(node, "sendtoaddress", EXTERNAL, 2)
        fee = paid_fee(node, txid)
        self.assertEqual(sat(call(node, "getbalance")), sat(before) - 2 * COIN - fee)
        # Own unconfirmed change counts at 0 confirmations, not at 1.
        pending = sum(sat(u["amount"]) for u in call(node, "listunspent", 0, 0) if u["safe"])
        self.assertGreater(pending, 0)
        self.assertEqual(sat(call(node, "getbalance", "*", 1)),
                         sat(call(node, "getbalance")) - pending)
        self.assertEqual(call(node, "getunconfirmedbalance"), Decimal(0))

    def test_unconfirmed_payment_from_others(self) -> None:
        shared = self.shared
        node = shared.node
        address = call(node, "getnewaddress", "from-outside")
        txid, value = shared.miner_coin()
        raw = call(node, "createrawtransaction", [{"txid": txid, "vout": 0}],
                   {address: 3, EXTERNAL: coins(value - 3 * COIN - 100_000)})
        signed = call(node, "signrawtransactionwithkey", raw, [MINER_WIF])
        self.assertIs(signed["complete"], True)
        before = call(node, "getbalance")
        unconfirmed = call(node, "getunconfirmedbalance")
        incoming = call(node, "sendrawtransaction", signed["hex"])
        # Not from us and unconfirmed: not trusted, so not in the balance, and unsafe.
        self.assertEqual(call(node, "getunconfirmedbalance"), unconfirmed + 3)
        self.assertEqual(call(node, "getbalance"), before)
        entry = [u for u in call(node, "listunspent", 0) if u["txid"] == incoming]
        self.assertEqual([(u["address"], u["amount"], u["safe"], u["confirmations"])
                          for u in entry], [(address, Decimal(3), False, 0)])
        self.assertEqual([u for u in call(node, "listunspent", 0, 9999999, None, False)
                          if u["txid"] == incoming], [])
        self.assertEqual(call(node, "gettransaction", incoming)["trusted"], False)
        call(node, "generatetoaddress", 1, MINER_ADDRESS)
        self.assertEqual(call(node, "getunconfirmedbalance"), Decimal(0))
        self.assertEqual(call(node, "getbalance"), before + 3)


class SendTests(FundedCase):

    def test_fee_is_settxfee_rate_times_size(self) -> None:
        node = self.shared.node
        self.settxfee(node, "0.00012345")
        txid = call(node, "sendtoaddress", EXTERNAL, "1.1")
        self.assertEqual(paid_fee(node, txid), 12345 * tx_size(node, txid) // 1000)
        gettx = call(node, "gettransaction", txid)
        self.assertEqual(gettx["amount"], Decimal("-1.1"))
        [send] = gettx["details"]
        self.assertEqual((send["category"], send["amount"], send["fee"], send["abandoned"]),
                         ("send", Decimal("-1.1"), gettx["fee"], False))
        # A confirmation target of its own wins over settxfee (the fallback rate, no estimates).
        txid = call(node, "sendtoaddress", EXTERNAL, 1, None, None, False, None, 6)
        self.assertEqual(paid_fee(node, txid), 20000 * tx_size(node, txid) // 1000)

    def test_subtract_fee_from_amount(self) -> None:
        node = self.shared.node
        self.settxfee(node, "0.0001")
        txid = call(node, "sendtoaddress", EXTERNAL, 5, "", "", True)
        fee = paid_fee(node, txid)
        self.assertEqual(fee, 10000 * tx_size(node, txid) // 1000)
        paid = [v for v in decoded(node, txid)["vout"]
                if v["scriptPubKey"].get("addresses") == [EXTERNAL]]
        self.assertEqual([sat(v["value"]) for v in paid], [5 * COIN - fee])
        send = call(node, "gettransaction", txid)["details"][0]
        self.assertEqual(sat(send["amount"]), -(5 * COIN - fee))

    def test_selection_prefers_confirmed_coins(self) -> None:
        node = self.shared.node
        first = call(node, "sendtoaddress", EXTERNAL, 1)
        second = call(node, "sendtoaddress", EXTERNAL, "0.5")
        spent = [i["txid"] for i in decoded(node, second)["vin"]]
        self.assertNotIn(first, spent)
        for txid in spent:
            self.assertGreaterEqual(call(node, "gettransaction", txid)["confirmations"], 1)

    def test_dust_change_goes_to_the_fee(self) -> None:
        node = self.shared.node
        self.settxfee(node, "0.0002")
        unspent = call(node, "listunspent", 0)
        keep = next(u for u in unspent if u["amount"] == 50 and u["confirmations"] > 100)
        others = [{"txid": u["txid"], "vout": u["vout"]} for u in unspent if u is not keep]
        self.assertIs(call(node, "lockunspent", False, others), True)
        # Change would be ~300 satoshis after a two-output fee: dust, so no change output.
        amount = 50 * COIN - 20000 * 226 // 1000 - 300
        txid = call(node, "sendtoaddress", EXTERNAL, coins(amount))
        tx = decoded(node, txid)
        self.assertEqual([(i["txid"], i["vout"]) for i in tx["vin"]],
                         [(keep["txid"], keep["vout"])])
        self.assertEqual(len(tx["vout"]), 1)
        self.assertEqual(paid_fee(node, txid), 50 * COIN - amount)
        # Locked coins are never chosen: nothing is left to spend (though the balance,
        # which counts locked coins, would cover it: Core's -4).
        self.assertError(node, -4, "Insufficient funds", "sendtoaddress", EXTERNAL, 1)

    def test_sendtoaddress_errors(self) -> None:
        node = self.shared.node
        self.assertError(node, -5, "Invalid address", "sendtoaddress", "notanaddress", 1)
        self.assertError(node, -3, "Invalid amount for send", "sendtoaddress", EXTERNAL, 0)
        self.assertError(node, -3, "Amount out of range", "sendtoaddress", EXTERNAL, -1)
        self.assertError(node, -3, "Invalid amount", "sendtoaddress", EXTERNAL, "x")
        self.assertError(node, -6, "Insufficient funds", "sendtoaddress", EXTERNAL, 100000)
        self.assertError(node, -8, "Invalid estimate_mode parameter", "sendtoaddress", EXTERNAL,
                         1, None, None, False, None, 6, "FAST")
        self.assertErrorStarts(node, -8, "Invalid conf_target, must be between 1 - ",
                               "sendtoaddress", EXTERNAL, 1, None, None, False, None, 0)
        # The whole balance leaves nothing for the fee.
        self.assertErrorStarts(node, -4, "Error: This transaction requires a transaction fee of "
                               "at least ", "sendtoaddress", EXTERNAL, call(node, "getbalance"))
        self.assertError(node, -18, "Requested wallet does not exist or is not loaded",
                         "sendtoaddress", EXTERNAL, 1, path="/wallet/nosuchwallet")

    def test_sendmany(self) -> None:
        node = self.shared.node
        self.settxfee(node, "0.0001")
        mine = call(node, "getnewaddress", "many")
        txid = call(node, "sendmany", "", {mine: "1.5", EXTERNAL: 2}, 1, "a comment",
                    [EXTERNAL])
        fee = paid_fee(node, txid)
        self.assertEqual(fee, 10000 * tx_size(node, txid) // 1000)
        values = {v["scriptPubKey"]["addresses"][0]: sat(v["value"])
                  for v in decoded(node, txid)["vout"]}
        self.assertEqual(values[mine], 150_000_000)
        self.assertEqual(values[EXTERNAL], 2 * COIN - fee)
        self.assertEqual(len(values), 3)  # and the change
        self.assertError(node, -8, 'Dummy value must be set to ""', "sendmany", "x", {mine: 1})
        self.assertError(node, -5, "Invalid Coin address: nope", "sendmany", "", {"nope": 1})
        self.assertError(node, -3, "Invalid amount for send", "sendmany", "", {mine: 0})
        self.assertError(node, -6, "Wallet has insufficient funds", "sendmany", "",
                         {EXTERNAL: 100000})
        self.assertError(node, -1, "JSON value is not an object as expected", "sendmany", "", [])


class ListingTests(FundedCase):

    def test_listunspent(self) -> None:
        shared = self.shared
        node = shared.node
        rows = call(node, "listunspent")
        coinbase = next(u for u in rows if u["address"] == shared.funding)
        self.assertEqual(list(coinbase), UNSPENT_KEYS)
        self.assertEqual((coinbase["label"], coinbase["spendable"], coinbase["solvable"],
                          coinbase["safe"]), ("funding", True, True, True))
        self.assertTrue(all(u["confirmations"] >= 1 for u in rows))
        # Core's order: by transaction id as stored (little-endian), then output.
        keys = [(bytes.fromhex(u["txid"])[::-1], u["vout"]) for u in rows]
        self.assertEqual(keys, sorted(keys))
        self.assertTrue(all(u["confirmations"] > 100
                            for u in call(node, "listunspent", 101, 9999999)))
        self.assertTrue(all(u["address"] == shared.funding
                            for u in call(node, "listunspent", 1, 9999999, [shared.funding])))
        large = call(node, "listunspent", 1, 9999999, [], True, {"minimumAmount": 10})
        self.assertTrue(large and all(u["amount"] >= 10 for u in large))
        self.assertEqual(len(call(node, "listunspent", 1, 9999999, [], True,
                                  {"maximumCount": 2})), 2)
        self.assertEqual(len(call(node, "listunspent", 1, 9999999, [], True,
                                  {"minimumAmount": 50, "minimumSumAmount": 60})), 2)
        self.assertError(node, -5, "Invalid Coin address: nope", "listunspent", 1, 9, ["nope"])
        self.assertError(node, -8, "Invalid parameter, duplicated address: " + shared.funding,
                         "listunspent", 1, 9, [shared.funding, shared.funding])
        self.assertError(node, -3, "Expected type number, got string", "listunspent", "1")
        self.assertError(node, -3, "Expected type bool, got number", "listunspent", 1, 9, [], 1)

    def test_lockunspent(self) -> None:
        node = self.shared.node
        coin = call(node, "listunspent")[0]
        outpoint = {"txid": coin["txid"], "vout": coin["vout"]}
        self.assertEqual(call(node, "listlockunspent"), [])
        self.assertIs(call(node, "lockunspent", False, [outpoint]), True)
        self.assertEqual(call(node, "listlockunspent"), [outpoint])
        self.assertNotIn(outpoint, [{"txid": u["txid"], "vout": u["vout"]}
                                    for u in call(node, "listunspent")])
        self.assertError(node, -8, "Invalid parameter, output already locked",
                         "lockunspent", False, [outpoint])
        other = call(node, "listunspent")[0]
        self.assertError(node, -8, "Invalid parameter, expected locked output",
                         "lockunspent", True, [{"txid": other["txid"], "vout": other["vout"]}])
        self.assertError(node, -8, "Invalid parameter, unknown transaction",
                         "lockunspent", False, [{"txid": "11" * 32, "vout": 0}])
        self.assertError(node, -8, "Invalid parameter, vout index out of bounds",
                         "lockunspent", False, [{"txid": coin["txid"], "vout": 7}])
        self.assertError(node, -8, "Invalid parameter, vout must be positive",
                         "lockunspent", False, [{"txid": coin["txid"], "vout": -1}])
        self.assertError(node, -3, "Missing vout", "lockunspent", False, [{"txid": coin["txid"]}])
        self.assertError(node, -3, "Expected type number for vout, got string",
                         "lockunspent", False, [{"txid": coin["txid"], "vout": "0"}])
        # Core 0.17: odd-length or non-hex text is refused, even-length hex is a number.
        self.assertError(node, -8, "Invalid parameter, expected hex txid",
                         "lockunspent", False, [{"txid": "xyz", "vout": 0}])
        self.assertError(node, -8, "Invalid parameter, unknown transaction",
                         "lockunspent", False, [{"txid": "ab", "vout": 0}])
        self.assertError(node, -8, "Invalid parameter, vout must be positive",
                         "lockunspent", False, [{"txid": "ab", "vout": -1}])
        self.assertError(node, -3, "Expected type bool, got string", "lockunspent", "true")
        self.assertError(node, -1, "JSON value is not an object as expected",
                         "lockunspent", False, [1])
        txid = call(node, "sendtoaddress", EXTERNAL, 1)
        spent = decoded(node, txid)["vin"][0]
        self.assertError(node, -8, "Invalid parameter, expected unspent output",
                         "lockunspent", False, [{"txid": spent["txid"], "vout": spent["vout"]}])
        # Unlocking without a list unlocks everything.
        self.assertIs(call(node, "lockunspent", True), True)
        self.assertEqual(call(node, "listlockunspent"), [])

    def test_gettransaction_and_listtransactions(self) -> None:
        node = self.shared.node
        address = call(node, "getnewaddress", "lists")
        txid = call(node, "sendtoaddress", address, "0.7")
        gettx = call(node, "gettransaction", txid)
        self.assertEqual(list(gettx), ["amount", "fee", "confirmations", "trusted", "txid",
                                       "walletconflicts", "time", "timereceived",
                                       "bip125-replaceable", "details", "hex"])
        # Paid to ourselves: only the fee leaves.
        self.assertEqual((gettx["amount"], gettx["confirmations"], gettx["trusted"],
                          gettx["walletconflicts"], gettx["bip125-replaceable"]),
                         (Decimal(0), 0, True, [], "no"))
        self.assertEqual([(d["category"], d["address"], d["amount"], d["label"])
                          for d in gettx["details"]],
                         [("send", address, Decimal("-0.7"), "lists"),
                          ("receive", address, Decimal("0.7"), "lists")])
        newest = call(node, "listtransactions", "*", 2)
        self.assertEqual([(e["category"], e["txid"]) for e in newest],
                         [("receive", txid), ("send", txid)])
        self.assertEqual(list(newest[1]), SEND_ENTRY_KEYS)
        self.assertEqual(call(node, "listtransactions", "*", 1, 1), newest[:1])
        self.assertEqual(len(call(node, "listtransactions")), 10)
        generated = [e for e in call(node, "listtransactions", "*", 1000)
                     if e.get("generated")]
        self.assertEqual({e["category"] for e in generated}, {"generate"})
        self.assertEqual(len(generated), 20)
        block = call(node, "generatetoaddress", 1, MINER_ADDRESS)[0]
        gettx = call(node, "gettransaction", txid)
        self.assertEqual((gettx["confirmations"], gettx["blockhash"]), (1, block))
        self.assertIn("blocktime", gettx)
        self.assertNotIn("trusted", gettx)
        self.assertError(node, -5, "Invalid or non-wallet transaction id", "gettransaction",
                         "11" * 32)
        # Core 0.17 (the reference node) reads the txid with SetHex: malformed is unknown.
        self.assertError(node, -5, "Invalid or non-wallet transaction id", "gettransaction", "zz")
        self.assertError(node, -8, 'Dummy value must be set to "*"', "listtransactions", "")
        self.assertError(node, -8, "Negative count", "listtransactions", "*", -1)
        self.assertError(node, -8, "Negative from", "listtransactions", "*", 1, -1)
        # Core 0.17's names: "account|dummy", count, skip, include_watchonly.
        for first in ("dummy", "account"):
            named = node.rpc("listtransactions", **{first: "*", "count": 2, "skip": 0,
                                                    "include_watchonly": False})
            self.assertEqual([(e["category"], e["txid"]) for e in named],
                             [(e["category"], e["txid"])
                              for e in call(node, "listtransactions", "*", 2)])
        with self.assertRaises(RPCFailure) as caught:
            node.rpc("listtransactions", account="x")
        self.assertEqual((caught.exception.code, caught.exception.message),
                         (-8, 'Dummy value must be set to "*"'))

    def test_listsinceblock(self) -> None:
        node = self.shared.node
        start = call(node, "getbestblockhash")
        txid = call(node, "sendtoaddress", EXTERNAL, "0.3")
        since = call(node, "listsinceblock", start)
        self.assertEqual(list(since), ["transactions", "removed", "lastblock"])
        self.assertIn(txid, [e["txid"] for e in since["transactions"]])
        self.assertEqual((since["removed"], since["lastblock"]), ([], start))
        block = call(node, "generatetoaddress", 1, MINER_ADDRESS)[0]
        self.assertIn(txid, [e["txid"] for e in call(node, "listsinceblock", start)
                             ["transactions"]])
        after = call(node, "listsinceblock", block, 2, False, False)
        self.assertNotIn(txid, [e["txid"] for e in after["transactions"]])
        self.assertEqual(list(after), ["transactions", "lastblock"])
        self.assertEqual(after["lastblock"], start)
        everything = call(node, "listsinceblock")
        self.assertGreaterEqual(len(everything["transactions"]), 21)
        self.assertError(node, -5, "Block not found", "listsinceblock", "11" * 32)
        # Core 0.17 reads the hash leniently (SetHex): anything unknown is -5.
        for malformed in ("11", "zz", "x" + block):
            self.assertError(node, -5, "Block not found", "listsinceblock", malformed)
        self.assertError(node, -8, "Invalid parameter", "listsinceblock", block, 0)

    def test_received_by_address(self) -> None:
        node = self.shared.node
        address = call(node, "getnewaddress", "received")
        empty = [e for e in call(node, "listreceivedbyaddress", 0, True) if e["address"] == address]
        self.assertEqual(empty, [{"address": address, "account": "received", "amount": Decimal(0),
                                  "confirmations": 0, "label": "received", "txids": []}])
        self.assertNotIn(address, [e["address"] for e in call(node, "listreceivedbyaddress")])
        txid = call(node, "sendtoaddress", address, "1.25")
        self.assertEqual(call(node, "getreceivedbyaddress", address, 0), Decimal("1.25"))
        self.assertEqual(call(node, "getreceivedbyaddress", address), Decimal(0))
        self.assertEqual(call(node, "listreceivedbyaddress", 0, False, False, address),
                         [{"address": address, "account": "received", "amount": Decimal("1.25"),
                           "confirmations": 0, "label": "received", "txids": [txid]}])
        call(node, "generatetoaddress", 1, MINER_ADDRESS)
        self.assertEqual(call(node, "getreceivedbyaddress", address), Decimal("1.25"))
        [entry] = call(node, "listreceivedbyaddress", 1, False, False, address)
        self.assertEqual(entry["confirmations"], 1)
        self.assertError(node, -5, "Invalid Coin address", "getreceivedbyaddress", "nope")
        self.assertError(node, -4, "Address not found in wallet", "getreceivedbyaddress",
                         EXTERNAL)
        self.assertError(node, -4, "address_filter parameter was invalid",
                         "listreceivedbyaddress", 1, False, False, "nope")


class RawTransactionTests(FundedCase):

    def test_fundrawtransaction(self) -> None:
        node = self.shared.node
        self.settxfee(node, "0.0002")
        raw = call(node, "createrawtransaction", [], {EXTERNAL: 3})
        funded_tx = call(node, "fundrawtransaction", raw)
        self.assertEqual(list(funded_tx), ["hex", "fee", "changepos"])
        tx = call(node, "decoderawtransaction", funded_tx["hex"])
        self.assertIn(funded_tx["changepos"], (0, 1))  # random without changePosition (Core)
        self.assertEqual(tx["vout"][1 - funded_tx["changepos"]]["value"], Decimal(3))
        self.assertTrue(all(i["scriptSig"]["hex"] == "" for i in tx["vin"]))
        # The fee is sized for Core's 72-byte dummy signatures: 107 scriptSig bytes a P2PKH input.
        sized = len(funded_tx["hex"]) // 2 + 107 * len(tx["vin"])
        self.assertEqual(sat(funded_tx["fee"]), 20000 * sized // 1000)
        signed = call(node, "signrawtransactionwithwallet", funded_tx["hex"])
        self.assertEqual(signed, {"hex": signed["hex"], "complete": True})
        txid = call(node, "sendrawtransaction", signed["hex"])
        self.assertIn(txid, call(node, "getrawmempool"))
        self.assertEqual(paid_fee(node, txid), sat(funded_tx["fee"]))

        at_front = call(node, "fundrawtransaction", raw, {"changePosition": 0, "feeRate": "0.0005"})
        tx = call(node, "decoderawtransaction", at_front["hex"])
        self.assertEqual(at_front["changepos"], 0)
        self.assertEqual(tx["vout"][1]["value"], Decimal(3))
        sized = len(at_front["hex"]) // 2 + 107 * len(tx["vin"])
        self.assertEqual(sat(at_front["fee"]), 50000 * sized // 1000)

        subtracted = call(node, "fundrawtransaction", raw, {"subtractFeeFromOutputs": [0]})
        tx = call(node, "decoderawtransaction", subtracted["hex"])
        self.assertEqual(sat(tx["vout"][1 - subtracted["changepos"]]["value"]),
                         3 * COIN - sat(subtracted["fee"]))

        change = call(node, "getnewaddress", "change")
        locked = call(node, "fundrawtransaction", raw, {"lockUnspents": True,
                                                        "changeAddress": change})
        tx = call(node, "decoderawtransaction", locked["hex"])
        self.assertEqual(tx["vout"][locked["changepos"]]["scriptPubKey"]["addresses"], [change])
        self.assertEqual(sorted((e["txid"], e["vout"]) for e in call(node, "listlockunspent")),
                         sorted((i["txid"], i["vout"]) for i in tx["vin"]))
        call(node, "lockunspent", True)

        # An input of our own is kept, first, with the coins added after it.
        coin = call(node, "listunspent")[0]
        small = call(node, "createrawtransaction", [{"txid": coin["txid"], "vout": coin["vout"]}],
                     {EXTERNAL: coin["amount"] + 1})
        tx = call(node, "decoderawtransaction", call(node, "fundrawtransaction", small)["hex"])
        self.assertEqual((tx["vin"][0]["txid"], tx["vin"][0]["vout"]),
                         (coin["txid"], coin["vout"]))
        self.assertGreater(len(tx["vin"]), 1)
        self.assertIn("hex", call(node, "fundrawtransaction", raw, True))

    def test_fundrawtransaction_errors(self) -> None:
        node = self.shared.node
        raw = call(node, "createrawtransaction", [], {EXTERNAL: 3})
        self.assertError(node, -22, "TX decode failed", "fundrawtransaction", "zz")
        self.assertError(node, -8, "TX must have at least one output", "fundrawtransaction",
                         call(node, "createrawtransaction", [], {}))
        self.assertError(node, -8, "changePosition out of bounds", "fundrawtransaction", raw,
                         {"changePosition": 2})
        self.assertError(node, -8, "Invalid parameter, duplicated position: 0",
                         "fundrawtransaction", raw, {"subtractFeeFromOutputs": [0, 0]})
        self.assertError(node, -8, "Invalid parameter, negative position: -1",
                         "fundrawtransaction", raw, {"subtractFeeFromOutputs": [-1]})
        self.assertError(node, -8, "Invalid parameter, position too large: 1",
                         "fundrawtransaction", raw, {"subtractFeeFromOutputs": [1]})
        self.assertError(node, -3, "Unexpected key foo", "fundrawtransaction", raw, {"foo": 1})
        self.assertError(node, -3, "Expected type string for changeAddress, got number",
                         "fundrawtransaction", raw, {"changeAddress": 1})
        self.assertError(node, -5, "changeAddress must be a valid coin address",
                         "fundrawtransaction", raw, {"changeAddress": "nope"})
        self.assertError(node, -8, "Cannot specify both conf_target and feeRate",
                         "fundrawtransaction", raw, {"feeRate": "0.001", "conf_target": 2})
        self.assertError(node, -3, "Expected type object, got string", "fundrawtransaction",
                         raw, "x")
        self.assertError(node, -4, "Insufficient funds", "fundrawtransaction",
                         call(node, "createrawtransaction", [], {EXTERNAL: 100000}))
        unknown = call(node, "createrawtransaction", [{"txid": "11" * 32, "vout": 0}],
                       {EXTERNAL: 1})
        self.assertError(node, -4, "Insufficient funds", "fundrawtransaction", unknown)

    def test_signrawtransactionwithwallet(self) -> None:
        node = self.shared.node
        coin = call(node, "listunspent")[0]
        spend = [{"txid": coin["txid"], "vout": coin["vout"]}]
        raw = call(node, "createrawtransaction", spend,
                   {EXTERNAL: coin["amount"] - Decimal("0.001")})
        signed = call(node, "signrawtransactionwithwallet", raw)
        self.assertEqual(list(signed), ["hex", "complete"])
        self.assertIs(signed["complete"], True)
        [accept] = call(node, "testmempoolaccept", [signed["hex"]])
        self.assertIs(accept["allowed"], True, accept)
        anyone = call(node, "signrawtransactionwithwallet", raw, None, "ALL|ANYONECANPAY")
        self.assertIs(anyone["complete"], True)
        self.assertNotEqual(anyone["hex"], signed["hex"])

        unknown = call(node, "createrawtransaction", [{"txid": "11" * 32, "vout": 0}],
                       {EXTERNAL: 1})
        result = call(node, "signrawtransactionwithwallet", unknown)
        self.assertEqual(result, {"hex": unknown, "complete": False, "errors": [
            {"txid": "11" * 32, "vout": 0, "scriptSig": "", "sequence": 4294967295,
             "error": "Input not found or already spent"}]})
        # Described in prevtxs with one of our scripts, it can be signed.
        prevtx = {"txid": "11" * 32, "vout": 0, "scriptPubKey": coin["scriptPubKey"],
                  "amount": 2}
        self.assertIs(call(node, "signrawtransactionwithwallet", unknown, [prevtx])["complete"],
                      True)
        # Someone else's coin: no key.
        txid, _ = self.shared.miner_coin()
        theirs = call(node, "createrawtransaction", [{"txid": txid, "vout": 0}], {EXTERNAL: 1})
        result = call(node, "signrawtransactionwithwallet", theirs)
        self.assertEqual((result["complete"], result["errors"][0]["error"]),
                         (False, "Unable to sign input, invalid stack size (possibly missing key)"))

        mismatch = dict(prevtx, txid=coin["txid"], vout=coin["vout"], scriptPubKey="51")
        self.assertErrorStarts(node, -22, "Previous output scriptPubKey mismatch:\nOP_DUP ",
                               "signrawtransactionwithwallet", raw, [mismatch])
        self.assertError(node, -1, "BOGUS is not a valid sighash parameter.",
                         "signrawtransactionwithwallet", raw, None, "BOGUS")
        self.assertError(node, -22, "TX decode failed", "signrawtransactionwithwallet", "zz")
        self.assertError(node, -22, 'expected object with {"txid\'","vout","scriptPubKey"}',
                         "signrawtransactionwithwallet", raw, [1])
        self.assertError(node, -3, "Missing vout", "signrawtransactionwithwallet", raw,
                         [{"txid": "11" * 32, "scriptPubKey": "51"}])
        self.assertError(node, -22, "vout must be positive", "signrawtransactionwithwallet",
                         raw, [dict(prevtx, vout=-1)])
        self.assertError(node, -3, "Expected type array, got string",
                         "signrawtransactionwithwallet", raw, "x")

    def test_signrawtransactionwithkey(self) -> None:
        shared = self.shared
        node = shared.node
        txid, value = shared.miner_coin()
        raw = call(node, "createrawtransaction", [{"txid": txid, "vout": 0}],
                   {EXTERNAL: coins(value - 100_000)})
        signed = call(node, "signrawtransactionwithkey", raw, [MINER_WIF])
        self.assertEqual(list(signed), ["hex", "complete"])
        self.assertIs(signed["complete"], True)
        self.assertIn(call(node, "sendrawtransaction", signed["hex"]), call(node, "getrawmempool"))
        wrong = call(node, "signrawtransactionwithkey", raw, [OTHER_WIF])
        self.assertEqual((wrong["complete"], [e["error"] for e in wrong["errors"]]),
                         (False, ["Unable to sign input, invalid stack size (possibly missing key)"]))
        # A P2SH input signs with the redeem script given in prevtxs.
        multisig = call(node, "createmultisig", 1, [MINER_PUBKEY])
        script = call(node, "validateaddress", multisig["address"])["scriptPubKey"]
        p2sh = call(node, "createrawtransaction", [{"txid": "22" * 32, "vout": 1}], {EXTERNAL: 1})
        prevtx = {"txid": "22" * 32, "vout": 1, "scriptPubKey": script,
                  "redeemScript": multisig["redeemScript"], "amount": 2}
        self.assertIs(call(node, "signrawtransactionwithkey", p2sh, [MINER_WIF], [prevtx])
                      ["complete"], True)
        without = dict(prevtx)
        del without["redeemScript"]
        self.assertIs(call(node, "signrawtransactionwithkey", p2sh, [MINER_WIF], [without])
                      ["complete"], False)
        self.assertError(node, -5, "Invalid private key", "signrawtransactionwithkey", raw,
                         ["notakey"])
        self.assertError(node, -3, "Expected type array, got string",
                         "signrawtransactionwithkey", raw, MINER_WIF)
        self.assertError(node, -1, "all is not a valid sighash parameter.",
                         "signrawtransactionwithkey", raw, [MINER_WIF], None, "all")

    def test_help_listing(self) -> None:
        listing = call(self.shared.node, "help").split("\n")
        for line in [
                'abandontransaction "txid"',
                'fundrawtransaction "hexstring" ( options iswitness )',
                'getbalance ( "account" minconf include_watchonly )',
                'getreceivedbyaddress "address" ( minconf )',
                'gettransaction "txid" ( include_watchonly )',
                "getunconfirmedbalance",
                "listlockunspent",
                "listreceivedbyaddress ( minconf include_empty include_watchonly address_filter )",
                'listsinceblock ( "blockhash" target_confirmations include_watchonly '
                "include_removed )",
                "listtransactions (dummy count skip include_watchonly)",
                'listunspent ( minconf maxconf  ["addresses",...] [include_unsafe] '
                "[query_options])",
                'lockunspent unlock ([{"txid":"txid","vout":n},...])',
                'sendmany "" {"address":amount,...} ( minconf "comment" ["address",...] '
                'replaceable conf_target "estimate_mode")',
                'sendtoaddress "address" amount ( "comment" "comment_to" subtractfeefromamount '
                'replaceable conf_target "estimate_mode")',
                "settxfee amount",
                'signrawtransactionwithkey "hexstring" ["privatekey1",...] ( [{"txid":"id",'
                '"vout":n,"scriptPubKey":"hex","redeemScript":"hex"},...] sighashtype )',
                'signrawtransactionwithwallet "hexstring" ( [{"txid":"id","vout":n,'
                '"scriptPubKey":"hex","redeemScript":"hex"},...] sighashtype )']:
            self.assertIn(line, listing)


# ---------------------------------------------------------------------------------------- private


class ReorgTests(RPCCase):

    def test_reorg_unconfirms_then_abandon_after_eviction(self) -> None:
        node, _ = self.private_node()
        other = call(node, "getnewaddress", "other")
        # The only mature coin is the coinbase of block 1.
        [coinbase] = call(node, "listunspent")
        outpoint = {"txid": coinbase["txid"], "vout": coinbase["vout"]}
        txid = call(node, "sendtoaddress", other, 10)
        block = call(node, "generatetoaddress", 1, MINER_ADDRESS)[0]
        gettx = call(node, "gettransaction", txid)
        self.assertEqual((gettx["confirmations"], gettx["blockhash"], gettx["blockindex"]),
                         (1, block, 1))

        call(node, "invalidateblock", block)
        gettx = call(node, "gettransaction", txid)
        self.assertEqual((gettx["confirmations"], gettx["trusted"]), (0, True))
        self.assertNotIn("blockhash", gettx)
        self.assertIn(txid, call(node, "getrawmempool"))
        since = call(node, "listsinceblock", block)
        self.assertEqual({e["txid"] for e in since["removed"]}, {txid})
        self.assertIn(txid, [e["txid"] for e in since["transactions"]])
        self.assertError(node, -5, "Transaction not eligible for abandonment",
                         "abandontransaction", txid)

        call(node, "reconsiderblock", block)
        gettx = call(node, "gettransaction", txid)
        self.assertEqual((gettx["confirmations"], gettx["blockhash"]), (1, block))
        self.assertError(node, -5, "Transaction not eligible for abandonment",
                         "abandontransaction", txid)

        # Back to height 99: the coinbase it spends is immature, so the pool drops it.
        height_100 = call(node, "getblockhash", 100)
        call(node, "invalidateblock", height_100)
        self.assertNotIn(txid, call(node, "getrawmempool"))
        gettx = call(node, "gettransaction", txid)
        self.assertEqual((gettx["confirmations"], gettx["trusted"]), (0, False))
        self.assertError(node, -8, "Invalid parameter, expected unspent output",
                         "lockunspent", False, [outpoint])
        self.assertIsNone(call(node, "abandontransaction", txid))
        sends = [d for d in call(node, "gettransaction", txid)["details"]
                 if d["category"] == "send"]
        self.assertEqual([d["abandoned"] for d in sends], [True])
        # Its input is the wallet's again.
        self.assertIs(call(node, "lockunspent", False, [outpoint]), True)
        call(node, "lockunspent", True)
        self.assertError(node, -5, "Invalid or non-wallet transaction id", "abandontransaction",
                         "11" * 32)

        # The block confirming it comes back: confirmed, no longer abandoned.
        call(node, "reconsiderblock", height_100)
        self.assertEqual(call(node, "getblockcount"), 102)
        gettx = call(node, "gettransaction", txid)
        self.assertEqual((gettx["confirmations"], gettx["blockhash"]), (1, block))
        self.assertEqual([d["abandoned"] for d in gettx["details"] if d["category"] == "send"],
                         [False])


class CrashTests(RPCCase):

    def test_kill9_right_after_send_keeps_the_spend(self) -> None:
        node, _ = private_process(self, "-limitancestorcount=2")
        [coinbase] = call(node, "listunspent")
        outpoint = {"txid": coinbase["txid"], "vout": coinbase["vout"]}
        txid = call(node, "sendtoaddress", EXTERNAL, 5)
        node.kill()
        node.launch()
        node.wait_ready()
        gettx = call(node, "gettransaction", txid)
        self.assertGreaterEqual(gettx["confirmations"], 0)
        if gettx["confirmations"] == 0:
            self.assertIn(txid, call(node, "getrawmempool"))
        self.assertNotIn(outpoint, [{"txid": u["txid"], "vout": u["vout"]}
                                    for u in call(node, "listunspent", 0)])
        self.assertError(node, -8, "Invalid parameter, expected unspent output",
                         "lockunspent", False, [outpoint])
        self.assertEqual(sat(call(node, "getbalance")), 45 * COIN - paid_fee(node, txid))

        # A transaction the pool refuses (a third unconfirmed generation, over
        # -limitancestorcount=2) is abandoned at once: its coins are the wallet's again.
        call(node, "sendtoaddress", EXTERNAL, 1)
        balance = call(node, "getbalance")
        self.assertErrorStarts(node, -4, "Error: The transaction was rejected! Reason given: "
                               "too-long-mempool-chain", "sendtoaddress", EXTERNAL, 1)
        self.assertEqual(call(node, "getbalance"), balance)
        [rejected] = [e for e in call(node, "listtransactions") if e.get("abandoned")]
        self.assertNotIn(rejected["txid"], call(node, "getrawmempool"))
        self.assertErrorStarts(node, -4, "Transaction commit failed:: too-long-mempool-chain",
                               "sendmany", "", {EXTERNAL: 1})
        call(node, "generatetoaddress", 1, MINER_ADDRESS)
        self.assertEqual(call(node, "gettransaction", txid)["confirmations"], 1)

        # An encrypted, locked wallet cannot send or sign.
        call(node, "encryptwallet", "secret")
        self.assertError(node, -13, UNLOCK_FIRST, "sendtoaddress", EXTERNAL, 1)
        self.assertError(node, -13, UNLOCK_FIRST, "sendmany", "", {EXTERNAL: 1})
        raw = call(node, "createrawtransaction", [{"txid": "11" * 32, "vout": 0}], {EXTERNAL: 1})
        self.assertError(node, -13, UNLOCK_FIRST, "signrawtransactionwithwallet", raw)
        call(node, "walletpassphrase", "secret", 60)
        self.assertIn(call(node, "sendtoaddress", EXTERNAL, 1), call(node, "getrawmempool"))
