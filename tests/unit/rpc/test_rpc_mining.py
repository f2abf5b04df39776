"""Mining and generating methods through the real stack (tests/rpcchain.py)."""

from __future__ import annotations

from decimal import Decimal

import simplejson
from twisted.internet.defer import inlineCallbacks

from coin.chainparams import COIN, MAIN, MAX_BLOCK_SIGOPS, MAX_BLOCK_SIZE, REGTEST, TEST
from coin.consensus.pow import compact_to_target
from coin.consensus.versionbits import ACTIVE, DEFINED, LOCKED_IN, STARTED
from coin.primitives.address import Destination, encode_address
from coin.primitives.block import Block, BlockHeader
from coin.primitives.hashes import hash160, hash_to_hex
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.mining.assembler import create_block
from coin.mining.stats import network_hashps
from coin.mining.template import TEMPLATE_SCRIPT, Template, assemble_template
from coin.rpc.methods.mining import METHODS, template_json
from coin.script.standard import p2pkh_script

from tests.rpcchain import TIP_HEIGHT, ChainRPCTestCase

# The reference node's getmininginfo keys (rpcm_44), and ours: Dash's currentblocksize
# before them, where Core 0.13 had it.
RECORDED_MINING_INFO_KEYS = ["blocks", "currentblockweight", "currentblocktx", "difficulty",
                             "networkhashps", "pooledtx", "chain", "warnings"]
MINING_INFO_KEYS = ["blocks", "currentblocksize"] + RECORDED_MINING_INFO_KEYS[1:]
TEMPLATE_KEYS = ["capabilities", "version", "rules", "vbavailable", "vbrequired",
                 "previousblockhash", "transactions", "coinbaseaux", "coinbasevalue",
                 "longpollid", "target", "mintime", "mutable", "noncerange", "sigoplimit",
                 "sizelimit", "curtime", "bits", "height", "masternode",
                 "masternode_payments_started", "masternode_payments_enforced", "superblock",
                 "superblocks_started", "superblocks_enabled"]
# The reference node's help listing lines (rpcm_27) for these methods.
REFERENCE_HELP_LINES = ["generatetoaddress nblocks address (maxtries)",
                        "getblocktemplate ( TemplateRequest )", "getmininginfo",
                        "getnetworkhashps ( nblocks height )", 'submitblock "hexdata"  ( "dummy" )']


class MiningRPCTestCase(ChainRPCTestCase):
    methods = METHODS


class GenerateTests(MiningRPCTestCase):
    @inlineCallbacks
    def test_generatetoaddress_mines_to_the_address(self):
        hashes = yield self.result("generatetoaddress", 3, self.address())
        self.assertEqual(len(hashes), 3)
        self.assertEqual(self.state.height, TIP_HEIGHT + 3)
        self.assertEqual(hashes, [hash_to_hex(self.state.at_height(h).hash)
                                  for h in range(TIP_HEIGHT + 1, TIP_HEIGHT + 4)])
        block = yield self.access.read_block(self.state.tip)
        self.assertEqual(block.txs[0].vout[0].script_pubkey, self.builder.script_pubkey)
        self.assertEqual(block.txs[0].vout[0].value, 50 * COIN)

    @inlineCallbacks
    def test_counts_and_tries(self):
        self.assertEqual((yield self.result("generatetoaddress", 0, self.address())), [])
        self.assertEqual((yield self.result("generatetoaddress", -2, self.address())), [])
        self.assertEqual((yield self.result("generatetoaddress", 2, self.address(), 0)), [])
        # A negative maxtries is a huge unsigned count in Core: no limit.
        self.assertEqual(len((yield self.result("generatetoaddress", 1, self.address(), -1))), 1)
        self.assertEqual(self.state.height, TIP_HEIGHT + 1)

    @inlineCallbacks
    def test_invalid_addresses(self):
        main_address = encode_address(Destination("pubkeyhash", b"\x01" * 20), MAIN)
        for address in ("", "notanaddress", main_address, self.address()[:-1] + "x"):
            self.assertEqual((yield self.error("generatetoaddress", 1, address)),
                             (500, -5, "Error: Invalid address"))
        self.assertEqual((yield self.error("generatetoaddress", "1", self.address())),
                         (500, -1, "JSON value is not an integer as expected"))
        self.assertEqual(self.state.height, TIP_HEIGHT)


