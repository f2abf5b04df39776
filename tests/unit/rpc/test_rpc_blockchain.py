"""Blockchain RPC methods through the real stack: JSON bytes in, JSON bytes out.

Each test copies one prepared regtest datadir, runs a real ``ChainState`` inside a
real ``ValidationService`` (worker thread, real reactor), wraps it in
``ChainAccess`` and calls the methods through ``JSONRPCCore``.

The prepared chain: 110 blocks; block 102 spends block 1's coinbase into a P2PKH
output and an OP_RETURN output; a two-block fork with data on block 105 (never
connected: "valid-headers"); and a header without data on block 109
("headers-only").
"""

from __future__ import annotations

import os
import shutil
import time
from decimal import Decimal
from typing import Any, Dict, NamedTuple, Optional

import simplejson
from twisted.internet import reactor
from twisted.internet.defer import CancelledError, Deferred, inlineCallbacks
from twisted.trial.unittest import SynchronousTestCase, TestCase

from coin.chain.access import ChainAccess
from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.service import ValidationService
from coin.chain.utxostats import utxo_set_stats
from coin.chainparams import REGTEST
from coin.consensus.pow import get_difficulty
from coin.primitives.block import Block
from coin.primitives.coin import Coin
from coin.primitives.hashes import hash_to_hex
from coin.rpc.auth import Whitelist
from coin.rpc.jsonrpc import JSONRPCCore, Reply, Warmup
from coin.rpc.methods.blockchain import METHODS
from coin.rpc.methods.control import METHODS as CONTROL_METHODS
from coin.rpc.params import uint256_from_hex
from coin.rpc.registry import MethodTable
from coin.script.standard import nulldata_script
from coin.storage.chainstore import ChainStore
from coin.testing.chainbuilder import ChainBuilder, deterministic_key, open_chain

from tests.rpchelpers import FakeNode, transcript
from tests.prepared import prepared_datadir

# Key orders of the reference node's replies (rpcm_05, rpcm_14, rpcm_25, rpcm_26, rpcm_52 in
# /work/shared/reference/transcripts), without the segwit sizes doc/views.md drops.
REFERENCE_BLOCK_KEYS = ["hash", "confirmations", "strippedsize", "size", "weight", "height",
                        "version", "versionHex", "merkleroot", "tx", "time", "mediantime", "nonce",
                        "bits", "difficulty", "chainwork", "nTx", "previousblockhash"]
REFERENCE_HEADER_KEYS = ["hash", "confirmations", "height", "version", "versionHex", "merkleroot",
                         "time", "mediantime", "nonce", "bits", "difficulty", "chainwork", "nTx",
                         "previousblockhash"]
REFERENCE_TXOUT_KEYS = ["bestblock", "confirmations", "value", "scriptPubKey", "coinbase"]
REFERENCE_TXOUTSET_KEYS = ["height", "bestblock", "transactions", "txouts", "bogosize",
                           "hash_serialized_2", "disk_size", "total_amount"]
REFERENCE_TIP_KEYS = ["height", "hash", "difficulty", "chainwork", "branchlen", "forkpoint",
                      "status"]
# rpcm_12 and rpcm_13: request bodies and the exact reply bodies (HTTP 500).
RECORDED_NOT_FOUND = [
    (b'{"jsonrpc": "1.0", "id": 12, "method": "getblock", "params": '
     b'["0000000000000000000000000000000000000000000000000000000000000000"]}',
     b'{"result":null,"error":{"code":-5,"message":"Block not found"},"id":12}\n'),
    (b'{"jsonrpc": "1.0", "id": 13, "method": "getblock", "params": ["xyz"]}',
     b'{"result":null,"error":{"code":-5,"message":"Block not found"},"id":13}\n'),
]
# The reference node's "== Blockchain ==" help lines for the methods implemented here.
REFERENCE_HELP_LINES = [
    "getbestblockhash", 'getblock "blockhash" ( verbosity ) ', "getblockchaininfo",
    "getblockcount", "getblockhash height", 'getblockheader "hash" ( verbose )', "getchaintips",
    "getchaintxstats ( nblocks blockhash )", "getdifficulty",
    'gettxout "txid" n ( include_mempool )', "gettxoutsetinfo", 'preciousblock "blockhash"',
    "pruneblockchain", "verifychain ( checklevel nblocks )"]

