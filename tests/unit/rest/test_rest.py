"""REST over a real chain: real ChainState, ValidationService and ChainAccess behind the
real RPCSite/RPCRoot (auth applies to JSON-RPC only), raw HTTP bytes in and out."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from typing import Any, List, Optional

import simplejson
from twisted.internet import reactor
from twisted.internet.address import IPv4Address
from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import deferLater
from twisted.internet.testing import StringTransport
from twisted.trial.unittest import SkipTest

from coin.chain.access import ChainAccess
from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.service import ValidationService
from coin.chainparams import REGTEST
from coin.primitives.block import Block
from coin.primitives.hashes import hash_to_hex
from coin.primitives.transaction import Transaction
from coin.rest import RESTResource
from coin.rest.resource import entry_header
from coin.rpc.auth import AllowList, Authenticator, Whitelist
from coin.rpc.jsonrpc import JSONRPCCore, Warmup, encode_json
from coin.rpc.methods.blockchain import METHODS as BLOCKCHAIN_METHODS
from coin.rpc.methods.control import METHODS as CONTROL_METHODS
from coin.rpc.methods.mempool import METHODS as MEMPOOL_METHODS
from coin.rpc.methods.rawtransactions import METHODS as RAWTX_METHODS
from coin.mempool.accept import PoolPolicy
from coin.mempool.pool import Mempool
from coin.mempool.service import MempoolService
from coin.rpc.registry import MethodTable
from coin.storage.chainstore import ChainStore
from coin.testing.chainbuilder import ChainBuilder
from coin.rpc.resource import RPCRoot, RPCSite
from coin.views.block import block_json, header_json
from coin.views.chaininfo import chain_info_json
from coin.views.transaction import tx_block_fields, tx_json
from coin.rest import resource as rest_resource

from tests.rpcchain import TIP_HEIGHT, ChainRPCTestCase
from tests.rpchelpers import FakeNode, split_response

ZERO = "00" * 32
ALL = "output format not found (available: .bin, .hex, .json)\r\n"
JSON_ONLY = "output format not found (available: json)\r\n"


def _scan_get_transaction(access: ChainAccess):
    """Stand-in for ChainAccess.get_transaction (txindex work) while it is not merged:
    the active chain scanned on the writer thread; same result shape."""

    def scan(cs, txid):
        for entry in reversed(cs.chain):
            for tx in cs.read_block(entry).txs:
                if tx.txid == txid:
                    return tx, entry
        return None

    return lambda txid: access.call(scan, txid)


class Response:
    def __init__(self, raw: bytes) -> None:
        status, headers, self.body = split_response(raw)
        self.status = int(status.split(b" ")[1])
        self.headers = dict(headers)
        self.content_type = self.headers.get(b"Content-Type")

    def json(self) -> Any:
        return simplejson.loads(self.body, use_decimal=True)

    def text(self) -> str:
        return self.body.decode()


class RESTTestCase(ChainRPCTestCase):
    pruned = False

    @inlineCallbacks
    def setUp(self):
        yield super().setUp()
        if not hasattr(ChainAccess, "get_transaction"):
            self.access.get_transaction = _scan_get_transaction(self.access)
        self.make_site(pruned=lambda entry: self.pruned)
        # A confirmed spend of block 1's coinbase, in block TIP_HEIGHT + 1.
        self.spent = self.mature_coinbase(1)
        self.spend = self.builder.spend(self.spent)
        blocks = yield self.mine(1, txs=[self.spend])
        self.spend_block: Block = blocks[0]
        self.tip = self.state.tip

    def make_site(self, pruned=None) -> None:
        """The real RPC site with the REST resource under /rest (auth only for JSON-RPC)."""
        self.warmup = Warmup(None)
        root = RPCRoot(self.core, Authenticator(("u", "p"), []), reactor)
        self.rest = RESTResource(self.access, self.mempool, warmup=self.warmup, pruned=pruned)
        root.putChild(b"rest", self.rest)
        self.site = RPCSite(root, allow=AllowList(), reactor=reactor, timeout=None)

    @inlineCallbacks
    def get(self, path: str, method: bytes = b"GET", extra: bytes = b"", body: bytes = b""):
        address = IPv4Address("TCP", "127.0.0.1", 40000)
        protocol = self.site.buildProtocol(address)
        transport = StringTransport(peerAddress=address)
        protocol.makeConnection(transport)
        if body:
            extra += b"Content-Length: %d\r\n" % len(body)
        protocol.dataReceived(method + b" " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                              + extra + b"\r\n" + body)
        for _ in range(2000):
            raw = transport.value()
            head, sep, body = raw.partition(b"\r\n\r\n")
            if sep:
                length = [line.split(b": ")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length: ")]
                if (length and len(body) >= int(length[0])) or (
                        method == b"HEAD"):
                    return Response(raw)
            yield deferLater(reactor, 0.002, lambda: None)
        self.fail("no response for %s" % path)

    @inlineCallbacks
    def assert_error(self, path: str, status: int, text: str):
        r = yield self.get(path)
        self.assertEqual((r.status, r.content_type, r.text()),
                         (status, b"text/plain", text), path)

    def tip_hash(self) -> str:
        return hash_to_hex(self.tip.hash)


class BlockTests(RESTTestCase):
    @inlineCallbacks
    def test_block_json_has_full_transactions(self):
        r = yield self.get("/rest/block/%s.json" % self.tip_hash())
        self.assertEqual((r.status, r.content_type), (200, b"application/json"))
        self.assertTrue(r.body.endswith(b"}\n"))
        expected = block_json(self.spend_block, self.tip, self.state, self.params, tx_detail=True)
        self.assertEqual(r.body, encode_json(expected) + b"\n")
        self.assertEqual(r.json()["tx"][1]["txid"], self.spend.txid_hex)

    @inlineCallbacks
    def test_block_notxdetails_json_has_txids(self):
        r = yield self.get("/rest/block/notxdetails/%s.json" % self.tip_hash())
        expected = block_json(self.spend_block, self.tip, self.state, self.params)
        self.assertEqual(r.body, encode_json(expected) + b"\n")
        self.assertEqual(r.json()["tx"][1], self.spend.txid_hex)

    @inlineCallbacks
    def test_block_hex_and_bin(self):
        raw = self.spend_block.serialize()
        for prefix in ("block", "block/notxdetails"):
            r = yield self.get("/rest/%s/%s.hex" % (prefix, self.tip_hash()))
            self.assertEqual((r.status, r.content_type, r.body),
                             (200, b"text/plain", raw.hex().encode() + b"\n"))
            r = yield self.get("/rest/%s/%s.bin" % (prefix, self.tip_hash()))
            self.assertEqual((r.status, r.content_type, r.body),
                             (200, b"application/octet-stream", raw))

    @inlineCallbacks
    def test_cached_hex_and_bin_are_read_without_a_thread_hop(self):
        raw = self.spend_block.serialize()
        path = "/rest/block/%s" % self.tip_hash()
        yield self.get(path + ".bin")  # the first read may flush the writer (on a thread)
        hops = []
        handlers = self.rest.handlers
        hop = handlers._in_thread
        self.patch(handlers, "_in_thread", lambda f: hops.append(f) or hop(f))
        r = yield self.get(path + ".bin")
        self.assertEqual(r.body, raw)
        r = yield self.get(path + ".hex")
        self.assertEqual(r.body, raw.hex().encode() + b"\n")
        self.assertEqual(hops, [])
        # JSON is rendered on a thread as before.
        r = yield self.get(path + ".json")
        self.assertEqual(r.status, 200)
        self.assertEqual(len(hops), 1)

    @inlineCallbacks
    def test_block_hex_and_bin_are_the_stored_bytes_unparsed(self):
        # .hex/.bin send the block file's bytes as they are: no parse, no re-serialize.
        raw = self.spend_block.serialize()

        def no_parse(data: bytes) -> Block:
            raise AssertionError("block parsed for .hex/.bin")

        self.patch(Block, "deserialize", staticmethod(no_parse))
        r = yield self.get("/rest/block/%s.bin" % self.tip_hash())
        self.assertEqual((r.status, r.body), (200, raw))
        r = yield self.get("/rest/block/%s.hex" % self.tip_hash())
        self.assertEqual((r.status, r.body), (200, raw.hex().encode() + b"\n"))

    @inlineCallbacks
    def test_block_json_is_cached_until_the_tip_moves(self):
        parent = hash_to_hex(self.tip.prev.hash)
        first = yield self.get("/rest/block/%s.json" % parent)
        reads = []
        real = self.state.read_block

        def read_block(entry):
            if entry is self.tip.prev:
                reads.append(entry)
            return real(entry)

        self.patch(self.state, "read_block", read_block)
        again = yield self.get("/rest/block/%s.json" % parent)
        self.assertEqual((again.body, reads), (first.body, []))
        # A new tip: confirmations change, so the body is rendered again, not served stale.
        yield self.mine(1)
        later = yield self.get("/rest/block/%s.json" % parent)
        self.assertEqual(len(reads), 1)
        self.assertEqual(later.json()["confirmations"], first.json()["confirmations"] + 1)
        self.assertEqual(later.json()["nextblockhash"], self.tip_hash())

    @inlineCallbacks
    def test_genesis_uppercase_and_query_string(self):
        genesis = self.state.at_height(0)
        r = yield self.get("/rest/block/%s.json" % hash_to_hex(genesis.hash))
        self.assertEqual((r.status, r.json()["height"]), (200, 0))
        self.assertNotIn("previousblockhash", r.json())
        r = yield self.get("/rest/block/%s.json" % self.tip_hash().upper())
        self.assertEqual((r.status, r.json()["hash"]), (200, self.tip_hash()))
        # Core reads the query string as part of the hash (reference rest_14).
        yield self.assert_error("/rest/block/%s.json?foo=bar" % self.tip_hash(), 400,
                                "Invalid hash: %s.json?foo=bar\r\n" % self.tip_hash())

    @inlineCallbacks
    def test_errors(self):
        h = self.tip_hash()
        yield self.assert_error("/rest/block/%s" % h, 404, ALL)
        # An unknown suffix stays part of the hash, as Core's ParseDataFormat (rest_09).
        yield self.assert_error("/rest/block/%s.xml" % h, 400, "Invalid hash: %s.xml\r\n" % h)
        yield self.assert_error("/rest/block/notxdetails/%s.xml" % h, 400,
                                "Invalid hash: %s.xml\r\n" % h)
        yield self.assert_error("/rest/block/%s.json" % ZERO, 404, ZERO + " not found\r\n")
        yield self.assert_error("/rest/block/xyz.json", 400, "Invalid hash: xyz\r\n")
        yield self.assert_error("/rest/block/%s.json" % h[:63], 400,
                                "Invalid hash: %s\r\n" % h[:63])
        yield self.assert_error("/rest/block/notxdetails/zz.bin", 400, "Invalid hash: zz\r\n")

    @inlineCallbacks
    def test_header_only_block_is_not_found_or_pruned(self):
        block = yield self.build()
        yield self.access.submit_header(block.header)
        h = block.hash_hex
        self.rest.handlers.pruned = None  # the chain state's own test: this node never pruned
        yield self.assert_error("/rest/block/%s.json" % h, 404, h + " not found\r\n")
        self.rest.handlers.pruned = lambda entry: self.pruned
        yield self.assert_error("/rest/block/%s.json" % h, 404, h + " not found\r\n")
        self.pruned = True
        yield self.assert_error("/rest/block/%s.hex" % h, 404,
                                h + " not available (pruned data)\r\n")
        yield self.assert_error("/rest/block/notxdetails/%s.bin" % h, 404,
                                h + " not available (pruned data)\r\n")


class HeaderTests(RESTTestCase):
    @inlineCallbacks
    def test_formats(self):
        start = self.state.at_height(5)
        entries = [self.state.at_height(h) for h in range(5, 10)]
        r = yield self.get("/rest/headers/5/%s.json" % hash_to_hex(start.hash))
        self.assertEqual((r.status, r.content_type), (200, b"application/json"))
        self.assertEqual(r.body, encode_json([header_json(e, self.state) for e in entries])
                         + b"\n")
        raw = b"".join(entry_header(e) for e in entries)
        self.assertEqual(entry_header(self.tip), self.spend_block.header.serialize())
        r = yield self.get("/rest/headers/5/%s.hex" % hash_to_hex(start.hash))
        self.assertEqual((r.status, r.content_type, r.body),
                         (200, b"text/plain", raw.hex().encode() + b"\n"))
        r = yield self.get("/rest/headers/5/%s.bin" % hash_to_hex(start.hash))
        self.assertEqual((r.status, r.content_type, r.body),
                         (200, b"application/octet-stream", raw))
        r = yield self.get("/rest/headers/1/%s.json" % hash_to_hex(start.hash))
        self.assertEqual([x["height"] for x in r.json()], [5])

    @inlineCallbacks
    def test_counts_stop_at_the_tip(self):
        genesis = hash_to_hex(self.state.at_height(0).hash)
        r = yield self.get("/rest/headers/2000/%s.json" % genesis)
        self.assertEqual([x["height"] for x in r.json()], list(range(TIP_HEIGHT + 2)))
        r = yield self.get("/rest/headers/5/%s.json" % self.tip_hash())
        self.assertEqual([x["hash"] for x in r.json()], [self.tip_hash()])
        r = yield self.get("/rest/headers/5/%s.json" % ZERO)
        self.assertEqual((r.status, r.body), (200, b"[]\n"))

    @inlineCallbacks
    def test_errors(self):
        h = self.tip_hash()
        for count in ("0", "2001", "abc", "-1", "99999999999"):
            yield self.assert_error("/rest/headers/%s/%s.json" % (count, h), 400,
                                    "Header count out of range: %s\r\n" % count)
        yield self.assert_error("/rest/headers/%s.json" % h, 400,
                                "No header count specified. Use "
                                "/rest/headers/<count>/<hash>.<ext>.\r\n")
        yield self.assert_error("/rest/headers/5/xyz.json", 400, "Invalid hash: xyz\r\n")
        yield self.assert_error("/rest/headers/5/%s.xml" % h, 400,
                                "Invalid hash: %s.xml\r\n" % h)
        yield self.assert_error("/rest/headers/5/%s" % h, 404, ALL)


class TxTests(RESTTestCase):
    @inlineCallbacks
    def test_confirmed_json_has_block_fields_and_input_values(self):
        r = yield self.get("/rest/tx/%s.json" % self.spend.txid_hex)
        self.assertEqual((r.status, r.content_type), (200, b"application/json"))
        got = r.json()
        self.assertEqual((got["blockhash"], got["height"], got["confirmations"], got["time"],
                          got["blocktime"]),
                         (self.tip_hash(), TIP_HEIGHT + 1, 1, self.tip.time, self.tip.time))
        vin = got["vin"][0]
        self.assertEqual((vin["valueSat"], str(vin["value"]), vin["addresses"]),
                         (self.spent.value, "%d.00000000" % (self.spent.value // 10 ** 8),
                          [self.address()]))
        coins = yield self.access.call(lambda cs: cs.read_undo(self.tip))
        expected = tx_json(self.spend, self.params, spent_outputs=coins[0],
                           **tx_block_fields(self.tip, self.state))
        self.assertEqual(r.body, encode_json(expected) + b"\n")

    @inlineCallbacks
    def test_coinbase_json(self):
        coinbase = self.spend_block.txs[0]
        r = yield self.get("/rest/tx/%s.json" % coinbase.txid_hex)
        got = r.json()
        self.assertEqual((r.status, got["height"]), (200, TIP_HEIGHT + 1))
        self.assertIn("coinbase", got["vin"][0])
        self.assertNotIn("value", got["vin"][0])

    @inlineCallbacks
    def test_hex_and_bin(self):
        raw = self.spend.serialize()
        r = yield self.get("/rest/tx/%s.hex" % self.spend.txid_hex)
        self.assertEqual((r.status, r.content_type, r.body),
                         (200, b"text/plain", raw.hex().encode() + b"\n"))
        r = yield self.get("/rest/tx/%s.bin" % self.spend.txid_hex)
        self.assertEqual((r.status, r.content_type, r.body),
                         (200, b"application/octet-stream", raw))
        self.assertEqual(Transaction.deserialize(r.body).txid, self.spend.txid)

    @inlineCallbacks
    def test_mempool_transactions_get_inputs_from_the_utxo_set_and_the_pool(self):
        parent = self.builder.spend(self.builder.outputs_of(self.spend)[0])
        child = self.builder.spend(self.builder.outputs_of(parent)[0])
        for tx in (parent, child):
            yield self.mempool.accept(tx)
        for tx, spent in ((parent, self.spend), (child, parent)):
            r = yield self.get("/rest/tx/%s.json" % tx.txid_hex)
            got = r.json()
            self.assertNotIn("blockhash", got)
            self.assertEqual(got["vin"][0]["valueSat"], spent.vout[0].value)
            r = yield self.get("/rest/tx/%s.hex" % tx.txid_hex)
            self.assertEqual(r.body, tx.serialize().hex().encode() + b"\n")

    @inlineCallbacks
    def test_errors(self):
        yield self.assert_error("/rest/tx/%s.json" % ZERO, 404, ZERO + " not found\r\n")
        yield self.assert_error("/rest/tx/xyz.json", 400, "Invalid hash: xyz\r\n")
        yield self.assert_error("/rest/tx/%s.xml" % self.spend.txid_hex, 400,
                                "Invalid hash: %s.xml\r\n" % self.spend.txid_hex)
        yield self.assert_error("/rest/tx/%s" % self.spend.txid_hex, 404, ALL)


class GetUTXOsTests(RESTTestCase):
    def outpoint(self, txid: bytes, n: int) -> str:
        return "%s-%d" % (hash_to_hex(txid), n)

    @inlineCallbacks
    def test_spent_and_unspent_in_every_format(self):
        spent = self.outpoint(self.spent.outpoint.txid, 0)
        unspent = self.outpoint(self.spend.txid, 0)
        for prefix in ("getutxos", "getutxos/checkmempool"):
            r = yield self.get("/rest/%s/%s/%s.json" % (prefix, spent, unspent))
            self.assertEqual((r.status, r.content_type), (200, b"application/json"))
            got = r.json()
            self.assertEqual((got["chainHeight"], got["chaintipHash"], got["bitmap"]),
                             (TIP_HEIGHT + 1, self.tip_hash(), "01"))
            self.assertEqual([(u["txvers"], u["height"], str(u["value"])) for u in got["utxos"]],
                             [(1, TIP_HEIGHT + 1, "%.8f" % (self.spend.vout[0].value / 1e8))])
            self.assertEqual(list(got["utxos"][0]), ["txvers", "height", "value", "scriptPubKey"])
            self.assertTrue(r.body.endswith(b"}\n"))
            r = yield self.get("/rest/%s/%s/%s.bin" % (prefix, spent, unspent))
            self.assertEqual(r.content_type, b"application/octet-stream")
            body = r.body
            self.assertEqual(body[:4], (TIP_HEIGHT + 1).to_bytes(4, "little"))
            self.assertEqual(body[4:36], self.tip.hash)
            self.assertEqual(body[36:39], b"\x01\x02\x01")  # bitmap vector; one coin
            self.assertEqual(body[39:47], (1).to_bytes(4, "little")
                             + (TIP_HEIGHT + 1).to_bytes(4, "little"))
            self.assertEqual(body[47:55], self.spend.vout[0].value.to_bytes(8, "little"))
            r = yield self.get("/rest/%s/%s/%s.hex" % (prefix, spent, unspent))
            self.assertEqual((r.content_type, r.body), (b"text/plain", body.hex().encode() + b"\n"))

    @inlineCallbacks
    def test_checkmempool_counts_pool_spends_and_pool_outputs(self):
        pooled = self.builder.spend(self.builder.outputs_of(self.spend)[0])
        yield self.mempool.accept(pooled)
        confirmed = self.outpoint(self.spend.txid, 0)   # spent by the pool transaction
        unconfirmed = self.outpoint(pooled.txid, 0)     # created by it
        path = "%s/%s.json" % (confirmed, unconfirmed)
        plain = (yield self.get("/rest/getutxos/" + path)).json()
        self.assertEqual((plain["bitmap"], [u["height"] for u in plain["utxos"]]),
                         ("10", [TIP_HEIGHT + 1]))
        checked = (yield self.get("/rest/getutxos/checkmempool/" + path)).json()
        self.assertEqual((checked["bitmap"], [(u["txvers"], u["height"]) for u in checked["utxos"]]),
                         ("01", [(pooled.version, 0x7FFFFFFF)]))
        r = yield self.get("/rest/getutxos/checkmempool/%s.bin" % unconfirmed)
        self.assertEqual(r.body[36:47], b"\x01\x01\x01" + pooled.version.to_bytes(4, "little")
                         + (0x7FFFFFFF).to_bytes(4, "little"))

    @inlineCallbacks
    def test_post_body_read_as_core_0_17_reads_it(self):
        """Core streams the body as a serialized string: the length prefix is the
        checkmempool flag and the outpoint vector starts at the body's first byte."""
        pooled = self.builder.spend(self.builder.outputs_of(self.spend)[0])
        yield self.mempool.accept(pooled)
        outpoint = self.spend.txid + (0).to_bytes(4, "little")  # spent by the pool tx
        created = pooled.txid + (0).to_bytes(4, "little")
        body = b"\x02" + outpoint + created
        r = yield self.get("/rest/getutxos.bin", method=b"POST", body=body)
        self.assertEqual((r.status, r.content_type), (200, b"application/octet-stream"))
        # checkmempool in effect: the pool's spend hides the first, its output is found.
        self.assertEqual(r.body[36:39], b"\x01\x02\x01")
        r2 = yield self.get("/rest/getutxos.hex", method=b"POST", body=body.hex().encode())
        self.assertEqual((r2.status, r2.body), (200, r.body.hex().encode() + b"\n"))
        # The request as Core's documentation words it (flag, count, outpoints), as the
        # reference recording rest_83 sends it: Core reads one garbled outpoint, not found.
        documented = b"\x01\x02" + outpoint + created
        r = yield self.get("/rest/getutxos.bin", method=b"POST", body=documented)
        self.assertEqual((r.status, r.body[36:]), (200, b"\x01\x00\x00"))
        # Core's Parse error on unreadable data; ParseHex stops at the first non-hex digit.
        r = yield self.get("/rest/getutxos.bin", method=b"POST", body=b"\x05" + outpoint)
        self.assertEqual((r.status, r.text()), (400, "Parse error\r\n"))
        r = yield self.get("/rest/getutxos.hex", method=b"POST", body=b"zz")
        self.assertEqual((r.status, r.body[72:]), (200, b"0000\n"))

    @inlineCallbacks
    def test_post_errors(self):
        outpoint = self.spend.txid + (0).to_bytes(4, "little")
        uri = "/rest/getutxos/%s.bin" % self.outpoint(self.spend.txid, 0)
        for path, body, status, text in (
                (uri, b"\x01" + outpoint, 400,
                 "Combination of URI scheme inputs and raw post data is not allowed\r\n"),
                ("/rest/getutxos.json", b"\x01" + outpoint, 400, "Error: empty request\r\n"),
                ("/rest/getutxos/checkmempool.bin", b"\x01" + outpoint, 400,
                 "Error: empty request\r\n"),
                # 784 bytes: the prefix fd 10 03 makes the count 16 (Core's reading).
                ("/rest/getutxos.bin", bytes(784), 400,
                 "Error: max outpoints exceeded (max: 15, tried: 16)\r\n"),
                ("/rest/getutxos.bin", b"\x10" + outpoint * 16, 400, "Parse error\r\n"),
                ("/rest/getutxos", b"\x01" + outpoint, 404,
                 "output format not found (available: .bin, .hex, .json)\r\n")):
            r = yield self.get(path, method=b"POST", body=body)
            self.assertEqual((r.status, r.text()), (status, text), path)
        r = yield self.get("/rest/chaininfo.json", method=b"POST", body=b"{}")
        self.assertEqual(r.status, 405)

    @inlineCallbacks
    def test_only_spent(self):
        r = yield self.get("/rest/getutxos/%s.hex" % self.outpoint(self.spent.outpoint.txid, 0))
        expected = (TIP_HEIGHT + 1).to_bytes(4, "little") + self.tip.hash + b"\x01\x00\x00"
        self.assertEqual(r.body, expected.hex().encode() + b"\n")

    @inlineCallbacks
    def test_fifteen_outpoints_and_sixteen(self):
        one = self.outpoint(self.spend.txid, 0)
        r = yield self.get("/rest/getutxos/%s.json" % "/".join([one] * 15))
        self.assertEqual((r.status, r.json()["bitmap"]), (200, "1" * 15))
        for prefix in ("getutxos", "getutxos/checkmempool"):
            yield self.assert_error("/rest/%s/%s.json" % (prefix, "/".join([one] * 16)), 400,
                                    "Error: max outpoints exceeded (max: 15, tried: 16)\r\n")

    @inlineCallbacks
    def test_errors(self):
        txid = hash_to_hex(self.spend.txid)
        for path in ("getutxos.json", "getutxos/.json", "getutxos/checkmempool.json",
                     "getutxos/checkmempool/.json"):
            yield self.assert_error("/rest/" + path, 400, "Error: empty request\r\n")
        for bad in ("xyz-0", txid + "-x", txid, txid + "-", txid[:62] + "-0", txid + "-+-1",
                    txid + "-4294967296", txid + "-2147483648", txid + "--2147483649",
                    txid + "-" + "9" * 5000, txid + "-" + "0" * 5000 + "x", txid + "-%C2%B2",
                    txid + "-1%20"):
            yield self.assert_error("/rest/getutxos/%s.json" % bad, 400, "Parse error\r\n")
        # Core's ParseInt32 and its cast to the outpoint's uint32: "-1" is 4294967295,
        # "+0" and "000" are 0, and digits past 4,300 are fine while the value fits.
        for good in ("--1", "-+0", "-000", "-" + "0" * 5000 + "1"):
            r = yield self.get("/rest/getutxos/%s%s.json" % (txid, good))
            self.assertEqual(r.status, 200, good)
        yield self.assert_error("/rest/getutxos/%s-0.xml" % txid, 400, "Parse error\r\n")
        yield self.assert_error("/rest/getutxos/%s-0" % txid, 404, ALL)