class SubmitBlockTests(MiningRPCTestCase):
    @inlineCallbacks
    def test_valid_then_duplicate(self):
        block = yield self.build()
        self.assertIsNone((yield self.result("submitblock", block.serialize().hex())))
        self.assertEqual(self.state.tip.hash, block.hash)
        self.assertEqual((yield self.result("submitblock", block.serialize().hex())), "duplicate")
        # BIP22's optional second argument is ignored.
        self.assertEqual((yield self.result("submitblock", block.serialize().hex(), {"x": 1})),
                         "duplicate")

    @inlineCallbacks
    def test_trailing_bytes_are_ignored_as_in_core(self):
        block = yield self.build()
        self.assertIsNone((yield self.result("submitblock", block.serialize().hex() + "00ff")))
        self.assertEqual(self.state.tip.hash, block.hash)

    @inlineCallbacks
    def test_invalid_block_then_duplicate_invalid(self):
        # Pays one base unit too much: found when the block is connected.
        block = yield self.build(fees=1)
        self.assertEqual((yield self.result("submitblock", block.serialize().hex())),
                         "bad-cb-amount")
        self.assertEqual((yield self.result("submitblock", block.serialize().hex())),
                         "duplicate-invalid")
        self.assertEqual(self.state.height, TIP_HEIGHT)

    @inlineCallbacks
    def test_mutated_block_is_not_marked_invalid(self):
        block = yield self.build()
        bad = Block(block.header, list(block.txs) + [block.txs[0]])
        for _ in range(2):  # a wrong merkle root may be corruption: never remembered
            self.assertEqual((yield self.result("submitblock", bad.serialize().hex())),
                             "bad-txnmrklroot")
        self.assertIsNone((yield self.result("submitblock", block.serialize().hex())))

    @inlineCallbacks
    def test_header_rejections(self):
        orphan = yield self.build(mutate=lambda b: Block(_with_prev(b, b"\x11" * 32), b.txs))
        self.assertEqual((yield self.result("submitblock", orphan.serialize().hex())),
                         "prev-blk-not-found")
        old = yield self.build(time=self.state.tip.median_time_past())
        self.assertEqual((yield self.result("submitblock", old.serialize().hex())),
                         "time-too-old")
        unsolved = _unsolved((yield self.build()))
        self.assertEqual((yield self.result("submitblock", unsolved.serialize().hex())),
                         "high-hash")

    @inlineCallbacks
    def test_side_branch_and_failed_ancestor_are_inconclusive(self):
        parent = self.state.tip.prev.hash
        # Same work as the tip: stored, not activated, so never checked in full.
        side = yield self.build(parent=parent, fees=1)
        self.assertEqual((yield self.result("submitblock", side.serialize().hex())),
                         "inconclusive")
        self.assertEqual((yield self.result("submitblock", side.serialize().hex())), "duplicate")
        # Its child makes the branch heavier; the invalid parent fails to connect.
        child = yield self.build(parent=side.hash)
        self.assertEqual((yield self.result("submitblock", child.serialize().hex())),
                         "inconclusive")
        self.assertEqual((yield self.result("submitblock", child.serialize().hex())),
                         "duplicate-invalid")
        self.assertEqual(self.state.height, TIP_HEIGHT)
        grandchild = yield self.build(parent=child.hash)
        self.assertEqual((yield self.result("submitblock", grandchild.serialize().hex())),
                         "bad-prevblk")

    @inlineCallbacks
    def test_decode_errors(self):
        block = yield self.build()
        for text in ("", "zz", "00", block.serialize().hex()[:-2], block.serialize().hex()[1:]):
            self.assertEqual((yield self.error("submitblock", text)),
                             (500, -22, "Block decode failed"))
        spend = self.builder.spend(self.mature_coinbase(1))
        no_coinbase = Block(block.header, [spend])
        self.assertEqual((yield self.error("submitblock", no_coinbase.serialize().hex())),
                         (500, -22, "Block does not start with a coinbase"))
        self.assertEqual((yield self.error("submitblock", 5)),
                         (500, -1, "JSON value is not a string as expected"))


