"""Headers-first sync, block and transaction relay between real coind processes, and a
node in this process against hostile raw peers.

Every node has its own datadir and free ports (tests/nodeharness.py); nodes talk over
loopback.  Waiting is polling RPC state against a deadline, never a bare sleep.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from coin.consensus.errors import REJECT_INVALID
from coin.chainparams import REGTEST
from coin.consensus.subsidy import block_subsidy
from coin.mining.assembler import create_coinbase, solve
from coin.p2p.messages import (
    MSG_BLOCK,
    MSG_TX,
    BlockMessage,
    FeeFilterMessage,
    GetBlocksMessage,
    GetDataMessage,
    GetHeadersMessage,
    HeadersMessage,
    InvItem,
    InvMessage,
    MempoolMessage,
    PingMessage,
    SendHeadersMessage,
    TxMessage,
)
from coin.primitives.block import Block, BlockHeader
from coin.primitives.merkle import merkle_root
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from tests.p2pclient import RawPeer
from tests.functional.test_p2p_base import (
    InProcessP2PTestCase,
    Node,
    P2PTestCase,
    debug_log,
    handshaked,
    wait_until,
)

#: An anyone-can-spend-looking output script for hand-made transactions (OP_TRUE).
OP_TRUE = b"\x51"


def best(node: Node) -> str:
    return node.rpc("getbestblockhash")


def wait_synced(nodes: Sequence[Node], timeout: float = 60.0) -> str:
    """Until every node has the same tip; returns it."""
    def same() -> Optional[str]:
        tips = {best(n) for n in nodes}
        return tips.pop() if len(tips) == 1 else None

    return wait_until(same, "the nodes to agree on the tip", timeout)


def wait_in_mempools(nodes: Sequence[Node], txid: str, timeout: float = 30.0) -> None:
    wait_until(lambda: all(txid in n.rpc("getrawmempool") for n in nodes),
               "transaction %s in every mempool" % txid, timeout)


def rev(hex_hash: str) -> bytes:
    """An RPC hash (display order) in internal byte order."""
    return bytes.fromhex(hex_hash)[::-1]


def tip_header(node: Node) -> Dict[str, Any]:
    return node.rpc("getblockheader", best(node))


def make_block(prev_hash: bytes, height: int, block_time: int, coinbase_value: Optional[int] = None,
               txs: Sequence[Transaction] = (), bits: int = REGTEST.pow_limit_bits) -> Block:
    """A solved block on ``prev_hash`` (the coinbase pays the subsidy unless told)."""
    if coinbase_value is None:
        coinbase_value = block_subsidy(height, REGTEST)
    coinbase = create_coinbase(height, OP_TRUE, coinbase_value, extra_nonce=height)
    all_txs = [coinbase] + list(txs)
    root, _ = merkle_root([tx.txid for tx in all_txs])
    header = BlockHeader(0x20000000, prev_hash, root, block_time, bits, 0)
    return solve(Block(header, all_txs), REGTEST)


def header_chain(prev_hash: bytes, count: int, start_time: int) -> List[BlockHeader]:
    """``count`` headers with valid proof of work on ``prev_hash`` (no blocks behind them)."""
    headers = []
    for i in range(count):
        block = make_block(prev_hash, 1 + i, start_time + i)
        headers.append(block.header)
        prev_hash = block.hash
    return headers


class ThreeNodeSyncTests(P2PTestCase):
    def test_one_mines_others_sync_then_a_late_node_catches_up(self) -> None:
        a = self.start()
        b = self.start("-connect=" + self.target(a), "-listen=1")
        c = self.start("-addnode=" + self.target(a), "-addnode=" + self.target(b))
        wait_until(lambda: len(handshaked(a)) == 2 and len(handshaked(c)) == 2,
                   "the connections")
        self.mine(a, 120)
        tip = wait_synced([a, b, c])
        self.assertEqual([n.rpc("getblockcount") for n in (a, b, c)], [120, 120, 120])
        # New blocks are announced and fetched at once.
        for _ in range(3):
            self.mine(a, 1)
            wait_synced([a, b, c])
        self.assertNotEqual(best(a), tip)
        # A node started later catches up from scratch through headers-first sync, from
        # a node that did not mine (b).
        d = self.start("-connect=" + self.target(b))
        wait_synced([a, d])
        self.assertEqual(d.rpc("getblockcount"), 123)
        info = d.rpc("getblockchaininfo")
        self.assertEqual((info["blocks"], info["headers"], str(info["verificationprogress"])),
                         (123, 123, "1"))
        wait_until(lambda: d.rpc("getpeerinfo")[0]["synced_blocks"] == 123,
                   "the peer's synced_blocks")
        (peer,) = d.rpc("getpeerinfo")
        self.assertEqual((peer["synced_headers"], peer["synced_blocks"], peer["inflight"],
                          peer["banscore"]), (123, 123, [], 0))
        self.assertGreater(peer["bytesrecv_per_msg"]["headers"], 123 * 81)
        self.assertGreater(peer["bytesrecv_per_msg"]["block"], 123 * 80)
        self.assertGreater(peer["bytessent_per_msg"]["getdata"], 0)
        (only,) = d.rpc("getchaintips")
        self.assertEqual((only["height"], only["hash"], only["branchlen"], only["status"]),
                         (123, best(a), 0, "active"))
        # The late node relays too: a block mined by it reaches everyone.
        self.mine(d, 1)
        wait_synced([a, b, c, d])
        self.assertEqual(a.rpc("getblockcount"), 124)


class ForkAndRelayTests(P2PTestCase):
    def test_two_sided_fork_resolves_to_most_work_chain(self) -> None:
        a = self.start()
        b = self.start("-listen=1")
        c = self.start("-connect=" + self.target(b), "-listen=1")
        # a joins b through addnode (so it reconnects when its network comes back).
        self.assertIsNone(a.rpc("addnode", self.target(b), "add"))
        wait_until(lambda: len(handshaked(b)) == 2, "the connections")
        address = a.rpc("getnewaddress")
        self.mine(a, 101, address)
        wait_synced([a, b, c])
        fork_point = a.rpc("getblockcount")

        # Split: a alone on one side, b and c on the other.
        self.assertIs(a.rpc("setnetworkactive", False), False)
        wait_until(lambda: a.rpc("getconnectioncount") == 0 and len(handshaked(b)) == 1,
                   "the split")
        txid = a.rpc("sendtoaddress", b.rpc("getnewaddress"), 1)
        self.assertEqual(a.rpc("getrawmempool"), [txid])
        losing = self.mine(a, 2, address)
        self.assertEqual(a.rpc("getrawmempool"), [])
        winning = self.mine(b, 4)
        wait_synced([b, c])
        self.assertEqual(b.rpc("getrawmempool"), [])

        # Reconnect: the longer side wins everywhere, a reorganises.
        self.assertIs(a.rpc("setnetworkactive", True), True)
        tip = wait_synced([a, b, c])
        self.assertEqual(tip, winning[-1])
        self.assertEqual(a.rpc("getblockcount"), fork_point + 4)
        tips = {t["hash"]: t for t in a.rpc("getchaintips")}
        self.assertEqual((tips[losing[-1]]["status"], tips[losing[-1]]["branchlen"]),
                         ("valid-fork", 2))
        self.assertEqual(tips[winning[-1]]["status"], "active")
        # b learnt a's losing branch by headers only.
        wait_until(lambda: losing[-1] in {t["hash"] for t in b.rpc("getchaintips")},
                   "b to know the losing branch's headers")
        tips_b = {t["hash"]: t for t in b.rpc("getchaintips")}
        self.assertIn(tips_b[losing[-1]]["status"], ("headers-only", "valid-headers"))
        # The losing side's transaction is back in a's pool and relayed to the others.
        wait_in_mempools([a, b, c], txid)
        # ... and mined by another node, which every node then agrees on.
        block = self.mine(c, 1)[0]
        wait_synced([a, b, c])
        self.assertEqual(best(a), block)
        for node in (a, b, c):
            wait_until(lambda: node.rpc("getrawmempool") == [], "the pools to empty")
        self.assertEqual(a.rpc("gettransaction", txid)["confirmations"], 1)
        self.assertEqual(a.rpc("getrawtransaction", txid, True)["blockhash"], block)

    def test_transaction_reaches_every_mempool_and_is_mined_by_another_node(self) -> None:
        a = self.start()
        b = self.start("-connect=" + self.target(a), "-listen=1")
        c = self.start("-connect=" + self.target(b))
        wait_until(lambda: len(handshaked(b)) == 2, "the connections")
        address = a.rpc("getnewaddress")
        self.mine(a, 101, address)
        wait_synced([a, b, c])
        receiver = c.rpc("getnewaddress")
        txid = a.rpc("sendtoaddress", receiver, 2)
        # c is not connected to a: the transaction goes a -> b -> c.
        wait_in_mempools([a, b, c], txid)
        # A child spending the first one's unconfirmed change relays too (parent first).
        child = a.rpc("sendtoaddress", receiver, 1)
        self.assertIn(txid, [i["txid"] for i in a.rpc("getrawtransaction", child, True)["vin"]])
        wait_in_mempools([a, b, c], child)
        self.assertEqual(sorted(c.rpc("getrawmempool")), sorted([txid, child]))
        # mempool: the pool as inv, parent first, within the asker's fee filter.
        asker = self.raw(b)
        asker.handshake(start_height=101)
        asker.send(MempoolMessage())
        self.assertEqual(asker.wait_for("inv").items,
                         (InvItem(MSG_TX, rev(txid)), InvItem(MSG_TX, rev(child))))
        picky = self.raw(b)
        picky.handshake(start_height=101)
        picky.send(FeeFilterMessage(10 ** 8))
        picky.send(MempoolMessage())
        picky.send(PingMessage(5))
        picky.wait_for("pong")
        self.assertNotIn("inv", [m.command for m in picky.received])
        # Mined by a node that did not create it.
        block = self.mine(b, 1)[0]
        wait_synced([a, b, c])
        for node in (a, b, c):
            wait_until(lambda: node.rpc("getrawmempool") == [], "the pools to empty")
        self.assertEqual(c.rpc("gettransaction", txid)["blockhash"], block)
        self.assertEqual(c.rpc("gettransaction", child)["blockhash"], block)
        self.assertEqual(c.rpc("getreceivedbyaddress", receiver), 3)


class RestartTests(P2PTestCase):
    def test_node_restarted_mid_sync_resumes(self) -> None:
        source = self.start()
        total = 2300
        for _ in range(total // 500):
            self.mine(source, 500)
        self.mine(source, total % 500)
        datadir = os.path.abspath(self.mktemp())
        target = "-connect=" + self.target(source)
        node = self.start(target, datadir=datadir)

        def mid_sync() -> Optional[Dict[str, Any]]:
            # Headers first: every header is known while the blocks are still coming.
            info = node.rpc("getblockchaininfo")
            return info if 300 <= info["blocks"] < total - 300 and info["headers"] == total \
                else None

        info = wait_until(mid_sync, "the sync to be under way", 120)
        self.assertLess(float(info["verificationprogress"]), 1.0)
        self.assertEqual(node.stop(), 0)
        log_size = len(debug_log(node))
        node = self.start(target, datadir=datadir)
        restarted = debug_log(node)[log_size:]
        loaded = int(restarted.split("Loaded best chain: height ")[1].split()[0])
        self.assertGreaterEqual(loaded, info["blocks"])
        self.assertLess(loaded, total)
        wait_synced([source, node], 120)
        self.assertEqual(node.rpc("getblockcount"), total)
        self.assertEqual(node.rpc("getblockchaininfo")["headers"], total)


class ProgressLogTests(P2PTestCase):
    """The UpdateTip progress lines a user watching debug.log sees during IBD and -reindex
    (``-progressinterval=0``: a line per block, so a short chain shows them)."""

    LINE = re.compile(r"UpdateTip: new best=[0-9a-f]{64} height=(\d+) version=0x[0-9a-f]{8} "
                      r"log2_work=[\d.]+ tx=(\d+) date='[\dT:Z-]+' progress=([\d.]+) "
                      r"cache=[\d.]+MiB\(\d+txo\) blocks/s=[\d.]+ tx/s=[\d.]+ eta=\S+$")

    def lines(self, text: str) -> List[Tuple[int, int, float]]:
        return [(int(m.group(1)), int(m.group(2)), float(m.group(3)))
                for m in map(self.LINE.search, text.splitlines()) if m]

    def test_lines_during_a_sync_and_a_reindex(self) -> None:
        source = self.start()
        self.mine(source, 200)
        datadir = os.path.abspath(self.mktemp())
        node = self.start("-connect=" + self.target(source), "-progressinterval=0",
                          datadir=datadir)
        wait_synced([source, node])
        # In initial download while the best header is more than 144 blocks ahead.
        synced = self.lines(debug_log(node))
        self.assertTrue(synced)
        self.assertEqual([h for h, _, _ in synced], list(range(1, 200 - 144)))
        self.assertTrue(all(tx == h + 1 and 0 < p < 1 for h, tx, p in synced), synced)
        self.assertEqual(node.stop(), 0)
        log_size = len(debug_log(node))
        node = self.start("-connect=0", "-reindex", "-progressinterval=0", datadir=datadir)
        reindexed = self.lines(debug_log(node)[log_size:])
        self.assertEqual([h for h, _, _ in reindexed][-1], 200)
        self.assertEqual([h for h, _, _ in reindexed], list(range(1, 201)))
        self.assertEqual(node.rpc("getblockcount"), 200)


class HostilePeerTests(InProcessP2PTestCase):
    def node_with_chain(self) -> Node:
        node = self.start()
        self.mine(node, 10)
        return node

    def banned(self, node: Node, peer: RawPeer) -> None:
        self.assertTrue(peer.wait_closed())
        wait_until(lambda: node.rpc("listbanned"), "the ban")
        (entry,) = node.rpc("listbanned")
        self.assertEqual(entry["ban_reason"], "node misbehaving")
        self.assertIsNone(node.rpc("clearbanned"))
        wait_until(lambda: node.rpc("getconnectioncount") == 0, "the banned peer to go")

    def score(self, node: Node, peer: RawPeer, value: int) -> None:
        wait_until(lambda: (self.peer_of(node, peer) or {}).get("banscore") == value,
                   "banscore %d" % value)

    def test_invalid_headers(self) -> None:
        node = self.node_with_chain()
        tip = tip_header(node)
        peer = self.raw(node)
        peer.handshake(start_height=10)
        # The node (out of initial download) asks every peer for headers, from its tip's
        # parent so that the answer tells it what the peer has.
        initial = peer.wait_for("getheaders")
        self.assertEqual(initial.locator[0], rev(tip["previousblockhash"]))
        now = int(time.time())
        good = header_chain(rev(tip["hash"]), 3, tip["time"] + 1)
        # Not continuous: 20.
        peer.send(HeadersMessage([good[0], good[2]]))
        self.score(node, peer, 20)
        # Headers we cannot connect, sent as announcements: a getheaders each, 20 per 10.
        stray = header_chain(b"\x11" * 32, 1, now)
        for _ in range(10):
            peer.send(HeadersMessage(stray))
        self.score(node, peer, 40)
        request = peer.wait_for("getheaders")
        self.assertEqual(request.locator[0], rev(tip["hash"]))
        # A header with the wrong difficulty: 100, banned.
        hard = make_block(rev(tip["hash"]), 11, tip["time"] + 1, bits=0x2000FFFF)
        peer.send(HeadersMessage([hard.header]))
        self.banned(node, peer)
        self.assertEqual(node.rpc("getblockcount"), 10)
        self.assertEqual(node.rpc("getblockchaininfo")["headers"], 10)
        # Valid headers from an honest peer are accepted, and their blocks requested.
        honest = self.raw(node)
        honest.handshake(start_height=13)
        honest.send(HeadersMessage(good))
        getdata = honest.wait_for("getdata")
        self.assertEqual([i.hash for i in getdata.items], [h.hash for h in good])
        self.assertEqual(node.rpc("getblockchaininfo")["headers"], 13)

    def test_invalid_and_unrequested_blocks(self) -> None:
        node = self.node_with_chain()
        tip = tip_header(node)
        peer = self.raw(node)
        peer.handshake(start_height=10)
        # Unrequested blocks that would not become the tip: 10 each.
        side = make_block(REGTEST.genesis.hash, 1, REGTEST.genesis.header.time + 1)
        for expected in (10, 20):
            peer.send(BlockMessage(side))
            self.score(node, peer, expected)
        # A block extending the tip is processed even unrequested; this one pays too much.
        greedy = make_block(rev(tip["hash"]), 11, tip["time"] + 1,
                            coinbase_value=block_subsidy(11, REGTEST) + 1)
        peer.send(BlockMessage(greedy))
        self.banned(node, peer)
        self.assertEqual(node.rpc("getblockcount"), 10)
        # A valid unrequested block extending the tip becomes the tip.
        peer = self.raw(node)
        peer.handshake(start_height=10)
        fine = make_block(rev(tip["hash"]), 11, tip["time"] + 1)
        peer.send(BlockMessage(fine))
        wait_until(lambda: node.rpc("getblockcount") == 11, "the pushed block")
        self.assertEqual(best(node), fine.hash[::-1].hex())
        self.assertEqual(self.peer_of(node, peer)["banscore"], 0)
        # An invalid block the node asked for: reject, then the ban.
        now = tip["time"] + 2
        bad = make_block(fine.hash, 12, now, txs=[Transaction(
            [TxIn(OutPoint(b"\x22" * 32, 0), b"")], [TxOut(1, OP_TRUE)])])
        peer.send(HeadersMessage([bad.header]))
        getdata = peer.wait_for("getdata")
        self.assertEqual(getdata.items, (InvItem(MSG_BLOCK, bad.hash),))
        peer.send(BlockMessage(bad))
        self.banned(node, peer)
        self.assertEqual(node.rpc("getblockcount"), 11)
        tips = {t["hash"]: t["status"] for t in node.rpc("getchaintips")}
        self.assertEqual(tips[bad.hash[::-1].hex()], "invalid")

    def test_invalid_and_unrequested_transactions(self) -> None:
        node = self.node_with_chain()
        peer = self.raw(node)
        peer.handshake(start_height=10)
        # Announced, requested, invalid but harmless to the peer's score (dos 10).
        empty = Transaction([], [TxOut(1, OP_TRUE)])
        peer.send(InvMessage([InvItem(MSG_TX, empty.txid)]))
        getdata = peer.wait_for("getdata")
        self.assertEqual(getdata.items, (InvItem(MSG_TX, empty.txid),))
        peer.send(TxMessage(empty))
        reject = peer.wait_for("reject")
        self.assertEqual((reject.message, reject.code, reject.reason, reject.data),
                         ("tx", REJECT_INVALID, "bad-txns-vin-empty", empty.txid))
        self.score(node, peer, 10)
        # Announced again: recently rejected, not asked for again.
        peer.send(InvMessage([InvItem(MSG_TX, empty.txid)]))
        peer.send(PingMessage(77))
        peer.wait_for("pong")
        self.assertNotIn("getdata", [m.command for m in peer.received])
        # mempool: nothing to announce (the node sends no empty inv).
        peer.send(MempoolMessage())
        # An orphan: kept, and its parent asked for.
        parent = b"\x33" * 32
        orphan = Transaction([TxIn(OutPoint(parent, 0), b"")], [TxOut(1000, OP_TRUE)])
        peer.send(InvMessage([InvItem(MSG_TX, orphan.txid)]))
        peer.wait_for("getdata")
        peer.send(TxMessage(orphan))
        getdata = peer.wait_for("getdata")
        self.assertEqual(getdata.items, (InvItem(MSG_TX, parent),))
        peer.send(GetDataMessage([InvItem(MSG_TX, orphan.txid)]))
        notfound = peer.wait_for("notfound")
        self.assertEqual(notfound.items, (InvItem(MSG_TX, orphan.txid),))
        self.assertEqual(self.peer_of(node, peer)["banscore"], 10)
        # A flood of unrequested transactions: 10 are tolerated, then 10 each.
        for i in range(19):
            flood = Transaction([TxIn(OutPoint(bytes([i + 1]) * 32, 0), b"")],
                                [TxOut(1000, OP_TRUE)])
            peer.send(TxMessage(flood))
        self.banned(node, peer)
        # An invalid transaction with dos 100 bans at once.
        peer = self.raw(node)
        peer.handshake(start_height=10)
        dup = OutPoint(b"\x44" * 32, 0)
        twice = Transaction([TxIn(dup, b""), TxIn(dup, b"")], [TxOut(1, OP_TRUE)])
        peer.send(InvMessage([InvItem(MSG_TX, twice.txid)]))
        peer.wait_for("getdata")
        peer.send(TxMessage(twice))
        self.banned(node, peer)
        # The node is unharmed: it still serves an honest node that syncs from it (a
        # process: one node at most runs in the test's process).
        self.assertEqual(node.rpc("getrawmempool"), [])
        other = self.start_process("-connect=" + self.target(node))
        wait_synced([node, other])
        self.assertEqual(other.rpc("getblockcount"), 10)

    def test_serving_headers_blocks_and_getblocks(self) -> None:
        node = self.node_with_chain()
        hashes = [rev(node.rpc("getblockhash", h)) for h in range(11)]
        peer = self.raw(node)
        peer.handshake(start_height=0)
        peer.send(GetHeadersMessage([hashes[3], hashes[0]]))
        headers = peer.wait_for("headers").headers
        self.assertEqual([h.hash for h in headers], hashes[4:])
        peer.send(GetHeadersMessage([hashes[0]], hash_stop=hashes[5]))
        self.assertEqual([h.hash for h in peer.wait_for("headers").headers], hashes[1:6])
        peer.send(GetHeadersMessage([b"\x55" * 32]))  # unknown locator: from genesis
        self.assertEqual(len(peer.wait_for("headers").headers), 10)
        peer.send(GetBlocksMessage([hashes[6]]))
        self.assertEqual([i.hash for i in peer.wait_for("inv").items], hashes[7:])
        peer.send(GetDataMessage([InvItem(MSG_BLOCK, hashes[2]), InvItem(MSG_BLOCK, b"\x66" * 32),
                                  InvItem(MSG_BLOCK, hashes[9])]))
        first = peer.wait_for("block").block
        second = peer.wait_for("block").block
        self.assertEqual((first.hash, second.hash), (hashes[2], hashes[9]))
        self.assertEqual(first.serialize().hex(), node.rpc("getblock", hashes[2][::-1].hex(), 0))
        self.assertEqual(peer.wait_for("notfound").items, (InvItem(MSG_BLOCK, b"\x66" * 32),))
        # New blocks are announced by headers to a peer that sent sendheaders...
        peer.send(SendHeadersMessage())
        peer.send(GetHeadersMessage([hashes[10]]))  # also tells the node what we have
        self.assertEqual(peer.wait_for("headers").headers, ())
        mined = self.mine(node, 1)[0]
        announced = peer.wait_for("headers").headers
        self.assertEqual([h.hash for h in announced], [rev(mined)])
        # ... and by inv to one that did not.
        plain = self.raw(node)
        plain.handshake(start_height=11)
        mined = self.mine(node, 1)[0]
        self.assertEqual(plain.wait_for("inv").items, (InvItem(MSG_BLOCK, rev(mined)),))
        self.assertEqual(node.rpc("getblockcount"), 12)
        self.assertEqual([p["banscore"] for p in node.rpc("getpeerinfo")], [0, 0])