class StatusTests(RESTTestCase):
    methods = BLOCKCHAIN_METHODS + MEMPOOL_METHODS

    @inlineCallbacks
    def test_chaininfo_is_getblockchaininfo(self):
        r = yield self.get("/rest/chaininfo.json")
        self.assertEqual((r.status, r.content_type), (200, b"application/json"))
        view = self.access.snapshot()
        self.assertEqual(r.body, encode_json(chain_info_json(
            view, self.params, self.access.status(view))) + b"\n")
        rpc = yield self.send("getblockchaininfo")
        self.assertEqual(simplejson.loads(rpc.body, use_decimal=True)["result"], r.json())

    @inlineCallbacks
    def test_chaininfo_is_rendered_again_only_when_something_changed(self):
        renders = []
        self.patch(rest_resource, "chain_info_json",
                   lambda *args: renders.append(args) or chain_info_json(*args))
        first = yield self.get("/rest/chaininfo.json")
        again = yield self.get("/rest/chaininfo.json")
        self.assertEqual((again.body, len(renders)), (first.body, 1))
        yield self.mine(1)  # a new snapshot
        mined = yield self.get("/rest/chaininfo.json")
        self.assertEqual((mined.json()["blocks"], len(renders)), (first.json()["blocks"] + 1, 2))
        self.patch(self.access.warnings, "text", lambda: "Warning: a test warning")  # a new status
        warned = yield self.get("/rest/chaininfo.json")
        self.assertEqual((warned.json()["warnings"], len(renders)), ("Warning: a test warning", 3))

    @inlineCallbacks
    def test_mempool(self):
        r = yield self.get("/rest/mempool/info.json")
        self.assertEqual(r.body, b'{"size":0,"bytes":0,"usage":0,"maxmempool":300000000,'
                                 b'"mempoolminfee":0.00001000,"minrelaytxfee":0.00001000}\n')
        r = yield self.get("/rest/mempool/contents.json")
        self.assertEqual((r.status, r.content_type, r.body), (200, b"application/json", b"{}\n"))
        tx = self.builder.spend(self.builder.outputs_of(self.spend)[0])
        yield self.mempool.accept(tx)
        info = yield self.get("/rest/mempool/info.json")
        rpc = yield self.send("getmempoolinfo")
        self.assertEqual(info.json(), simplejson.loads(rpc.body, use_decimal=True)["result"])
        self.assertEqual((info.json()["size"], info.json()["bytes"]), (1, tx.size))
        contents = yield self.get("/rest/mempool/contents.json")
        rpc = yield self.send("getrawmempool", True)
        self.assertEqual(contents.json(), simplejson.loads(rpc.body, use_decimal=True)["result"])
        self.assertEqual(list(contents.json()), [tx.txid_hex])

    @inlineCallbacks
    def test_json_only_endpoints(self):
        for path in ("chaininfo.hex", "chaininfo", "chaininfo.bin", "mempool/info.bin",
                     "mempool/contents.hex", "mempool/info"):
            yield self.assert_error("/rest/" + path, 404, JSON_ONLY)

    @inlineCallbacks
    def test_blockhashbyheight(self):
        entry = self.state.at_height(7)
        r = yield self.get("/rest/blockhashbyheight/7.json")
        self.assertEqual((r.status, r.content_type, r.body),
                         (200, b"application/json",
                          b'{"blockhash":"%s"}\n' % hash_to_hex(entry.hash).encode()))
        r = yield self.get("/rest/blockhashbyheight/7.hex")
        self.assertEqual((r.content_type, r.body),
                         (b"text/plain", hash_to_hex(entry.hash).encode() + b"\n"))
        r = yield self.get("/rest/blockhashbyheight/7.bin")
        self.assertEqual((r.content_type, r.body), (b"application/octet-stream", entry.hash))
        yield self.assert_error("/rest/blockhashbyheight/%d.json" % (TIP_HEIGHT + 2), 404,
                                "Block height out of range\r\n")
        for bad in ("-1", "abc", "1.5x"):
            yield self.assert_error("/rest/blockhashbyheight/%s.json" % bad, 400,
                                    "Invalid height: %s\r\n" % bad)
        # Thousands of digits, past int32, blanks, and text Core's SanitizeString trims.
        for bad, echoed in (("9" * 5000, "9" * 5000), ("2147483648", "2147483648"),
                            ("-2147483649", "-2147483649"), ("1%20", "120"),
                            ("%3Cb%3E7", "3Cb3E7"), ("1e3", "1e3"), ("0x10", "0x10")):
            yield self.assert_error("/rest/blockhashbyheight/%s.json" % bad, 400,
                                    "Invalid height: %s\r\n" % echoed)
        # Core's ParseInt32 takes a sign and leading zeros.
        for text in ("+7", "007", "0" * 5000 + "7"):
            r = yield self.get("/rest/blockhashbyheight/%s.hex" % text)
            self.assertEqual(r.body, hash_to_hex(entry.hash).encode() + b"\n", text)
        r = yield self.get("/rest/blockhashbyheight/-0.hex")
        self.assertEqual(r.body, hash_to_hex(self.state.at_height(0).hash).encode() + b"\n")
        yield self.assert_error("/rest/blockhashbyheight/7.xml", 400,
                                "Invalid height: 7.xml\r\n")