TIP_HEIGHT = 110
SPEND_HEIGHT = 102


class Template(NamedTuple):
    datadir: str
    spend_txid: bytes
    fork_tip: bytes
    header_only: bytes


def _build(datadir: str) -> Template:
    chain = open_chain(datadir)
    builder = ChainBuilder(chain)
    builder.mine(SPEND_HEIGHT - 1)
    source = builder.coinbase_outputs[0]
    spend = builder.spend(source, outputs=[(builder.script_pubkey, source.value - 10_000),
                                           (nulldata_script(b"rpc"), 0)])
    builder.mine(1, txs=[spend])
    builder.mine(TIP_HEIGHT - SPEND_HEIGHT)
    fork = builder.mine(2, parent=chain.at_height(105))
    header = builder.build(parent=chain.at_height(109)).header
    chain.accept_header(header)
    chain.close()
    return Template(datadir, spend.txid, fork[-1].hash, header.hash)


def template() -> Template:
    """The prepared datadir (built once per test run, copied by every test)."""
    return prepared_datadir(_build, _build)[1]


class BlockchainRPCTestCase(TestCase):
    """A running validation service on a copy of the template, and an RPC core over it."""

    def setUp(self) -> Deferred:
        self.shape = template()
        datadir = self.mktemp()
        shutil.copytree(self.shape.datadir, datadir)
        store = ChainStore(datadir, REGTEST)
        store.open()
        self.datadir = datadir
        self.service = ValidationService(ChainState(REGTEST, store), reactor)
        self.service.startService()
        self.addCleanup(self.service.stopService)
        self.access = ChainAccess(self.service, NodeClock(), reactor)
        self.state = self.service.chainstate
        self.core = JSONRPCCore(MethodTable(CONTROL_METHODS + METHODS),
                                FakeNode(chain=self.access), whitelist=Whitelist(),
                                warmup=Warmup(None), clock=reactor)
        self.builder = ChainBuilder(self.state, key=deterministic_key("rpc blockchain tests"))
        return self.service.ready

    # -- calling

    def send(self, method: str, *params: Any, **named: Any) -> Deferred:
        """Fires with the Reply to one request."""
        body = {"jsonrpc": "1.0", "id": 1, "method": method,
                "params": named if named else list(params)}
        return self.core.handle(simplejson.dumps(body).encode(), "u")

    @inlineCallbacks
    def result(self, method: str, *params: Any, **named: Any):
        reply = yield self.send(method, *params, **named)
        answer = simplejson.loads(reply.body, use_decimal=True)
        self.assertEqual((reply.status, answer["error"]), (200, None), (method, params, named))
        self.assertTrue(reply.body.endswith(b"\n"))
        return answer["result"]

    @inlineCallbacks
    def error(self, method: str, *params: Any, **named: Any):
        """``(http_status, code, message)`` of a call that must fail."""
        reply = yield self.send(method, *params, **named)
        answer = simplejson.loads(reply.body)
        self.assertIsNone(answer["result"], (method, params, named))
        return reply.status, answer["error"]["code"], answer["error"]["message"]

    # -- the chain

    def hex_at(self, height: int) -> str:
        return hash_to_hex(self.state.at_height(height).hash)

    @inlineCallbacks
    def mine(self, parent: Optional[bytes] = None):
        """Build a block (on ``parent``, default the tip) and submit it; fires with it."""
        builder = self.builder
        block = yield self.service.call(
            lambda cs: builder.build(parent=cs.lookup(parent) if parent else None))
        yield self.access.submit_block(block)
        return block


