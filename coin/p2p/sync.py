"""Headers-first block synchronisation: header sync, block download, serving, announcements.

:class:`BlockSync` is Core 0.12-0.17's block logic of net_processing.cpp, simplified but
following its rules and constants.  It hangs off the P2P service's extension points
(``handlers``, ``on_handshake``, ``on_disconnect``, ``on_tick``) and subscribes to the
validation service's chain events.

Header sync
    A peer's headers are asked for with ``getheaders`` and a locator of our best header's
    parent (so the answer always holds at least one header, telling us what the peer
    has).  During initial block download one peer at a time syncs headers -- preferably
    one whose starting height is above our best header -- and once our best header is
    recent every peer is asked.  A ``headers`` message (at most 2000) must be continuous;
    if its first header does not connect and it is short (an announcement) we ask for the
    headers from our best header instead and every 10th time score the peer 20 (Core's
    unconnecting-headers rule).  The run is accepted in one worker call; a ValidationError
    scores the peer with its ``dos``.  A full message (2000) asks for the next batch.

Block download
    Per peer we know its best block header (``best_known``, Core's pindexBestKnownBlock,
    from its headers and inv) and the last block we share with it (``last_common``).
    Blocks we lack on that chain are requested in height order, at most 16 in flight per
    peer and never beyond a 1024-block window above ``last_common``, so several peers
    fill the window in parallel.  If the window cannot move because another peer holds
    its lowest block, and this peer has nothing in flight, the holder is stalling: after
    ``block_stalling_timeout`` (2 s) without a block from it, it is disconnected.  A peer
    that does not deliver its oldest requested block within ``block_download_timeout_base``
    (+ ``_per_peer`` for every other downloading peer) is disconnected too.  ``notfound``
    and disconnection free a peer's in-flight blocks for others.

    Received blocks go to the validation worker (they may arrive out of order: the chain
    engine stores them and connects once the gap fills).  Blocks arriving while the
    worker is busy are handed over together, up to ``max_validation_batch`` (256) and
    ``max_validation_batch_bytes`` (4 MB) per call, and validated with one chain
    activation (:func:`process_blocks`; one block at a time the chain engine would fsync
    its block files once per block) -- results, ban scores and rejects stay per block.
    A peer with more than ``max_validating_per_peer`` (256) blocks waiting for the worker,
    or any peer while more than ``max_validating_bytes`` (32 MB) are queued or validating
    in all, is held: its handler returns a Deferred, and the peer is not read until the
    worker takes a batch that leaves it at most that many blocks waiting (and at most
    that many bytes queued in all).  So a peer keeps downloading the next batch while the
    worker validates the current one -- released as the worker takes a batch, not when
    its own last block is taken, which a full batch may leave behind for the whole of
    its validation -- and memory stays bounded whatever peers send.  The reactor reads
    only a received block's header (``RawBlockMessage``); its transactions are parsed
    once, on the validation thread as the batch is processed (a payload that does not
    parse is the peer's malformed message, as at decode time).
    Blocks that arrive together are answered with one ``getdata`` for the peer's free
    slots, once per reactor turn.  An unrequested block is processed only if it would
    become our new tip (more work than the tip, parent known, not absurdly far ahead:
    Core's rule for unrequested blocks); any other unrequested block is dropped and
    scores ``UNREQUESTED_BLOCK_BAN_SCORE``.

Serving
    ``getheaders`` (up to 2000 headers after the locator's fork, through ``hash_stop``;
    ignored while we are in initial block download, as Core), ``getblocks`` (an inv of up
    to 500 hashes, with Core's hashContinue), ``getdata`` for blocks -- the stored bytes,
    read by the thread pool, consecutive ones together (up to ``serve_read_bytes``, 1 MB,
    at least one block per read), each read only once the peer's send buffer has drained
    -- and for transactions (through the transaction relay); what we lack is answered by
    ``notfound``.

Announcements
    On a new tip (outside initial block download) every peer gets the new blocks (at most
    8): as ``headers`` if it asked for them (``sendheaders``) and they connect to a header
    it is known to have, else an ``inv`` of the tip -- unless it already has it.

Database outages
    While the node's database server is unreachable (:meth:`BlockSync.database_lost`, from
    coin.storage.outage) no block is asked for and none received is validated: each would
    fail to be stored.  Blocks that arrive are dropped without a score (they were asked
    for, or are announcements: the peer did nothing wrong) and nobody is dropped for
    stalling or slow download; headers are still accepted (they are kept in memory until
    the next flush).  :meth:`BlockSync.database_back` resumes the download, with fresh
    download timers, from wherever the active chain is.

Initial block download
    :meth:`BlockSync.is_initial_block_download` is Core 0.12's IsInitialBlockDownload: true
    while the tip is older than ``max_tip_age`` (24 h, every network including regtest) or
    our best header is more than 144 blocks ahead of it; once false it stays false.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Set, Tuple, Union

from twisted.internet.defer import CancelledError, Deferred, inlineCallbacks
from twisted.logger import Logger
from twisted.python.failure import Failure

from coin.chain.ibd import DEFAULT_MAX_TIP_AGE, in_initial_download
from coin.chain.index import BLOCK_VALID_TREE, BlockIndexEntry
from coin.chain.locator import block_locator, fork_in_locator, headers_after
from coin.consensus.errors import ValidationError
from coin.consensus.pow import block_proof
from coin.storage.errors import CorruptionError, DatabaseUnreachable
from coin.p2p.messages import (
    MAX_HEADERS_RESULTS,
    MAX_INV_SZ,
    MAX_REJECT_MESSAGE_LENGTH,
    MSG_BLOCK,
    MSG_TX,
    NODE_NETWORK,
    NULL_HASH,
    BlockMessage,
    GetBlocksMessage,
    GetDataMessage,
    GetHeadersMessage,
    HeadersMessage,
    InvalidMessage,
    InvItem,
    InvMessage,
    NotFoundMessage,
    ProtocolViolation,
    RawBlockMessage,
    RejectMessage,
    TxMessage,
)
from coin.p2p.peer import BoundedSet
from coin.p2p.upload import HISTORICAL_BLOCK_AGE
from coin.primitives.block import Block, BlockHeader
from coin.primitives.serialize import DeserializationError

if TYPE_CHECKING:
    from coin.p2p.connman import P2PService
    from coin.p2p.peer import PeerProtocol

log = Logger()

# -- Core's constants (net_processing.h, validation.h) ------------------------------------

#: Blocks requested from one peer at a time.
MAX_BLOCKS_IN_TRANSIT_PER_PEER = 16
#: How far above the last block shared with a peer we download.
BLOCK_DOWNLOAD_WINDOW = 1024
#: Seconds a peer may block the download window before it is dropped.
BLOCK_STALLING_TIMEOUT = 2.0
#: Block download timeout, in target spacings: base, plus per other downloading peer.
BLOCK_DOWNLOAD_TIMEOUT_BASE = 1.0
BLOCK_DOWNLOAD_TIMEOUT_PER_PEER = 0.5
#: Header sync timeout during initial download: 15 minutes plus 1 ms per expected header.
HEADERS_DOWNLOAD_TIMEOUT_BASE = 15 * 60.0
HEADERS_DOWNLOAD_TIMEOUT_PER_HEADER = 0.001
#: Blocks announced by headers at most; longer runs are announced by an inv of the tip.
MAX_BLOCKS_TO_ANNOUNCE = 8
#: Every this many non-connecting header announcements score the peer 20.
MAX_UNCONNECTING_HEADERS = 10
UNCONNECTING_HEADERS_BAN_SCORE = 20
NON_CONTINUOUS_HEADERS_BAN_SCORE = 20
#: getblocks answers at most this many hashes.
MAX_BLOCKS_PER_GETBLOCKS = 500
#: Unrequested blocks more than this far above the tip are not processed (Core's
#: MIN_BLOCKS_TO_KEEP, its fTooFarAhead).
MAX_UNREQUESTED_BLOCK_AHEAD = 288
#: Headers direct fetch only while the tip is this many target spacings old at most
#: (Core's CanDirectFetch).
DIRECT_FETCH_SPACINGS = 20

# -- ours ---------------------------------------------------------------------------------

#: Most blocks handed to the validation worker in one call, and most bytes (past the
#: first block): each call fsyncs the block files once and runs the chain's listeners
#: once, about 6 ms, so small blocks go in large batches, large ones in a few.
MAX_VALIDATION_BATCH = 256
MAX_VALIDATION_BATCH_BYTES = 4 * 1000 * 1000
#: Blocks of one peer waiting for the validation worker before the peer is held (one
#: full batch), and bytes of blocks waiting from all peers before any peer delivering
#: more is held.
MAX_VALIDATING_PER_PEER = MAX_VALIDATION_BATCH
MAX_VALIDATING_BYTES = 32 * 1000 * 1000
#: Score of an unrequested block that is not processed (Core drops them silently; issue
#: #7 asks for unrequested-data floods to be punished: ten such blocks ban).
UNREQUESTED_BLOCK_BAN_SCORE = 10
#: Hashes queued for announcement to one peer (the newest are kept).
MAX_ANNOUNCE_QUEUE = 2 * MAX_BLOCKS_TO_ANNOUNCE
#: Blocks remembered per peer as not found there.
MAX_NOT_FOUND = 1024
#: Bytes of stored blocks read for a peer in one trip to the thread pool (at least one
#: block): a run of small blocks asked for together is read at once.
SERVE_READ_BYTES = 1000 * 1000


class TxSource:
    """What :class:`BlockSync` needs of the transaction relay (``coin.p2p.relay``).

    ``inv``, ``getdata`` and ``notfound`` carry blocks and transactions together; the
    block sync owns those commands and hands the transaction items over.
    """

    def lookup_tx(self, txid: bytes) -> Any:
        """The transaction to serve for a ``getdata``, or None."""
        return None

    def on_inv(self, peer: "PeerProtocol", items: List[InvItem]) -> None:
        """Transaction items of an ``inv``."""

    def on_notfound(self, peer: "PeerProtocol", items: List[InvItem]) -> None:
        """Transaction items of a ``notfound``."""


class PeerSync:
    """Per-peer block sync state (``peer.state["sync"]``), Core's CNodeState subset."""

    __slots__ = ("sync_started", "headers_sync_timeout", "gave_up_sync", "best_known",
                 "last_unknown", "last_common", "best_header_sent", "unconnecting_headers",
                 "stalling_since", "downloading_since", "to_announce", "validating",
                 "waiting", "held", "hash_continue", "not_found", "next_fetch",
                 "fetch_epoch")

    def __init__(self) -> None:
        self.sync_started = False
        #: When the initial header sync with this peer is abandoned (0: not running).
        self.headers_sync_timeout = 0.0
        self.gave_up_sync = False
        #: Best block header the peer is known to have (pindexBestKnownBlock).
        self.best_known: Optional[BlockIndexEntry] = None
        #: Announced hash whose header we did not know then (hashLastUnknownBlock).
        self.last_unknown: Optional[bytes] = None
        #: Last block of the peer's best chain we have too (pindexLastCommonBlock).
        self.last_common: Optional[BlockIndexEntry] = None
        #: Download cursor: no block of the peer's chain up to it is to be asked of it
        #: now (in flight, validating, stored or not found there), while ``fetch_epoch``
        #: is BlockSync's (see BlockSync._find_next_blocks).
        self.next_fetch: Optional[BlockIndexEntry] = None
        self.fetch_epoch = 0
        #: Last header we sent it (pindexBestHeaderSent).
        self.best_header_sent: Optional[BlockIndexEntry] = None
        self.unconnecting_headers = 0
        self.stalling_since = 0.0
        self.downloading_since = 0.0
        self.to_announce: List[bytes] = []
        #: Its blocks submitted to validation and not finished.
        self.validating = 0
        #: Those of them still queued, not yet handed to the worker.
        self.waiting = 0
        #: While it is held for the validation backlog: fires when it is read again.
        self.held: Optional[Deferred] = None
        #: getblocks' hashContinue: when this block is fetched, inv our tip.
        self.hash_continue: Optional[bytes] = None
        #: Blocks it answered ``notfound`` for: not asked of it again.
        self.not_found = BoundedSet(MAX_NOT_FOUND)