class HTTPTests(RESTTestCase):
    @inlineCallbacks
    def test_unknown_paths_are_empty_404(self):
        for path in ("/rest/foo", "/rest/", "/rest/blockx/abc.json", "/rest/chaininfoXYZ.json",
                     "/rest/mempool/infoX.json", "/rest/getutxosX.json", "/rest"):
            r = yield self.get(path)
            self.assertEqual((r.status, r.body), (404, b""), path)

    @inlineCallbacks
    def test_methods(self):
        for method in (b"POST", b"PUT"):
            r = yield self.get("/rest/chaininfo.json", method=method,
                               extra=b"Content-Length: 0\r\n")
            self.assertEqual(r.status, 405)
        r = yield self.get("/rest/chaininfo.json", method=b"HEAD")
        self.assertEqual((r.status, r.content_type, r.body), (200, b"application/json", b""))

    @inlineCallbacks
    def test_no_authentication_needed_and_bad_credentials_ignored(self):
        r = yield self.get("/rest/chaininfo.json", extra=b"Authorization: Basic Zm9vOmJhcg==\r\n")
        self.assertEqual(r.status, 200)
        # JSON-RPC on the same site still needs credentials.
        r = yield self.get("/", method=b"POST", extra=b"Content-Length: 0\r\n")
        self.assertEqual(r.status, 401)

    @inlineCallbacks
    def test_warmup(self):
        self.warmup.set("Loading block index...")
        yield self.assert_error("/rest/chaininfo.json", 503,
                                "Service temporarily unavailable: Loading block index...\r\n")

    @inlineCallbacks
    def test_disabled_is_plain_404(self):
        self.site.resource.children.pop(b"rest")
        r = yield self.get("/rest/chaininfo.json")
        self.assertEqual((r.status, r.body), (404, b""))