def _with_prev(block: Block, prev: bytes) -> BlockHeader:
    header = block.header
    return BlockHeader(header.version, prev, header.merkle_root, header.time, header.bits, 0)


def _unsolved(block: Block) -> Block:
    """The block with the first nonce whose hash misses the target."""
    target = compact_to_target(block.header.bits)[0]
    nonce = 0
    while int.from_bytes(block.header.with_nonce(nonce).hash, "little") <= target:
        nonce += 1
    return Block(block.header.with_nonce(nonce), block.txs)


class TemplateTests(MiningRPCTestCase):
    @inlineCallbacks
    def test_template_after_generate(self):
        yield self.result("generatetoaddress", 2, self.address())
        template = yield self.result("getblocktemplate")
        tip = self.state.tip
        self.assertEqual(list(template), TEMPLATE_KEYS)
        self.assertEqual(template["height"], TIP_HEIGHT + 3)
        self.assertEqual(template["previousblockhash"], hash_to_hex(tip.hash))
        self.assertEqual(template["longpollid"], hash_to_hex(tip.hash) + "0")
        self.assertEqual(template["mintime"], tip.median_time_past() + 1)
        self.assertGreaterEqual(template["curtime"], template["mintime"])
        self.assertEqual(template["bits"], "207fffff")
        self.assertEqual(template["target"], "7fffff" + "0" * 58)
        self.assertEqual(template["coinbasevalue"], 50 * COIN)
        self.assertEqual(template["transactions"], [])
        self.assertEqual(template["coinbaseaux"], {"flags": ""})
        self.assertEqual((template["sigoplimit"], template["sizelimit"]),
                         (MAX_BLOCK_SIGOPS, MAX_BLOCK_SIZE))
        self.assertEqual(template["mutable"], ["time", "transactions", "prevblock"])
        # CSV is still "defined" in the first 144-block period: nothing signalled.
        self.assertEqual((template["version"], template["rules"], template["vbavailable"],
                          template["vbrequired"]), (0x20000000, [], {}, 0))
        self.assertEqual(template["capabilities"], ["proposal"])
        # Dash 0.12.3's masternode array: no vote, so no payee (and payments start at 200);
        # superblocks have started (regtest's first is at 10), none is owed, no spork here.
        self.assertEqual([template[k] for k in TEMPLATE_KEYS[-6:]],
                         [[], False, False, [], True, False])
        # The same with an explicit request, and for a pre-BIP9 client.
        self.assertEqual((yield self.result("getblocktemplate", {"mode": "template"}))["height"],
                         TIP_HEIGHT + 3)
        old = yield self.result("getblocktemplate", {"maxversion": 4})
        self.assertEqual(old["mutable"], ["time", "transactions", "prevblock", "version/force"])
        new = yield self.result("getblocktemplate", {"rules": ["csv"], "maxversion": 4})
        self.assertEqual(new["mutable"], ["time", "transactions", "prevblock"])

    @inlineCallbacks
    def test_request_errors(self):
        for request, expected in (
                ({"mode": 5}, (500, -8, "Invalid mode")),
                ({"mode": "other"}, (500, -8, "Invalid mode")),
                ({"rules": [1]}, (500, -1, "JSON value is not a string as expected")),
                ({"maxversion": Decimal("1.5")}, (500, -1, "JSON integer out of range")),
                ({"mode": "proposal"}, (500, -3, "Missing data String key for proposal")),
                ({"mode": "proposal", "data": "zz"}, (500, -22, "Block decode failed")),
                ({"longpollid": "xyz"},
                 (500, -8, "longpollid must be hexadecimal string (not 'xyz')")),
                ({"longpollid": "ab"}, (500, -8, "longpollid must be of length 64 (not 2)"))):
            self.assertEqual((yield self.error("getblocktemplate", request)), expected, request)
        self.assertEqual((yield self.error("getblocktemplate", "template")),
                         (500, -1, "JSON value is not an object as expected"))

    @inlineCallbacks
    def test_proposals(self):
        block = yield self.build()

        def propose(candidate: Block):
            return self.result("getblocktemplate",
                               {"mode": "proposal", "data": candidate.serialize().hex()})

        self.assertIsNone((yield propose(block)))
        # Proof of work is not checked in a proposal.
        self.assertIsNone((yield propose(Block(block.header.with_nonce(7), block.txs))))
        bad_root = Block(block.header, list(block.txs) + [block.txs[0]])
        self.assertEqual((yield propose(bad_root)), "bad-txnmrklroot")
        stale = yield self.build(parent=self.state.tip.prev.hash)
        self.assertEqual((yield propose(stale)), "inconclusive-not-best-prevblk")
        old = yield self.build(time=self.state.tip.median_time_past())
        self.assertEqual((yield propose(old)), "time-too-old")
        locktime = Transaction([TxIn(OutPoint(b"\x01" * 32, 0), b"", 0)],
                               [TxOut(1, p2pkh_script(b"\x00" * 20))], TIP_HEIGHT + 5)
        nonfinal = yield self.build(txs=[locktime], fees=0)
        self.assertEqual((yield propose(nonfinal)), "bad-txns-nonfinal")
        # Nothing was stored.
        for candidate in (block, bad_root, stale, old, nonfinal):
            self.assertIsNone(self.state.lookup(candidate.hash))
        yield self.access.submit_block(block)
        self.assertEqual((yield propose(block)), "duplicate")
        self.assertIsNone(self.state.lookup(stale.hash))
        invalid = yield self.build(fees=1)
        yield self.result("submitblock", invalid.serialize().hex())
        self.assertEqual((yield propose(invalid)), "duplicate-invalid")
        side = yield self.build(parent=block.header.prev_hash)
        yield self.access.submit_block(side)
        self.assertEqual((yield propose(side)), "duplicate-inconclusive")

    @inlineCallbacks
    def test_long_poll_waits_for_a_new_tip(self):
        first = yield self.result("getblocktemplate")
        waiting = self.send("getblocktemplate", {"longpollid": first["longpollid"]})
        # A counter of non-ASCII digits or of thousands of digits is no 500: it waits too.
        odd = [self.send("getblocktemplate", {"longpollid": first["longpollid"][:64] + counter})
               for counter in ("\u00b2", "\u0663", "9" * 5000)]
        for pending in [waiting] + odd:
            self.assertNoResult(pending)
        yield self.mine()
        reply = yield waiting
        template = simplejson.loads(reply.body)["result"]
        self.assertEqual(template["height"], first["height"] + 1)
        for pending in odd:
            reply = yield pending
            self.assertEqual(simplejson.loads(reply.body)["result"]["height"], first["height"] + 1)
        # A non-string id watches the current tip.
        waiting = self.send("getblocktemplate", {"longpollid": 1})
        self.assertNoResult(waiting)
        yield self.mine()
        self.assertEqual(simplejson.loads((yield waiting).body)["result"]["height"],
                         first["height"] + 2)

    @inlineCallbacks
    def test_rules_follow_the_csv_deployment(self):
        period = REGTEST.deployment("csv").period
        yield self.result("generatetoaddress", period - TIP_HEIGHT, self.address())
        template = yield self.result("getblocktemplate")
        # Started: available, and signalled (bit 0) in the preferred version.
        self.assertEqual((template["version"], template["rules"], template["vbavailable"]),
                         (0x20000001, [], {"csv": 0}))
        # Every block signals: locked in after the next period, active after the one after.
        yield self.result("generatetoaddress", 2 * period, self.address())
        template = yield self.result("getblocktemplate")
        self.assertEqual((template["version"], template["rules"], template["vbavailable"]),
                         (0x20000000, ["csv"], {}))

    @inlineCallbacks
    def test_template_json_for_each_deployment_state(self):
        # The block was assembled in the "defined" state; LOCKED_IN forces the bit on.
        template = yield self.access.call(assemble_template)
        for state, version, rules, available in (
                (DEFINED, 0x20000000, [], {}), (STARTED, 0x20000000, [], {"csv": 0}),
                (LOCKED_IN, 0x20000001, [], {"csv": 0}), (ACTIVE, 0x20000000, ["csv"], {})):
            out = template_json(Template(template.prev, template.block, {"csv": state}),
                                REGTEST, False)
            self.assertEqual((out["version"], out["rules"], out["vbavailable"]),
                             (version, rules, available), state)


