"""Transaction relay: announcements, requests, orphans, the ``mempool`` message.

:class:`TxRelay` follows Core 0.17's transaction handling in net_processing.cpp,
simplified.

Announcing
    Every transaction the mempool accepts (from peers, RPC, wallets, or back from a
    disconnected block) reaches us through the mempool's listener, on the worker thread;
    we hop to the reactor and queue its txid for every peer that relays transactions
    (its version's ``relay`` flag), has not announced or been sent it
    (``known_inventory``) and whose ``feefilter`` is not above the transaction's fee rate.
    Queues are flushed as ``inv`` messages after ``trickle_delay`` (Core trickles too,
    with longer random delays for privacy), in pool order so parents go first.

Requesting
    An ``inv`` of transactions we do not have -- not in the pool, not an orphan, not
    recently rejected (a bounded set emptied on every new tip, Core's recentRejects),
    not recently confirmed -- is answered with ``getdata`` while we are not in initial
    block download.  Each transaction is asked of one peer at a time; other announcers
    are remembered (a few per transaction) and asked if the first does not deliver
    within ``tx_request_timeout``, answers ``notfound`` or disconnects.

Receiving
    A ``tx`` goes to the mempool (the peer is held until the worker answers).  Accepted:
    orphans spending it are retried (and theirs, recursively).  Missing inputs: unless a
    parent was rejected, the parents are requested from the same peer and the transaction
    waits in the orphan pool -- at most ``MAX_ORPHAN_TRANSACTIONS`` (100) entries of at
    most 100,000 bytes, each expiring after 20 minutes, a random one evicted when full,
    a peer's orphans dropped when it disconnects and orphans confirmed or conflicted by a
    block dropped then.  Invalid: remembered as rejected, the peer scored with the
    error's ``dos`` and sent a ``reject``.  Transactions nobody asked for are processed
    (as Core does) up to ``unrequested_tx_allowance`` per ``unrequested_tx_window``
    seconds per peer; beyond that each one is dropped and scores the peer
    ``UNREQUESTED_TX_BAN_SCORE``.

Serving
    ``getdata`` for transactions is answered from the mempool (through the block sync,
    which owns ``getdata``), ``mempool`` with ``inv`` messages of every pool transaction
    passing the peer's fee filter.  The ``feefilter`` we send is the larger of the
    minimum relay fee and the mempool's dynamic minimum, refreshed every
    ``feefilter_interval`` seconds when it changed.
"""

from __future__ import annotations

import random
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any, Callable, Deque, Dict, Iterable, List, Optional, Set

from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.interfaces import IDelayedCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from coin.consensus.errors import ValidationError
from coin.mempool.accept import MissingInputs
from coin.p2p.messages import (
    FEEFILTER_VERSION,
    MAX_INV_SZ,
    MAX_REJECT_MESSAGE_LENGTH,
    MSG_TX,
    FeeFilterMessage,
    GetDataMessage,
    InvItem,
    InvMessage,
    MempoolMessage,
    RejectMessage,
    TxMessage,
)
from coin.p2p.peer import BoundedSet
from coin.p2p.sync import TxSource
from coin.primitives.transaction import Transaction
from coin.storage.errors import DatabaseUnreachable

if TYPE_CHECKING:
    from coin.p2p.connman import P2PService
    from coin.p2p.peer import PeerProtocol
    from coin.p2p.sync import BlockSync

log = Logger()

#: Core's DEFAULT_MAX_ORPHAN_TRANSACTIONS, ORPHAN_TX_EXPIRE_TIME and its sweep interval.
MAX_ORPHAN_TRANSACTIONS = 100
ORPHAN_TX_EXPIRE_TIME = 20 * 60.0
ORPHAN_TX_EXPIRE_INTERVAL = 5 * 60.0
#: Largest orphan kept (Core: MAX_STANDARD_TX_SIZE).
MAX_ORPHAN_TX_SIZE = 100_000
#: Recently rejected txids remembered (Core's rolling filter holds 120,000).
MAX_RECENT_REJECTS = 50_000
#: Txids of recently connected blocks remembered (so announcements of them are ignored).
MAX_RECENT_CONFIRMED = 50_000
#: Transactions requested and not delivered yet, over all peers and per peer.
MAX_TX_REQUESTS = 50_000
MAX_PEER_TX_REQUESTS = 5_000
#: Other announcers remembered per requested transaction.
MAX_TX_ALTERNATES = 8
#: Txids queued for announcement to one peer.
MAX_TX_ANNOUNCE_QUEUE = 50_000
#: Score of each unrequested transaction beyond the allowance.
UNREQUESTED_TX_BAN_SCORE = 10
#: Core's reject codes below this go on the wire (REJECT_INTERNAL).
_REJECT_INTERNAL = 0x100


