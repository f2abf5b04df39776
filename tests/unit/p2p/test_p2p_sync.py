"""Block sync and transaction relay without sockets: StringTransport peers, a fake clock,
a real chain state in a temporary directory, and a scripted mempool."""

from __future__ import annotations

import random
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from twisted.internet.address import IPv4Address
from twisted.internet.defer import CancelledError, Deferred, fail, maybeDeferred, succeed
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import REGTEST
from coin.consensus.errors import REJECT_MALFORMED, ValidationError
from coin.mempool.accept import MissingInputs
from coin.p2p.connman import P2PService, P2PSettings
from coin.p2p.messages import (
    MAX_HEADERS_RESULTS,
    MSG_BLOCK,
    MSG_TX,
    NODE_NETWORK,
    PROTOCOL_VERSION,
    BlockMessage,
    FeeFilterMessage,
    GetBlocksMessage,
    GetDataMessage,
    GetHeadersMessage,
    HeadersMessage,
    InvItem,
    InvMessage,
    MempoolMessage,
    MessageDecoder,
    NotFoundMessage,
    RawBlockMessage,
    SendHeadersMessage,
    TxMessage,
    VerackMessage,
    VersionMessage,
    encode_message,
)
from coin.p2p.netaddr import NetAddress
from coin.p2p.peer import MALFORMED_BAN_SCORE, PeerProtocol
from coin.p2p.relay import OrphanPool, TxRelay
from coin.p2p import sync as sync_module
from coin.p2p.sync import BlockSync, header_of, process_blocks
from coin.primitives.block import Block, BlockHeader
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.testing.chainbuilder import ChainBuilder, open_chain

MAGIC = REGTEST.message_start
NOW = int(time.time())


