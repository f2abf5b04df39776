"""Governance over P2P: ``govsync``, ``govobj`` and ``govobjvote``, their inventory and
relay, objects and votes waiting for their masternode, and the sync of a node that joins
late (design.md §6 goes beyond the reference node, which never dispatches these).

Sync: once the masternode list is synced, the node sends each peer ``govsync`` with a
null hash; the peer announces every live object by ``inv`` (and ``ssc`` 10). For each
object announced during sync, and each new object a peer sends, the node asks that peer
for the object's votes with ``govsync <hash> <bloom filter of the votes it has>``; the
peer announces the votes the filter lacks (and ``ssc`` 11).
"""

from __future__ import annotations

import random
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

from twisted.internet.defer import Deferred
from twisted.logger import Logger

from coin.governance.collateral import CollateralError
from coin.governance.object import GovernanceObject
from coin.governance.service import GovernanceService, MissingMasternode, ObjectError
from coin.governance.store import Entry
from coin.governance.vote import Vote, VoteError
from coin.p2p.bloom import BloomFilter
from coin.p2p.messages import (
    MAX_INV_SZ, MSG_GOVERNANCE_OBJECT, MSG_GOVERNANCE_OBJECT_VOTE, GetDataMessage,
    GovernanceObjectMessage, GovernanceSyncMessage, GovernanceVoteMessage, InvItem, InvMessage,
    SyncStatusCountMessage,
)
from coin.primitives.hashes import hash_to_hex
from coin.primitives.serialize import ByteReader, DeserializationError

log = Logger(namespace="coin.governance")

#: ``ssc`` item ids of the reference's governance sync (MASTERNODE_SYNC_GOVOBJ[_VOTE]).
SYNC_GOVOBJ = 10
SYNC_GOVOBJ_VOTE = 11
#: On main, a peer may ask for every object once an hour (else scored 20, as the reference).
GOVSYNC_INTERVAL = 60 * 60
GOVSYNC_REPEAT_BAN = 20
#: The reference's score for an object that is not valid, malformed or oversized.
BAD_OBJECT_SCORE = 20
#: Objects and votes of an unknown masternode wait this long for it.
MASTERNODE_ORPHAN_SECONDS = 10 * 60
#: A getdata not answered in this many seconds may be sent to another peer.
REQUEST_SECONDS = 60
#: False positive rate of the vote filter (GOVERNANCE_FILTER_FP_RATE).
FILTER_FP_RATE = 0.001


class _Inventory(NamedTuple):
    """One inventory type's hooks (coin.p2p.connman.InventorySource)."""

    on_inv: Callable[[Any, List[InvItem]], None]
    lookup: Callable[[bytes], Any]


def vote_filter(votes: Iterable[bytes]) -> BloomFilter:
    """A filter of the vote hashes this node has (empty: it has none)."""
    hashes = list(votes)
    if not hashes:
        return BloomFilter()
    bloom = BloomFilter.sized(len(hashes), FILTER_FP_RATE, random.getrandbits(32))
    for vote_hash in hashes:
        bloom.insert(vote_hash)
    return bloom


def _know(peer: Any, items: List[InvItem]) -> None:
    """``peer`` has these items (it announced them, or we did)."""
    for item in items:
        peer.known_inventory.add(item.hash)