def fee_rate_per_kb(fee: int, size: int) -> int:
    """Core's CFeeRate(fee, size).GetFeePerK()."""
    return fee * 1000 // size if size > 0 else 0


class Orphan:
    __slots__ = ("tx", "peer_id", "expires", "size")

    def __init__(self, tx: Transaction, peer_id: int, expires: float) -> None:
        self.tx = tx
        self.peer_id = peer_id
        self.expires = expires
        self.size = tx.size


class OrphanPool:
    """Transactions whose inputs are missing, waiting for their parents (Core's mapOrphanTransactions).

    Bounded by count (``max_count``, a random entry evicted beyond it) and per-entry size
    (``max_size``); entries expire ``expire_after`` seconds after they arrive.
    """

    def __init__(self, max_count: int = MAX_ORPHAN_TRANSACTIONS,
                 max_size: int = MAX_ORPHAN_TX_SIZE,
                 expire_after: float = ORPHAN_TX_EXPIRE_TIME,
                 rng: Optional[random.Random] = None) -> None:
        self.max_count = max_count
        self.max_size = max_size
        self.expire_after = expire_after
        self._rng = rng or random.Random()
        self.entries: Dict[bytes, Orphan] = {}
        #: Parent txid -> orphans spending one of its outputs.
        self._by_parent: Dict[bytes, Set[bytes]] = {}
        self._next_sweep = 0.0

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, txid: object) -> bool:
        return txid in self.entries

    def get(self, txid: bytes) -> Optional[Orphan]:
        return self.entries.get(txid)

    def add(self, tx: Transaction, peer_id: int, now: float) -> bool:
        """Keep ``tx``; False if already there or too large."""
        txid = tx.txid
        if txid in self.entries:
            return False
        if tx.size > self.max_size:
            log.debug("ignoring large orphan tx (size: {size}, hash: {txid})", size=tx.size,
                      txid=tx.txid_hex)
            return False
        self.entries[txid] = Orphan(tx, peer_id, now + self.expire_after)
        for txin in tx.vin:
            self._by_parent.setdefault(txin.prevout.txid, set()).add(txid)
        return True

    def remove(self, txid: bytes) -> bool:
        orphan = self.entries.pop(txid, None)
        if orphan is None:
            return False
        for txin in orphan.tx.vin:
            parent = txin.prevout.txid
            children = self._by_parent.get(parent)
            if children is not None:
                children.discard(txid)
                if not children:
                    del self._by_parent[parent]
        return True

    def children_of(self, txid: bytes) -> List[bytes]:
        """Orphans spending an output of ``txid`` (sorted: deterministic retries)."""
        return sorted(self._by_parent.get(txid, ()))

    def erase_for_peer(self, peer_id: int) -> int:
        gone = [txid for txid, o in self.entries.items() if o.peer_id == peer_id]
        for txid in gone:
            self.remove(txid)
        return len(gone)

    def remove_for_block(self, txs: Iterable[Transaction]) -> int:
        """Drop orphans a block confirmed or made impossible (they spend the same outputs)."""
        if not self.entries:
            return 0  # the usual case during initial block download: no work per block
        spent = set()
        confirmed = set()
        for tx in txs:
            confirmed.add(tx.txid)
            spent.update((i.prevout.txid, i.prevout.n) for i in tx.vin)
        gone = [txid for txid, o in self.entries.items()
                if txid in confirmed
                or any((i.prevout.txid, i.prevout.n) in spent for i in o.tx.vin)]
        for txid in gone:
            self.remove(txid)
        return len(gone)

    def limit(self, now: float) -> int:
        """Core's LimitOrphanTxSize: sweep expired entries now and then, evict randomly."""
        removed = 0
        if self._next_sweep <= now:
            expired = [txid for txid, o in self.entries.items() if o.expires <= now]
            for txid in expired:
                self.remove(txid)
            removed += len(expired)
            self._next_sweep = now + ORPHAN_TX_EXPIRE_INTERVAL
            if expired:
                log.debug("Erased {n} orphan tx due to expiration", n=len(expired))
        while len(self.entries) > self.max_count:
            self.remove(self._rng.choice(list(self.entries)))
            removed += 1
        return removed