class FakeChain:
    """ChainAccess's interface, run synchronously on a real ChainState."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.submitted: List[bytes] = []
        #: Names of the functions run "in the pool" (here at once).
        self.pooled: List[str] = []

    def submit_headers(self, headers: List[BlockHeader]) -> Deferred:
        return maybeDeferred(self.state.accept_headers, headers)

    def submit_block(self, block: Block) -> Deferred:
        self.submitted.append(block.hash)
        return maybeDeferred(self.state.process_block, block)

    def read_block(self, entry: Any) -> Deferred:
        return maybeDeferred(self.state.read_block, entry)

    def call(self, f: Any, *args: Any) -> Deferred:
        return maybeDeferred(f, self.state, *args)

    def in_thread(self, f: Any, *args: Any) -> Deferred:
        self.pooled.append(f.__name__)
        return maybeDeferred(f, *args)


class FakeEntry:
    def __init__(self, tx: Transaction, fee: int) -> None:
        self.tx = tx
        self.txid = tx.txid
        self.fee = fee
        self.size = tx.size


class FakePool:
    def __init__(self) -> None:
        self.entries: Dict[bytes, FakeEntry] = {}

    def __contains__(self, txid: object) -> bool:
        return txid in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, txid: bytes) -> Optional[FakeEntry]:
        return self.entries.get(txid)

    def sorted_entries(self) -> List[FakeEntry]:
        return list(self.entries.values())


class FakeMempool:
    """Accepts a transaction when its parents are in the pool (or ``confirmed``)."""

    def __init__(self) -> None:
        self.pool = FakePool()
        self.listeners: List[Any] = []
        self.invalid: Dict[bytes, ValidationError] = {}
        self.confirmed: Set[bytes] = set()
        self.fee = 10_000
        self.accepted: List[bytes] = []

    def add_listener(self, listener: Any) -> None:
        self.listeners.append(listener)

    def accept(self, tx: Transaction) -> Deferred:
        if tx.txid in self.pool:
            return fail(ValidationError("txn-already-in-mempool"))
        if any(i.prevout.txid not in self.pool and i.prevout.txid not in self.confirmed
               for i in tx.vin):
            return fail(MissingInputs())
        if tx.txid in self.invalid:
            return fail(self.invalid[tx.txid])
        return succeed(self.add(tx))

    def add(self, tx: Transaction) -> FakeEntry:
        entry = self.pool.entries[tx.txid] = FakeEntry(tx, self.fee)
        self.accepted.append(tx.txid)
        for listener in self.listeners:
            listener(tx)
        return entry


class Node:
    """A P2P service with block sync and relay on a fake reactor and a real chain."""

    def __init__(self, datadir: str, blocks: int = 0) -> None:
        self.reactor = MemoryReactorClock()
        self.reactor.advance(NOW)
        self.reactor.callFromThread = lambda f, *a, **kw: f(*a, **kw)
        self.state = open_chain(datadir)
        self.chain = FakeChain(self.state)
        self.builder = ChainBuilder(self.state, start_time=NOW - 1000)
        if blocks:
            self.builder.mine(blocks)
        self.p2p = P2PService(REGTEST, P2PSettings(port=31932, user_agent="/Coin:9/"),
                              self.reactor, now=self.reactor.seconds,
                              start_height=lambda: self.state.height,
                              fee_filter_rate=lambda: 1000)
        self.p2p.startService()
        self.p2p.ready = True
        self.sync = BlockSync(self.p2p, self.chain, self.state.subscribe, now=time.time)
        self.mempool = FakeMempool()
        self.relay = TxRelay(self.p2p, self.mempool, self.sync, self.state.subscribe)
        self._port = 6000

    def connect(self, start_height: int = 0, relay: bool = True, services: int = NODE_NETWORK,
                ip: str = "8.8.8.8") -> Tuple[PeerProtocol, StringTransport]:
        self._port += 1
        peer = PeerProtocol(self.p2p, True)
        transport = StringTransport(hostAddress=IPv4Address("TCP", "10.0.0.1", 31932),
                                    peerAddress=IPv4Address("TCP", ip, self._port),
                                    lenient=True)
        peer.makeConnection(transport)
        feed(peer, VersionMessage(version=PROTOCOL_VERSION, services=services,
                                  timestamp=NOW, addr_recv=NetAddress(1, "10.0.0.1", 31932),
                                  addr_from=NetAddress(1, "0.0.0.0", 0), nonce=self._port,
                                  user_agent="/t/", start_height=start_height, relay=relay),
             VerackMessage())
        return peer, transport

    def advance(self, seconds: float) -> None:
        self.reactor.advance(seconds)

    def flush(self) -> None:
        """Run what is due now (callLater(0) work)."""
        self.reactor.advance(0)


def feed(peer: PeerProtocol, *messages: Any) -> None:
    peer.dataReceived(b"".join(encode_message(MAGIC, m) for m in messages))


def sent(transport: StringTransport, command: Optional[str] = None) -> List[Any]:
    messages = MessageDecoder(MAGIC).feed(transport.value())
    transport.clear()
    if command is not None:
        messages = [m for m in messages if m.command == command]
    return messages


def chain_blocks(source: Node) -> List[Block]:
    state = source.state
    return [state.read_block(state.at_height(h)) for h in range(1, state.height + 1)]


def headers_only(prev: BlockHeader, count: int) -> List[BlockHeader]:
    """Valid regtest headers (proof of work ground) with no blocks behind them."""
    out: List[BlockHeader] = []
    for i in range(count):
        nonce = 0
        while True:
            header = BlockHeader(0x20000000, prev.hash, bytes(32), prev.time + 1, 0x207FFFFF,
                                 nonce)
            if int.from_bytes(header.hash, "little") <= (0x7FFFFF << (8 * 29)):
                break
            nonce += 1
        out.append(header)
        prev = header
    return out


class SyncTestCase(SynchronousTestCase):
    def make(self, blocks: int = 0) -> Node:
        node = Node(self.mktemp(), blocks)
        self.addCleanup(node.state.close)
        return node


class HeaderSyncTests(SyncTestCase):
    def setUp(self) -> None:
        self.source = self.make(30)
        self.node = self.make()
        self.blocks = chain_blocks(self.source)

    def test_handshake_getheaders_then_blocks_in_order(self) -> None:
        peer, transport = self.node.connect(start_height=30)
        (request,) = sent(transport, "getheaders")
        # From the best header's parent (genesis has none: genesis itself).
        self.assertEqual((request.locator, request.hash_stop),
                         ((REGTEST.genesis.hash,), bytes(32)))
        self.assertTrue(self.node.sync.peer_state(peer).sync_started)
        feed(peer, HeadersMessage([b.header for b in self.blocks]))
        self.assertEqual(peer.synced_headers, 30)
        self.assertEqual(self.node.state.best_header.height, 30)
        (getdata,) = sent(transport, "getdata")
        self.assertEqual([i.hash for i in getdata.items], [b.hash for b in self.blocks[:16]])
        self.assertEqual(sorted(peer.inflight.values()), list(range(1, 17)))
        # Out of order: stored, connected once the gap fills; the window moves on.
        feed(peer, BlockMessage(self.blocks[1]))
        self.assertEqual(self.node.state.height, 0)
        feed(peer, BlockMessage(self.blocks[0]))
        self.assertEqual(self.node.state.height, 2)
        self.node.flush()
        requested = [i.hash for m in sent(transport, "getdata") for i in m.items]
        self.assertEqual(requested, [b.hash for b in self.blocks[16:18]])
        for block in self.blocks[2:]:
            feed(peer, BlockMessage(block))
            self.node.flush()
        self.assertEqual(self.node.state.height, 30)
        self.assertEqual((peer.inflight, self.node.sync.in_flight, peer.ban_score), ({}, {}, 0))
        self.node.sync._request_blocks(peer)
        self.assertEqual(peer.synced_blocks, 30)
        # It gave us new blocks: protected from inbound eviction for that.
        self.assertEqual(peer.last_block_time, self.node.reactor.seconds())

    def test_blocks_are_parsed_by_the_validation_call(self) -> None:
        peer, transport = self.node.connect(start_height=30)
        feed(peer, HeadersMessage([b.header for b in self.blocks]))
        calls: List[List[Any]] = []

        def call(f: Any, blocks: List[Any]) -> Deferred:
            calls.append(blocks)
            return maybeDeferred(f, self.node.state, blocks)

        self.node.chain.call = call
        feed(peer, BlockMessage(self.blocks[0]))
        # The peer decodes only the framing and the header; the transactions are parsed
        # once, by the validation thread's call, with no trip through the pool.
        self.assertEqual(self.node.chain.pooled, [])
        handed = calls.pop()
        self.assertEqual([type(b) for b in handed], [RawBlockMessage])
        self.assertEqual(self.node.state.height, 1)
        # A payload that does not parse is the peer's malformed message, as at decode time.
        feed(peer, RawBlockMessage(self.blocks[1].serialize()[:-1]))
        (reject,) = sent(transport, "reject")
        self.assertEqual((reject.message, reject.code), ("block", REJECT_MALFORMED))
        self.assertEqual(peer.ban_score, MALFORMED_BAN_SCORE)
        self.assertEqual(self.node.state.height, 1)
        # So is one without a whole header (found as it is decoded).
        feed(peer, RawBlockMessage(self.blocks[1].serialize()[:79]))
        (reject,) = sent(transport, "reject")
        self.assertEqual((reject.message, reject.code), ("block", REJECT_MALFORMED))
        self.assertEqual(peer.ban_score, 2 * MALFORMED_BAN_SCORE)
        # The block, whole, is still wanted.
        feed(peer, BlockMessage(self.blocks[1]))
        self.assertEqual(self.node.state.height, 2)

    def test_only_one_header_sync_peer_during_initial_download(self) -> None:
        behind, behind_t = self.node.connect(start_height=0)
        self.assertEqual(sent(behind_t, "getheaders"), [])
        ahead, ahead_t = self.node.connect(start_height=30)
        self.assertEqual(len(sent(ahead_t, "getheaders")), 1)
        self.node.advance(1)
        self.assertEqual(sent(behind_t, "getheaders"), [])
        self.assertEqual(self.node.sync.sync_started_count, 1)
        # Once the best header is recent, every peer is asked.
        feed(ahead, HeadersMessage([b.header for b in self.blocks]))
        self.assertEqual(len(sent(behind_t, "getheaders")), 1)
        self.assertEqual(self.node.sync.sync_started_count, 2)

    def test_full_headers_message_asks_for_more(self) -> None:
        headers = headers_only(REGTEST.genesis.header, MAX_HEADERS_RESULTS)
        peer, transport = self.node.connect(start_height=5000)
        sent(transport)
        feed(peer, HeadersMessage(headers))
        (more,) = sent(transport, "getheaders")
        self.assertEqual(more.locator[0], headers[-1].hash)
        self.assertEqual(self.node.state.best_header.height, MAX_HEADERS_RESULTS)

    def test_unconnecting_headers(self) -> None:
        peer, transport = self.node.connect(start_height=30)
        sent(transport)
        stray = headers_only(self.blocks[5].header, 1)
        for i in range(1, 21):
            feed(peer, HeadersMessage(stray))
            (request,) = sent(transport, "getheaders")
            self.assertEqual(request.locator, (REGTEST.genesis.hash,))
            self.assertEqual(peer.ban_score, 20 * (i // 10))
        # Headers that do connect reset the count.
        feed(peer, HeadersMessage([b.header for b in self.blocks[:6]]))
        self.assertEqual(self.node.sync.peer_state(peer).unconnecting_headers, 0)
        self.assertEqual(peer.synced_headers, 6)

    def test_non_continuous_and_invalid_headers_score(self) -> None:
        peer, transport = self.node.connect(start_height=30)
        feed(peer, HeadersMessage([self.blocks[0].header, self.blocks[2].header]))
        self.assertEqual(peer.ban_score, 20)
        self.assertEqual(self.node.state.best_header.height, 0)
        # Eight or more unconnected headers are submitted: prev-blk-not-found, 10.
        feed(peer, HeadersMessage([b.header for b in self.blocks[10:20]]))
        self.assertEqual(peer.ban_score, 30)
        # Wrong difficulty bits: 100, banned.
        genesis = REGTEST.genesis.header
        bad = BlockHeader(0x20000000, genesis.hash, bytes(32), NOW, 0x2000FFFF, 0)
        while int.from_bytes(bad.hash, "little") > (0xFFFF << (8 * 29)):
            bad = bad.with_nonce(bad.nonce + 1)
        feed(peer, HeadersMessage([bad]))
        self.assertGreaterEqual(peer.ban_score, 100)
        self.assertTrue(transport.disconnecting)
        self.assertTrue(self.node.p2p.banman.is_banned("8.8.8.8"))

    def test_headers_sync_timeout_tries_another_peer(self) -> None:
        self.node.sync.headers_sync_timeout_base = 10
        self.node.sync.headers_sync_timeout_per_header = 0
        silent, silent_t = self.node.connect(start_height=30)
        other, other_t = self.node.connect(start_height=30)
        self.assertEqual(len(sent(silent_t, "getheaders")), 1)
        self.assertEqual(sent(other_t, "getheaders"), [])
        for _ in range(12):
            self.node.advance(1)
        self.assertFalse(self.node.sync.peer_state(silent).sync_started)
        self.assertEqual(len(sent(other_t, "getheaders")), 1)
        self.assertFalse(silent_t.disconnecting)


class DownloadTests(SyncTestCase):
    def setUp(self) -> None:
        self.source = self.make(40)
        self.node = self.make()
        self.blocks = chain_blocks(self.source)
        self.headers = HeadersMessage([b.header for b in self.blocks])

    def two_peers(self) -> Tuple[PeerProtocol, StringTransport, PeerProtocol, StringTransport]:
        p, pt = self.node.connect(start_height=40)
        feed(p, self.headers)
        q, qt = self.node.connect(start_height=40, ip="9.9.9.9")
        feed(q, self.headers)
        self.node.flush()
        return p, pt, q, qt

    def slow_worker(self) -> List[Tuple[List[Any], Deferred]]:
        """Validation calls wait for :meth:`finish_calls`: the calls waiting (and every
        block handed to the worker, in ``self.handed``)."""
        calls: List[Tuple[List[Any], Deferred]] = []
        self.handed: List[Any] = []

        def call(f: Any, blocks: List[Any]) -> Deferred:
            self.handed.extend(blocks)
            calls.append((blocks, Deferred()))
            return calls[-1][1]

        self.node.chain.call = call
        return calls

    def finish_calls(self, calls: List[Tuple[List[Any], Deferred]]) -> List[int]:
        """Validate the waiting calls, and those they lead to; their sizes."""
        sizes = []
        while calls:
            blocks, d = calls.pop()
            sizes.append(len(blocks))
            d.callback(process_blocks(self.node.state, blocks))
        return sizes

    def test_parallel_download_from_two_peers(self) -> None:
        p, pt, q, qt = self.two_peers()
        self.assertEqual(sorted(p.inflight.values()), list(range(1, 17)))
        self.assertEqual(sorted(q.inflight.values()), list(range(17, 33)))
        for block in reversed(self.blocks[16:32]):
            feed(q, BlockMessage(block))
        for block in self.blocks[:16]:
            feed(p, BlockMessage(block))
        self.node.flush()
        self.assertEqual(self.node.state.height, 32)
        remaining = sorted(list(p.inflight.values()) + list(q.inflight.values()))
        self.assertEqual(remaining, list(range(33, 41)))

    def test_stalling_peer_is_disconnected(self) -> None:
        self.node.sync.block_download_window = 4
        p, pt, q, qt = self.two_peers()
        self.assertEqual(sorted(p.inflight.values()), [1, 2, 3, 4])
        self.assertEqual(q.inflight, {})
        started = self.node.sync.peer_state(p).stalling_since
        self.assertEqual(started, self.node.reactor.seconds())
        self.node.advance(1)
        feed(p, BlockMessage(self.blocks[0]))  # a block from it ends the stall...
        self.assertEqual(self.node.sync.peer_state(p).stalling_since, 0.0)
        # ... but it holds the moved window's lowest blocks again, q has nothing to do.
        self.node.flush()
        self.assertEqual(sorted(p.inflight.values()), [2, 3, 4, 5])
        self.assertEqual(self.node.sync.peer_state(p).stalling_since, started + 1)
        self.node.advance(1)
        self.node.advance(1)
        self.assertFalse(pt.disconnecting)  # 2 s: not more than the timeout yet
        self.node.advance(1)
        self.assertTrue(pt.disconnecting)
        self.node.flush()
        self.assertEqual(sorted(q.inflight.values()), [2, 3, 4, 5])
        self.assertEqual(p.ban_score, 0)

    def test_block_download_timeout(self) -> None:
        sync = self.node.sync
        self.assertEqual((sync.block_download_timeout_base, sync.block_download_timeout_per_peer),
                         (150.0, 75.0))
        sync.block_download_timeout_base = 5
        sync.block_download_timeout_per_peer = 2
        p, pt, q, qt = self.two_peers()
        # q delivers everything it is asked for; p nothing.
        while q.inflight:
            feed(q, *[BlockMessage(self.blocks[h - 1]) for h in sorted(q.inflight.values())])
            self.node.flush()
        self.assertEqual(sorted(p.inflight.values()), list(range(1, 17)))
        for _ in range(5):
            self.node.advance(1)
        self.assertFalse(pt.disconnecting)
        self.node.advance(1)
        self.assertTrue(pt.disconnecting)
        self.assertFalse(qt.disconnecting)
        self.node.flush()
        self.assertEqual(sorted(q.inflight.values()), list(range(1, 17)))

    def test_notfound_frees_blocks_for_other_peers(self) -> None:
        p, pt, q, qt = self.two_peers()
        sent(pt), sent(qt)
        feed(p, NotFoundMessage([InvItem(MSG_BLOCK, self.blocks[0].hash)]))
        self.node.flush()
        self.assertNotIn(1, p.inflight.values())
        self.assertNotIn(self.blocks[0].hash, [i.hash for m in sent(pt, "getdata")
                                               for i in m.items])
        # q has a full queue; as soon as it has room it gets block 1.
        feed(q, BlockMessage(self.blocks[16]))
        self.node.flush()
        self.assertIn(1, q.inflight.values())

    def test_disconnect_frees_blocks(self) -> None:
        p, pt, q, qt = self.two_peers()
        for block in self.blocks[16:32]:
            feed(q, BlockMessage(block))
            self.node.flush()
        # q was asked for 33..40 as its blocks came in.
        self.assertEqual(sorted(q.inflight.values()), list(range(33, 41)))
        p.connectionLost()
        self.node.flush()
        self.assertEqual(sorted(q.inflight.values()), list(range(1, 9)) + list(range(33, 41)))
        self.assertEqual(set(self.node.sync.in_flight.values()), {q})

    def test_unrequested_blocks(self) -> None:
        node = self.make(5)
        peer, transport = node.connect(start_height=5)
        # A block on an old fork: ignored, scored.
        side = node.builder.build(parent=node.state.at_height(2))
        feed(peer, BlockMessage(side))
        self.assertEqual((peer.ban_score, node.state.lookup(side.hash)), (10, None))
        # One we already have: the same.
        feed(peer, BlockMessage(node.state.read_block(node.state.tip)))
        self.assertEqual(peer.ban_score, 20)
        # A new tip: processed.
        new = node.builder.build()
        feed(peer, BlockMessage(new))
        self.assertEqual((node.state.tip.hash, peer.ban_score), (new.hash, 20))
        # An invalid new tip: scored with its dos.
        bad = node.builder.build(fees=1)
        feed(peer, BlockMessage(bad))
        self.assertGreaterEqual(peer.ban_score, 100)
        self.assertTrue(transport.disconnecting)

    def test_validation_backlog_batches_and_holds_the_peer(self) -> None:
        calls: List[Tuple[List[Block], Deferred]] = []

        def call(f: Any, blocks: List[Block]) -> Deferred:
            calls.append((blocks, Deferred()))
            return calls[-1][1]

        self.node.chain.call = call
        self.node.sync.max_validating_per_peer = 4
        p, pt = self.node.connect(start_height=40)
        feed(p, self.headers)
        self.node.flush()
        feed(p, *[BlockMessage(b) for b in self.blocks[:8]])
        # The first block went to the worker alone; the next four wait, and the fifth
        # block waiting for the worker holds the peer: its later blocks are not read.
        self.assertEqual([len(blocks) for blocks, _ in calls], [1])
        st = self.node.sync.peer_state(p)
        self.assertEqual((st.validating, st.waiting), (6, 5))
        self.assertEqual(len(self.node.sync._to_validate), 5)
        blocks, d = calls.pop()
        d.callback([self.node.state.process_block(b.parse().block) for b in blocks])
        # The waiting blocks go as one batch, and handing them over releases the peer:
        # blocks 7 and 8 are read and queued while that batch is still being validated.
        self.assertEqual([len(blocks) for blocks, _ in calls], [5])
        self.assertEqual([q.block.hash for q in self.node.sync._to_validate],
                         [b.hash for b in self.blocks[6:8]])
        self.assertEqual((st.validating, st.waiting), (7, 2))
        blocks, d = calls.pop()
        d.callback(process_blocks(self.node.state, blocks))
        self.assertEqual(self.node.state.height, 6)
        self.assertEqual([len(blocks) for blocks, _ in calls], [2])
        self.assertEqual((st.validating, st.waiting), (2, 0))

    def test_held_peer_is_read_while_a_full_batch_validates(self) -> None:
        calls = self.slow_worker()
        # The per-peer backlog is one full batch, as by default (256 and 256).
        self.node.sync.max_validating_per_peer = self.node.sync.max_validation_batch = 4
        p, pt = self.node.connect(start_height=40)
        feed(p, self.headers)
        self.node.flush()
        feed(p, *[BlockMessage(b) for b in self.blocks[:8]])
        # Block 1 validates alone, 2..5 wait, 6 is one too many: the peer is held.
        st = self.node.sync.peer_state(p)
        self.assertEqual(([len(blocks) for blocks, _ in calls], st.waiting), ([1], 5))
        blocks, d = calls.pop()
        d.callback(process_blocks(self.node.state, blocks))
        # The worker takes a full batch (2..5) and leaves block 6 behind; the peer has
        # room again and is read at once: 7 and 8 queue while the batch validates.
        self.assertEqual([len(blocks) for blocks, _ in calls], [4])
        self.assertEqual([q.block.hash for q in self.node.sync._to_validate],
                         [b.hash for b in self.blocks[5:8]])
        self.finish_calls(calls)
        # Every block went to the worker once, in order.
        self.assertEqual([b.hash for b in self.handed], [b.hash for b in self.blocks[:8]])
        self.assertEqual((self.node.state.height, st.validating, st.waiting), (8, 0, 0))

    def test_peers_held_while_too_many_bytes_are_queued_or_validating(self) -> None:
        calls = self.slow_worker()

        def queued() -> List[bytes]:
            return [q.block.hash for q in self.node.sync._to_validate]

        self.node.sync.max_validating_bytes = max(b.size for b in self.blocks[:6]) * 2
        p, pt = self.node.connect(start_height=40)
        feed(p, self.headers)
        self.node.flush()
        feed(p, *[BlockMessage(b) for b in self.blocks[:6]])
        # Block 1 validates, 2 waits, 3 makes three blocks' bytes: the peer is held.
        self.assertEqual(queued(), [b.hash for b in self.blocks[1:3]])
        blocks, d = calls.pop()
        d.callback(process_blocks(self.node.state, blocks))
        # The worker takes 2 and 3, nothing is queued: the peer is read again, and its
        # block 4 (three blocks' bytes again, two of them validating) holds it once more.
        self.assertEqual(queued(), [self.blocks[3].hash])
        self.finish_calls(calls)
        self.assertEqual((self.node.state.height, self.node.sync.validating_bytes), (6, 0))

    def test_batches_are_bounded_in_bytes(self) -> None:
        calls = self.slow_worker()
        # Two of these blocks fit in a batch, never a third.
        self.node.sync.max_validation_batch_bytes = self.blocks[9].size * 2 + 2
        p, pt = self.node.connect(start_height=40)
        feed(p, self.headers)
        self.node.flush()
        feed(p, *[BlockMessage(b) for b in self.blocks[:6]])
        self.assertEqual((self.finish_calls(calls), self.node.state.height), ([1, 2, 2, 1], 6))
        # A block larger than the bound still goes, alone.
        self.node.sync.max_validation_batch_bytes = 1
        feed(p, *[BlockMessage(b) for b in self.blocks[6:9]])
        self.assertEqual((self.finish_calls(calls), self.node.state.height), ([1, 1, 1], 9))

    def test_nothing_reaches_the_worker_after_shutdown(self) -> None:
        p, pt = self.node.connect(start_height=40)
        feed(p, self.headers)
        self.node.p2p.stopService()
        queued = self.node.sync._queue(self.blocks[0], self.node.sync.peer_state(p))
        self.node.sync._run_worker()
        self.failureResultOf(queued.deferred, CancelledError)
        self.assertEqual(self.node.state.height, 0)

    def test_batch_results_per_block(self) -> None:
        node = self.make(3)
        tip = node.state.tip
        bad = node.builder.build(fees=1)  # the coinbase claims a fee nobody paid
        side = node.builder.build(parent=node.state.at_height(2))
        results = process_blocks(node.state, [bad, side])
        self.assertIsInstance(results[0], ValidationError)
        self.assertEqual(results[0].reason, "bad-cb-amount")
        self.assertEqual(results[1].hash, side.hash)
        self.assertIs(node.state.tip, tip)


def requested(transport: StringTransport) -> List[bytes]:
    """The block hashes of the getdata messages sent since the last look, in order."""
    return [i.hash for m in sent(transport, "getdata") for i in m.items]


class DownloadCursorTests(SyncTestCase):
    """The download walk resumes at a per-peer cursor: every block is asked for once, in
    height order, and blocks freed below a cursor are asked for again."""

    def setUp(self) -> None:
        self.source = self.make(40)
        self.node = self.make()
        self.blocks = chain_blocks(self.source)
        self.headers = HeadersMessage([b.header for b in self.blocks])

    def deliver(self, peer: PeerProtocol, heights: List[int]) -> None:
        for height in heights:
            feed(peer, BlockMessage(self.blocks[height - 1]))
            self.node.flush()

    def test_each_block_requested_once_in_order(self) -> None:
        peer, transport = self.node.connect(start_height=40)
        feed(peer, self.headers)
        self.node.flush()
        asked: List[bytes] = []
        while True:
            asked += requested(transport)
            if not peer.inflight:
                break
            # Newest first: blocks stored out of order, connected when the gap fills.
            self.deliver(peer, sorted(peer.inflight.values(), reverse=True)[:5])
        self.assertEqual(asked, [b.hash for b in self.blocks])
        self.assertEqual(self.node.state.height, 40)
        self.assertEqual(self.node.sync.peer_state(peer).next_fetch, self.node.state.tip)

    def test_blocks_of_a_dropped_peer_are_asked_again(self) -> None:
        sync = self.node.sync
        sync.block_download_timeout_base = 5
        sync.block_download_timeout_per_peer = 0
        p, pt = self.node.connect(start_height=40)
        feed(p, self.headers)
        q, qt = self.node.connect(start_height=40, ip="9.9.9.9")
        feed(q, self.headers)
        self.node.flush()
        self.assertEqual(requested(pt), [b.hash for b in self.blocks[:16]])
        # q delivers all it is asked for; its cursor moves past p's blocks to the end.
        while q.inflight:
            self.deliver(q, sorted(q.inflight.values()))
        self.assertEqual(requested(qt), [b.hash for b in self.blocks[16:]])
        self.assertEqual(sync.peer_state(q).next_fetch.height, 40)
        # p never delivers: dropped, and its 16 blocks go to q, once each, in order.
        for _ in range(6):
            self.node.advance(1)
        self.assertTrue(pt.disconnecting)
        self.node.flush()
        self.assertEqual(requested(qt), [b.hash for b in self.blocks[:16]])
        self.deliver(q, list(range(1, 17)))
        self.assertEqual((self.node.state.height, requested(qt)), (40, []))

    def test_headers_reorganised_during_download(self) -> None:
        peer, transport = self.node.connect(start_height=40)
        feed(peer, self.headers)
        self.node.flush()
        self.deliver(peer, list(range(1, 21)))
        requested(transport)
        self.assertEqual(sorted(peer.inflight.values()), list(range(21, 37)))
        # The peer's chain reorganises to a longer branch forking at height 10.
        self.source.builder.mine(45, parent=self.source.state.at_height(10))
        branch = chain_blocks(self.source)[10:]
        self.assertEqual(len(branch), 45)
        feed(peer, HeadersMessage([b.header for b in branch]))
        self.node.flush()
        # It answers the requests of the old branch (stored as a side chain) ...
        self.deliver(peer, list(range(21, 37)))
        self.assertEqual(self.node.state.height, 36)
        # ... and every block of the new branch is asked for once, from the fork on.
        asked = requested(transport)
        while peer.inflight:
            for height in sorted(peer.inflight.values()):
                feed(peer, BlockMessage(branch[height - 11]))
                self.node.flush()
            asked += requested(transport)
        self.assertEqual(asked, [b.hash for b in branch])
        self.assertEqual(self.node.state.tip.hash, branch[-1].hash)


class DirectFetchTests(SyncTestCase):
    """Core 0.17's headers direct fetch: near the tip, announced blocks are asked at once."""

    def test_from_any_peer_near_the_tip(self) -> None:
        node = self.make(5)
        # A peer without NODE_NETWORK: the parallel download never asks it, Core's
        # direct fetch does.
        client, transport = node.connect(start_height=5, services=0)
        sent(transport)
        (header,) = headers_only(header_of(node.state.tip), 1)
        feed(client, HeadersMessage([header]))
        (getdata,) = sent(transport, "getdata")
        self.assertEqual([(i.type, i.hash) for i in getdata.items], [(MSG_BLOCK, header.hash)])
        self.assertEqual(node.sync.in_flight, {header.hash: client})
        # 17 more missing (besides the one in flight): a large reorg, not fetched directly.
        feed(client, HeadersMessage(headers_only(header, 17)))
        self.assertEqual(sent(transport, "getdata"), [])
        self.assertEqual(node.state.best_header.height, 23)

    def test_not_far_from_the_tip(self) -> None:
        node = self.make()  # the tip is the genesis block of 2011
        client, transport = node.connect(start_height=1, services=0)
        (header,) = headers_only(REGTEST.genesis.header, 1)
        feed(client, HeadersMessage([header]))
        self.assertEqual(node.state.best_header.hash, header.hash)
        self.assertEqual(sent(transport, "getdata"), [])