class BadInputTests(RESTTestCase):
    @inlineCallbacks
    def test_odd_paths_never_500(self):
        h = self.tip_hash()
        paths = ["/rest/block/.json", "/rest/block/..json", "/rest/block/%s.json.json" % h,
                 "/rest/block/%s/.json" % h, "/rest/block/notxdetails/.bin",
                 "/rest/block/%zz.json", "/rest/block/%ff%fe.json", "/rest/headers//.json",
                 "/rest/headers/1/.json", "/rest/headers/1/%s/x.json" % h,
                 "/rest/headers/%s.json" % ("9" * 400), "/rest/tx/.hex", "/rest/tx/%s.%s" % (h, "x" * 300),
                 "/rest/getutxos/-.json", "/rest/getutxos/checkmempool/checkmempool.json",
                 "/rest/getutxos//.json", "/rest/getutxos/%s-0//%s-1.bin" % (h, h),
                 "/rest/getutxos/%s-99999999999999999999.json" % h,
                 "/rest/blockhashbyheight/.json", "/rest/blockhashbyheight/%s.json" % ("9" * 50),
                 "/rest/mempool/.json", "/rest/mempool/info.json.json", "/rest/chaininfo.",
                 "/rest/chaininfo.json.json", "/rest/mempool/contents.xml.json",
                 "/rest//chaininfo.json", "/rest/%00.json"]
        for path in paths:
            r = yield self.get(path)
            self.assertIn(r.status, (400, 404), (path, r.status, r.body))
            self.assertNotIn(b"Traceback", r.body)
        self.assertEqual(self.flushLoggedErrors(), [])