class NotConnectedTests(ChainRPCTestCase):
    methods = METHODS
    params = TEST

    @inlineCallbacks
    def test_refuses_off_regtest_without_peers(self):
        # The test network's genesis block may be younger than this machine's clock.
        self.clock.set_mock_time(TEST.genesis.header.time + 600)
        self.assertEqual((yield self.error("getblocktemplate")),
                         (500, -9, "Coin is not connected!"))
        # Proposals need no peers (and no proof of work: none is ground on testnet here).
        block = yield self.access.call(create_block, self.builder.script_pubkey)
        self.assertIsNone((yield self.result(
            "getblocktemplate", {"mode": "proposal", "data": block.serialize().hex()})))


class InfoTests(MiningRPCTestCase):
    @inlineCallbacks
    def test_getmininginfo(self):
        info = yield self.result("getmininginfo")
        self.assertEqual(list(info), MINING_INFO_KEYS)
        self.assertEqual(info["blocks"], TIP_HEIGHT)
        # As Core 0.17 (and the reference, rpcm_44): 0 until a block was assembled.
        self.assertEqual((info["currentblocksize"], info["currentblockweight"],
                          info["currentblocktx"]), (0, 0, 0))
        self.assertEqual((info["pooledtx"], info["chain"], info["warnings"]), (0, "regtest", ""))
        reply = yield self.send("getmininginfo")
        # Regtest difficulty and 120 blocks of work 2 one second apart, as Core prints them.
        self.assertIn(b'"difficulty":4.656542373906925e-10,"networkhashps":2,', reply.body)
        tx = self.builder.spend(self.mature_coinbase(1))
        yield self.mempool.accept(tx)
        yield self.result("getblocktemplate")
        # The template: header, a 1-byte transaction count, its coinbase and the pool's tx.
        coinbase = (yield self.access.call(create_block, TEMPLATE_SCRIPT)).txs[0]
        size = 80 + 1 + coinbase.size + tx.size
        info = yield self.result("getmininginfo")
        self.assertEqual((info["currentblocksize"], info["currentblockweight"],
                          info["currentblocktx"], info["pooledtx"]), (size, 4 * size, 1, 1))
        # generatetoaddress assembles too: the figures become the mined block's.
        yield self.result("generatetoaddress", 1, self.address(hash160(b"miner")))
        block = yield self.access.read_block(self.state.tip)
        self.assertEqual(block.txs[1], tx)
        info = yield self.result("getmininginfo")
        self.assertEqual((info["currentblocksize"], info["currentblockweight"],
                          info["currentblocktx"], info["pooledtx"]),
                         (block.size, 4 * block.size, 1, 0))

    @inlineCallbacks
    def test_getnetworkhashps(self):
        self.assertEqual((yield self.result("getnetworkhashps")), 2)
        self.assertEqual((yield self.result("getnetworkhashps", 10, 50)), 2)
        # At genesis there is nothing to measure: Core's integer 0.
        self.assertEqual((yield self.result("getnetworkhashps", 120, 0)), 0)
        # -1: since the last "difficulty change" (576-block windows), capped at the chain.
        self.assertEqual((yield self.result("getnetworkhashps", -1)), 2)
        yield self.result("generatetoaddress", 1, self.address())
        tip = self.state.tip
        first = tip.get_ancestor(tip.height - min(120, tip.height))
        span = tip.time - first.time
        expected = Decimal("%.16g" % ((tip.chainwork - first.chainwork) / span))
        self.assertEqual((yield self.result("getnetworkhashps")), expected)
        self.assertEqual(network_hashps(self.state, 1000, -1), network_hashps(
            self.state, tip.height, tip.height + 5))

    @inlineCallbacks
    def test_help_lines_match_the_reference(self):
        listing = (yield self.result("help")).split("\n")
        for line in REFERENCE_HELP_LINES:
            self.assertIn(line, listing)
        self.assertIn("== Generating ==", listing)
        self.assertIn("== Mining ==", listing)
        self.assertTrue((yield self.result("help", "getblocktemplate")).startswith(
            "getblocktemplate ( TemplateRequest )\n"))

