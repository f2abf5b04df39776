"""Raw-transaction methods through the real stack (tests/rpcchain.py)."""

from __future__ import annotations

from decimal import Decimal

import simplejson
from twisted.internet.defer import inlineCallbacks

from coin.chainparams import COIN, MAIN
from coin.primitives.address import Destination, encode_address
from coin.primitives.hashes import hash_to_hex
from coin.primitives.script import OP_PUSHDATA1
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.rpc.jsonrpc import encode_json
from coin.rpc.methods.mempool import METHODS as MEMPOOL_METHODS
from coin.rpc.methods.rawtransactions import METHODS
from coin.rpc.methods.util import METHODS as UTIL_METHODS
from coin.script.sign import KeyStore, sign_transaction
from coin.script.standard import p2pkh_script
from coin.views.transaction import tx_json

from tests.rpcchain import TIP_HEIGHT, ChainRPCTestCase

# The reference listing lines (rpcm_27) of the methods here.
REFERENCE_HELP_LINES = [
    'createrawtransaction [{"txid":"id","vout":n},...] [{"address":amount},{"data":"hex"},...] '
    "( locktime ) ( replaceable )",
    'decoderawtransaction "hexstring" ( iswitness )', 'decodescript "hexstring"',
    'getrawtransaction "txid" ( verbose "blockhash" )',
    'sendrawtransaction "hexstring" ( allowhighfees )']
TXID = "aa" * 32


class RawTxTestCase(ChainRPCTestCase):
    methods = METHODS + UTIL_METHODS + MEMPOOL_METHODS

    def keystore(self) -> KeyStore:
        keys = KeyStore()
        keys.add_key(self.builder.key)
        return keys

    def signed(self, tx: Transaction) -> Transaction:
        """``tx`` signed with the builder's key (every input spends a builder P2PKH output)."""
        signed, complete = sign_transaction(tx, [self.builder.script_pubkey] * len(tx.vin),
                                            self.keystore())
        self.assertTrue(complete)
        return signed

    def spend(self, height: int, value: int, **options) -> Transaction:
        """An unsigned spend of block ``height``'s coinbase paying ``value`` to the builder."""
        coin = self.mature_coinbase(height)
        return Transaction([TxIn(coin.outpoint, b"", options.get("sequence", 0xFFFFFFFF))],
                           [TxOut(value, self.builder.script_pubkey)],
                           options.get("locktime", 0), options.get("version", 2))