class ServingTests(SyncTestCase):
    def setUp(self) -> None:
        self.node = self.make(12)
        self.hashes = [self.node.state.at_height(h).hash for h in range(13)]

    def test_getheaders(self) -> None:
        peer, transport = self.node.connect()
        sent(transport)
        feed(peer, GetHeadersMessage([self.hashes[4], self.hashes[0]]))
        (reply,) = sent(transport, "headers")
        self.assertEqual([h.hash for h in reply.headers], self.hashes[5:])
        feed(peer, GetHeadersMessage([self.hashes[0]], self.hashes[3]))
        (reply,) = sent(transport, "headers")
        self.assertEqual([h.hash for h in reply.headers], self.hashes[1:4])
        feed(peer, GetHeadersMessage([], self.hashes[7]))
        (reply,) = sent(transport, "headers")
        self.assertEqual([h.hash for h in reply.headers], [self.hashes[7]])
        self.assertIs(self.node.sync.peer_state(peer).best_header_sent,
                      self.node.state.at_height(7))

    def test_getheaders_ignored_during_initial_download(self) -> None:
        self.node.sync.max_tip_age = 10  # our blocks look old now
        peer, transport = self.node.connect()
        sent(transport)
        feed(peer, GetHeadersMessage([self.hashes[0]]))
        self.assertEqual(sent(transport, "headers"), [])
        self.node.sync.max_tip_age = 10 ** 9
        self.assertFalse(self.node.sync.is_initial_block_download())
        self.node.sync.max_tip_age = 10  # latched
        self.assertFalse(self.node.sync.is_initial_block_download())

    def test_getblocks_and_hash_continue(self) -> None:
        peer, transport = self.node.connect()
        sent(transport)
        feed(peer, GetBlocksMessage([self.hashes[2]], self.hashes[9]))
        (inv,) = sent(transport, "inv")
        self.assertEqual([i.hash for i in inv.items], self.hashes[3:9])
        self.node.sync.peer_state(peer).hash_continue = self.hashes[5]
        feed(peer, GetDataMessage([InvItem(MSG_BLOCK, self.hashes[5])]))
        block, inv = sent(transport)
        self.assertEqual((block.block.hash, inv.items), (self.hashes[5],
                                                         (InvItem(MSG_BLOCK, self.hashes[12]),)))

    def test_getdata_blocks_and_transactions(self) -> None:
        tx = Transaction([TxIn(OutPoint(b"\x01" * 32, 0), b"")], [TxOut(5, b"\x51")])
        self.node.mempool.pool.entries[tx.txid] = FakeEntry(tx, 1000)
        peer, transport = self.node.connect()
        sent(transport)
        unknown = InvItem(MSG_BLOCK, b"\x07" * 32)
        feed(peer, GetDataMessage([InvItem(MSG_BLOCK, self.hashes[3]), unknown,
                                   InvItem(MSG_TX, tx.txid), InvItem(MSG_TX, b"\x08" * 32)]))
        block, txm, notfound = sent(transport)
        self.assertEqual(block.block.hash, self.hashes[3])
        self.assertEqual(txm.tx, tx)
        self.assertEqual(notfound.items, (unknown, InvItem(MSG_TX, b"\x08" * 32)))

    def test_getdata_waits_for_the_send_buffer(self) -> None:
        reads: List[Tuple[Any, Deferred]] = []

        def in_thread(f: Any, entries: Any) -> Deferred:
            reads.append((lambda: f(entries), Deferred()))
            return reads[-1][1]

        def finish(index: int) -> None:
            read, d = reads[index]
            d.callback(read())

        self.node.chain.in_thread = in_thread
        self.node.sync.serve_read_bytes = 1  # one block per read
        peer, transport = self.node.connect()
        sent(transport)
        feed(peer, GetDataMessage([InvItem(MSG_BLOCK, h) for h in self.hashes[1:4]]))
        self.assertEqual(len(reads), 1)
        peer.pauseProducing()  # the transport's buffer is full
        finish(0)
        self.assertEqual([m.block.hash for m in sent(transport)], self.hashes[1:2])
        self.assertEqual(len(reads), 1)  # the next read waits for the buffer to drain
        peer.resumeProducing()
        self.assertEqual(len(reads), 2)
        finish(1)
        finish(2)
        self.assertEqual([m.block.hash for m in sent(transport)], self.hashes[2:4])

    def test_a_run_of_blocks_is_read_together_up_to_the_bound(self) -> None:
        state = self.node.state
        sizes = [len(state.read_raw_block(state.at_height(h))) for h in range(1, 6)]
        # Blocks 3 and 4 together reach the bound.
        self.node.sync.serve_read_bytes = sizes[2] + sizes[3]
        peer, transport = self.node.connect()
        sent(transport)
        items = [InvItem(MSG_BLOCK, h) for h in self.hashes[1:6]]
        feed(peer, GetDataMessage(items[:2] + [InvItem(MSG_TX, b"\x01" * 32)] + items[2:]))
        # In the order asked for: the unknown transaction is answered last, by notfound.
        messages = sent(transport)
        self.assertEqual([m.block.hash for m in messages[:5]], self.hashes[1:6])
        self.assertEqual(messages[5].items, (InvItem(MSG_TX, b"\x01" * 32),))
        # Three reads: 1..2 (before the transaction), then 3..4 (the bound), then 5.
        self.assertEqual(self.node.chain.pooled, ["_stored_blocks"] * 3)

    def test_upload_budget_counts_the_blocks_sent_before(self) -> None:
        # Every block is historical; the -maxuploadtarget budget allows one block.
        self.patch(sync_module, "HISTORICAL_BLOCK_AGE", -1)
        self.node.p2p.upload.target = 1
        peer, transport = self.node.connect()
        sent(transport)
        self.node.p2p.serves_historical_blocks = lambda p: p.bytes_sent_per_msg.get(
            "block", 0) == 0
        feed(peer, GetDataMessage([InvItem(MSG_BLOCK, h) for h in self.hashes[1:4]]))
        # The first block spends it (as sent, not when read): the next one disconnects.
        self.assertEqual([m.block.hash for m in sent(transport, "block")], self.hashes[1:2])
        self.assertTrue(transport.disconnecting)

    def test_blocks_served_as_stored(self) -> None:
        state = self.node.state
        peer, transport = self.node.connect()
        sent(transport)
        feed(peer, GetDataMessage([InvItem(MSG_BLOCK, self.hashes[4])]))
        (block,) = sent(transport, "block")
        self.assertEqual(block.block.serialize(), state.read_raw_block(state.at_height(4)))
        self.assertEqual(self.node.chain.pooled, ["_stored_blocks"])
        # A record that is not the block asked for (a misplaced read) is not sent.
        state.read_raw_block = lambda entry: self.node.state.store.read_block(
            state.at_height(3).file_no, state.at_height(3).data_pos)
        feed(peer, GetDataMessage([InvItem(MSG_BLOCK, self.hashes[4])]))
        (notfound,) = sent(transport)
        self.assertEqual(notfound.items, (InvItem(MSG_BLOCK, self.hashes[4]),))


