"""REST /tx with -txindex: the stored bytes cut out of the block, kept per txid (and the JSON
per tip) and answered without a thread hop; every kept answer checked against a resource
with nothing kept (the slow path) across new blocks, reorgs and the mempool."""

from __future__ import annotations

from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import deferLater

from coin.chain.access import ChainAccess
from coin.index.txindex import TxIndex
from coin.primitives.serialize import ByteReader
from coin.primitives.transaction import Transaction
from coin.rest import RESTResource
from tests.unit.rest.test_rest import RESTTestCase, Response


class IndexedTxTests(RESTTestCase):

    @inlineCallbacks
    def setUp(self):
        yield super().setUp()
        self.txindex = TxIndex(self.service, reactor)
        self.access.txindex = self.txindex
        self.txindex.startService()
        self.addCleanup(self.txindex.stopService)
        yield self.synced()

    @inlineCallbacks
    def synced(self):
        """Once the index is at the tip (it follows each new block in its own step)."""
        for _ in range(3000):
            if self.txindex.synced:
                return
            yield deferLater(reactor, 0.002, lambda: None)
        self.fail("the transaction index did not reach the tip")

    def count_lookups(self) -> list:
        """Every lookup of a transaction the resource starts (each hops to threads)."""
        lookups: list = []
        real = self.access.locate_transaction
        self.patch(self.access, "locate_transaction",
                   lambda txid: lookups.append(txid) or real(txid))
        return lookups

    @inlineCallbacks
    def slow(self, path: str):
        """``path`` answered by a fresh resource (nothing kept) over the same chain."""
        fresh = RESTResource(self.access, self.mempool)
        saved = self.rest
        self.site.resource.putChild(b"rest", fresh)
        try:
            r = yield self.get(path)
        finally:
            self.site.resource.putChild(b"rest", saved)
        return r

    @inlineCallbacks
    def assert_as_slow_path(self, txid_hex: str):
        """Every format of the transaction answered as a resource with nothing kept does."""
        for fmt in ("bin", "hex", "json"):
            path = "/rest/tx/%s.%s" % (txid_hex, fmt)
            kept: Response = yield self.get(path)
            slow: Response = yield self.slow(path)
            self.assertEqual((kept.status, kept.content_type, kept.body),
                             (slow.status, slow.content_type, slow.body), path)

    @inlineCallbacks
    def test_raw_bytes_are_cut_from_the_block_unparsed_and_kept(self):
        entry = self.tip
        raw_block = self.state.read_raw_block(entry)
        offset = raw_block.index(self.spend.serialize())
        stored = Transaction.read(ByteReader(raw_block, offset)).serialize()
        self.assertEqual(stored, self.spend.serialize())
        r = yield self.get("/rest/tx/%s.bin" % self.spend.txid_hex)
        self.assertEqual((r.status, r.content_type, r.body),
                         (200, b"application/octet-stream", stored))
        lookups = self.count_lookups()
        hops: list = []
        real_hop = self.access.in_thread
        self.patch(self.access, "in_thread", lambda *a: hops.append(a) or real_hop(*a))

        def no_parse(*args):
            raise AssertionError("transaction parsed for a kept .hex/.bin")

        self.patch(Transaction, "read", classmethod(no_parse))
        self.patch(Transaction, "deserialize", classmethod(no_parse))
        r = yield self.get("/rest/tx/%s.bin" % self.spend.txid_hex)
        self.assertEqual(r.body, stored)
        r = yield self.get("/rest/tx/%s.hex" % self.spend.txid_hex)
        self.assertEqual((r.content_type, r.body), (b"text/plain", stored.hex().encode() + b"\n"))
        self.assertEqual((lookups, hops), ([], []))

    @inlineCallbacks
    def test_kept_json_follows_new_blocks_and_a_reorg(self):
        txid_hex = self.spend.txid_hex
        first = yield self.get("/rest/tx/%s.json" % txid_hex)
        self.assertEqual(first.json()["confirmations"], 1)
        lookups = self.count_lookups()
        for fmt in ("json", "hex", "bin"):
            r = yield self.get("/rest/tx/%s.%s" % (txid_hex, fmt))
            self.assertEqual(r.status, 200)
        self.assertEqual(lookups, [])  # kept: no lookup at all
        yield self.assert_as_slow_path(txid_hex)
        # A new block: the same transaction, one more confirmation.
        yield self.mine(1)
        yield self.synced()
        r = yield self.get("/rest/tx/%s.json" % txid_hex)
        self.assertEqual(r.json()["confirmations"], 2)
        yield self.assert_as_slow_path(txid_hex)
        # invalidateblock of the transaction's block: it is no longer confirmed there.
        yield self.access.invalidate_block(self.spend_block.hash)
        yield self.synced()
        yield self.assert_as_slow_path(txid_hex)
        r = yield self.get("/rest/tx/%s.json" % txid_hex)
        self.assertNotEqual(r.json().get("blockhash"), self.spend_block.hash_hex)
        # A longer fork confirming it in another block: found there, not in the old one.
        (block,) = yield self.mine(1, txs=[self.spend])
        yield self.mine(2)
        yield self.synced()
        r = yield self.get("/rest/tx/%s.json" % txid_hex)
        self.assertEqual((r.json()["blockhash"], r.json()["confirmations"]), (block.hash_hex, 3))
        yield self.assert_as_slow_path(txid_hex)

    @inlineCallbacks
    def test_pool_transaction_then_confirmed(self):
        tx = self.builder.spend(self.builder.outputs_of(self.spend)[0])
        yield self.mempool.accept(tx)
        r = yield self.get("/rest/tx/%s.json" % tx.txid_hex)
        self.assertNotIn("blockhash", r.json())
        yield self.assert_as_slow_path(tx.txid_hex)
        r = yield self.get("/rest/tx/%s.hex" % tx.txid_hex)
        self.assertEqual(r.body, tx.serialize().hex().encode() + b"\n")
        (block,) = yield self.mine(1, txs=[tx])
        yield self.synced()
        self.assertIsNone(self.mempool.pool.get(tx.txid))
        r = yield self.get("/rest/tx/%s.json" % tx.txid_hex)
        self.assertEqual((r.json()["blockhash"], r.json()["confirmations"]), (block.hash_hex, 1))
        yield self.assert_as_slow_path(tx.txid_hex)

    @inlineCallbacks
    def test_errors_keep_core_order(self):
        # Found: the format is checked last (kept or not); unknown: not found first.
        for _ in range(2):
            yield self.assert_error("/rest/tx/%s" % self.spend.txid_hex, 404,
                                    "output format not found (available: .bin, .hex, .json)\r\n")
            r = yield self.get("/rest/tx/%s.bin" % self.spend.txid_hex)
            self.assertEqual(r.status, 200)
        yield self.assert_error("/rest/tx/%s.json" % ("11" * 32), 404, "11" * 32 + " not found\r\n")