_pruned_template: Optional[str] = None
#: The txid of the pruned chain's block 1 coinbase (its outputs stay unspent).
_pruned_coinbase: List[bytes] = []
#: Small block files so that a short chain spans many (as tests/unit/chain/test_pruning.py does).
PRUNE_FILE_SIZE = 4000


def pruned_chain() -> str:
    """A datadir of 330 blocks whose oldest block files were pruned (built once)."""
    global _pruned_template
    if _pruned_template is None:
        datadir = tempfile.mkdtemp(prefix="coin-test-rest-pruned-")
        atexit.register(shutil.rmtree, datadir, True)
        store = ChainStore(datadir, REGTEST, max_blockfile_size=PRUNE_FILE_SIZE)
        store.open()
        chain = ChainState(REGTEST, store)
        chain.configure_pruning(True, 0)
        chain.load()
        ChainBuilder(chain).mine(330)
        _pruned_coinbase.append(chain.read_block(chain.at_height(1)).txs[0].txid)
        chain.prune_manual(30)
        assert chain.have_pruned and not chain.at_height(1).have_data()
        chain.close()
        _pruned_template = datadir
    return _pruned_template


class PrunedChainTests(RESTTestCase):
    """A real pruned datadir; the resource asks the chain state (no override)."""

    @inlineCallbacks
    def setUp(self):
        if not hasattr(ChainState, "prune_manual"):
            raise SkipTest("pruning not merged")
        datadir = self.mktemp()
        shutil.copytree(pruned_chain(), datadir)
        store = ChainStore(datadir, REGTEST, max_blockfile_size=PRUNE_FILE_SIZE)
        store.open()
        self.clock = NodeClock()
        chainstate = ChainState(REGTEST, store, clock=self.clock)
        chainstate.configure_pruning(True, 0)
        self.service = ValidationService(chainstate, reactor)
        self.service.startService()
        self.addCleanup(self.service.stopService)
        self.access = ChainAccess(self.service, self.clock, reactor)
        self.state = self.service.chainstate
        self.mempool = MempoolService(self.service, Mempool(), PoolPolicy(), now=self.clock.now)
        self.core = JSONRPCCore(MethodTable(list(CONTROL_METHODS) + list(BLOCKCHAIN_METHODS)),
                                FakeNode(chain=self.access, mempool=self.mempool),
                                whitelist=Whitelist(), warmup=Warmup(None), clock=reactor)
        yield self.service.ready
        self.make_site()

    @inlineCallbacks
    def test_transaction_of_a_pruned_block_is_not_found(self):
        # Core's GetTransaction finds the block through the unspent coinbase output, fails
        # to read it and finds nothing: 404 "not found", in every format.
        txid = hash_to_hex(_pruned_coinbase[0])
        for fmt in ("json", "hex", "bin"):
            yield self.assert_error("/rest/tx/%s.%s" % (txid, fmt), 404, txid + " not found\r\n")
        self.assertEqual(self.flushLoggedErrors(), [])

    @inlineCallbacks
    def test_pruned_block_in_every_form(self):
        h = hash_to_hex(self.state.at_height(1).hash)
        for path in ("block/%s.json", "block/%s.hex", "block/notxdetails/%s.bin"):
            yield self.assert_error("/rest/" + path % h, 404, h + " not available (pruned data)\r\n")
        r = yield self.get("/rest/block/%s.json" % hash_to_hex(self.state.tip.hash))
        self.assertEqual((r.status, r.json()["height"]), (200, 330))
        r = yield self.get("/rest/chaininfo.json")
        rpc = yield self.send("getblockchaininfo")
        self.assertEqual(simplejson.loads(rpc.body, use_decimal=True)["result"], r.json())
        self.assertTrue(r.json()["pruned"])
        # -prune=1: manual pruning only, so no target.
        info = r.json()
        self.assertEqual((info["pruneheight"], info["automatic_pruning"]),
                         (self.state.prune_height(), False))
        self.assertGreater(info["pruneheight"], 1)
        self.assertNotIn("prune_target_size", info)
        # Headers stay available for pruned blocks.
        r = yield self.get("/rest/headers/2/%s.json" % h)
        self.assertEqual([x["height"] for x in r.json()], [1, 2])