class _Request:
    __slots__ = ("peer", "time", "alternates")

    def __init__(self, peer: "PeerProtocol", time: float) -> None:
        self.peer = peer
        self.time = time
        self.alternates: List["PeerProtocol"] = []


class PeerRelay:
    """Per-peer relay state (``peer.state["relay"]``)."""

    __slots__ = ("to_announce", "requested", "unrequested", "unrequested_since",
                 "fee_filter_sent")

    def __init__(self) -> None:
        #: Txids to announce on the next flush (ordered, bounded).
        self.to_announce: "OrderedDict[bytes, None]" = OrderedDict()
        #: Txids asked of this peer -> when.
        self.requested: Dict[bytes, float] = {}
        self.unrequested = 0
        self.unrequested_since = 0.0
        self.fee_filter_sent: Optional[int] = None


class TxRelay(TxSource):
    """Transaction relay over the P2P service; see the module docstring.

    ``mempool`` is a :class:`coin.mempool.service.MempoolService` (``accept``,
    ``add_listener``, ``pool``); ``sync`` the :class:`~coin.p2p.sync.BlockSync`, which
    hands us the transaction items of ``inv``/``getdata``/``notfound`` and says whether
    we are in initial block download; ``subscribe`` registers for chain events.
    """

    trickle_delay = 0.2
    tx_request_timeout = 60.0
    unrequested_tx_allowance = 10
    unrequested_tx_window = 60.0
    feefilter_interval = 10 * 60.0

    def __init__(self, p2p: "P2PService", mempool: Any, sync: "BlockSync",
                 subscribe: Callable[[object], None],
                 min_fee_rate: Optional[Callable[[], int]] = None) -> None:
        self.p2p = p2p
        self.mempool = mempool
        self.sync = sync
        self._min_fee_rate = min_fee_rate
        self.orphans = OrphanPool()
        self.recent_rejects = BoundedSet(MAX_RECENT_REJECTS)
        self.recent_confirmed = BoundedSet(MAX_RECENT_CONFIRMED)
        self._requests: Dict[bytes, _Request] = {}
        #: The pending flush of queued announcements (one at a time).
        self._flush_call: Optional[IDelayedCall] = None
        self._next_feefilter = 0.0
        sync.tx_source = self
        p2p.handlers.update({"tx": self._on_tx, "mempool": self._on_mempool})
        p2p.on_handshake.append(self._peer_ready)
        p2p.on_disconnect.append(self._peer_gone)
        p2p.on_tick.append(self._tick)
        p2p.on_stop.append(self._stop)
        if min_fee_rate is not None:
            p2p.fee_filter_rate = min_fee_rate
        mempool.add_listener(self._tx_added_on_worker)
        subscribe(self)

    # ------------------------------------------------------------ helpers

    @staticmethod
    def peer_state(peer: "PeerProtocol") -> PeerRelay:
        return peer.layer_state("relay", PeerRelay)

    @property
    def pool(self) -> Any:
        return self.mempool.pool

    def already_have(self, txid: bytes) -> bool:
        """Core's AlreadyHave for transactions."""
        return (txid in self.recent_rejects or txid in self.pool or txid in self.orphans
                or txid in self.recent_confirmed)

    def lookup_tx(self, txid: bytes) -> Optional[Transaction]:
        entry = self.pool.get(txid)
        return entry.tx if entry is not None else None

    def _peer_ready(self, peer: "PeerProtocol") -> None:
        st = self.peer_state(peer)
        if peer.version >= FEEFILTER_VERSION and self.p2p.fee_filter_rate is not None:
            st.fee_filter_sent = self.p2p.fee_filter_rate()

    def _peer_gone(self, peer: "PeerProtocol") -> None:
        st = peer.state.get("relay")
        self.orphans.erase_for_peer(peer.id)
        if st is None:
            return
        st.to_announce.clear()
        requested, st.requested = st.requested, {}
        for txid in requested:
            self._retry(txid, peer)

    # ------------------------------------------------------------ announcing

    def _tx_added_on_worker(self, tx: Transaction) -> None:
        """Mempool listener (worker thread): hop to the reactor."""
        self.p2p.reactor.callFromThread(self.tx_added, tx)

    def tx_added(self, tx: Transaction) -> None:
        """A transaction entered the pool: queue its announcement to every peer."""
        txid = tx.txid
        for peer in self.p2p.handshaked_peers():
            if not peer.relay or txid in peer.known_inventory:
                continue
            queue = self.peer_state(peer).to_announce
            queue[txid] = None
            if len(queue) > MAX_TX_ANNOUNCE_QUEUE:
                queue.popitem(last=False)
        if self._flush_call is None:
            self._flush_call = self.p2p.reactor.callLater(self.trickle_delay,
                                                          self.flush_announcements)

    def _stop(self) -> None:
        if self._flush_call is not None and self._flush_call.active():
            self._flush_call.cancel()
        self._flush_call = None

    def flush_announcements(self) -> None:
        """Send each peer an inv of its queued transactions still in the pool."""
        self._flush_call = None
        pool = self.pool
        for peer in self.p2p.handshaked_peers():
            st = self.peer_state(peer)
            if not st.to_announce:
                continue
            queued, st.to_announce = st.to_announce, OrderedDict()
            items: List[InvItem] = []
            for txid in queued:
                entry = pool.get(txid)
                if entry is None or txid in peer.known_inventory:
                    continue
                if peer.fee_filter and fee_rate_per_kb(entry.fee, entry.size) < peer.fee_filter:
                    continue
                peer.known_inventory.add(txid)
                items.append(InvItem(MSG_TX, txid))
            for start in range(0, len(items), MAX_INV_SZ):
                peer.send(InvMessage(items[start:start + MAX_INV_SZ]))

    # ------------------------------------------------------------ requesting

    def on_inv(self, peer: "PeerProtocol", items: List[InvItem]) -> None:
        if not self.p2p.relays_from(peer):  # -blocksonly: known, never asked for (Core)
            for item in items:
                peer.known_inventory.add(item.hash)
            log.debug("transaction inv sent in violation of protocol peer={id}", id=peer.id)
            return
        st = self.peer_state(peer)
        # Nothing is asked for during initial block download or while the database is
        # unreachable (a transaction's inputs could not be looked up).
        paused = self.sync.intake_paused or self.sync.is_initial_block_download()
        now = self.p2p.now()
        wanted: List[InvItem] = []
        for item in items:
            txid = item.hash
            peer.known_inventory.add(txid)
            if paused or self.already_have(txid) or txid in st.requested:
                continue
            request = self._requests.get(txid)
            if request is not None:
                if request.peer.is_open and now - request.time < self.tx_request_timeout:
                    if peer not in request.alternates and \
                            len(request.alternates) < MAX_TX_ALTERNATES:
                        request.alternates.append(peer)
                    continue
                self._forget_request(txid)
            if len(self._requests) >= MAX_TX_REQUESTS or len(st.requested) >= MAX_PEER_TX_REQUESTS:
                continue
            self._requests[txid] = _Request(peer, now)
            st.requested[txid] = now
            wanted.append(item)
        if wanted:
            peer.send(GetDataMessage(wanted))

    def on_notfound(self, peer: "PeerProtocol", items: List[InvItem]) -> None:
        st = self.peer_state(peer)
        for item in items:
            if st.requested.pop(item.hash, None) is not None:
                self._retry(item.hash, peer)

    def _forget_request(self, txid: bytes) -> None:
        request = self._requests.pop(txid, None)
        if request is not None:
            self.peer_state(request.peer).requested.pop(txid, None)

    def _retry(self, txid: bytes, failed: "PeerProtocol") -> None:
        """The peer asked for ``txid`` did not deliver: ask the next announcer."""
        request = self._requests.get(txid)
        if request is None or request.peer is not failed:
            return
        del self._requests[txid]
        self.peer_state(failed).requested.pop(txid, None)
        if self.already_have(txid):
            return
        for peer in request.alternates:
            if peer.is_open and peer.successfully_connected:
                st = self.peer_state(peer)
                if len(st.requested) >= MAX_PEER_TX_REQUESTS:
                    continue
                now = self.p2p.now()
                retry = self._requests[txid] = _Request(peer, now)
                retry.alternates = [p for p in request.alternates if p is not peer]
                st.requested[txid] = now
                peer.send(GetDataMessage([InvItem(MSG_TX, txid)]))
                return

    def _request_parents(self, peer: "PeerProtocol", tx: Transaction) -> None:
        """Core asks the sender of an orphan for its missing parents."""
        st = self.peer_state(peer)
        now = self.p2p.now()
        wanted: List[InvItem] = []
        for parent in dict.fromkeys(i.prevout.txid for i in tx.vin):
            peer.known_inventory.add(parent)
            if self.already_have(parent) or parent in self._requests \
                    or len(self._requests) >= MAX_TX_REQUESTS \
                    or len(st.requested) >= MAX_PEER_TX_REQUESTS:
                continue
            self._requests[parent] = _Request(peer, now)
            st.requested[parent] = now
            wanted.append(InvItem(MSG_TX, parent))
        if wanted:
            peer.send(GetDataMessage(wanted))

    # ------------------------------------------------------------ receiving

    def _allow_unrequested(self, peer: "PeerProtocol", st: PeerRelay) -> bool:
        now = self.p2p.now()
        if now - st.unrequested_since > self.unrequested_tx_window:
            st.unrequested_since = now
            st.unrequested = 0
        st.unrequested += 1
        return st.unrequested <= self.unrequested_tx_allowance

    def _on_tx(self, peer: "PeerProtocol", message: TxMessage) -> Optional[Deferred]:
        if not self.p2p.relays_from(peer):  # -blocksonly
            log.debug("transaction sent in violation of protocol peer={id}", id=peer.id)
            return None
        tx = message.tx
        txid = tx.txid
        st = self.peer_state(peer)
        peer.known_inventory.add(txid)
        requested = st.requested.pop(txid, None) is not None
        request = self._requests.get(txid)
        if request is not None and (requested or request.peer is peer):
            del self._requests[txid]
        if not requested and not self._allow_unrequested(peer, st):
            log.info("unrequested transaction {txid} from peer={id} dropped",
                     txid=tx.txid_hex, id=peer.id)
            peer.misbehaving(UNREQUESTED_TX_BAN_SCORE, "unrequested transactions")
            return None
        if self.already_have(txid):
            return None
        d = self.mempool.accept(tx)
        d.addCallbacks(self._accepted, self._rejected, callbackArgs=(peer, tx),
                       errbackArgs=(peer, tx))
        return d

    def _accepted(self, result: Any, peer: "PeerProtocol", tx: Transaction) -> None:
        log.debug("AcceptToMemoryPool: peer={id}: accepted {txid} (poolsz {n} txn)",
                  id=peer.id, txid=tx.txid_hex, n=len(self.pool))
        peer.last_tx_time = self.p2p.now()  # protects it from inbound eviction (Core)
        self._process_orphans(tx.txid)

    def _rejected(self, failure: Failure, peer: "PeerProtocol", tx: Transaction) -> None:
        error = failure.value
        txid = tx.txid
        if isinstance(error, MissingInputs):
            self._orphan(peer, tx)
            return
        if isinstance(error, DatabaseUnreachable):
            log.debug("{txid} from peer={id} not checked: {error}", txid=tx.txid_hex,
                      id=peer.id, error=error)
            return
        if not isinstance(error, ValidationError):
            log.failure("accepting {txid} from peer={id} failed", failure, txid=tx.txid_hex,
                        id=peer.id)
            return
        if error.reason == "txn-already-in-mempool":
            return
        log.debug("{txid} from peer={id} was not accepted: {error}", txid=tx.txid_hex,
                  id=peer.id, error=error)
        if not error.corruption_possible:
            self.recent_rejects.add(txid)
        if 0 < error.code < _REJECT_INTERNAL:
            peer.send(RejectMessage("tx", error.code,
                                    error.reason[:MAX_REJECT_MESSAGE_LENGTH], txid))
        if error.dos > 0:
            peer.misbehaving(error.dos, "invalid transaction: %s" % error.reason)

    def _orphan(self, peer: "PeerProtocol", tx: Transaction) -> None:
        """Core's missing-inputs branch: keep it and ask for the parents, or reject it."""
        if any(txin.prevout.txid in self.recent_rejects for txin in tx.vin):
            log.debug("not keeping orphan with rejected parents {txid}", txid=tx.txid_hex)
            self.recent_rejects.add(tx.txid)
            return
        if not peer.is_open:
            return
        self._request_parents(peer, tx)
        if self.orphans.add(tx, peer.id, self.p2p.now()):
            evicted = self.orphans.limit(self.p2p.now())
            log.debug("stored orphan tx {txid} (mapsz {n}), {evicted} evicted",
                      txid=tx.txid_hex, n=len(self.orphans), evicted=evicted)

    @inlineCallbacks
    def _process_orphans(self, first: bytes):
        """Core's ProcessOrphanTx: retry orphans of each newly accepted transaction."""
        work: Deque[bytes] = deque([first])
        while work and self.p2p.running:  # nothing reaches the worker after shutdown
            parent = work.popleft()
            for txid in self.orphans.children_of(parent):
                orphan = self.orphans.get(txid)
                if orphan is None:
                    continue
                try:
                    yield self.mempool.accept(orphan.tx)
                except MissingInputs:
                    continue
                except ValidationError as error:
                    self.orphans.remove(txid)
                    if error.reason == "txn-already-in-mempool":
                        continue
                    if not error.corruption_possible:
                        self.recent_rejects.add(txid)
                    source = self.p2p.peers.get(orphan.peer_id)
                    if error.dos > 0 and source is not None:
                        source.misbehaving(error.dos, "invalid orphan: %s" % error.reason)
                    continue
                except Exception:
                    log.failure("retrying orphan {txid} failed", txid=orphan.tx.txid_hex)
                    self.orphans.remove(txid)
                    continue
                self.orphans.remove(txid)
                log.debug("accepted orphan tx {txid}", txid=orphan.tx.txid_hex)
                work.append(txid)

    # ------------------------------------------------------------ serving

    def _on_mempool(self, peer: "PeerProtocol", message: MempoolMessage) -> None:
        """Every pool transaction passing the peer's fee filter, as inv messages."""
        items: List[InvItem] = []
        for entry in self.pool.sorted_entries():
            if peer.fee_filter and fee_rate_per_kb(entry.fee, entry.size) < peer.fee_filter:
                continue
            peer.known_inventory.add(entry.txid)
            items.append(InvItem(MSG_TX, entry.txid))
        for start in range(0, len(items), MAX_INV_SZ):
            peer.send(InvMessage(items[start:start + MAX_INV_SZ]))

    # ------------------------------------------------------------ periodic work

    def _tick(self, now: float) -> None:
        for txid, request in list(self._requests.items()):
            if now - request.time >= self.tx_request_timeout or not request.peer.is_open:
                self._retry(txid, request.peer)
                # A request without alternates is simply forgotten.
                if self._requests.get(txid) is request:
                    self._forget_request(txid)
        self.orphans.limit(now)
        if now >= self._next_feefilter and self.p2p.fee_filter_rate is not None:
            self._next_feefilter = now + self.feefilter_interval
            rate = self.p2p.fee_filter_rate()
            if rate is not None:
                for peer in self.p2p.handshaked_peers():
                    st = self.peer_state(peer)
                    if peer.version >= FEEFILTER_VERSION and st.fee_filter_sent != rate:
                        st.fee_filter_sent = rate
                        peer.send(FeeFilterMessage(rate))

    # ------------------------------------------------------------ chain events

    def block_connected(self, entry: Any, block: Any) -> None:
        txs = block.txs
        for tx in txs:
            self.recent_confirmed.add(tx.txid)
        self.orphans.remove_for_block(txs)

    def block_disconnected(self, entry: Any, block: Any) -> None:
        # Its transactions may be wanted again (Core 0.19 resets its filter likewise).
        self.recent_confirmed = BoundedSet(MAX_RECENT_CONFIRMED)

    def tip_changed(self, entry: Any) -> None:
        # Rejections may depend on the tip (Core resets recentRejects on a new tip).
        self.recent_rejects = BoundedSet(MAX_RECENT_REJECTS)