class _Queued:
    """A received block waiting for the validation worker."""

    __slots__ = ("block", "deferred", "peer_state")

    def __init__(self, block: "ReceivedBlock", deferred: Deferred,
                 peer_state: PeerSync) -> None:
        self.block = block
        self.deferred = deferred
        self.peer_state = peer_state


#: A block as the download hands it to validation: parsed, or as received (parsed by
#: :func:`process_blocks` on the validation thread).
ReceivedBlock = Union[Block, RawBlockMessage]


def process_blocks(chainstate: Any, blocks: List[ReceivedBlock]) -> List[Any]:
    """ChainState.process_block for several blocks with one chain activation (worker).

    Received blocks are parsed here, once, off the reactor.  Returns, per block, its
    index entry, the ProtocolViolation of a payload that does not parse, or the
    ValidationError process_block would raise.  A block that fails to connect gets its
    own error; one left invalid only because an ancestor failed in this activation gets
    ``bad-prevblk`` with no ban score, as when it is stored before its parent is found
    invalid one block at a time.
    """
    results: List[Any] = []
    for block in blocks:
        try:
            if isinstance(block, RawBlockMessage):
                block = block.parse().block
            results.append(chainstate.accept_block(block))
        except (ValidationError, ProtocolViolation) as error:
            results.append(error)
    chainstate.activate_best_chain()
    failures = {id(entry): error for entry, error in chainstate.connect_failures}
    for index, result in enumerate(results):
        if isinstance(result, Exception):
            continue
        error = failures.get(id(result))
        if error is not None:
            results[index] = error
        elif result.failed():
            results[index] = ValidationError("bad-prevblk", "previous block failed to connect")
    return results