class AnnouncementTests(SyncTestCase):
    def setUp(self) -> None:
        self.node = self.make(5)

    def test_headers_to_peers_that_asked_inv_to_others(self) -> None:
        tip = self.node.state.tip
        wants_headers, wh = self.node.connect(start_height=5)
        feed(wants_headers, SendHeadersMessage(), HeadersMessage([header_of(tip)]))
        plain, pl = self.node.connect(start_height=5, ip="9.9.9.9")
        feed(plain, HeadersMessage([header_of(tip)]))
        sent(wh), sent(pl)
        new = self.node.builder.mine(2)
        self.node.flush()
        (headers,) = sent(wh, "headers")
        self.assertEqual([h.hash for h in headers.headers], [b.hash for b in new])
        (inv,) = sent(pl, "inv")
        self.assertEqual(inv.items, (InvItem(MSG_BLOCK, new[-1].hash),))
        # Nothing announced twice, nothing announced to the peer a block came from.
        self.node.sync.tip_changed(self.node.state.tip)
        self.node.flush()
        self.assertEqual(sent(wh) + sent(pl), [])
        block = self.node.builder.build()
        feed(plain, HeadersMessage([block.header]))
        sent(pl)
        feed(plain, BlockMessage(block))
        self.node.flush()
        self.assertEqual(self.node.state.tip.hash, block.hash)
        self.assertEqual(sent(pl, "inv") + sent(pl, "headers"), [])
        self.assertEqual(len(sent(wh, "headers")), 1)

    def test_unconnected_announcement_reverts_to_inv(self) -> None:
        peer, transport = self.node.connect(start_height=0)
        feed(peer, SendHeadersMessage())
        sent(transport)
        # The peer knows nothing of our chain: headers would not connect.
        new = self.node.builder.mine(1)
        self.node.flush()
        messages = sent(transport)
        self.assertEqual([m.command for m in messages if m.command in ("inv", "headers")],
                         ["inv"])
        self.assertEqual(messages[-1].items, (InvItem(MSG_BLOCK, new[0].hash),))

    def test_no_announcements_during_initial_download(self) -> None:
        self.node.sync.max_tip_age = 10
        self.node.sync._ibd_done = False
        peer, transport = self.node.connect(start_height=0)
        sent(transport)
        self.node.builder.mine(1)
        self.node.flush()
        self.assertEqual(sent(transport, "inv") + sent(transport, "headers"), [])


