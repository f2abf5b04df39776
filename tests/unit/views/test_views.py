"""JSON views (coin.views): exact key order, number formats and shapes, on real chains."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from decimal import Decimal
from typing import Any, List

import simplejson
from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import COIN, MAX_MONEY, REGTEST, TEST
from coin.mempool.accept import PoolPolicy, accept_to_mempool
from coin.mempool.pool import Mempool
from coin.consensus.versionbits import deployment_state
from coin.primitives.address import Destination, decode_address, encode_address
from coin.primitives.coin import Coin
from coin.primitives.hashes import hash160, hash_to_hex
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.standard import (
    multisig_script,
    nulldata_script,
    p2pk_script,
    p2pkh_script,
    p2sh_script,
)
from coin.testing.chainbuilder import ChainBuilder, deterministic_key, open_chain
from coin.views.amounts import AmountError, amount_to_json, parse_amount, real_to_json
from coin.views.block import block_json, header_json
from coin.chain.access import ChainStatus
from coin.views.chaininfo import chain_info_json
from coin.views.mempool import mempool_contents_json, mempool_entry_json
from coin.views.script import decodescript_json, script_pubkey_json, script_sig_json
from coin.views.transaction import tx_block_fields, tx_json
from coin.views.utxo import MEMPOOL_HEIGHT, getutxos_bin, getutxos_json, txout_json

# Response bodies of /work/shared/reference/transcripts/<file> (the reference node), with
# string values longer than 12 characters shortened: only their key order is compared.
REFERENCE = {
    # rpcm_08_getblock_00005f929eb3_2
    "block": (
        '{"hash":"00005f92..","confirmations":1,"strippedsize":441,"size":441,"weight":1764,'
        '"height":111,"version":536870912,"versionHex":"20000000","merkleroot":"7bef75eb..",'
        '"tx":[{"txid":"70af47c6..","hash":"70af47c6..","version":2,"size":168,"vsize":168,'
        '"weight":672,"locktime":0,"vin":[{"coinbase":"016f0101","sequence":4294967295}],'
        '"vout":[{"value":6930.00000,"n":0,"scriptPubKey":{"asm":"02e638c7..",'
        '"hex":"2102e638..","reqSigs":1,"type":"pubkey","addresses":["7HpFJ8Tt.."]}},'
        '{"value":6930.00000,"n":1,"scriptPubKey":{"asm":"OP_DUP O..","hex":"76a914b4..",'
        '"reqSigs":1,"type":"pubkeyhash","addresses":["7KXXXXXX.."]}},{"value":1540.00000,'
        '"n":2,"scriptPubKey":{"asm":"OP_DUP O..","hex":"76a914b4..","reqSigs":1,'
        '"type":"pubkeyhash","addresses":["7KXXXXXX.."]}}],"hex":"02000000.."},'
        '{"txid":"f84329d2..","hash":"f84329d2..","version":2,"size":192,"vsize":192,'
        '"weight":768,"locktime":110,"vin":[{"txid":"d242befc..","vout":0,'
        '"scriptSig":{"asm":"30440220..","hex":"47304402.."},"sequence":4294967294}],'
        '"vout":[{"value":448.45238,"n":0,"scriptPubKey":{"asm":"OP_DUP O..",'
        '"hex":"76a91407..","reqSigs":1,"type":"pubkeyhash","addresses":["73iqBQDx.."]}},'
        '{"value":12.34567,"n":1,"scriptPubKey":{"asm":"OP_DUP O..","hex":"76a91447..",'
        '"reqSigs":1,"type":"pubkeyhash","addresses":["79Z8PWgY.."]}}],"hex":"02000000.."}],'
        '"time":1795643809,"mediantime":1795643696,"nonce":30195,"bits":"1f00b251",'
        '"difficulty":2.190595064976095e-05,"chainwork":"00000000..","nTx":2,'
        '"previousblockhash":"00006651.."}'
    ),
    # rpcm_14_getblockheader_00005f929eb3
    "header": (
        '{"hash":"00005f92..","confirmations":1,"height":111,"version":536870912,'
        '"versionHex":"20000000","merkleroot":"7bef75eb..","time":1795643809,'
        '"mediantime":1795643696,"nonce":30195,"bits":"1f00b251",'
        '"difficulty":2.190595064976095e-05,"chainwork":"00000000..","nTx":2,'
        '"previousblockhash":"00006651.."}'
    ),
    # rpcm_16_getrawtransaction_f84329d24a8a_True
    "rawtx": (
        '{"txid":"f84329d2..","hash":"f84329d2..","version":2,"size":192,"vsize":192,'
        '"weight":768,"locktime":110,"vin":[{"txid":"d242befc..","vout":0,'
        '"scriptSig":{"asm":"30440220..","hex":"47304402.."},"sequence":4294967294}],'
        '"vout":[{"value":448.45238,"n":0,"scriptPubKey":{"asm":"OP_DUP O..",'
        '"hex":"76a91407..","reqSigs":1,"type":"pubkeyhash","addresses":["73iqBQDx.."]}},'
        '{"value":12.34567,"n":1,"scriptPubKey":{"asm":"OP_DUP O..","hex":"76a91447..",'
        '"reqSigs":1,"type":"pubkeyhash","addresses":["79Z8PWgY.."]}}],"hex":"02000000..",'
        '"blockhash":"00005f92..","confirmations":1,"time":1795643809,"blocktime":1795643809}'
    ),
    # rpcm_25_gettxout_f84329d24a8a_0
    "txout": (
        '{"bestblock":"00005f92..","confirmations":1,"value":448.45238,'
        '"scriptPubKey":{"asm":"OP_DUP O..","hex":"76a91407..","reqSigs":1,"type":"pubkeyhash",'
        '"addresses":["73iqBQDx.."]},"coinbase":false}'
    ),
    # rest_87_chaininfo_json
    "chaininfo": (
        '{"chain":"regtest","blocks":111,"headers":111,"bestblockhash":"00005f92..",'
        '"difficulty":{"proof-of-work":2.464473435555347e-05,'
        '"proof-of-stake":4.656542373906925e-10},"mediantime":1795643696,'
        '"verificationprogress":1,"initialblockdownload":false,"chainwork":"00000000..",'
        '"size_on_disk":33531,"softforks":[{"id":"bip34","version":2,'
        '"reject":{"status":false}},{"id":"bip66","version":3,"reject":{"status":true}},'
        '{"id":"bip65","version":4,"reject":{"status":true}}],'
        '"bip9_softforks":{"csv":{"status":"defined","startTime":1462060800,'
        '"timeout":1493596800,"since":0},"segwit":{"status":"defined","startTime":1479168000,'
        '"timeout":1510704000,"since":0}},"warnings":""}'
    ),
    # rpcm_24_getmempoolentry_9b73bbc3a676 (rpcm_23 and rest_92 have the same entry)
    "mempoolentry": (
        '{"fees":{"base":0.00229,"modified":0.00229,"ancestor":0.00229,"descendant":0.00229},'
        '"size":226,"fee":0.00229,"modifiedfee":0.00229,"time":1795643810,"height":111,'
        '"descendantcount":1,"descendantsize":226,"descendantfees":229,"ancestorcount":1,'
        '"ancestorsize":226,"ancestorfees":229,"wtxid":"9b73bbc3..","depends":[],"spentby":[]}'
    ),
    # rest_67_getutxos_4mixed_json
    "getutxos": (
        '{"chainHeight":111,"chaintipHash":"00005f92..","bitmap":"0110","utxos":[{"height":111,'
        '"value":448.45238,"scriptPubKey":{"asm":"OP_DUP O..","hex":"76a91407..","reqSigs":1,'
        '"type":"pubkeyhash","addresses":["73iqBQDx.."]}},{"height":111,"value":12.34567,'
        '"scriptPubKey":{"asm":"OP_DUP O..","hex":"76a91447..","reqSigs":1,"type":"pubkeyhash",'
        '"addresses":["79Z8PWgY.."]}}]}'
    ),
}

HEADER_KEYS = ["hash", "confirmations", "height", "version", "versionHex", "merkleroot", "time",
               "mediantime", "nonce", "bits", "difficulty", "chainwork", "nTx",
               "previousblockhash", "nextblockhash"]
BLOCK_KEYS = ["hash", "confirmations", "strippedsize", "size", "weight", "height", "version",
              "versionHex", "merkleroot", "tx", "time", "mediantime", "nonce", "bits",
              "difficulty", "chainwork", "nTx", "previousblockhash", "nextblockhash"]
TX_KEYS = ["txid", "hash", "size", "vsize", "version", "type", "locktime", "vin", "vout"]
SPK_KEYS = ["asm", "hex", "reqSigs", "type", "addresses"]


#: Keys whose position differs from the reference's: the transaction's size and vsize.
SIZES = frozenset({"size", "vsize"})


def dumps(value: Any) -> str:
    """Compact JSON as the RPC and REST layers write it."""
    return simplejson.dumps(value, separators=(",", ":"), use_decimal=True)


def without(keys: List[str], *absent: str) -> List[str]:
    return [k for k in keys if k not in absent]


class KeyOrderMixin:
    def assertKeyOrder(self, ours: Any, reference: Any, ignore: frozenset = frozenset(),
                       path: str = "") -> None:
        """Keys both objects have come in the same order, recursively (``ignore``: keys whose
        position is a documented difference, doc/views.md)."""
        if isinstance(ours, dict) and isinstance(reference, dict):
            common = [k for k in ours if k in reference and k not in ignore]
            self.assertEqual(common, [k for k in reference if k in common], path or "top level")
            for key in common:
                self.assertKeyOrder(ours[key], reference[key], ignore, path + "." + key)
        elif isinstance(ours, list) and isinstance(reference, list):
            for i, (mine, theirs) in enumerate(zip(ours, reference)):
                self.assertKeyOrder(mine, theirs, ignore, "%s[%d]" % (path, i))

    def assertMatchesReference(self, ours: Any, name: str, ignore: frozenset = frozenset()) -> None:
        reference = simplejson.loads(REFERENCE[name], object_pairs_hook=OrderedDict,
                                     use_decimal=True)
        self.assertKeyOrder(simplejson.loads(dumps(ours), object_pairs_hook=OrderedDict),
                            reference, ignore)


class AmountTests(SynchronousTestCase):
    def test_amounts_print_with_exactly_eight_decimals(self) -> None:
        for units, text in ((0, "0.00000000"), (1, "0.00000001"), (99, "0.00000099"),
                            (50 * COIN, "50.00000000"), (MAX_MONEY, "21000000.00000000"),
                            (-10_000, "-0.00010000")):
            self.assertEqual(dumps(amount_to_json(units)), text)
            self.assertEqual(dumps({"value": amount_to_json(units)}), '{"value":%s}' % text)

    @given(st.integers(0, MAX_MONEY))
    def test_every_amount_round_trips_exactly(self, units: int) -> None:
        text = dumps(amount_to_json(units))
        self.assertEqual(parse_amount(text), units)
        self.assertEqual(parse_amount(simplejson.loads(text, use_decimal=True)), units)

    @given(st.integers(0, MAX_MONEY), st.integers(0, 40), st.integers(1, 9))
    def test_a_ninth_decimal_is_never_accepted(self, units: int, zeros: int, digit: int) -> None:
        # Binary floating point would round most of these to a valid amount.
        text = str(amount_to_json(units)) + "0" * zeros + str(digit)
        for value in (text, Decimal(text)):
            err = self.assertRaises(AmountError, parse_amount, value)
            self.assertEqual(err.message, "Invalid amount")

    @given(st.integers(0, MAX_MONEY), st.integers(0, 30))
    def test_trailing_zeros_do_not_count_as_decimals(self, units: int, zeros: int) -> None:
        text = str(amount_to_json(units)) + "0" * zeros
        self.assertEqual(parse_amount(text), units)
        self.assertEqual(parse_amount(Decimal(text)), units)

    def test_core_amount_from_value_rules(self) -> None:
        for value, units in (("1e3", 1000 * COIN), ("0.1", 10_000_000), (1, COIN),
                             (Decimal("1E-8"), 1), ("-0", 0), (Decimal("-0"), 0),
                             ("0.000000000000", 0), ("20999999.99999999", MAX_MONEY - 1),
                             ("2.1e7", MAX_MONEY), ("100000000e-16", 1), (0.5, COIN // 2)):
            self.assertEqual(parse_amount(value), units, value)
        for value, message in (
                (True, "Amount is not a number or string"),
                (None, "Amount is not a number or string"),
                ([1], "Amount is not a number or string"),
                ("abc", "Invalid amount"), ("", "Invalid amount"), (" 1", "Invalid amount"),
                ("01", "Invalid amount"), ("1.", "Invalid amount"), (".5", "Invalid amount"),
                ("+1", "Invalid amount"), ("0x10", "Invalid amount"), ("1e-9", "Invalid amount"),
                ("0e-9", "Invalid amount"), ("Infinity", "Invalid amount"),
                (Decimal("NaN"), "Invalid amount"), ("1e10", "Invalid amount"),
                ("1" + "0" * 5000, "Invalid amount"), ("1e" + "9" * 5000, "Invalid amount"),
                (Decimal("1e-999999999"), "Invalid amount"), (10 ** 30, "Invalid amount"),
                ("-1", "Amount out of range"), (Decimal("-0.00000001"), "Amount out of range"),
                ("21000000.00000001", "Amount out of range"),
                ("9999999999.99999999", "Amount out of range")):
            err = self.assertRaises(AmountError, parse_amount, value)
            self.assertEqual(err.message, message, value)
            self.assertIsInstance(err, ValueError)

    def test_reals_print_as_core_prints_doubles(self) -> None:
        for value, text in ((1.0, "1"), (0.0, "0"), (4.656542373906925e-10, "4.656542373906925e-10"),
                            (2.190595064976095e-05, "2.190595064976095e-05"), (0.5, "0.5"),
                            (1e16, "1e+16"), (123456.789, "123456.789")):
            self.assertEqual(dumps(real_to_json(value)), text)

    @given(st.floats(allow_nan=False, allow_infinity=False))
    def test_reals_keep_sixteen_significant_digits(self, value: float) -> None:
        self.assertEqual(str(real_to_json(value)), "%.16g" % value)


class ScriptTests(SynchronousTestCase):
    key = deterministic_key("views").public_key.format(compressed=True)

    def address(self, kind: str, h160: bytes) -> str:
        return encode_address(Destination(kind, h160), REGTEST)

    def test_pubkeyhash(self) -> None:
        spk = p2pkh_script(hash160(self.key))
        view = script_pubkey_json(spk, REGTEST)
        self.assertEqual(list(view), SPK_KEYS)
        self.assertEqual(view["asm"], "OP_DUP OP_HASH160 %s OP_EQUALVERIFY OP_CHECKSIG"
                         % hash160(self.key).hex())
        self.assertEqual((view["hex"], view["reqSigs"], view["type"]),
                         (spk.hex(), 1, "pubkeyhash"))
        self.assertEqual(view["addresses"], [self.address("pubkeyhash", hash160(self.key))])
        self.assertEqual(decode_address(view["addresses"][0], REGTEST).hash160, hash160(self.key))

    def test_pubkey_shows_the_address_of_its_key(self) -> None:
        view = script_pubkey_json(p2pk_script(self.key), REGTEST)
        self.assertEqual((view["type"], view["asm"]), ("pubkey", self.key.hex() + " OP_CHECKSIG"))
        self.assertEqual(view["addresses"], [self.address("pubkeyhash", hash160(self.key))])

    def test_scripthash_and_multisig(self) -> None:
        h = hash160(b"redeem")
        self.assertEqual(script_pubkey_json(p2sh_script(h), REGTEST)["addresses"],
                         [self.address("scripthash", h)])
        other = deterministic_key("other").public_key.format(compressed=True)
        view = script_pubkey_json(multisig_script(1, [self.key, other]), REGTEST)
        self.assertEqual(list(view), SPK_KEYS)
        self.assertEqual((view["reqSigs"], view["type"]), (1, "multisig"))
        self.assertEqual(view["addresses"], [self.address("pubkeyhash", hash160(self.key)),
                                             self.address("pubkeyhash", hash160(other))])

    def test_scripts_without_address_omit_reqsigs_and_addresses(self) -> None:
        for spk, kind, asm in ((nulldata_script(b"hello"), "nulldata", "OP_RETURN 68656c6c6f"),
                               (b"\x51", "nonstandard", "1"),
                               (b"\x4c", "nonstandard", "[error]")):
            view = script_pubkey_json(spk, REGTEST)
            self.assertEqual(view, {"asm": asm, "hex": spk.hex(), "type": kind})
            self.assertEqual(list(view), ["asm", "hex", "type"])
        self.assertNotIn("hex", script_pubkey_json(b"\x51", REGTEST, include_hex=False))

    def test_decodescript_adds_the_p2sh_address(self) -> None:
        spk = p2pkh_script(hash160(self.key))
        view = decodescript_json(spk, REGTEST)
        self.assertEqual(list(view), ["asm", "reqSigs", "type", "addresses", "p2sh"])
        self.assertEqual(view["p2sh"], self.address("scripthash", hash160(spk)))
        self.assertEqual(list(decodescript_json(b"", REGTEST)), ["asm", "type", "p2sh"])
        self.assertNotIn("p2sh", decodescript_json(p2sh_script(hash160(spk)), REGTEST))


class ChainViewTestCase(SynchronousTestCase, KeyOrderMixin):
    """A regtest chain of 102 blocks whose tip holds one spend (P2PKH + P2SH outputs)."""

    def setUp(self) -> None:
        self.chain = open_chain(self.mktemp())
        self.addCleanup(self.chain.close)
        self.builder = ChainBuilder(self.chain)
        self.builder.mine(101)
        self.p2sh = p2sh_script(hash160(b"redeem"))
        self.spent = self.builder.coinbase_outputs[0]
        self.tx = self.builder.spend(self.spent, [(self.builder.script_pubkey, 30 * COIN),
                                                  (self.p2sh, 20 * COIN - 10_000)])
        (self.block,) = self.builder.mine(1, txs=[self.tx])
        self.entry = self.chain.tip


class TransactionTests(ChainViewTestCase):
    def test_regular_transaction(self) -> None:
        view = tx_json(self.tx, REGTEST)
        self.assertEqual(list(view), TX_KEYS + ["hex"])
        self.assertEqual((view["txid"], view["size"], view["version"], view["type"]),
                         (self.tx.txid_hex, len(self.tx.serialize()), 1, 0))
        # Core's extras, equal to txid and size without witness data.
        self.assertEqual((view["hash"], view["vsize"]), (self.tx.txid_hex, view["size"]))
        self.assertEqual(view["hex"], self.tx.serialize().hex())
        (vin,) = view["vin"]
        self.assertEqual(list(vin), ["txid", "vout", "scriptSig", "sequence"])
        self.assertEqual((vin["txid"], vin["vout"], vin["sequence"]),
                         (hash_to_hex(self.spent.outpoint.txid), 0, 0xFFFFFFFF))
        script_sig = self.tx.vin[0].script_sig
        sig, pubkey = script_sig[1:1 + script_sig[0]], self.builder.pubkey
        self.assertEqual(vin["scriptSig"], {"asm": "%s[ALL] %s" % (sig[:-1].hex(), pubkey.hex()),
                                            "hex": script_sig.hex()})
        self.assertEqual(script_sig_json(script_sig), vin["scriptSig"])
        self.assertEqual(dumps(view["vout"][0]),
                         '{"value":30.00000000,"valueSat":3000000000,"n":0,"scriptPubKey":%s}'
                         % dumps(script_pubkey_json(self.builder.script_pubkey, REGTEST)))
        self.assertEqual(dumps(view["vout"][1]["value"]), "19.99990000")
        self.assertEqual(view["vout"][1]["scriptPubKey"]["type"], "scripthash")

    def test_coinbase_input(self) -> None:
        coinbase = self.block.txs[0]
        view = tx_json(coinbase, REGTEST, include_hex=False)
        self.assertEqual(view["vin"], [{"coinbase": coinbase.vin[0].script_sig.hex(),
                                        "sequence": 0xFFFFFFFF}])
        self.assertEqual(list(view["vin"][0]), ["coinbase", "sequence"])
        self.assertNotIn("hex", view)
        self.assertEqual(dumps(view["vout"][0]["value"]), "50.00010000")  # subsidy + fee

    def test_spent_outputs_add_value_and_address_to_inputs(self) -> None:
        view = tx_json(self.tx, REGTEST, spent_outputs=[TxOut(self.spent.value,
                                                              self.spent.script_pubkey)])
        (vin,) = view["vin"]
        self.assertEqual(list(vin), ["txid", "vout", "scriptSig", "value", "valueSat",
                                     "addresses", "sequence"])
        self.assertEqual(dumps([vin["value"], vin["valueSat"]]), "[50.00000000,5000000000]")
        self.assertEqual(vin["addresses"],
                         script_pubkey_json(self.spent.script_pubkey, REGTEST)["addresses"])
        # A spent pay-to-pubkey output has an amount but, as in Dash, no address.
        view = tx_json(self.tx, REGTEST, spent_outputs=[TxOut(7, p2pk_script(self.builder.pubkey))])
        self.assertEqual(list(view["vin"][0]), ["txid", "vout", "scriptSig", "value", "valueSat",
                                                "sequence"])
        self.assertRaises(ValueError, tx_json, self.tx, REGTEST, spent_outputs=[])

    def test_block_fields_follow_in_the_spec_order(self) -> None:
        view = tx_json(self.tx, REGTEST, **tx_block_fields(self.entry, self.chain))
        self.assertEqual(list(view)[-6:], ["hex", "blockhash", "height", "confirmations", "time",
                                           "blocktime"])
        self.assertEqual((view["blockhash"], view["height"], view["confirmations"], view["time"],
                          view["blocktime"]),
                         (self.block.hash_hex, 102, 1, self.entry.time, self.entry.time))
        self.builder.mine(2)
        self.assertEqual(tx_block_fields(self.entry, self.chain)["confirmations"], 3)
        mempool = tx_json(self.tx, REGTEST)
        self.assertFalse({"blockhash", "height", "confirmations", "time"} & set(mempool))

    def test_transaction_in_a_block_off_the_active_chain(self) -> None:
        (side,) = self.builder.mine(1, parent=self.chain.at_height(101))
        self.assertNotEqual(self.chain.tip.hash, side.hash)
        fields = tx_block_fields(self.chain.lookup(side.hash), self.chain)
        self.assertEqual(fields, {"blockhash": side.hash, "height": -1, "confirmations": 0})

    def test_special_transaction_payload(self) -> None:
        special = Transaction([TxIn(OutPoint(b"\x01" * 32, 0))], [TxOut(0, b"\x6a")],
                              version=3, tx_type=5, extra_payload=b"\x01\x02\x03")
        view = tx_json(special, REGTEST)
        self.assertEqual(list(view), TX_KEYS + ["extraPayloadSize", "extraPayload", "hex"])
        self.assertEqual((view["version"], view["type"], view["extraPayloadSize"],
                          view["extraPayload"]), (3, 5, 3, "010203"))
        self.assertEqual(Transaction.from_hex(view["hex"]), special)

    def test_key_order_matches_the_reference(self) -> None:
        # The reference (Core 0.17) puts size after version; the spec and Dash before it,
        # and vsize stays next to size.
        view = tx_json(self.tx, REGTEST, **tx_block_fields(self.entry, self.chain))
        self.assertMatchesReference(view, "rawtx", ignore=SIZES)


class BlockTests(ChainViewTestCase):
    def test_tip_block(self) -> None:
        view = block_json(self.block, self.entry, self.chain, REGTEST)
        self.assertEqual(list(view), without(BLOCK_KEYS, "nextblockhash"))
        prev = self.chain.at_height(101)
        self.assertEqual(view["tx"], [tx.txid_hex for tx in self.block.txs])
        self.assertEqual((view["hash"], view["confirmations"], view["size"], view["height"],
                          view["nTx"], view["previousblockhash"]),
                         (self.block.hash_hex, 1, len(self.block.serialize()), 102, 2,
                          prev.hash[::-1].hex()))
        self.assertEqual((view["version"], view["versionHex"], view["bits"]),
                         (0x20000000, "20000000", "207fffff"))
        self.assertEqual(view["merkleroot"], hash_to_hex(self.block.header.merkle_root))
        self.assertEqual((view["time"], view["mediantime"], view["nonce"]),
                         (self.block.header.time, self.entry.median_time_past(),
                          self.block.header.nonce))
        self.assertEqual((view["strippedsize"], view["weight"]), (view["size"], 4 * view["size"]))
        self.assertEqual(view["chainwork"], "%064x" % (2 * 103))
        text = dumps(view)
        self.assertIn('"difficulty":4.656542373906925e-10,', text)
        self.assertIn('"chainwork":"%s"' % ("0" * 62 + "ce"), text)

    def test_header_is_the_block_without_sizes_and_tx(self) -> None:
        # Core 0.17's getblockheader has no strippedsize or weight either.
        block = block_json(self.block, self.entry, self.chain, REGTEST)
        header = header_json(self.entry, self.chain)
        self.assertEqual(list(header), without(HEADER_KEYS, "nextblockhash"))
        self.assertEqual(header, {k: v for k, v in block.items()
                                  if k not in ("strippedsize", "size", "weight", "tx")})

    def test_next_and_previous_block_hashes(self) -> None:
        genesis = self.chain.at_height(0)
        view = header_json(genesis, self.chain)
        self.assertEqual(list(view), without(HEADER_KEYS, "previousblockhash"))
        self.assertEqual(view["confirmations"], 103)
        self.assertEqual(view["nextblockhash"], self.chain.at_height(1).hash[::-1].hex())
        self.assertEqual((view["version"], view["versionHex"]), (1, "00000001"))
        self.assertEqual(header_json(self.chain.at_height(50), self.chain)["nextblockhash"],
                         self.chain.at_height(51).hash[::-1].hex())

    def test_side_branch_has_no_confirmations_and_no_next_block(self) -> None:
        fork = self.builder.mine(2, parent=self.chain.at_height(100))
        self.assertIs(self.chain.tip, self.entry)
        first, second = (self.chain.lookup(b.hash) for b in fork)
        for entry in (first, second):
            view = header_json(entry, self.chain)
            self.assertEqual(view["confirmations"], -1)
            self.assertNotIn("nextblockhash", view)
        self.assertEqual(header_json(second, self.chain)["previousblockhash"], fork[0].hash_hex)
        # Its parent, on the active chain, still points along the active chain.
        self.assertEqual(header_json(self.chain.at_height(100), self.chain)["nextblockhash"],
                         self.chain.at_height(101).hash[::-1].hex())

    def test_transaction_details(self) -> None:
        view = block_json(self.block, self.entry, self.chain, REGTEST, tx_detail=True)
        self.assertEqual([tx["txid"] for tx in view["tx"]], [t.txid_hex for t in self.block.txs])
        self.assertEqual(view["tx"][1], tx_json(self.tx, REGTEST))
        self.assertNotIn("blockhash", view["tx"][0])
        undo = self.chain.read_undo(self.entry)
        view = block_json(self.block, self.entry, self.chain, REGTEST, tx_detail=True,
                          spent_outputs=undo)
        self.assertEqual(dumps(view["tx"][1]["vin"][0]["value"]), "50.00000000")
        self.assertNotIn("value", view["tx"][0]["vin"][0])

    def test_key_order_matches_the_reference(self) -> None:
        view = block_json(self.block, self.entry, self.chain, REGTEST, tx_detail=True)
        # Only the transactions' size and vsize differ (see TransactionTests); the block's
        # are checked by test_tip_block.
        self.assertMatchesReference(view, "block", ignore=SIZES)
        self.assertMatchesReference(header_json(self.entry, self.chain), "header")


class LargeBlockTests(ChainViewTestCase):
    def test_a_500_transaction_block(self) -> None:
        # A fan-out of one coinbase into 498 outputs and a spend of each: with the
        # coinbase, 500 transactions of two shapes in one block.
        fan_out = self.builder.spend(self.builder.coinbase_outputs[1],
                                     [(self.builder.script_pubkey, COIN // 10)] * 498)
        spends = [self.builder.spend(out) for out in self.builder.outputs_of(fan_out)]
        (block,) = self.builder.mine(1, txs=[fan_out, *spends])
        entry = self.chain.tip
        raw = block.serialize()
        view = block_json(block, entry, self.chain, REGTEST, tx_detail=True)
        self.assertEqual(list(view), without(BLOCK_KEYS, "nextblockhash"))
        self.assertEqual((view["nTx"], len(view["tx"])), (500, 500))
        self.assertEqual((view["strippedsize"], view["size"], view["weight"]),
                         (len(raw), len(raw), 4 * len(raw)))
        # The sizes add up: header, transaction count (3 bytes for 500), transactions.
        self.assertEqual(80 + 3 + sum(tx["size"] for tx in view["tx"]), len(raw))
        for tx, obj in zip(block.txs, view["tx"], strict=True):
            size = len(tx.serialize())
            self.assertEqual(list(obj), TX_KEYS + ["hex"])
            self.assertEqual((obj["txid"], obj["hash"], obj["size"], obj["vsize"]),
                             (tx.txid_hex, tx.txid_hex, size, size))
        summary = block_json(block, entry, self.chain, REGTEST)
        self.assertEqual({**view, "tx": summary["tx"]}, summary)
        self.assertMatchesReference(view, "block", ignore=SIZES)


class MempoolEntryTests(ChainViewTestCase):
    """A pool holding a parent and its child; the child is prioritised by 0.0005."""

    def setUp(self) -> None:
        super().setUp()
        self.pool = Mempool(now=lambda: 1_900_000_000)
        self.parent = self.builder.spend(self.builder.coinbase_outputs[1], fee=20_000)
        self.child = self.builder.spend(self.builder.outputs_of(self.parent)[0], fee=10_000)
        for tx in (self.parent, self.child):
            accept_to_mempool(self.chain, self.pool, tx, PoolPolicy(), now=1_900_000_000)
        self.pool.prioritise(self.child.txid, 50_000)

    def entries(self) -> Any:
        with self.pool.lock:
            return [mempool_entry_json(self.pool.get(tx.txid), self.chain.height)
                    for tx in (self.parent, self.child)]

    def test_fees_object_vsize_and_wtxid(self) -> None:
        parent, child = self.entries()
        self.assertEqual(list(parent), [
            "fees", "size", "vsize", "fee", "modifiedfee", "time", "height", "startingpriority",
            "currentpriority", "descendantcount", "descendantsize", "descendantfees",
            "ancestorcount", "ancestorsize", "ancestorfees", "wtxid", "depends", "spentby"])
        self.assertEqual(list(parent["fees"]), ["base", "modified", "ancestor", "descendant"])
        # Amounts in coins, equal to the flat fields (descendant/ancestor fees in satoshis).
        self.assertEqual(dumps(parent["fees"]), '{"base":0.00020000,"modified":0.00020000,'
                         '"ancestor":0.00020000,"descendant":0.00080000}')
        self.assertEqual(dumps(child["fees"]), '{"base":0.00010000,"modified":0.00060000,'
                         '"ancestor":0.00080000,"descendant":0.00060000}')
        for entry, tx in ((parent, self.parent), (child, self.child)):
            self.assertEqual((entry["vsize"], entry["size"], entry["wtxid"]),
                             (tx.size, tx.size, tx.txid_hex))
            fees = entry["fees"]
            self.assertEqual((fees["base"], fees["modified"]),
                             (entry["fee"], entry["modifiedfee"]))
            self.assertEqual((fees["ancestor"], fees["descendant"]),
                             (amount_to_json(entry["ancestorfees"]),
                              amount_to_json(entry["descendantfees"])))
        self.assertEqual((parent["spentby"], child["depends"]),
                         ([self.child.txid_hex], [self.parent.txid_hex]))
        with self.pool.lock:
            contents = mempool_contents_json(self.pool, self.chain.height)
        self.assertEqual(contents, {self.parent.txid_hex: parent, self.child.txid_hex: child})

    def test_key_order_matches_the_reference(self) -> None:
        for entry in self.entries():
            self.assertMatchesReference(entry, "mempoolentry")
#: A node out of initial block download, not pruning, with 1234 bytes of block files.
SYNCED = ChainStatus(initial_block_download=False, size_on_disk=1234, pruned=False,
                     prune_height=None, prune_target=None, warnings="")


def chain_info(chain: Any, params: Any = REGTEST, **status: Any) -> dict:
    return chain_info_json(chain, params, dataclasses.replace(SYNCED, **status))


class ChainInfoTests(ChainViewTestCase):
    def test_fields_in_spec_order(self) -> None:
        view = chain_info(self.chain)
        self.assertEqual(list(view), ["chain", "blocks", "headers", "bestblockhash", "difficulty",
                                      "mediantime", "verificationprogress",
                                      "initialblockdownload", "chainwork", "size_on_disk",
                                      "pruned", "softforks", "bip9_softforks", "warnings"])
        self.assertEqual((view["chain"], view["blocks"], view["headers"], view["bestblockhash"],
                          view["mediantime"], view["pruned"]),
                         ("regtest", 102, 102, self.block.hash_hex,
                          self.entry.median_time_past(), False))
        self.assertEqual(view["chainwork"], header_json(self.entry, self.chain)["chainwork"])
        text = dumps(view)
        self.assertIn('"difficulty":4.656542373906925e-10,', text)
        self.assertIn('"verificationprogress":1,', text)
        self.assertIn('"initialblockdownload":false,', text)
        self.assertIn('"size_on_disk":1234,', text)
        self.assertTrue(text.endswith('"warnings":""}'))

    def test_extras_carry_the_node_status(self) -> None:
        view = chain_info(self.chain, initial_block_download=True, size_on_disk=99,
                          warnings="Warning: something")
        self.assertEqual((view["initialblockdownload"], view["size_on_disk"], view["warnings"]),
                         (True, 99, "Warning: something"))

    def test_headers_ahead_of_blocks(self) -> None:
        header = self.builder.build().header
        self.chain.accept_header(header)
        view = chain_info(self.chain)
        self.assertEqual((view["blocks"], view["headers"]), (102, 103))

    def test_pruneheight_follows_pruned(self) -> None:
        view = chain_info(self.chain, pruned=True, prune_height=7)
        keys = list(view)
        self.assertEqual(keys[keys.index("pruned"):keys.index("pruned") + 4],
                         ["pruned", "pruneheight", "automatic_pruning", "softforks"])
        self.assertEqual((view["pruned"], view["pruneheight"], view["automatic_pruning"]),
                         (True, 7, False))

    def test_automatic_pruning_shows_its_target(self) -> None:
        view = chain_info(self.chain, pruned=True, prune_height=7, prune_target=550 * 2 ** 20)
        keys = list(view)
        self.assertEqual(keys[keys.index("pruned"):keys.index("pruned") + 5],
                         ["pruned", "pruneheight", "automatic_pruning", "prune_target_size",
                          "softforks"])
        self.assertEqual((view["automatic_pruning"], view["prune_target_size"]),
                         (True, 576716800))

    def test_softforks(self) -> None:
        # Main and test count versions; regtest's rules come from Core 0.17's heights.
        majority = dataclasses.replace(REGTEST, majority_rules=TEST.majority_rules)
        view = chain_info(self.chain, majority)
        self.assertEqual([f["id"] for f in view["softforks"]], ["bip34", "bip66", "bip65"])
        bip65 = view["softforks"][2]
        self.assertEqual(list(bip65), ["id", "version", "enforce", "reject"])
        # The window of 100 holds blocks 3..102, all of version 0x20000000 >= 4.
        self.assertEqual(bip65["enforce"], {"status": True, "found": 100, "required": 75,
                                            "window": 100})
        self.assertEqual(list(bip65["reject"]), ["status", "found", "required", "window"])
        self.assertEqual(bip65["reject"]["required"], 95)
        # Same shape on regtest, but at height 102 no rule has reached its height.
        regtest = chain_info(self.chain)["softforks"]
        self.assertEqual([(f["id"], f["version"], f["enforce"]["status"], f["reject"]["status"],
                           f["enforce"]["found"]) for f in regtest],
                         [("bip34", 2, False, False, 100), ("bip66", 3, False, False, 100),
                          ("bip65", 4, False, False, 100)])
        self.assertEqual(view["bip9_softforks"], [{
            "id": "csv",
            "status": deployment_state(self.entry, REGTEST, "csv", self.chain.versionbits)}])
        self.assertEqual(view["bip9_softforks"][0]["status"], "defined")
        self.builder.mine(144 - 103)
        self.assertEqual(chain_info(self.chain)["bip9_softforks"][0]["status"],
                         "started")

    def test_key_order_matches_the_reference(self) -> None:
        self.assertMatchesReference(chain_info(self.chain), "chaininfo")


class UtxoTests(ChainViewTestCase):
    def coin(self, n: int) -> Coin:
        return Coin.from_txout(self.tx.vout[n], 102, False, self.tx.version)

    def test_gettxout(self) -> None:
        view = txout_json(self.coin(0), self.entry, REGTEST)
        self.assertEqual(list(view), ["bestblock", "confirmations", "value", "scriptPubKey",
                                      "coinbase"])
        self.assertEqual((view["bestblock"], view["confirmations"], view["coinbase"]),
                         (self.block.hash_hex, 1, False))
        self.assertEqual(dumps(view["value"]), "30.00000000")
        self.builder.mine(4)
        self.assertEqual(txout_json(self.coin(0), self.chain.tip, REGTEST)["confirmations"], 5)
        mempool = Coin(5, self.p2sh, MEMPOOL_HEIGHT, False, 2)
        self.assertEqual(txout_json(mempool, self.chain.tip, REGTEST)["confirmations"], 0)
        self.assertMatchesReference(view, "txout")

    def test_getutxos_json(self) -> None:
        mempool = Coin(150_000, self.p2sh, MEMPOOL_HEIGHT, False, 2)
        view = getutxos_json(102, self.block.hash, [False, True, True, False],
                             [self.coin(0), mempool], REGTEST)
        self.assertEqual(list(view), ["chainHeight", "chaintipHash", "bitmap", "utxos"])
        self.assertEqual((view["chainHeight"], view["chaintipHash"], view["bitmap"]),
                         (102, self.block.hash_hex, "0110"))
        self.assertEqual([list(u) for u in view["utxos"]],
                         [["txvers", "height", "value", "scriptPubKey"]] * 2)
        self.assertEqual(dumps(view["utxos"][1]),
                         '{"txvers":2,"height":2147483647,"value":0.00150000,"scriptPubKey":%s}'
                         % dumps(script_pubkey_json(self.p2sh, REGTEST)))
        self.assertMatchesReference(view, "getutxos")

    def test_getutxos_bin_layout(self) -> None:
        # rest_68_getutxos_4mixed_hex: the same query, except that the reference writes a
        # zero where the spec puts the transaction version (2 here).
        tip = bytes.fromhex("f2da78f2600a6f5f0cc9c20190e9768fcf44adcaf4d01052ecd4b39e925f0000")
        first = Coin(0x02AC48B6, bytes.fromhex("76a91407254bfcac9b1f1308179a461c9228d1f23b51d688ac"),
                     111, False, 2)
        second = Coin(0x12D687, bytes.fromhex("76a914472041d1aa682b2b812e614059262dbfb44f462988ac"),
                      111, False, 2)
        raw = getutxos_bin(111, tip, [False, True, True, False], [first, second])
        self.assertEqual(raw.hex(),
                         "6f000000" + tip.hex() + "0106" + "02"
                         + "02000000" "6f000000" "b648ac0200000000"
                         + "1976a91407254bfcac9b1f1308179a461c9228d1f23b51d688ac"
                         + "02000000" "6f000000" "87d6120000000000"
                         + "1976a914472041d1aa682b2b812e614059262dbfb44f462988ac")

    def test_getutxos_bin_bitmap_and_mempool_height(self) -> None:
        mempool = Coin(1, b"\x51", MEMPOOL_HEIGHT, False, 1)
        raw = getutxos_bin(5, b"\x00" * 32, [True] * 9 + [False] * 6, [mempool] * 9)
        self.assertEqual(raw[36:40].hex(), "02ff0109")  # 15 flags -> 2 bytes, LSB first; 9 coins
        self.assertEqual(raw[40:48].hex(), "01000000" "ffffff7f")
        self.assertEqual(getutxos_bin(-1, b"\x00" * 32, [], [])[:4], b"\xff\xff\xff\xff")
        self.assertEqual(getutxos_bin(0, b"\x00" * 32, [], [])[36:], b"\x00\x00")