def header_of(entry: BlockIndexEntry) -> BlockHeader:
    """The block header an index entry stands for."""
    return BlockHeader(entry.version, entry.prev_hash, entry.merkle_root, entry.time,
                       entry.bits, entry.nonce)


def _short(block_hash: bytes) -> str:
    return block_hash[::-1].hex()


class BlockSync:
    """Header sync, block download, block serving and announcements; see the module doc.

    ``chain`` is a :class:`coin.chain.access.ChainAccess` (or anything with ``state``,
    ``submit_headers``, ``call`` and ``read_block``); ``subscribe`` registers a
    chain-event listener called in the reactor thread; ``now`` is the node clock
    (``setmocktime`` aware) used for tip ages.  Timeouts use the reactor's clock.
    """

    # Tunables (seconds); instance attributes may be changed by tests.
    block_stalling_timeout = BLOCK_STALLING_TIMEOUT
    block_download_window = BLOCK_DOWNLOAD_WINDOW
    max_blocks_in_transit_per_peer = MAX_BLOCKS_IN_TRANSIT_PER_PEER
    max_validating_per_peer = MAX_VALIDATING_PER_PEER
    max_validating_bytes = MAX_VALIDATING_BYTES
    max_validation_batch = MAX_VALIDATION_BATCH
    max_validation_batch_bytes = MAX_VALIDATION_BATCH_BYTES
    serve_read_bytes = SERVE_READ_BYTES
    headers_sync_timeout_base = HEADERS_DOWNLOAD_TIMEOUT_BASE
    headers_sync_timeout_per_header = HEADERS_DOWNLOAD_TIMEOUT_PER_HEADER
    max_tip_age = DEFAULT_MAX_TIP_AGE

    def __init__(self, p2p: "P2PService", chain: Any,
                 subscribe: Callable[[object], None], now: Callable[[], float]) -> None:
        self.p2p = p2p
        self.chain = chain
        self._now = now
        spacing = float(p2p.params.target_spacing)
        #: Core: one target spacing, plus half of one per other peer we download from.
        self.block_download_timeout_base = spacing * BLOCK_DOWNLOAD_TIMEOUT_BASE
        self.block_download_timeout_per_peer = spacing * BLOCK_DOWNLOAD_TIMEOUT_PER_PEER
        #: Block hash -> the peer it is requested from (mapBlocksInFlight).
        self.in_flight: Dict[bytes, "PeerProtocol"] = {}
        #: Blocks received and handed to validation, not finished yet, and their bytes.
        self.validating: Set[bytes] = set()
        self.validating_bytes = 0
        self._to_validate: List[_Queued] = []
        #: Bytes of the blocks in ``_to_validate``, and the peers held for the backlog.
        self._waiting_bytes = 0
        self._held: List[PeerSync] = []
        self._worker_busy = False
        self.sync_started_count = 0
        self.tx_source: TxSource = TxSource()
        self._ibd_done = False
        self._announced_tip: Optional[BlockIndexEntry] = None
        self._announce_pending = False
        self._request_pending = False
        #: Bumped whenever blocks below the peers' download cursors may be wanted again.
        self._fetch_epoch = 0
        #: True while the database is unreachable: no block is asked for or validated.
        self.intake_paused = False
        p2p.handlers.update({
            "headers": self._on_headers, "getheaders": self._on_getheaders,
            "getblocks": self._on_getblocks, "block": self._on_block, "inv": self._on_inv,
            "getdata": self._on_getdata, "notfound": self._on_notfound})
        p2p.on_handshake.append(self._peer_ready)
        p2p.on_disconnect.append(self._peer_gone)
        p2p.on_tick.append(self._tick)
        subscribe(self)

    # ------------------------------------------------------------ helpers

    @property
    def _state(self) -> Any:
        return self.chain.state

    def _now_reactor(self) -> float:
        return self.p2p.now()

    def _adjusted_now(self) -> float:
        return self._now() + self._state.clock.time_offset

    @staticmethod
    def peer_state(peer: "PeerProtocol") -> PeerSync:
        return peer.layer_state("sync", PeerSync)

    def _best_header(self) -> BlockIndexEntry:
        state = self._state
        return state.best_header or state.tip

    def is_initial_block_download(self) -> bool:
        """Core 0.12's IsInitialBlockDownload (latches to false)."""
        if self._ibd_done:
            return False
        state = self._state
        if in_initial_download(state.tip, state.best_header, self._now(), self.max_tip_age):
            return True
        self._ibd_done = True
        log.info("Leaving InitialBlockDownload (latching to false)")
        return False

    def _best_header_recent(self) -> bool:
        return self._best_header().time > self._adjusted_now() - self.max_tip_age

    # ------------------------------------------------------------ peers

    def _peer_ready(self, peer: "PeerProtocol") -> None:
        self.peer_state(peer)
        if self._announced_tip is None:
            self._announced_tip = self._state.tip
        self._maybe_start_sync(peer, at_handshake=True)

    def _peer_gone(self, peer: "PeerProtocol") -> None:
        st = peer.state.get("sync")
        if st is None:
            return
        if st.sync_started:
            st.sync_started = False
            self.sync_started_count -= 1
        self._release_in_flight(peer)
        self._schedule_requests()

    def _release_in_flight(self, peer: "PeerProtocol") -> None:
        if peer.inflight:
            self._refetch()
        for block_hash in list(peer.inflight):
            if self.in_flight.get(block_hash) is peer:
                del self.in_flight[block_hash]
        peer.inflight.clear()

    def _drop(self, peer: "PeerProtocol", reason: str) -> None:
        """Disconnect a peer that failed us, freeing its blocks for the others at once."""
        log.info("{reason}: disconnecting peer={id}", reason=reason, id=peer.id)
        self._release_in_flight(peer)
        peer.disconnect(reason, abort=True)
        self._schedule_requests()

    def _maybe_start_sync(self, peer: "PeerProtocol", at_handshake: bool = False) -> None:
        """Core's fSyncStarted logic: one header sync peer in IBD, everyone after."""
        st = self.peer_state(peer)
        if st.sync_started or not peer.is_open or not peer.successfully_connected \
                or not peer.services & NODE_NETWORK:
            return
        best = self._best_header()
        if not self._best_header_recent():
            if self.sync_started_count > 0:
                return
            # Prefer peers claiming more blocks than our best header; fall back to any
            # other peer only when no such peer (that we have not given up on) exists.
            if not self._is_ahead(peer, best):
                others = [p for p in self.p2p.handshaked_peers()
                          if p is not peer and self._is_ahead(p, best)]
                if others or at_handshake or st.gave_up_sync:
                    return
        st.sync_started = True
        self.sync_started_count += 1
        behind = max(0.0, self._adjusted_now() - best.time) / self.p2p.params.target_spacing
        st.headers_sync_timeout = (self._now_reactor() + self.headers_sync_timeout_base
                                   + self.headers_sync_timeout_per_header * behind)
        start = best.prev if best.prev is not None else best
        log.debug("initial getheaders ({height}) to peer={id} (startheight:{start})",
                  height=start.height, id=peer.id, start=peer.starting_height)
        peer.send(GetHeadersMessage(block_locator(start), NULL_HASH))

    def _is_ahead(self, peer: "PeerProtocol", best: BlockIndexEntry) -> bool:
        st = peer.state.get("sync")
        return (peer.starting_height > best.height and st is not None
                and not st.gave_up_sync)

    # ------------------------------------------------------------ availability

    def _process_availability(self, st: PeerSync) -> None:
        if st.last_unknown is None:
            return
        entry = self._state.lookup(st.last_unknown)
        if entry is not None and entry.chainwork > 0:
            if st.best_known is None or entry.chainwork >= st.best_known.chainwork:
                st.best_known = entry
            st.last_unknown = None

    def _update_availability(self, peer: "PeerProtocol", block_hash: bytes) -> None:
        """Core's UpdateBlockAvailability: the peer has this block (and its ancestors)."""
        st = self.peer_state(peer)
        self._process_availability(st)
        entry = self._state.lookup(block_hash)
        if entry is not None and entry.chainwork > 0:
            if st.best_known is None or entry.chainwork >= st.best_known.chainwork:
                st.best_known = entry
        else:
            st.last_unknown = block_hash
        if st.best_known is not None:
            peer.synced_headers = st.best_known.height

    def _peer_has_header(self, st: PeerSync, entry: BlockIndexEntry) -> bool:
        if entry.prev is None:
            return True
        for known in (st.best_known, st.best_header_sent):
            if known is not None and known.get_ancestor(entry.height) is entry:
                return True
        return False

    # ------------------------------------------------------------ headers

    def _on_headers(self, peer: "PeerProtocol", message: HeadersMessage) -> Optional[Deferred]:
        headers = list(message.headers)
        if not headers:
            return None
        st = self.peer_state(peer)
        state = self._state
        if state.lookup(headers[0].prev_hash) is None and len(headers) < MAX_BLOCKS_TO_ANNOUNCE:
            # An announcement we cannot connect: ask for the headers in between.
            st.unconnecting_headers += 1
            best = self._best_header()
            peer.send(GetHeadersMessage(block_locator(best), NULL_HASH))
            log.debug("received header {hash}: missing prev block {prev}, sending getheaders "
                      "({height}) to end (peer={id}, unconnecting={n})",
                      hash=_short(headers[0].hash), prev=_short(headers[0].prev_hash),
                      height=best.height, id=peer.id, n=st.unconnecting_headers)
            self._update_availability(peer, headers[-1].hash)
            if st.unconnecting_headers % MAX_UNCONNECTING_HEADERS == 0:
                peer.misbehaving(UNCONNECTING_HEADERS_BAN_SCORE,
                                 "%d non-connecting headers" % st.unconnecting_headers)
            return None
        previous = headers[0].prev_hash
        for header in headers:
            if header.prev_hash != previous:
                peer.misbehaving(NON_CONTINUOUS_HEADERS_BAN_SCORE,
                                 "non-continuous headers sequence")
                return None
            previous = header.hash
        d = self.chain.submit_headers(headers)
        d.addCallbacks(self._headers_accepted, self._headers_failed,
                       callbackArgs=(peer, len(headers)), errbackArgs=(peer,))
        return d

    def _headers_accepted(self, entries: List[BlockIndexEntry], peer: "PeerProtocol",
                          count: int) -> None:
        if not entries or not peer.is_open:
            return
        st = self.peer_state(peer)
        st.unconnecting_headers = 0
        last = entries[-1]
        self._update_availability(peer, last.hash)
        if count == MAX_HEADERS_RESULTS:
            log.debug("more getheaders ({height}) to end to peer={id}", height=last.height,
                      id=peer.id)
            peer.send(GetHeadersMessage(block_locator(last), NULL_HASH))
        self._direct_fetch(peer, last)
        self._request_blocks(peer)
        # Our best header may be recent now: header sync can start with everyone.
        for other in self.p2p.handshaked_peers():
            self._maybe_start_sync(other)

    def _headers_failed(self, failure: Failure, peer: "PeerProtocol") -> None:
        error = failure.value
        if not isinstance(error, ValidationError):
            log.failure("processing headers from peer={id} failed", failure, id=peer.id)
            return
        accepted = getattr(error, "accepted", None) or []
        if accepted and peer.is_open:
            self._update_availability(peer, accepted[-1].hash)
        log.info("invalid header received from peer={id}: {error}", id=peer.id, error=error)
        if error.dos > 0:
            peer.misbehaving(error.dos, "invalid header: %s" % error.reason)

    # ------------------------------------------------------------ inv / notfound

    def _on_inv(self, peer: "PeerProtocol", message: InvMessage) -> None:
        state = self._state
        unknown: Optional[bytes] = None
        tx_items: List[InvItem] = []
        registered: Dict[int, List[InvItem]] = {}
        for item in message.items:
            if item.type == MSG_TX:
                tx_items.append(item)
            elif item.type == MSG_BLOCK:
                peer.known_inventory.add(item.hash)
                self._update_availability(peer, item.hash)
                if state.lookup(item.hash) is None and item.hash not in self.in_flight:
                    unknown = item.hash
            elif item.type in self.p2p.inventory:
                registered.setdefault(item.type, []).append(item)
        for inv_type, items in registered.items():
            self.p2p.inventory[inv_type].on_inv(peer, items)
        if unknown is not None:
            # Headers first: ask for the headers up to the announced block (Core sends
            # one getheaders per unknown block; one per message is enough).
            best = self._best_header()
            peer.send(GetHeadersMessage(block_locator(best), unknown))
            log.debug("getheaders ({height}) {hash} to peer={id}", height=best.height,
                      hash=_short(unknown), id=peer.id)
        if tx_items:
            self.tx_source.on_inv(peer, tx_items)
        self._request_blocks(peer)

    def _on_notfound(self, peer: "PeerProtocol", message: NotFoundMessage) -> None:
        tx_items: List[InvItem] = []
        freed = False
        for item in message.items:
            if item.type == MSG_BLOCK:
                if self.in_flight.get(item.hash) is peer:
                    self._mark_received(item.hash)
                    self.peer_state(peer).not_found.add(item.hash)
                    freed = True
                    self._refetch()
            elif item.type == MSG_TX:
                tx_items.append(item)
        if tx_items:
            self.tx_source.on_notfound(peer, tx_items)
        if freed:
            self._schedule_requests()

    # ------------------------------------------------------------ block download

    def _find_next_blocks(self, peer: "PeerProtocol", st: PeerSync, count: int
                          ) -> Tuple[List[BlockIndexEntry], Optional["PeerProtocol"]]:
        """Core's FindNextBlocksToDownload: up to ``count`` blocks, and the staller if any.

        Core walks the window from the last common block on every call; here the walk
        resumes at the peer's cursor (``PeerSync.next_fetch``), below which nothing is
        wanted from this peer, so a received block costs O(1) amortized, not a walk over
        the blocks in flight and validating.  Whatever may make a block below a cursor
        wanted again (in-flight blocks freed, a block that failed to be stored, a reorg)
        calls :meth:`_refetch`, and every walk starts over from the last common block.
        """
        blocks: List[BlockIndexEntry] = []
        if count <= 0:
            return blocks, None
        state = self._state
        self._process_availability(st)
        best_known = st.best_known
        tip = state.tip
        if best_known is None or tip is None or best_known.chainwork < tip.chainwork:
            return blocks, None  # the peer has nothing we want
        if st.last_common is None:
            st.last_common = state.at_height(min(best_known.height, tip.height))
        st.last_common = last_common = self._advance_common(
            state.find_fork(st.last_common, best_known), best_known)
        peer.synced_blocks = last_common.height
        if last_common is best_known:
            return blocks, None
        # From the last common block as it is now (Core's window starts where its walk
        # found it the time before, one message loop behind).
        window_end = last_common.height + self.block_download_window
        max_height = min(best_known.height, window_end + 1)
        walk = st.next_fetch
        if walk is None or st.fetch_epoch != self._fetch_epoch \
                or walk.height <= last_common.height \
                or best_known.get_ancestor(walk.height) is not walk:
            walk, st.fetch_epoch = last_common, self._fetch_epoch
        while walk.height < max_height:
            # The next stretch of the peer's chain: as many blocks as wanted (Core reads
            # 128 at a time from its last common block; from the cursor, the next block is
            # usually one to ask for).
            n = min(max_height - walk.height, count - len(blocks))
            stretch: List[BlockIndexEntry] = []
            cursor = best_known.get_ancestor(walk.height + n)
            while cursor is not None and cursor is not walk and len(stretch) < n:
                stretch.append(cursor)
                cursor = cursor.prev
            stretch.reverse()
            for entry in stretch:
                if not entry.is_valid(BLOCK_VALID_TREE):
                    return blocks, None  # the peer's chain is invalid
                if not (entry.have_data() or state.contains(entry)
                        or entry.hash in self.validating or entry.hash in self.in_flight
                        or entry.hash in st.not_found):
                    if entry.height > window_end:
                        st.next_fetch = walk
                        if not blocks:
                            staller = self._window_holder(last_common, best_known, window_end)
                            return blocks, staller if staller is not peer else None
                        return blocks, None
                    blocks.append(entry)
                    if len(blocks) == count:
                        st.next_fetch = entry
                        return blocks, None
                walk = entry
        st.next_fetch = walk
        return blocks, None

    def _advance_common(self, common: BlockIndexEntry,
                        best_known: BlockIndexEntry) -> BlockIndexEntry:
        """The last block of ``best_known``'s chain from ``common`` on that we have, with
        all its ancestors (Core's pindexLastCommonBlock as its walk moves it)."""
        state = self._state
        while common.height < best_known.height:
            following = best_known.get_ancestor(common.height + 1)
            if following is None or not following.chain_tx \
                    or not (following.have_data() or state.contains(following)):
                break
            common = following
        return common

    def _window_holder(self, last_common: BlockIndexEntry, best_known: BlockIndexEntry,
                       window_end: int) -> Optional["PeerProtocol"]:
        """The peer holding the lowest block in flight in a full download window (the one
        that stalls it), if any.  Only walked when the window cannot move."""
        walk: Optional[BlockIndexEntry] = best_known.get_ancestor(window_end)
        holder: Optional["PeerProtocol"] = None
        while walk is not None and walk is not last_common:
            holder = self.in_flight.get(walk.hash, holder)
            walk = walk.prev
        return holder

    def _refetch(self) -> None:
        """Blocks below some peer's download cursor may be wanted again: every peer's
        next walk starts from its last common block."""
        self._fetch_epoch += 1

    def _fetch(self, peer: "PeerProtocol", st: PeerSync, blocks: List[BlockIndexEntry]) -> None:
        """Ask ``peer`` for ``blocks`` (in this order) and mark them in flight from it."""
        now = self._now_reactor()
        for entry in blocks:
            if not peer.inflight:
                st.downloading_since = now
            peer.inflight[entry.hash] = entry.height
            self.in_flight[entry.hash] = peer
        peer.send(GetDataMessage([InvItem(MSG_BLOCK, e.hash) for e in blocks]))
        log.debug("requesting {n} blocks ({first}..{last}) from peer={id}", n=len(blocks),
                  first=blocks[0].height, last=blocks[-1].height, id=peer.id)

    def _direct_fetch(self, peer: "PeerProtocol", last: BlockIndexEntry) -> None:
        """Core 0.17's headers direct fetch: near the tip, get the announced blocks now.

        When our tip is recent (within 20 target spacings of adjusted time) and the
        headers end in a valid header with at least our tip's work, the blocks between
        the active chain and it (at most 16, the per-peer limit) are asked of this peer
        at once -- whatever services it offers, as Core does; more than 16 missing is a
        large reorg left to the parallel download.
        """
        state = self._state
        tip = state.tip
        if self.intake_paused or tip is None or not peer.is_open or tip.time <= self._adjusted_now() \
                - DIRECT_FETCH_SPACINGS * self.p2p.params.target_spacing:
            return
        if not last.is_valid(BLOCK_VALID_TREE) or last.chainwork < tip.chainwork:
            return
        missing: List[BlockIndexEntry] = []
        walk: Optional[BlockIndexEntry] = last
        while walk is not None and not state.contains(walk) \
                and len(missing) <= self.max_blocks_in_transit_per_peer:
            if not walk.have_data() and walk.hash not in self.in_flight \
                    and walk.hash not in self.validating:
                missing.append(walk)
            walk = walk.prev
        if walk is None or not state.contains(walk):
            log.debug("Large reorg, won't direct fetch to {hash} ({height})",
                      hash=_short(last.hash), height=last.height)
            return
        room = self.max_blocks_in_transit_per_peer - len(peer.inflight)
        blocks = missing[::-1][:max(0, room)]
        if blocks:
            self._fetch(peer, self.peer_state(peer), blocks)

    def _request_blocks(self, peer: "PeerProtocol") -> None:
        if self.intake_paused or not peer.is_open or not peer.successfully_connected \
                or not peer.services & NODE_NETWORK:
            return  # Core does not download from peers that do not serve blocks (fClient)
        st = self.peer_state(peer)
        room = self.max_blocks_in_transit_per_peer - len(peer.inflight)
        blocks, staller = self._find_next_blocks(peer, st, room)
        if blocks:
            self._fetch(peer, st, blocks)
        if not peer.inflight and staller is not None:
            staller_state = self.peer_state(staller)
            if not staller_state.stalling_since:
                staller_state.stalling_since = self._now_reactor()
                log.debug("stall started peer={id}", id=staller.id)

    def _request_all(self) -> None:
        self._request_pending = False
        for peer in self.p2p.handshaked_peers():
            self._request_blocks(peer)

    def _schedule_requests(self) -> None:
        """Request blocks from every peer soon (once per reactor turn, however many asks)."""
        if not self._request_pending:
            self._request_pending = True
            self.p2p.reactor.callLater(0, self._request_all)

    def _mark_received(self, block_hash: bytes) -> bool:
        """Clear a block from in-flight; True if it was requested (from any peer)."""
        peer = self.in_flight.pop(block_hash, None)
        if peer is None:
            return False
        st = self.peer_state(peer)
        first = next(iter(peer.inflight), None) == block_hash
        peer.inflight.pop(block_hash, None)
        if first:
            # The next block in this peer's queue is waited for from now on.
            st.downloading_since = max(st.downloading_since, self._now_reactor())
        st.stalling_since = 0.0
        return True

    def _accept_unrequested(self, header: BlockHeader) -> bool:
        """Core's rule for unrequested blocks: process only a would-be new tip."""
        state = self._state
        prev = state.lookup(header.prev_hash)
        tip = state.tip
        if prev is None or prev.failed() or tip is None:
            return False
        if prev.height + 1 > tip.height + MAX_UNREQUESTED_BLOCK_AHEAD:
            return False
        return prev.chainwork + block_proof(header.bits) > tip.chainwork

    def _on_block(self, peer: "PeerProtocol",
                  message: Union[BlockMessage, RawBlockMessage]) -> Optional[Deferred]:
        """A received block: queued for validation (which parses it) if we want it."""
        block: ReceivedBlock = message.block if isinstance(message, BlockMessage) else message
        block_hash = block.hash
        peer.known_inventory.add(block_hash)
        requested = self._mark_received(block_hash)
        if block_hash in self.validating or self.intake_paused:
            return None  # paused: asked for again once the database is back
        entry = self._state.lookup(block_hash)
        if entry is not None and entry.have_data():
            if not requested:
                self._unrequested_block(peer, block_hash, "already have it")
            return None
        if not requested and not self._accept_unrequested(block.header):
            self._unrequested_block(peer, block_hash, "does not extend our tip")
            return None
        st = self.peer_state(peer)
        self.validating.add(block_hash)
        st.validating += 1
        st.waiting += 1
        queued = self._queue(block, st)
        d = queued.deferred
        d.addCallbacks(self._block_accepted, self._block_failed,
                       callbackArgs=(peer, block_hash), errbackArgs=(peer, block))
        d.addBoth(self._block_done, peer, block_hash, block.size)
        if st.held is None and (st.waiting > self.max_validating_per_peer
                                or self.validating_bytes > self.max_validating_bytes):
            # Hold this peer until the worker takes a batch (see _release_held).
            st.held = Deferred()
            self._held.append(st)
        self._run_worker()
        # Its queue is topped up once this reactor turn's messages are handled: one
        # getdata for the blocks that arrived together.
        self._schedule_requests()
        return st.held

    def _queue(self, block: ReceivedBlock, peer_state: PeerSync) -> _Queued:
        """Queue a block for the worker; its ``deferred`` fires with its entry or fails
        with its error."""
        queued = _Queued(block, Deferred(), peer_state)
        self._to_validate.append(queued)
        self.validating_bytes += block.size
        self._waiting_bytes += block.size
        return queued

    def _hand_over(self, batch: List[_Queued]) -> None:
        """Blocks leave the queue (to the worker, or dropped at shutdown)."""
        for queued in batch:
            queued.peer_state.waiting -= 1
            self._waiting_bytes -= queued.block.size
        self._release_held()

    def _release_held(self) -> None:
        """Read again every held peer the backlog has room for.

        Checked whenever the worker takes a batch: a peer whose over-limit block is left
        behind by a full batch is released at once, and keeps downloading the next batch
        while the worker validates this one.
        """
        ready = [st for st in self._held if st.waiting <= self.max_validating_per_peer
                 and self._waiting_bytes <= self.max_validating_bytes]
        if not ready:
            return
        self._held = [st for st in self._held if st not in ready]
        for st in ready:
            held, st.held = st.held, None
            held.callback(None)  # may read the peer's next blocks, and queue them, at once

    def _run_worker(self) -> None:
        """Hand the queued blocks to the worker, as one batch, when it is free.

        Blocks that arrived while the worker was busy are validated together: one chain
        activation (one fsync of the block files) for the batch, where one call per
        block would pay it every time.  Results are per block, as process_block's.
        """
        if self._worker_busy or not self._to_validate:
            return
        if not self.p2p.running:
            # Shutting down: the chain closes after the P2P service stops; nothing may
            # reach the worker behind its close.
            dropped, self._to_validate = self._to_validate, []
            self._hand_over(dropped)
            for queued in dropped:
                queued.deferred.errback(Failure(CancelledError("shutting down")))
            return
        count, size = 0, 0
        for queued in self._to_validate[:self.max_validation_batch]:
            size += queued.block.size
            if count and size > self.max_validation_batch_bytes:
                break
            count += 1
        batch = self._to_validate[:count]
        del self._to_validate[:count]
        self._worker_busy = True
        d = self.chain.call(process_blocks, [q.block for q in batch])

        def done(results: List[Any]) -> None:
            for queued, result in zip(batch, results):
                if isinstance(result, Exception):
                    queued.deferred.errback(Failure(result))
                else:
                    queued.deferred.callback(result)

        def failed(failure: Failure) -> None:
            for queued in batch:
                queued.deferred.errback(failure)

        def next_batch(_: Any) -> None:
            self._worker_busy = False
            self._run_worker()

        d.addCallbacks(done, failed)
        d.addErrback(lambda f: log.failure("block validation callback failed", f))
        d.addBoth(next_batch)
        # Last: releasing a held peer may deliver its next blocks, and queue them, at once.
        self._hand_over(batch)

    def _unrequested_block(self, peer: "PeerProtocol", block_hash: bytes, why: str) -> None:
        log.info("unrequested block {hash} from peer={id} ignored: {why}",
                 hash=_short(block_hash), id=peer.id, why=why)
        peer.misbehaving(UNREQUESTED_BLOCK_BAN_SCORE, "unrequested block")

    def _block_accepted(self, entry: BlockIndexEntry, peer: "PeerProtocol",
                        block_hash: bytes) -> None:
        peer.last_block_time = self.p2p.now()  # protects it from inbound eviction (Core)
        if peer.is_open:
            self._update_availability(peer, block_hash)

    def _block_failed(self, failure: Failure, peer: "PeerProtocol", block: ReceivedBlock) -> None:
        self._refetch()  # not stored: it may have to be asked for again
        error = failure.value
        block_hash = block.hash
        if isinstance(error, CancelledError):
            return
        if isinstance(error, ProtocolViolation):
            # Found by the parse on the validation thread: the peer's malformed message.
            peer.invalid(InvalidMessage("block", block.serialize(), error))
            return
        if isinstance(error, DatabaseUnreachable):
            # Logged once by the outage monitor; the block is asked for again.
            log.debug("block {hash} from peer={id} not stored: {error}",
                      hash=_short(block_hash), id=peer.id, error=error)
            return
        if not isinstance(error, ValidationError):
            log.failure("processing block {hash} from peer={id} failed", failure,
                        hash=_short(block_hash), id=peer.id)
            return
        log.info("invalid block {hash} from peer={id}: {error}", hash=_short(block_hash),
                 id=peer.id, error=error)
        if 0 < error.code < 0x100:
            peer.send(RejectMessage("block", error.code,
                                    error.reason[:MAX_REJECT_MESSAGE_LENGTH], block_hash))
        if error.dos > 0:
            peer.misbehaving(error.dos, "invalid block: %s" % error.reason)

    def _block_done(self, _: Any, peer: "PeerProtocol", block_hash: bytes, size: int) -> None:
        self.validating.discard(block_hash)
        self.validating_bytes -= size
        st = self.peer_state(peer)
        st.validating -= 1
        self._schedule_requests()

    # ------------------------------------------------------------ periodic checks

    def _tick(self, now: float) -> None:
        peers = self.p2p.handshaked_peers()
        best_recent = self._best_header_recent()
        for peer in sorted(peers, key=lambda p: -p.starting_height):
            self._maybe_start_sync(peer)
        for peer in peers:
            st = self.peer_state(peer)
            if st.sync_started and st.headers_sync_timeout:
                if best_recent:
                    st.headers_sync_timeout = 0.0
                elif now > st.headers_sync_timeout and len(peers) > 1:
                    # Core: give up on this peer so another can be tried.
                    log.info("Timeout downloading headers from peer={id}, trying another",
                             id=peer.id)
                    st.sync_started = False
                    st.gave_up_sync = True
                    st.headers_sync_timeout = 0.0
                    self.sync_started_count -= 1
            if self.intake_paused:
                continue  # nothing is asked for: nobody is stalling
            if st.stalling_since and now - st.stalling_since > self.block_stalling_timeout:
                self._drop(peer, "Peer=%d is stalling block download" % peer.id)
                continue
            if peer.inflight:
                others = sum(1 for p in peers if p is not peer and p.inflight)
                limit = (self.block_download_timeout_base
                         + self.block_download_timeout_per_peer * others)
                if now > st.downloading_since + limit:
                    self._drop(peer, "Timeout downloading block %s"
                               % _short(next(iter(peer.inflight))))
                    continue
        self._request_all()

    # ------------------------------------------------------------ database outages

    def database_lost(self) -> None:
        """The database is unreachable: ask for no block and validate none until it is back."""
        self.intake_paused = True

    def database_back(self) -> None:
        """The database is back: resume the download, the peers' timers started afresh."""
        self.intake_paused = False
        self._refetch()  # blocks that arrived meanwhile were dropped
        now = self._now_reactor()
        for peer in self.p2p.handshaked_peers():
            st = self.peer_state(peer)
            st.stalling_since = 0.0
            st.downloading_since = now
        self._schedule_requests()

    # ------------------------------------------------------------ serving

    def _on_getheaders(self, peer: "PeerProtocol", message: GetHeadersMessage) -> None:
        if self.is_initial_block_download():
            log.debug("Ignoring getheaders from peer={id} because node is in initial block "
                      "download", id=peer.id)
            return
        state = self._state.published
        st = self.peer_state(peer)
        if not message.locator:
            entry = state.lookup(message.hash_stop)
            if entry is None or not state.contains(entry):
                return
            entries = [entry]
        else:
            fork = fork_in_locator(state, message.locator)
            entries = headers_after(state, fork, message.hash_stop, MAX_HEADERS_RESULTS)
        st.best_header_sent = entries[-1] if entries else state.tip
        peer.send(HeadersMessage([header_of(e) for e in entries]))
        log.debug("getheaders from peer={id}: sent {n} headers", id=peer.id, n=len(entries))

    def _on_getblocks(self, peer: "PeerProtocol", message: GetBlocksMessage) -> None:
        state = self._state.published
        st = self.peer_state(peer)
        walk = state.next_on_chain(fork_in_locator(state, message.locator))
        items: List[InvItem] = []
        while walk is not None:
            if walk.hash == message.hash_stop:
                break
            items.append(InvItem(MSG_BLOCK, walk.hash))
            if len(items) == MAX_BLOCKS_PER_GETBLOCKS:
                # When the peer fetches this one, tell it about our tip (hashContinue).
                st.hash_continue = walk.hash
                break
            walk = state.next_on_chain(walk)
        if items:
            peer.send(InvMessage(items))

    def _on_getdata(self, peer: "PeerProtocol", message: GetDataMessage) -> Optional[Deferred]:
        items = list(message.items)
        if any(item.type == MSG_BLOCK for item in items):
            d = self._serve(peer, items)
            d.addErrback(self._serve_failed, peer)
            return d
        self._serve_txs(peer, items)
        return None

    def _serve_txs(self, peer: "PeerProtocol", items: List[InvItem]) -> None:
        missing: List[InvItem] = []
        for item in items:
            if not self._serve_tx(peer, item):
                missing.append(item)
        if missing:
            peer.send(NotFoundMessage(missing))

    def _serve_tx(self, peer: "PeerProtocol", item: InvItem) -> bool:
        """Serve a non-block item: a transaction or a registered inventory type."""
        reply: Any = None
        if item.type == MSG_TX:
            tx = self.tx_source.lookup_tx(item.hash)
            reply = TxMessage(tx) if tx is not None else None
        elif item.type in self.p2p.inventory:
            reply = self.p2p.inventory[item.type].lookup(item.hash)
        if reply is None:
            return False
        peer.known_inventory.add(item.hash)
        peer.send(reply)
        return True

    @inlineCallbacks
    def _serve(self, peer: "PeerProtocol", items: List[InvItem]):
        """Serve a getdata in order (blocks, transactions; what we lack in ``notfound``)."""
        state = self._state
        missing: List[InvItem] = []
        run: List[Tuple[InvItem, BlockIndexEntry]] = []
        for item in items:
            if not peer.is_open:
                return
            if item.type == MSG_BLOCK:
                entry = state.lookup(item.hash)
                if entry is None or not entry.have_data() or not self._servable(entry):
                    missing.append(item)
                    continue
                if self._best_header().time - entry.time > HISTORICAL_BLOCK_AGE:
                    if self.p2p.upload.target:
                        # The -maxuploadtarget budget counts what was sent: the blocks
                        # asked for before this one go first (Core checks as it sends).
                        yield self._send_blocks(peer, run, missing)
                        run = []
                    if not self.p2p.serves_historical_blocks(peer):
                        yield self._send_blocks(peer, run, missing)
                        log.debug("historical block serving limit reached, disconnect "
                                  "peer={id}", id=peer.id)
                        peer.disconnect("historical block serving limit reached")
                        return
                run.append((item, entry))
                continue
            yield self._send_blocks(peer, run, missing)  # the blocks asked for before it
            run = []
            if not self._serve_tx(peer, item):
                missing.append(item)
        yield self._send_blocks(peer, run, missing)
        for start in range(0, len(missing), MAX_INV_SZ):
            peer.send(NotFoundMessage(missing[start:start + MAX_INV_SZ]))

    @inlineCallbacks
    def _send_blocks(self, peer: "PeerProtocol", run: List[Tuple[InvItem, BlockIndexEntry]],
                     missing: List[InvItem]):
        """Send stored blocks in order: each read (:meth:`_stored_blocks`) once the peer's
        send buffer has drained, so at most ``serve_read_bytes`` and one block are held
        for a peer beyond its buffer; blocks that cannot be read join ``missing``."""
        while run and peer.is_open:
            yield peer.when_drained()
            read = yield self.chain.in_thread(self._stored_blocks, [e for _, e in run])
            for (item, _), block in zip(run, read):
                if isinstance(block, Exception):
                    log.info("cannot serve block {hash} to peer={id}: {error}",
                             hash=_short(item.hash), id=peer.id, error=block)
                    missing.append(item)
                    continue
                if not peer.is_open:
                    return
                peer.send(block)
                st = self.peer_state(peer)
                if st.hash_continue == item.hash and self._state.tip is not None:
                    peer.send(InvMessage([InvItem(MSG_BLOCK, self._state.tip.hash)]))
                    st.hash_continue = None
            run = run[len(read):]

    def _stored_blocks(self, entries: List[BlockIndexEntry]) -> List[Any]:
        """The first of ``entries``' ``block`` messages, up to ``serve_read_bytes`` (at
        least one), read in one trip to the thread pool: a syncing peer asks for blocks
        in runs, and small blocks cost more in hops between threads than in reads.  A
        block that cannot be read is its exception, in its place."""
        read: List[Any] = []
        size = 0
        for entry in entries:
            try:
                block = self._stored_block(entry)
                size += block.size
            except Exception as error:  # handed back for the reactor to log
                block = error
            read.append(block)
            if size >= self.serve_read_bytes:
                break
        return read

    def _stored_block(self, entry: BlockIndexEntry) -> RawBlockMessage:
        """A ``block`` message of the bytes stored for ``entry`` (thread pool).

        Sent as stored, not parsed and serialized again: a syncing peer's blocks cost
        the serving node a read.  The header must hash to the entry's hash (a misplaced
        or torn record is not served).
        """
        message = RawBlockMessage(self._state.read_raw_block(entry))
        try:
            block_hash = message.hash
        except DeserializationError:
            block_hash = None
        if block_hash != entry.hash:
            raise CorruptionError("block %s: the stored record is not that block"
                                  % _short(entry.hash))
        return message

    def _servable(self, entry: BlockIndexEntry) -> bool:
        """Core's BlockRequestAllowed: on our chain, or a valid block of a side chain."""
        return self._state.contains(entry) or entry.is_valid(BLOCK_VALID_TREE)

    def _serve_failed(self, failure: Failure, peer: "PeerProtocol") -> None:
        if failure.check(CancelledError):
            return None  # the peer went away while we waited for its buffer
        log.failure("serving getdata to peer={id} failed", failure, id=peer.id)
        return None

    # ------------------------------------------------------------ chain events

    def tip_changed(self, entry: BlockIndexEntry) -> None:
        """A new tip: move the download window, announce it (outside IBD)."""
        old = self._announced_tip
        self._announced_tip = entry
        if old is not None and entry.get_ancestor(old.height) is not old:
            self._refetch()  # a reorganisation: blocks of the old branch are wanted again
        self._schedule_requests()
        if self.is_initial_block_download() or old is None or old is entry:
            return
        fork = self._state.find_fork(old, entry)
        hashes: List[bytes] = []
        walk: Optional[BlockIndexEntry] = entry
        while walk is not None and walk is not fork and len(hashes) < MAX_BLOCKS_TO_ANNOUNCE:
            hashes.append(walk.hash)
            walk = walk.prev
        hashes.reverse()
        for peer in self.p2p.handshaked_peers():
            st = self.peer_state(peer)
            st.to_announce.extend(hashes)
            if len(st.to_announce) > MAX_ANNOUNCE_QUEUE:
                del st.to_announce[:-MAX_ANNOUNCE_QUEUE]
        if not self._announce_pending:
            self._announce_pending = True
            self.p2p.reactor.callLater(0, self._announce)

    def _announce(self) -> None:
        """Core's block announcement step of SendMessages, for every peer."""
        self._announce_pending = False
        state = self._state
        for peer in self.p2p.handshaked_peers():
            st = self.peer_state(peer)
            hashes, st.to_announce = st.to_announce, []
            if not hashes:
                continue
            revert = not peer.prefer_headers or len(hashes) > MAX_BLOCKS_TO_ANNOUNCE
            headers: List[BlockIndexEntry] = []
            best: Optional[BlockIndexEntry] = None
            found_start = False
            if not revert:
                for block_hash in hashes:
                    entry = state.lookup(block_hash)
                    if entry is None or not state.contains(entry):
                        revert = True  # reorganised away meanwhile
                        break
                    if best is not None and entry.prev is not best:
                        revert = True  # not one connected run
                        break
                    best = entry
                    if found_start:
                        headers.append(entry)
                    elif self._peer_has_header(st, entry):
                        continue
                    elif entry.prev is None or self._peer_has_header(st, entry.prev):
                        found_start = True
                        headers.append(entry)
                    else:
                        revert = True  # the peer would not be able to connect them
                        break
            if not revert:
                if headers:
                    peer.send(HeadersMessage([header_of(e) for e in headers]))
                    st.best_header_sent = best
                    for e in headers:
                        peer.known_inventory.add(e.hash)
                continue
            tip_hash = hashes[-1]
            entry = state.lookup(tip_hash)
            if entry is None or self._peer_has_header(st, entry) \
                    or tip_hash in peer.known_inventory:
                continue
            peer.known_inventory.add(tip_hash)
            peer.send(InvMessage([InvItem(MSG_BLOCK, tip_hash)]))