class ReadTests(BlockchainRPCTestCase):
    @inlineCallbacks
    def test_tip_count_and_hashes(self):
        self.assertEqual((yield self.result("getblockcount")), TIP_HEIGHT)
        self.assertEqual((yield self.result("getbestblockhash")), self.hex_at(TIP_HEIGHT))
        self.assertEqual((yield self.result("getblockhash", 0)), hash_to_hex(REGTEST.genesis.hash))
        self.assertEqual((yield self.result("getblockhash", TIP_HEIGHT)), self.hex_at(TIP_HEIGHT))
        self.assertEqual((yield self.result("getblockhash", height=5)), self.hex_at(5))

    @inlineCallbacks
    def test_getblockhash_errors_as_recorded(self):
        # Out of range, wrong type, fraction, and the argument-count errors carrying the help
        # text: the reference node's exact reply bodies.
        for name in ("rpc_24_getblockhash_wrong_type_string", "rpc_25_getblockhash_minus_1",
                     "rpc_26_getblockhash_too_large", "rpc_27_getblockhash_too_many_params",
                     "rpc_28_getblockhash_no_params", "rpc_29_getblockhash_float"):
            recorded = transcript(name)
            reply = yield self.core.handle(recorded.request.split(b"\r\n\r\n", 1)[1], "u")
            self.assertEqual((reply.status, reply.body), (500, recorded.body), name)
        self.assertEqual((yield self.error("getblockhash", TIP_HEIGHT + 1)),
                         (500, -8, "Block height out of range"))

    @inlineCallbacks
    def test_help(self):
        recorded = simplejson.loads(transcript("rpcm_28_help_getblockhash").body)["result"]
        self.assertEqual((yield self.result("help", "getblockhash")), recorded)
        listing = (yield self.result("help")).split("\n\n")[0].split("\n")
        self.assertEqual(listing, ["== Blockchain =="] + REFERENCE_HELP_LINES)
        for hidden in ("invalidateblock", "reconsiderblock", "waitfornewblock", "waitforblock",
                       "waitforblockheight"):
            text = yield self.result("help", hidden)
            self.assertTrue(text.startswith(hidden), text)
        text = yield self.result("help", "getblock")
        self.assertIn("\nResult (for verbosity = 2):\n", text)

    @inlineCallbacks
    def test_getblock_verbosity(self):
        entry = self.state.at_height(SPEND_HEIGHT)
        block = self.state.read_block(entry)
        blockhash = hash_to_hex(entry.hash)
        raw = yield self.result("getblock", blockhash, 0)
        self.assertEqual(raw, block.serialize().hex())
        self.assertEqual(Block.deserialize(bytes.fromhex(raw)).hash, entry.hash)
        summary = yield self.result("getblock", blockhash)
        self.assertEqual(list(summary), REFERENCE_BLOCK_KEYS + ["nextblockhash"])
        self.assertEqual(summary["tx"], [tx.txid_hex for tx in block.txs])
        self.assertEqual(summary["confirmations"], TIP_HEIGHT - SPEND_HEIGHT + 1)
        self.assertEqual(summary["size"], len(bytes.fromhex(raw)))
        self.assertEqual(summary["nextblockhash"], self.hex_at(SPEND_HEIGHT + 1))
        detailed = yield self.result("getblock", blockhash, 2)
        self.assertEqual(detailed["tx"][1]["txid"], hash_to_hex(self.shape.spend_txid))
        self.assertEqual(detailed["tx"][1]["hex"], block.txs[1].serialize().hex())
        self.assertEqual({**detailed, "tx": summary["tx"]}, summary)
        # Core: a number is the level (<= 0 hex, >= 2 full); a boolean is 1 or 0.
        self.assertEqual((yield self.result("getblock", blockhash, 3)), detailed)
        self.assertEqual((yield self.result("getblock", blockhash, -1)), raw)
        self.assertEqual((yield self.result("getblock", blockhash, True)), summary)
        self.assertEqual((yield self.result("getblock", blockhash, False)), raw)
        self.assertEqual((yield self.result("getblock", blockhash, None)), summary)
        # Named parameters (rpcm_90, rpcm_91): "verbosity" or its alias "verbose".
        self.assertEqual((yield self.result("getblock", blockhash=blockhash, verbosity=1)),
                         summary)
        self.assertEqual((yield self.result("getblock", blockhash=blockhash, verbose=True)),
                         summary)
        self.assertEqual((yield self.result("getblock", blockhash=blockhash, verbose=False)), raw)
        # uint256S: case and a 0x prefix do not matter.
        self.assertEqual((yield self.result("getblock", "0x" + blockhash.upper(), 0)), raw)

    @inlineCallbacks
    def test_getblock_genesis_and_tip(self):
        genesis = yield self.result("getblock", hash_to_hex(REGTEST.genesis.hash))
        self.assertEqual(genesis["confirmations"], TIP_HEIGHT + 1)
        self.assertNotIn("previousblockhash", genesis)
        tip = yield self.result("getblock", self.hex_at(TIP_HEIGHT))
        self.assertEqual(list(tip), REFERENCE_BLOCK_KEYS)
        self.assertEqual(tip["confirmations"], 1)

    @inlineCallbacks
    def test_getblock_errors(self):
        for body, recorded in RECORDED_NOT_FOUND:
            reply = yield self.core.handle(body, "u")
            self.assertEqual(reply, Reply(500, recorded))
        blockhash = self.hex_at(1)
        self.assertEqual((yield self.error("getblock", blockhash, "1")),
                         (500, -1, "JSON value is not a boolean as expected"))
        self.assertEqual((yield self.error("getblock", blockhash, 1.5)),
                         (500, -1, "JSON integer out of range"))
        self.assertEqual((yield self.error("getblock", 5)),
                         (500, -1, "JSON value is not a string as expected"))
        status, code, message = yield self.error("getblock")
        self.assertEqual((status, code), (500, -1))
        self.assertTrue(message.startswith('getblock "blockhash" ( verbosity ) \n'))
        self.assertEqual(
            (yield self.error("getblock", blockhash=blockhash, verbosity=1, verbose=True)),
            (500, -8, "Unknown named parameter verbose"))
        # A header whose block never arrived.
        self.assertEqual((yield self.error("getblock", hash_to_hex(self.shape.header_only))),
                         (500, -1, "Block not found on disk"))

    @inlineCallbacks
    def test_getblockheader(self):
        blockhash = self.hex_at(SPEND_HEIGHT)
        header = yield self.result("getblockheader", blockhash)
        self.assertEqual(list(header), REFERENCE_HEADER_KEYS + ["nextblockhash"])
        self.assertEqual(header["nTx"], 2)
        block_hex = yield self.result("getblock", blockhash, 0)
        self.assertEqual((yield self.result("getblockheader", blockhash, False)),
                         block_hex[:160])
        self.assertEqual((yield self.result("getblockheader", blockhash=blockhash, verbose=True)),
                         header)
        tip = yield self.result("getblockheader", self.hex_at(TIP_HEIGHT))
        self.assertEqual(list(tip), REFERENCE_HEADER_KEYS)
        # Headers known without their block: off the active chain, no transactions yet.
        lone = yield self.result("getblockheader", hash_to_hex(self.shape.header_only))
        self.assertEqual((lone["confirmations"], lone["nTx"], lone["height"]),
                         (-1, 0, TIP_HEIGHT))
        self.assertEqual((yield self.error("getblockheader", "00" * 32)),
                         (500, -5, "Block not found"))
        self.assertEqual((yield self.error("getblockheader", blockhash, 0)),
                         (500, -1, "JSON value is not a boolean as expected"))
        self.assertEqual((yield self.error("getblockheader", hash=blockhash)),
                         (500, -8, "Unknown named parameter hash"))

    @inlineCallbacks
    def test_getblockchaininfo_and_difficulty(self):
        info = yield self.result("getblockchaininfo")
        self.assertEqual(list(info), ["chain", "blocks", "headers", "bestblockhash", "difficulty",
                                      "mediantime", "verificationprogress",
                                      "initialblockdownload", "chainwork", "size_on_disk",
                                      "pruned", "softforks", "bip9_softforks", "warnings"])
        self.assertEqual((info["chain"], info["blocks"], info["headers"], info["bestblockhash"]),
                         ("regtest", TIP_HEIGHT, TIP_HEIGHT, self.hex_at(TIP_HEIGHT)))
        self.assertEqual([f["id"] for f in info["softforks"]], ["bip34", "bip66", "bip65"])
        reply = yield self.send("getdifficulty")
        expected = "%.16g" % get_difficulty(self.state.tip.bits)
        self.assertEqual(reply.body, b'{"result":%s,"error":null,"id":1}\n' % expected.encode())
        self.assertEqual(info["difficulty"], Decimal(expected))

    @inlineCallbacks
    def test_getchaintips(self):
        tips = yield self.result("getchaintips")
        self.assertEqual([list(t) for t in tips], [REFERENCE_TIP_KEYS] * 3)
        summary = [(t["height"], t["hash"], t["branchlen"], t["forkpoint"], t["status"])
                   for t in tips]
        self.assertEqual(summary, [
            (TIP_HEIGHT, self.hex_at(TIP_HEIGHT), 0, self.hex_at(TIP_HEIGHT), "active"),
            (TIP_HEIGHT, hash_to_hex(self.shape.header_only), 1, self.hex_at(109), "headers-only"),
            (107, hash_to_hex(self.shape.fork_tip), 2, self.hex_at(105), "valid-headers"),
        ])
        self.assertEqual(tips[0]["chainwork"], "%064x" % self.state.tip.chainwork)

    @inlineCallbacks
    def test_getchaintxstats(self):
        tip = self.state.tip
        past = self.state.at_height(1)
        stats = yield self.result("getchaintxstats")
        interval = tip.median_time_past() - past.median_time_past()
        # 111 coinbases and one spend; the window is the tip's height - 1 (under a month).
        self.assertEqual(stats, {
            "time": tip.time, "txcount": 112,
            "window_final_block_hash": self.hex_at(TIP_HEIGHT),
            "window_block_count": TIP_HEIGHT - 1, "window_tx_count": 110,
            "window_interval": interval,
            "txrate": Decimal("%.16g" % (110 / interval))})
        at_five = yield self.result("getchaintxstats", 4, self.hex_at(5))
        self.assertEqual((at_five["txcount"], at_five["window_block_count"],
                          at_five["window_tx_count"]), (6, 4, 4))
        self.assertEqual((yield self.result("getchaintxstats", 0)), {
            "time": tip.time, "txcount": 112, "window_final_block_hash": self.hex_at(TIP_HEIGHT),
            "window_block_count": 0})
        genesis = yield self.result("getchaintxstats", None, self.hex_at(0))
        self.assertEqual((genesis["txcount"], genesis["window_block_count"]), (1, 0))
        message = "Invalid block count: should be between 0 and the block's height - 1"
        for nblocks, blockhash in ((-1, None), (TIP_HEIGHT, None), (5, self.hex_at(5)),
                                   (1, self.hex_at(0))):
            self.assertEqual((yield self.error("getchaintxstats", nblocks, blockhash)),
                             (500, -8, message))
        self.assertEqual((yield self.error("getchaintxstats", 1, hash_to_hex(self.shape.fork_tip))),
                         (500, -8, "Block is not in main chain"))
        self.assertEqual((yield self.error("getchaintxstats", 1, "ab")),
                         (500, -5, "Block not found"))

    @inlineCallbacks
    def test_gettxout(self):
        spend = hash_to_hex(self.shape.spend_txid)
        out = yield self.result("gettxout", spend, 0)
        self.assertEqual(list(out), REFERENCE_TXOUT_KEYS)
        self.assertEqual((out["bestblock"], out["confirmations"], out["coinbase"]),
                         (self.hex_at(TIP_HEIGHT), TIP_HEIGHT - SPEND_HEIGHT + 1, False))
        self.assertEqual(out["value"], Decimal("49.99990000"))
        self.assertEqual(out["scriptPubKey"]["type"], "pubkeyhash")
        self.assertEqual((yield self.result("gettxout", spend, 0, False)), out)
        self.assertEqual((yield self.result("gettxout", txid=spend, n=0)), out)
        tip_coinbase = self.state.read_block(self.state.tip).txs[0].txid_hex
        newest = yield self.result("gettxout", tip_coinbase, 0)
        self.assertEqual((newest["confirmations"], newest["coinbase"]), (1, True))
        self.assertEqual(newest["value"], Decimal("50.00000000"))
        spent_coinbase = self.state.read_block(self.state.at_height(1)).txs[0].txid_hex
        # Spent, unspendable (OP_RETURN), no such index, unknown or malformed txid: null.
        for txid, n in ((spent_coinbase, 0), (spend, 1), (spend, 2), (spend, -1), ("00" * 32, 0),
                        ("xyz", 0)):
            reply = yield self.send("gettxout", txid, n)
            self.assertEqual(reply, Reply(200, b'{"result":null,"error":null,"id":1}\n'), (txid, n))
        self.assertEqual((yield self.error("gettxout", spend, "0")),
                         (500, -1, "JSON value is not an integer as expected"))
        self.assertEqual((yield self.error("gettxout", spend, 0, 1)),
                         (500, -1, "JSON value is not a boolean as expected"))

    @inlineCallbacks
    def test_gettxoutsetinfo(self):
        info = yield self.result("gettxoutsetinfo")
        self.assertEqual(list(info), REFERENCE_TXOUTSET_KEYS)
        # The whole set listed at once, on the writer thread: the oracle of the streamed walk.
        tip, coins = yield self.access.call(lambda cs: (cs.tip, cs.store.utxo_snapshot()))
        self.assertEqual((info["height"], info["bestblock"]), (TIP_HEIGHT, hash_to_hex(tip.hash)))
        # 110 coinbase outputs, one of them spent into one P2PKH output (OP_RETURN is not kept).
        self.assertEqual((info["transactions"], info["txouts"]), (110, 110))
        self.assertEqual(info["total_amount"], Decimal("5500.00000000"))
        self.assertEqual(info["bogosize"], sum(50 + len(c.script_pubkey) for _, c in coins))
        self.assertGreater(info["disk_size"], 0)
        self.assertEqual(info["hash_serialized_2"],
                         hash_to_hex(utxo_set_stats(tip.hash, coins).hash_serialized))
        # The UTXO set, and so its hash, comes back when a disconnected block is reconnected.
        yield self.result("invalidateblock", self.hex_at(TIP_HEIGHT))
        changed = yield self.result("gettxoutsetinfo")
        self.assertEqual((changed["height"], changed["txouts"]), (TIP_HEIGHT - 1, 109))
        self.assertNotEqual(changed["hash_serialized_2"], info["hash_serialized_2"])
        yield self.result("reconsiderblock", info["bestblock"])
        again = yield self.result("gettxoutsetinfo")
        self.assertEqual({**again, "disk_size": 0}, {**info, "disk_size": 0})