def spend(parent: bytes, n: int = 0, value: int = 1000) -> Transaction:
    return Transaction([TxIn(OutPoint(parent, n), b"")], [TxOut(value, b"\x51")])


class RelayTests(SyncTestCase):
    def setUp(self) -> None:
        self.node = self.make(3)  # recent tip: out of initial download
        self.mempool = self.node.mempool
        self.confirmed = b"\xaa" * 32
        self.mempool.confirmed.add(self.confirmed)

    def test_inv_getdata_tx_and_announcement(self) -> None:
        sender, st = self.node.connect(start_height=3)
        other, ot = self.node.connect(start_height=3, ip="9.9.9.9")
        blocks_only, bt = self.node.connect(start_height=3, ip="7.7.7.7", relay=False)
        picky, pt = self.node.connect(start_height=3, ip="6.6.6.6")
        feed(picky, FeeFilterMessage(10 ** 6))
        for t in (st, ot, bt, pt):
            sent(t)
        tx = spend(self.confirmed)
        feed(sender, InvMessage([InvItem(MSG_TX, tx.txid)]))
        (getdata,) = sent(st, "getdata")
        self.assertEqual(getdata.items, (InvItem(MSG_TX, tx.txid),))
        # Another announcer waits as an alternative.
        feed(other, InvMessage([InvItem(MSG_TX, tx.txid)]))
        self.assertEqual(sent(ot, "getdata"), [])
        feed(sender, TxMessage(tx))
        self.assertEqual(self.mempool.accepted, [tx.txid])
        # A new transaction: protected from inbound eviction for that.
        self.assertEqual((sender.last_tx_time, other.last_tx_time),
                         (self.node.reactor.seconds(), 0.0))
        self.node.advance(self.node.relay.trickle_delay)
        # Announced to nobody: the sender and other know it, one does not relay, one
        # filters by fee rate.
        self.assertEqual(sent(st, "inv") + sent(ot, "inv") + sent(bt, "inv") + sent(pt, "inv"),
                         [])
        late, lt = self.node.connect(start_height=3, ip="5.5.5.5")
        sent(lt)
        child = spend(tx.txid)
        self.mempool.add(child)
        self.node.advance(self.node.relay.trickle_delay)
        self.assertEqual(sent(lt, "inv")[0].items, (InvItem(MSG_TX, child.txid),))
        self.assertEqual(sent(st, "inv")[0].items, (InvItem(MSG_TX, child.txid),))
        self.assertEqual(sent(pt, "inv"), [])
        # mempool: everything within the fee filter.
        feed(late, MempoolMessage())
        (inv,) = sent(lt, "inv")
        self.assertEqual(inv.items, (InvItem(MSG_TX, tx.txid), InvItem(MSG_TX, child.txid)))
        feed(picky, MempoolMessage())
        self.assertEqual(sent(pt, "inv"), [])

    def test_blocks_only_remembers_announcements_without_asking(self) -> None:
        """-blocksonly: a transaction inv is known from then on but never requested (it
        used to fail in the handler, on a set method the bounded set lacks)."""
        self.node.p2p.settings.blocks_only = True
        peer, transport = self.node.connect(start_height=3)
        sent(transport)
        tx = spend(self.confirmed)
        feed(peer, InvMessage([InvItem(MSG_TX, tx.txid)]))
        self.assertEqual(sent(transport, "getdata"), [])
        self.assertIn(tx.txid, peer.known_inventory)

    def test_request_moves_to_another_announcer(self) -> None:
        first, ft = self.node.connect(start_height=3)
        second, stt = self.node.connect(start_height=3, ip="9.9.9.9")
        third, tt = self.node.connect(start_height=3, ip="7.7.7.7")
        tx = spend(self.confirmed)
        for peer in (first, second, third):
            feed(peer, InvMessage([InvItem(MSG_TX, tx.txid)]))
        self.assertEqual(len(sent(ft, "getdata")), 1)
        feed(first, NotFoundMessage([InvItem(MSG_TX, tx.txid)]))
        self.assertEqual(len(sent(stt, "getdata")), 1)
        # second never answers: after the timeout third is asked.
        self.node.relay.tx_request_timeout = 5
        for _ in range(6):
            self.node.advance(1)
        self.assertEqual(len(sent(tt, "getdata")), 1)
        feed(third, TxMessage(tx))
        self.assertIn(tx.txid, self.mempool.pool)

    def test_orphans_wait_for_their_parents(self) -> None:
        peer, transport = self.node.connect(start_height=3)
        sent(transport)
        parent = spend(self.confirmed)
        child = spend(parent.txid)
        grandchild = spend(child.txid)
        feed(peer, InvMessage([InvItem(MSG_TX, grandchild.txid)]))
        feed(peer, TxMessage(grandchild))
        sent(transport)
        feed(peer, InvMessage([InvItem(MSG_TX, child.txid)]), TxMessage(child))
        getdatas = sent(transport, "getdata")
        # The child's parent is asked of the peer that sent the orphan.
        self.assertEqual(getdatas[-1].items, (InvItem(MSG_TX, parent.txid),))
        self.assertEqual(len(self.node.relay.orphans), 2)
        self.assertEqual(peer.ban_score, 0)
        feed(peer, TxMessage(parent))
        self.assertEqual(self.mempool.accepted, [parent.txid, child.txid, grandchild.txid])
        self.assertEqual(len(self.node.relay.orphans), 0)

    def test_orphans_of_rejected_parents_and_invalid_orphans(self) -> None:
        peer, transport = self.node.connect(start_height=3)
        bad_parent = spend(self.confirmed, value=1)
        self.mempool.invalid[bad_parent.txid] = ValidationError("bad", dos=0)
        feed(peer, InvMessage([InvItem(MSG_TX, bad_parent.txid)]), TxMessage(bad_parent))
        self.assertIn(bad_parent.txid, self.node.relay.recent_rejects)
        orphan = spend(bad_parent.txid)
        feed(peer, InvMessage([InvItem(MSG_TX, orphan.txid)]), TxMessage(orphan))
        self.assertEqual(len(self.node.relay.orphans), 0)
        self.assertIn(orphan.txid, self.node.relay.recent_rejects)
        # An orphan that turns out invalid when its parent arrives scores its sender.
        parent = spend(self.confirmed, value=2)
        evil = spend(parent.txid, value=3)
        self.mempool.invalid[evil.txid] = ValidationError("bad-txns", dos=50)
        feed(peer, InvMessage([InvItem(MSG_TX, evil.txid)]), TxMessage(evil))
        feed(peer, TxMessage(parent))
        self.assertEqual(peer.ban_score, 50)
        self.assertIn(evil.txid, self.node.relay.recent_rejects)

    def test_invalid_transactions_score_and_reject(self) -> None:
        peer, transport = self.node.connect(start_height=3)
        sent(transport)
        tx = spend(self.confirmed)
        self.mempool.invalid[tx.txid] = ValidationError("bad-txns-vin-empty", dos=10)
        feed(peer, InvMessage([InvItem(MSG_TX, tx.txid)]), TxMessage(tx))
        (reject,) = sent(transport, "reject")
        self.assertEqual((reject.message, reject.reason, reject.data),
                         ("tx", "bad-txns-vin-empty", tx.txid))
        self.assertEqual(peer.ban_score, 10)
        feed(peer, InvMessage([InvItem(MSG_TX, tx.txid)]))
        self.assertEqual(sent(transport, "getdata"), [])

    def test_unrequested_transaction_flood(self) -> None:
        peer, transport = self.node.connect(start_height=3)
        for i in range(10):
            feed(peer, TxMessage(spend(self.confirmed, value=10 + i)))
        self.assertEqual((len(self.mempool.accepted), peer.ban_score), (10, 0))
        for i in range(9):
            feed(peer, TxMessage(spend(self.confirmed, value=100 + i)))
        self.assertEqual((len(self.mempool.accepted), peer.ban_score), (10, 90))
        self.assertFalse(transport.disconnecting)
        # The allowance comes back with the next window.
        self.node.advance(self.node.relay.unrequested_tx_window + 1)
        feed(peer, TxMessage(spend(self.confirmed, value=200)))
        self.assertEqual((len(self.mempool.accepted), peer.ban_score), (11, 90))

    def test_no_requests_during_initial_download(self) -> None:
        self.node.sync.max_tip_age = 10
        self.node.sync._ibd_done = False
        peer, transport = self.node.connect(start_height=3)
        sent(transport)
        feed(peer, InvMessage([InvItem(MSG_TX, b"\x01" * 32)]))
        self.assertEqual(sent(transport, "getdata"), [])