class CreateTests(RawTxTestCase):
    @inlineCallbacks
    def test_round_trip_create_sign_decode_send(self):
        coin = self.mature_coinbase(1)
        other = self.address(b"\x02" * 20)
        hexstring = yield self.result(
            "createrawtransaction", [{"txid": hash_to_hex(coin.outpoint.txid), "vout": 0}],
            {self.address(): Decimal("49.99"), other: "0.00990000", "data": "cafe"})
        unsigned = Transaction.from_hex(hexstring)
        self.assertEqual((unsigned.version, unsigned.locktime), (2, 0))
        self.assertEqual([(i.prevout, i.script_sig, i.sequence) for i in unsigned.vin],
                         [(coin.outpoint, b"", 0xFFFFFFFF)])
        self.assertEqual([(o.value, o.script_pubkey) for o in unsigned.vout],
                         [(4999 * COIN // 100, self.builder.script_pubkey),
                          (990000, p2pkh_script(b"\x02" * 20)),
                          (0, bytes.fromhex("6a02cafe"))])
        signed = self.signed(unsigned)
        decoded = yield self.result("decoderawtransaction", signed.serialize().hex())
        self.assertEqual(decoded, _as_printed(tx_json(signed, self.params, include_hex=False)))
        self.assertEqual(decoded["vin"][0]["scriptSig"]["hex"], signed.vin[0].script_sig.hex())
        self.assertEqual((yield self.result("sendrawtransaction", signed.serialize().hex())),
                         signed.txid_hex)
        self.assertEqual((yield self.result("getrawmempool")), [signed.txid_hex])

    @inlineCallbacks
    def test_sequences_locktime_and_replaceable(self):
        inputs = [{"txid": TXID, "vout": 1}, {"txid": TXID, "vout": 2, "sequence": 7}]

        @inlineCallbacks
        def sequences(*args):
            tx = Transaction.from_hex((yield self.result("createrawtransaction", inputs, {},
                                                         *args)))
            return tx.locktime, [txin.sequence for txin in tx.vin]

        self.assertEqual((yield sequences()), (0, [0xFFFFFFFF, 7]))
        self.assertEqual((yield sequences(500)), (500, [0xFFFFFFFE, 7]))
        self.assertEqual((yield sequences(0, True)), (0, [0xFFFFFFFD, 7]))
        self.assertEqual((yield sequences(None, True)), (0, [0xFFFFFFFD, 7]))
        # Contradictions: no input signals although replaceable, or one does although not.
        self.assertEqual((yield self.error("createrawtransaction", [
            {"txid": TXID, "vout": 2, "sequence": 0xFFFFFFFF}], {}, 0, True)),
            (500, -8, "Invalid parameter combination: Sequence number(s) contradict "
                      "replaceable option"))
        self.assertEqual((yield self.error("createrawtransaction", inputs, {}, 0, False)),
                         (500, -8, "Invalid parameter combination: Sequence number(s) "
                                   "contradict replaceable option"))
        # Outputs as an array of one-key objects, in order.
        hexstring = yield self.result("createrawtransaction", [],
                                      [{"data": "00"}, {self.address(): 1}])
        self.assertEqual([(o.value, o.script_pubkey) for o in Transaction.from_hex(hexstring).vout],
                         [(0, b"\x6a\x01\x00"), (COIN, self.builder.script_pubkey)])
        self.assertEqual((yield self.error("createrawtransaction", [], {"data": ""})),
                         (500, -8, "Data must be hexadecimal string (not '')"))

    @inlineCallbacks
    def test_errors_in_cores_words(self):
        address = self.address()
        main_address = encode_address(Destination("pubkeyhash", b"\x01" * 20), MAIN)
        good = [{"txid": TXID, "vout": 0}]
        for params, expected in (
                ((None, {}), (-8, "Invalid parameter, arguments 1 and 2 must be non-null")),
                ((good, None), (-8, "Invalid parameter, arguments 1 and 2 must be non-null")),
                (({}, {}), (-3, "Expected type array, got object")),
                ((good, 5), (-1, "JSON value is not an array as expected")),
                (([5], {}), (-1, "JSON value is not an object as expected")),
                (([{"vout": 0}], {}), (-8, "txid must be hexadecimal string (not '')")),
                (([{"txid": "zz", "vout": 0}], {}),
                 (-8, "txid must be hexadecimal string (not 'zz')")),
                (([{"txid": "abcd", "vout": 0}], {}), (-8, "txid must be of length 64 (not 4)")),
                (([{"txid": TXID}], {}), (-8, "Invalid parameter, missing vout key")),
                (([{"txid": TXID, "vout": "0"}], {}), (-8, "Invalid parameter, missing vout key")),
                (([{"txid": TXID, "vout": -1}], {}), (-8, "Invalid parameter, vout must be positive")),
                (([{"txid": TXID, "vout": Decimal("1.5")}], {}),
                 (-1, "JSON integer out of range")),
                (([{"txid": TXID, "vout": 0, "sequence": -1}], {}),
                 (-8, "Invalid parameter, sequence number is out of range")),
                (([{"txid": TXID, "vout": 0, "sequence": 1 << 32}], {}),
                 (-8, "Invalid parameter, sequence number is out of range")),
                ((good, {"foo": 1}), (-5, "Invalid Coin address: foo")),
                ((good, {main_address: 1}), (-5, "Invalid Coin address: " + main_address)),
                ((good, [{address: 1}, {address: 2}]),
                 (-8, "Invalid parameter, duplicated address: " + address)),
                ((good, [{"data": "00"}, {"data": "01"}]),
                 (-8, "Invalid parameter, duplicate key: data")),
                ((good, [5]), (-8, "Invalid parameter, key-value pair not an object as expected")),
                ((good, [{address: 1, "data": "00"}]),
                 (-8, "Invalid parameter, key-value pair must contain exactly one key")),
                ((good, {"data": "zz"}), (-8, "Data must be hexadecimal string (not 'zz')")),
                ((good, {"data": 123}), (-8, "Data must be hexadecimal string (not '123')")),
                ((good, {address: "x"}), (-3, "Invalid amount")),
                ((good, {address: Decimal("0.000000001")}), (-3, "Invalid amount")),
                ((good, {address: -1}), (-3, "Amount out of range")),
                ((good, {address: None}), (-3, "Amount is not a number or string")),
                ((good, {}, -1), (-8, "Invalid parameter, locktime out of range")),
                ((good, {}, 1 << 32), (-8, "Invalid parameter, locktime out of range")),
                ((good, {}, "0"), (-3, "Expected type number, got string")),
                ((good, {}, 0, 1), (-3, "Expected type bool, got number"))):
            self.assertEqual((yield self.error("createrawtransaction", *params)),
                             (500,) + expected, params)
        # {"data": 1234} is the hex text "1234", as UniValue's getValStr gives it.
        hexstring = yield self.result("createrawtransaction", good, {"data": 1234})
        self.assertEqual(Transaction.from_hex(hexstring).vout[0].script_pubkey.hex(), "6a021234")


class DecodeTests(RawTxTestCase):
    @inlineCallbacks
    def test_decoderawtransaction(self):
        tx = self.signed(self.spend(2, 49 * COIN))
        decoded = yield self.result("decoderawtransaction", tx.serialize().hex())
        self.assertEqual(list(decoded), ["txid", "hash", "size", "vsize", "version", "type",
                                         "locktime", "vin", "vout"])
        self.assertEqual((decoded["txid"], decoded["hash"]), (tx.txid_hex, tx.txid_hex))
        self.assertEqual((decoded["size"], decoded["vsize"]), (tx.size, tx.size))
        # iswitness is accepted and changes nothing.
        self.assertEqual((yield self.result("decoderawtransaction", tx.serialize().hex(), True)),
                         decoded)
        for text in ("", "zz", "0", tx.serialize().hex() + "00", tx.serialize().hex()[:-2]):
            self.assertEqual((yield self.error("decoderawtransaction", text)),
                             (500, -22, "TX decode failed"))
        self.assertEqual((yield self.error("decoderawtransaction", 5)),
                         (500, -3, "Expected type string, got number"))
        self.assertEqual((yield self.error("decoderawtransaction", "00", 1)),
                         (500, -3, "Expected type bool, got number"))

    @inlineCallbacks
    def test_decodescript(self):
        script = self.builder.script_pubkey
        decoded = yield self.result("decodescript", script.hex())
        self.assertEqual(list(decoded), ["asm", "reqSigs", "type", "addresses", "p2sh"])
        self.assertEqual((decoded["type"], decoded["addresses"]), ("pubkeyhash", [self.address()]))
        p2sh = bytes.fromhex("a914" + "11" * 20 + "87")
        self.assertNotIn("p2sh", (yield self.result("decodescript", p2sh.hex())))
        empty = yield self.result("decodescript", "")
        self.assertEqual((empty["asm"], empty["type"]), ("", "nonstandard"))
        self.assertEqual((yield self.error("decodescript", "zz")),
                         (500, -8, "argument must be hexadecimal string (not 'zz')"))
        self.assertEqual((yield self.error("decodescript", 5)),
                         (500, -3, "Expected type string, got number"))


class GetRawTransactionTests(RawTxTestCase):
    @inlineCallbacks
    def test_found_in_the_named_block(self):
        spend = self.signed(self.spend(3, 49 * COIN))
        block, = yield self.mine(txs=[spend])
        blockhash = hash_to_hex(block.hash)
        self.assertEqual((yield self.result("getrawtransaction", spend.txid_hex, False, blockhash)),
                         spend.serialize().hex())
        verbose = yield self.result("getrawtransaction", spend.txid_hex, True, blockhash)
        self.assertEqual(list(verbose)[:2], ["in_active_chain", "txid"])
        self.assertEqual(list(verbose)[-5:],
                         ["blockhash", "height", "confirmations", "time", "blocktime"])
        self.assertEqual((verbose["in_active_chain"], verbose["blockhash"], verbose["height"],
                          verbose["confirmations"], verbose["hex"]),
                         (True, blockhash, TIP_HEIGHT + 1, 1, spend.serialize().hex()))
        # Numbers work as verbose flags too.
        self.assertEqual((yield self.result("getrawtransaction", spend.txid_hex, 1, blockhash)),
                         verbose)
        self.assertEqual((yield self.result("getrawtransaction", spend.txid_hex, 0, blockhash)),
                         spend.serialize().hex())
        coinbase = block.txs[0].txid_hex
        self.assertEqual((yield self.result("getrawtransaction", coinbase, None, blockhash)),
                         block.txs[0].serialize().hex())

    @inlineCallbacks
    def test_found_through_an_unspent_output_without_txindex(self):
        # Core 0.17 without -txindex: a transaction with an unspent output is found.
        spend = self.signed(self.spend(3, 49 * COIN))
        block, = yield self.mine(txs=[spend])
        self.assertEqual((yield self.result("getrawtransaction", spend.txid_hex)),
                         spend.serialize().hex())
        verbose = yield self.result("getrawtransaction", spend.txid_hex, True)
        self.assertNotIn("in_active_chain", verbose)
        self.assertEqual((verbose["blockhash"], verbose["height"], verbose["confirmations"]),
                         (hash_to_hex(block.hash), TIP_HEIGHT + 1, 1))
        coinbase = self.mature_coinbase(TIP_HEIGHT).outpoint.txid
        self.assertEqual((yield self.result("getrawtransaction", hash_to_hex(coinbase), True))
                         ["txid"], hash_to_hex(coinbase))

    @inlineCallbacks
    def test_block_off_the_active_chain(self):
        side = yield self.build(parent=self.state.tip.prev.hash)
        yield self.access.submit_block(side)
        verbose = yield self.result("getrawtransaction", side.txs[0].txid_hex, True,
                                    hash_to_hex(side.hash))
        self.assertEqual((verbose["in_active_chain"], verbose["height"],
                          verbose["confirmations"]), (False, -1, 0))

    @inlineCallbacks
    def test_errors(self):
        tip = self.tip_hex()
        header_only = yield self.build()
        yield self.access.submit_header(header_only.header)
        for params, expected in (
                ((TXID,), (-5, "No such mempool transaction. Use -txindex to enable blockchain "
                               "transaction queries. Use gettransaction for wallet transactions.")),
                ((TXID, True, tip), (-5, "No such transaction found in the provided block. "
                                         "Use gettransaction for wallet transactions.")),
                ((TXID, True, "bb" * 32), (-5, "Block hash not found")),
                ((TXID, True, hash_to_hex(header_only.hash)), (-1, "Block not available")),
                ((hash_to_hex(self.params.genesis.txs[0].txid),),
                 (-5, "The genesis block coinbase is not considered an ordinary transaction "
                      "and cannot be retrieved")),
                (("xyz",), (-8, "parameter 1 must be hexadecimal string (not 'xyz')")),
                ((5,), (-8, "parameter 1 must be hexadecimal string (not '')")),
                ((TXID, True, "abcd"), (-8, "parameter 3 must be of length 64 (not 4)")),
                # The reference node's get_bool, not Dash's -3 "Invalid type provided".
                ((TXID, "yes"), (-1, "JSON value is not a boolean as expected")),
                ((TXID, Decimal("0.5")), (-1, "JSON integer out of range"))):
            self.assertEqual((yield self.error("getrawtransaction", *params)),
                             (500,) + expected, params)


class SendTests(RawTxTestCase):
    def send_tx(self, tx: Transaction, *args):
        return self.error("sendrawtransaction", tx.serialize().hex(), *args)

    @inlineCallbacks
    def test_checks_in_core_order(self):
        height = TIP_HEIGHT + 1
        coinbase_value = self.mature_coinbase(1).value
        coinbase = Transaction([TxIn(OutPoint(), b"\x01\x02")], [TxOut(1, b"\x51")])
        unknown = Transaction([TxIn(OutPoint(b"\x42" * 32, 0))], [TxOut(1, b"\x51")])
        for tx, expected in (
                # Context-free checks first, then the coinbase rule.
                (Transaction([TxIn(OutPoint(b"\x42" * 32, 0))], []),
                 "bad-txns-vout-empty (code 16)"),
                (coinbase, "coinbase (code 16)"),
                (self.spend(1, 1, locktime=height + 5, sequence=0), "non-final (code 64)"),
                # BIP68: a relative lock of 200 blocks on a version 2 transaction.
                (self.signed(self.spend(1, 1, sequence=200)), "non-BIP68-final (code 64)"),
                (self.signed(self.spend(1, coinbase_value + 1)),
                 "bad-txns-in-belowout, value in (50.00) < value out (50.00000001) (code 16)"),
                (self.signed(self.spend(TIP_HEIGHT - 5, 1)),
                 "bad-txns-premature-spend-of-coinbase, tried to spend coinbase at depth 6 "
                 "(code 16)"),
                (self.signed(self.spend(1, 1)), "absurdly-high-fee, %d > 10000000 (code 256)"
                 % (coinbase_value - 1)),
                (self.spend(1, coinbase_value - 10_000), "mandatory-script-verify-flag-failed "
                 "(Operation not valid with the current stack size) (code 16)")):
            self.assertEqual((yield self.send_tx(tx)), (500, -26, expected))
        self.assertEqual((yield self.send_tx(unknown)), (500, -25, "Missing inputs"))
        # allowhighfees lifts the guard: the whole coinbase as fee is accepted.
        greedy = self.signed(self.spend(1, 1))
        self.assertEqual((yield self.result("sendrawtransaction", greedy.serialize().hex(), True)),
                         greedy.txid_hex)

    @inlineCallbacks
    def test_policy_script_failure_is_non_mandatory(self):
        tx = self.signed(self.spend(1, self.mature_coinbase(1).value - 10_000))
        # The same signature pushed with OP_PUSHDATA1: valid, but not minimal.
        sig_length = tx.vin[0].script_sig[0]
        script_sig = (bytes((OP_PUSHDATA1,)) + tx.vin[0].script_sig)
        loose = Transaction([TxIn(tx.vin[0].prevout, script_sig, tx.vin[0].sequence)], tx.vout,
                            tx.locktime, tx.version)
        self.assertEqual(script_sig[1], sig_length)
        self.assertEqual((yield self.send_tx(loose)), (500, -26, "non-mandatory-script-verify-flag "
                                                                 "(Data push larger than necessary) "
                                                                 "(code 64)"))

    @inlineCallbacks
    def test_already_in_chain(self):
        spend = self.signed(self.spend(4, 49 * COIN))
        yield self.mine(txs=[spend])
        self.assertEqual((yield self.send_tx(spend)),
                         (500, -27, "transaction already in block chain"))
        block = yield self.access.read_block(self.state.at_height(50))
        self.assertEqual((yield self.send_tx(block.txs[0])),
                         (500, -27, "transaction already in block chain"))

    @inlineCallbacks
    def test_decode_and_type_errors(self):
        self.assertEqual((yield self.error("sendrawtransaction", "zz")),
                         (500, -22, "TX decode failed"))
        self.assertEqual((yield self.error("sendrawtransaction", 5)),
                         (500, -3, "Expected type string, got number"))
        self.assertEqual((yield self.error("sendrawtransaction", "00", "yes")),
                         (500, -3, "Expected type bool, got string"))

    @inlineCallbacks
    def test_help_lines_match_the_reference(self):
        listing = (yield self.result("help")).split("\n")
        for line in REFERENCE_HELP_LINES:
            self.assertIn(line, listing)


def _as_printed(value):
    """A view's value as a client reads it back from the wire."""
    return simplejson.loads(encode_json(value), use_decimal=True)