class HashParameterTests(SynchronousTestCase):
    """Core 0.17 reads the blockchain methods' hashes with uint256S, which never fails."""

    def test_uint256_from_hex(self):
        full = "00" * 31 + "ab"
        self.assertEqual(uint256_from_hex(full), b"\xab" + b"\x00" * 31)
        for text in (full.upper(), "0x" + full, " \t0X" + full, "ab", "ab!" + "ff" * 40,
                     "ff" + full):
            self.assertEqual(uint256_from_hex(text), b"\xab" + b"\x00" * 31, text)
        for text in ("", "xyz", "0x", " ", "\u00a0ab"):
            self.assertEqual(uint256_from_hex(text), b"\x00" * 32, text)
        self.assertEqual(uint256_from_hex("123"), b"\x23\x01" + b"\x00" * 30)


class VerifyChainTests(BlockchainRPCTestCase):
    @inlineCallbacks
    def test_clean_chain_verifies_at_every_level(self):
        reply = yield self.send("verifychain")
        self.assertEqual(reply.body, b'{"result":true,"error":null,"id":1}\n')
        for level in range(5):
            for depth in (1, 6, 0, 1000):
                self.assertTrue((yield self.result("verifychain", level, depth)), (level, depth))
        self.assertTrue((yield self.result("verifychain", -5, -5)))
        self.assertTrue((yield self.result("verifychain", checklevel=9)))

    def corrupt(self, name: str, pos: int) -> None:
        path = os.path.join(self.datadir, "blocks", name)
        with open(path, "r+b") as f:
            f.seek(pos)
            byte = f.read(1)
            f.seek(pos)
            f.write(bytes([byte[0] ^ 0xFF]))

    @inlineCallbacks
    def test_damaged_block_data(self):
        tip = self.state.tip
        self.corrupt("blk%05d.dat" % tip.file_no, tip.data_pos + 4)  # inside the header
        self.assertFalse((yield self.result("verifychain", 0, 1)))
        self.assertFalse((yield self.result("verifychain", 4, 1)))

    @inlineCallbacks
    def test_damaged_transactions(self):
        tip = self.state.tip
        size = len(self.state.read_block(tip).serialize())
        self.corrupt("blk%05d.dat" % tip.file_no, tip.data_pos + size - 1)  # coinbase locktime
        self.assertTrue((yield self.result("verifychain", 0, 1)))
        self.assertFalse((yield self.result("verifychain", 1, 1)))

    @inlineCallbacks
    def test_damaged_undo_data(self):
        entry = self.state.at_height(SPEND_HEIGHT)
        self.corrupt("rev%05d.dat" % entry.undo_file, entry.undo_pos + 2)
        self.assertTrue((yield self.result("verifychain", 1, 20)))
        self.assertFalse((yield self.result("verifychain", 2, 20)))
        self.assertTrue((yield self.result("verifychain", 2, 5)))  # not that deep

    @inlineCallbacks
    def test_utxo_set_out_of_step(self):
        # Lose the spend's output from the UTXO set behind the chain's back.
        key = (self.shape.spend_txid, 0)
        yield self.service.call(lambda cs: cs.store.coins.spend(key))
        self.assertTrue((yield self.result("verifychain", 2, 0)))
        self.assertFalse((yield self.result("verifychain", 3, 0)))
        self.assertTrue((yield self.result("verifychain", 3, TIP_HEIGHT - SPEND_HEIGHT)))

    @inlineCallbacks
    def test_utxo_set_with_a_stray_coin(self):
        # An output the spend in block 102 consumed reappears: undoing the block would clash.
        source = self.state.read_block(self.state.at_height(1)).txs[0]
        stray = Coin(source.vout[0].value, source.vout[0].script_pubkey, 1, True, source.version)
        yield self.service.call(lambda cs: cs.store.coins.add((source.txid, 0), stray))
        self.assertTrue((yield self.result("verifychain", 3, TIP_HEIGHT - SPEND_HEIGHT)))
        self.assertFalse((yield self.result("verifychain", 3, TIP_HEIGHT - SPEND_HEIGHT + 1)))