class UnindexedTxTests(IndexedTxTests):
    """Without -txindex: found through an unspent output, kept while the tip stays."""

    @inlineCallbacks
    def setUp(self):
        yield RESTTestCase.setUp(self)

    def synced(self):
        return None

    @inlineCallbacks
    def test_kept_while_the_tip_stays_then_not_found_once_spent(self):
        txid_hex = self.spend.txid_hex
        r = yield self.get("/rest/tx/%s.hex" % txid_hex)
        self.assertEqual(r.body, self.spend.serialize().hex().encode() + b"\n")
        first = yield self.get("/rest/tx/%s.json" % txid_hex)
        lookups = self.count_lookups()
        for fmt in ("json", "hex", "bin"):
            r = yield self.get("/rest/tx/%s.%s" % (txid_hex, fmt))
            self.assertEqual(r.status, 200)
        self.assertEqual((lookups, r.body), ([], self.spend.serialize()))
        yield self.assert_as_slow_path(txid_hex)
        # A block spending its only output: Core no longer finds it without -txindex.
        (out,) = self.builder.outputs_of(self.spend)
        yield self.mine(1, txs=[self.builder.spend(out)])
        yield self.assert_error("/rest/tx/%s.json" % txid_hex, 404, txid_hex + " not found\r\n")
        yield self.assert_error("/rest/tx/%s.bin" % txid_hex, 404, txid_hex + " not found\r\n")
        yield self.assert_as_slow_path(txid_hex)
        self.assertEqual(first.json()["confirmations"], 1)


class AccessRawTxTests(RESTTestCase):
    """ChainAccess.locate_transaction: the stored bytes, through the index or the UTXO set."""

    @inlineCallbacks
    def test_located_bytes_are_the_serialized_transaction(self):
        access: ChainAccess = self.access
        for tx in (self.spend, self.spend_block.txs[0]):
            place = yield access.locate_transaction(tx.txid)
            self.assertEqual((place.entry, place.raw, place.indexed),
                             (self.tip, tx.serialize(), False))
            found = yield access.get_transaction(tx.txid)
            self.assertEqual((found[0].serialize(), found[1]), (tx.serialize(), self.tip))
        self.assertIsNone((yield access.locate_transaction(b"\x11" * 32)))