class OrphanPoolTests(SynchronousTestCase):
    def test_bounds_expiry_and_removal(self) -> None:
        pool = OrphanPool(max_count=5, max_size=200, expire_after=100, rng=random.Random(1))
        txs = [spend(bytes([i]) * 32) for i in range(1, 9)]
        for tx in txs[:5]:
            self.assertTrue(pool.add(tx, 1, 0.0))
        self.assertFalse(pool.add(txs[0], 1, 0.0))
        big = Transaction([TxIn(OutPoint(b"\x09" * 32, 0), b"\x00" * 300)], [TxOut(1, b"\x51")])
        self.assertFalse(pool.add(big, 1, 0.0))
        for tx in txs[5:]:
            pool.add(tx, 2, 50.0)
        self.assertEqual(pool.limit(50.0), 3)
        self.assertEqual(len(pool), 5)
        kept = next(iter(pool.entries))
        parent = pool.entries[kept].tx.vin[0].prevout.txid
        self.assertEqual(pool.children_of(parent), [kept])
        # Expired entries go at the next sweep.
        self.assertEqual(pool.limit(400.0), 5)
        self.assertEqual(len(pool), 0)
        for tx in txs[:3]:
            pool.add(tx, 3, 500.0)
        pool.add(txs[3], 4, 500.0)
        self.assertEqual(pool.erase_for_peer(3), 3)
        # A block confirming or conflicting with an orphan removes it.
        conflict = Transaction([TxIn(OutPoint(b"\x04" * 32, 0), b"\x01")], [TxOut(2, b"\x51")])
        self.assertEqual(pool.remove_for_block([conflict]), 1)
        self.assertEqual(len(pool), 0)