class ChainControlTests(BlockchainRPCTestCase):
    @inlineCallbacks
    def test_reorg_seen_through_every_view(self):
        stale = self.hex_at(TIP_HEIGHT)
        at_109 = self.hex_at(109)
        reply = yield self.send("invalidateblock", at_109)
        self.assertEqual(reply, Reply(200, b'{"result":null,"error":null,"id":1}\n'))
        self.assertEqual((yield self.result("getblockcount")), 108)
        block = yield self.result("getblock", stale)
        self.assertEqual(block["confirmations"], -1)
        self.assertNotIn("nextblockhash", block)
        self.assertNotIn("nextblockhash", (yield self.result("getblockheader", self.hex_at(108))))
        self.assertEqual((yield self.error("getchaintxstats", 1, stale)),
                         (500, -8, "Block is not in main chain"))
        tips = {t["hash"]: (t["height"], t["branchlen"], t["status"])
                for t in (yield self.result("getchaintips"))}
        self.assertEqual(tips, {
            self.hex_at(108): (108, 0, "active"),
            stale: (TIP_HEIGHT, 2, "invalid"),
            hash_to_hex(self.shape.header_only): (TIP_HEIGHT, 2, "invalid"),
            hash_to_hex(self.shape.fork_tip): (107, 2, "valid-headers"),
        })
        # A longer branch wins; reconsidering the old one leaves it a fully validated fork.
        for _ in range(3):
            yield self.mine()
        self.assertEqual((yield self.result("reconsiderblock", at_109)), None)
        self.assertEqual((yield self.result("getblockcount")), 111)
        tips = {t["hash"]: (t["branchlen"], t["forkpoint"], t["status"])
                for t in (yield self.result("getchaintips"))}
        self.assertEqual(tips[stale], (2, self.hex_at(108), "valid-fork"))
        self.assertEqual(tips[hash_to_hex(self.shape.header_only)],
                         (2, self.hex_at(108), "headers-only"))
        self.assertEqual(tips[self.hex_at(111)], (0, self.hex_at(111), "active"))
        self.assertEqual((yield self.result("getblock", stale))["confirmations"], -1)
        self.assertTrue((yield self.result("verifychain", 4, 0)))

    @inlineCallbacks
    def test_preciousblock(self):
        old_tip = self.hex_at(TIP_HEIGHT)
        rival = yield self.mine(parent=self.state.at_height(109).hash)
        self.assertEqual((yield self.result("getbestblockhash")), old_tip)  # first seen wins
        self.assertIsNone((yield self.result("preciousblock", rival.hash_hex)))
        self.assertEqual((yield self.result("getbestblockhash")), rival.hash_hex)
        self.assertIsNone((yield self.result("preciousblock", blockhash=old_tip)))
        self.assertEqual((yield self.result("getbestblockhash")), old_tip)
        status = {t["hash"]: t["status"] for t in (yield self.result("getchaintips"))}
        self.assertEqual((status[old_tip], status[rival.hash_hex]), ("active", "valid-fork"))

    @inlineCallbacks
    def test_unknown_and_malformed_hashes(self):
        for method in ("preciousblock", "invalidateblock", "reconsiderblock"):
            for blockhash in ("11" * 32, "xyz", ""):
                self.assertEqual((yield self.error(method, blockhash)),
                                 (500, -5, "Block not found"), (method, blockhash))
            self.assertEqual((yield self.error(method, 1)),
                             (500, -1, "JSON value is not a string as expected"))
        self.assertEqual((yield self.result("getblockcount")), TIP_HEIGHT)