class GovernanceRelay:
    """The governance service on the wire. ``mnsync`` is the masternode sync
    (``is_list_synced()``, ``is_synced()``); ``network`` the chain's name."""

    def __init__(self, p2p: Any, governance: GovernanceService, mnsync: Any, network: str) -> None:
        self.p2p = p2p
        self.governance = governance
        self.mnsync = mnsync
        self.network = network
        #: Peers sent our ``govsync`` (their object announcements are sync answers).
        self._syncing: Set[int] = set()
        self._govsync_asked: Dict[str, float] = {}
        self._requested: Dict[bytes, float] = {}
        #: Objects and votes of masternodes not known yet, with when they are dropped.
        self.orphan_objects: Dict[bytes, Tuple[GovernanceObject, Any, float]] = {}
        self.orphan_votes: Dict[bytes, Tuple[Vote, Any, float]] = {}
        for command, handler in (("govsync", self._on_govsync), ("govobj", self._on_govobj),
                                 ("govobjvote", self._on_govobjvote)):
            p2p.register_handler(command, handler)
        p2p.register_inventory(MSG_GOVERNANCE_OBJECT, _Inventory(self._on_object_inv,
                                                                 self._lookup_object))
        p2p.register_inventory(MSG_GOVERNANCE_OBJECT_VOTE, _Inventory(self._on_vote_inv,
                                                                      self._lookup_vote))
        p2p.on_tick.append(self._tick)
        p2p.on_disconnect.append(lambda peer: self._syncing.discard(peer.id))
        governance.on_object.append(lambda obj: self._announce(MSG_GOVERNANCE_OBJECT, obj.hash))
        governance.on_vote.append(lambda vote: self._announce(MSG_GOVERNANCE_OBJECT_VOTE, vote.hash))

    @property
    def store(self) -> Any:
        return self.governance.store

    def now(self) -> float:
        return self.p2p.now()

    # ------------------------------------------------------------ announcing

    def _announce(self, inv_type: int, item_hash: bytes) -> None:
        for peer in self.p2p.handshaked_peers():
            self._send_inv(peer, [InvItem(inv_type, item_hash)])

    @staticmethod
    def _send_inv(peer: Any, items: List[InvItem], asked: bool = False) -> int:
        """Announce the items ``peer`` does not know (all of them when it ``asked``: it may
        have ignored an announcement before its sync); returns how many."""
        fresh = items if asked else [item for item in items if item.hash not in peer.known_inventory]
        for start in range(0, len(fresh), MAX_INV_SZ):
            peer.send(InvMessage(fresh[start:start + MAX_INV_SZ]))
        _know(peer, fresh)
        return len(fresh)

    # ------------------------------------------------------------ inventory

    @staticmethod
    def _live(entry: Optional[Entry]) -> bool:
        return entry is not None and not entry.flags.delete and not entry.expired

    def _lookup_object(self, object_hash: bytes) -> Optional[GovernanceObjectMessage]:
        entry = self.store.get(object_hash)
        return GovernanceObjectMessage(entry.obj.serialize()) if entry is not None else None

    def _lookup_vote(self, vote_hash: bytes) -> Optional[GovernanceVoteMessage]:
        vote = self.store.find_vote(vote_hash)
        return GovernanceVoteMessage(vote.serialize()) if vote is not None else None

    def _want(self, item_hash: bytes) -> bool:
        """Not asked of anyone lately (and now asked)."""
        now = self.now()
        if self._requested.get(item_hash, 0) > now:
            return False
        self._requested[item_hash] = now + REQUEST_SECONDS
        return True

    def _request(self, peer: Any, items: List[InvItem]) -> None:
        wanted = [item for item in items if self._want(item.hash)]
        if wanted:
            peer.send(GetDataMessage(wanted))

    def _on_object_inv(self, peer: Any, items: List[InvItem]) -> None:
        _know(peer, items)
        if not self.mnsync.is_list_synced():
            return
        unknown = []
        for item in items:
            if item.hash in self.store:
                if peer.id in self._syncing:
                    self._ask_votes(peer, item.hash)
            elif item.hash not in self.store.erased and item.hash not in self.governance.postponed:
                unknown.append(item)
        self._request(peer, unknown)

    def _on_vote_inv(self, peer: Any, items: List[InvItem]) -> None:
        _know(peer, items)
        if self.mnsync.is_list_synced():
            self._request(peer, [item for item in items if item.hash not in self.store.vote_parents
                                 and item.hash not in self.orphan_votes])

    # ------------------------------------------------------------ govsync

    def _ask_votes(self, peer: Any, object_hash: bytes) -> None:
        entry = self.store.get(object_hash)
        votes = entry.book.votes if entry is not None else ()
        peer.send(GovernanceSyncMessage(object_hash, vote_filter(votes)))

    def _on_govsync(self, peer: Any, message: GovernanceSyncMessage) -> None:
        if not self.mnsync.is_synced():
            return  # the reference answers only once its own sync is done
        if message.object_hash != bytes(32):
            entry = self.store.get(message.object_hash)
            if not self._live(entry):
                return
            self._send_inv(peer, [InvItem(MSG_GOVERNANCE_OBJECT, entry.obj.hash)], asked=True)
            votes = [InvItem(MSG_GOVERNANCE_OBJECT_VOTE, vote_hash) for vote_hash in entry.book.votes
                     if vote_hash not in message.bloom]
            sent = self._send_inv(peer, votes, asked=True)
            peer.send(SyncStatusCountMessage(SYNC_GOVOBJ, 1))
            peer.send(SyncStatusCountMessage(SYNC_GOVOBJ_VOTE, sent))
            return
        if self.network == "main":
            if self._govsync_asked.get(peer.ip, 0) > self.now():
                peer.misbehaving(GOVSYNC_REPEAT_BAN, "govsync: peer already asked me for the list")
                return
            self._govsync_asked[peer.ip] = self.now() + GOVSYNC_INTERVAL
        objects = [InvItem(MSG_GOVERNANCE_OBJECT, entry.obj.hash)
                   for entry in self.store if self._live(entry)]
        peer.send(SyncStatusCountMessage(SYNC_GOVOBJ, self._send_inv(peer, objects, asked=True)))

    def _tick(self, now: float) -> None:
        """Start the sync with each new peer once the masternode list is synced; retry
        what waited for its masternode."""
        if self.mnsync.is_synced():
            for peer in self.p2p.handshaked_peers():
                if peer.id not in self._syncing:
                    self._syncing.add(peer.id)
                    peer.send(GovernanceSyncMessage())
        if self._requested and len(self._requested) > 1000:
            self._requested = {h: t for h, t in self._requested.items() if t > now}
        self._retry_orphans(now)

    # ------------------------------------------------------------ objects

    def _parse(self, peer: Any, body: bytes, read: Callable[[ByteReader], Any], what: str) -> Any:
        """A wire object or vote; malformed or oversized: the peer is scored, None."""
        r = ByteReader(body)
        try:
            item = read(r)
            r.assert_end()
        except (DeserializationError, ValueError) as e:
            peer.misbehaving(BAD_OBJECT_SCORE, "malformed %s: %s" % (what, e))
            return None
        return item

    def _on_govobj(self, peer: Any, message: GovernanceObjectMessage) -> Optional[Deferred]:
        if not self.mnsync.is_list_synced():
            return None  # the reference ignores governance messages until then
        obj = self._parse(peer, message.body, GovernanceObject.read, "governance object")
        if obj is None:
            return None
        peer.known_inventory.add(obj.hash)
        return self.accept_object(obj, peer)

    def accept_object(self, obj: GovernanceObject, peer: Any) -> Optional[Deferred]:
        """Check and keep a relayed object, then ask its sender for the votes on it."""
        store = self.store
        if (obj.hash in store or obj.hash in store.erased or obj.hash in self.governance.postponed
                or obj.hash in self.orphan_objects):
            return None
        if not self.governance.rate_check(obj):
            log.info("govobj {hash}: masternode rate check failed", hash=hash_to_hex(obj.hash))
            return None

        def kept(entry: Optional[Entry]) -> None:
            if entry is not None and peer is not None:
                self._ask_votes(peer, obj.hash)

        def refused(failure: Any) -> None:
            error = failure.trap(ObjectError, CollateralError) and failure.value
            if isinstance(error, MissingMasternode):
                self.orphan_objects[obj.hash] = (obj, peer, self.now() + MASTERNODE_ORPHAN_SECONDS)
                return
            log.info("govobj {hash} refused: {why}", hash=hash_to_hex(obj.hash), why=error)
            if peer is not None:
                peer.misbehaving(BAD_OBJECT_SCORE, "governance object is invalid: %s" % error)

        return self.governance.submit(obj).addCallbacks(kept, refused)

    # ------------------------------------------------------------ votes

    def _on_govobjvote(self, peer: Any, message: GovernanceVoteMessage) -> None:
        if not self.mnsync.is_list_synced():
            return
        vote = self._parse(peer, message.body, Vote.read, "governance vote")
        if vote is not None:
            peer.known_inventory.add(vote.hash)
            self.accept_vote(vote, peer)

    def accept_vote(self, vote: Vote, peer: Any) -> None:
        """Count a relayed vote; one for an unknown object waits for it (and its sender is
        asked for the object), one of an unknown masternode waits for the masternode."""
        if vote.hash in self.store.vote_parents:
            return
        parent_known = vote.parent_hash in self.store
        try:
            self.governance.add_vote(vote)
        except VoteError as e:
            log.debug("govobjvote {hash}: {why}", hash=hash_to_hex(vote.hash), why=e)
            if e.orphan:
                self.orphan_votes[vote.hash] = (vote, peer, self.now() + MASTERNODE_ORPHAN_SECONDS)
            elif not parent_known and peer is not None and self._want(vote.parent_hash):
                peer.send(GovernanceSyncMessage(vote.parent_hash, BloomFilter()))
            if peer is not None:
                peer.misbehaving(e.score, str(e))

    def _retry_orphans(self, now: float) -> None:
        """Accept what waited for a masternode that is now known; drop what waited too long."""
        for table, outpoint_of, accept in (
                (self.orphan_objects, lambda obj: obj.masternode.prevout, self.accept_object),
                (self.orphan_votes, lambda vote: vote.masternode, self.accept_vote)):
            for item_hash, (item, peer, until) in list(table.items()):
                known = self.governance.keys.key_id(outpoint_of(item)) is not None
                if until < now or known:
                    del table[item_hash]
                if until >= now and known:
                    accept(item, peer if peer is not None and peer.is_open else None)