def _without(obj: dict, *keys: str) -> dict:
    return {k: v for k, v in obj.items() if k not in keys}


class ExtraFieldsTests(RESTTestCase):
    """Core's extra fields (#22) are the same through RPC and REST, which share the views."""

    methods = BLOCKCHAIN_METHODS + MEMPOOL_METHODS + RAWTX_METHODS

    @inlineCallbacks
    def rpc(self, method: str, *params: Any):
        reply = yield self.send(method, *params)
        answer = simplejson.loads(reply.body, use_decimal=True)
        self.assertIsNone(answer["error"], (method, params))
        return answer["result"]

    @inlineCallbacks
    def test_a_500_transaction_block(self):
        fan_out = self.builder.spend(self.mature_coinbase(2),
                                     [(self.builder.script_pubkey, 10 ** 7)] * 498)
        spends = [self.builder.spend(out) for out in self.builder.outputs_of(fan_out)]
        (block,) = yield self.mine(1, txs=[fan_out, *spends])
        blockhash = block.hash_hex
        rest = yield self.get("/rest/block/%s.json" % blockhash)
        full = rest.json()
        self.assertEqual(full, (yield self.rpc("getblock", blockhash, 2)))
        self.assertEqual((full["nTx"], full["strippedsize"], full["size"], full["weight"]),
                         (500, block.size, block.size, 4 * block.size))
        summary = yield self.get("/rest/block/notxdetails/%s.json" % blockhash)
        self.assertEqual(summary.json(), (yield self.rpc("getblock", blockhash, 1)))
        self.assertEqual({**full, "tx": summary.json()["tx"]}, summary.json())
        # Transactions: REST /tx adds what the inputs spend, getrawtransaction with a block
        # in_active_chain, block objects have no block fields; the rest is one view.
        # (Without -txindex, REST finds a transaction through an unspent output of it.)
        for n, tx in ((0, block.txs[0]), (2, spends[0]), (499, spends[-1])):
            rest = (yield self.get("/rest/tx/%s.json" % tx.txid_hex)).json()
            rpc = yield self.rpc("getrawtransaction", tx.txid_hex, True, blockhash)
            self.assertEqual((rest["hash"], rest["size"], rest["vsize"]),
                             (tx.txid_hex, tx.size, tx.size))
            self.assertEqual(_without(rest, "vin"), _without(rpc, "vin", "in_active_chain"))
            self.assertEqual(_without(full["tx"][n], "vin"),
                             _without(rest, "vin", "blockhash", "height", "confirmations",
                                      "time", "blocktime"))
        decoded = yield self.rpc("decoderawtransaction", fan_out.serialize().hex())
        self.assertEqual(decoded, {k: v for k, v in full["tx"][1].items() if k != "hex"})

    @inlineCallbacks
    def test_mempool_parent_and_child(self):
        parent = self.builder.spend(self.builder.outputs_of(self.spend)[0], fee=20_000)
        child = self.builder.spend(self.builder.outputs_of(parent)[0], fee=10_000)
        for tx in (parent, child):
            yield self.mempool.accept(tx)
        self.assertTrue((yield self.rpc("prioritisetransaction", child.txid_hex, 0, 50_000)))
        contents = (yield self.get("/rest/mempool/contents.json")).json()
        self.assertEqual(contents, (yield self.rpc("getrawmempool", True)))
        self.assertEqual(list(contents), [parent.txid_hex, child.txid_hex])
        self.assertEqual(contents[child.txid_hex],
                         (yield self.rpc("getmempoolentry", child.txid_hex)))
        self.assertEqual({parent.txid_hex: contents[parent.txid_hex]},
                         (yield self.rpc("getmempoolancestors", child.txid_hex, True)))
        self.assertEqual({child.txid_hex: contents[child.txid_hex]},
                         (yield self.rpc("getmempooldescendants", parent.txid_hex, True)))
        fees = {txid: {k: str(v) for k, v in entry["fees"].items()}
                for txid, entry in contents.items()}
        self.assertEqual(fees, {
            parent.txid_hex: {"base": "0.00020000", "modified": "0.00020000",
                              "ancestor": "0.00020000", "descendant": "0.00080000"},
            child.txid_hex: {"base": "0.00010000", "modified": "0.00060000",
                             "ancestor": "0.00080000", "descendant": "0.00060000"}})
        for tx in (parent, child):
            entry = contents[tx.txid_hex]
            self.assertEqual((entry["size"], entry["vsize"], entry["wtxid"]),
                             (tx.size, tx.size, tx.txid_hex))
            self.assertEqual((entry["fees"]["base"], entry["fees"]["modified"]),
                             (entry["fee"], entry["modifiedfee"]))