class WaitTests(BlockchainRPCTestCase):
    def tip_json(self) -> Dict[str, Any]:
        return {"hash": self.hex_at(self.state.height), "height": self.state.height}

    @inlineCallbacks
    def test_timeouts_return_the_current_tip(self):
        current = self.tip_json()
        for method, params in (("waitfornewblock", [50]),
                               ("waitforblock", ["11" * 32, 50]),
                               ("waitforblockheight", [TIP_HEIGHT + 1, 50])):
            started = time.monotonic()
            self.assertEqual((yield self.result(method, *params)), current, method)
            self.assertGreaterEqual(time.monotonic() - started, 0.04, method)

    def test_conditions_already_met_or_negative_timeout(self):
        current = self.tip_json()
        for method, params in (("waitforblock", [current["hash"]]),
                               ("waitforblockheight", [TIP_HEIGHT]),
                               ("waitforblockheight", [1, 100000]),
                               ("waitfornewblock", [-1]),
                               ("waitforblock", ["11" * 32, -1]),
                               ("waitforblockheight", [TIP_HEIGHT + 1, -1])):
            reply = self.send(method, *params)
            self.assertEqual(simplejson.loads(self.successResultOf(reply).body)["result"],
                             current, (method, params))

    @inlineCallbacks
    def test_new_block_arrives(self):
        newblock = self.send("waitfornewblock")
        by_height = self.send("waitforblockheight", TIP_HEIGHT + 2, 60000)
        self.assertNoResult(newblock)
        first = yield self.mine()
        reply = yield newblock
        self.assertEqual(simplejson.loads(reply.body)["result"],
                         {"hash": first.hash_hex, "height": TIP_HEIGHT + 1})
        self.assertNoResult(by_height)
        upcoming = yield self.service.call(lambda cs: self.builder.build())
        by_hash = self.send("waitforblock", upcoming.hash_hex, 60000)
        self.assertNoResult(by_hash)
        yield self.access.submit_block(upcoming)
        expected = {"hash": upcoming.hash_hex, "height": TIP_HEIGHT + 2}
        for waiting in (by_height, by_hash):
            self.assertEqual(simplejson.loads((yield waiting).body)["result"], expected)

    def test_cancelled_call_stops_waiting(self):
        # Trial fails the test if the timeout's DelayedCall outlives it.
        for method, params in (("waitfornewblock", [60000]), ("waitforblock", ["11" * 32]),
                               ("waitforblockheight", [TIP_HEIGHT + 5, 60000])):
            waiting = self.send(method, *params)
            self.assertNoResult(waiting)
            waiting.cancel()
            self.failureResultOf(waiting, CancelledError)
