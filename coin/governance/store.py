"""The node's governance objects with their votes, and their file ``governance.dat``.

The file is versioned and replaced atomically; one that is corrupt, foreign or of
another version is logged and ignored, and the objects come back from the network.
"""

from __future__ import annotations

import os
from typing import Dict, Iterator, List, Optional, Tuple

from twisted.logger import Logger

from coin.governance.object import OBJECT_TRIGGER, OBJECT_WATCHDOG, GovernanceObject, inner_object
from coin.governance.object import DataError
from coin.governance.params import DELETION_DELAY, WATCHDOG_MAX_SECONDS, GovernanceParams
from coin.governance.vote import Flags, MasternodeKeys, Vote, VoteBook, VoteError
from coin.primitives.hashes import hash_to_hex
from coin.primitives.serialize import (
    ByteReader, DeserializationError, compact_size, i64, u32, var_bytes,
)
from coin.storage.atomicfile import write_file_atomic

log = Logger(namespace="coin.governance")

FILE_NAME = "governance.dat"
#: "coin governance" and the format version this node writes and reads.
MAGIC = b"CoinGovernance"
FILE_VERSION = 1
#: Votes for an object not yet known wait this long for it (GOVERNANCE_ORPHAN_EXPIRATION_TIME).
ORPHAN_EXPIRATION_SECONDS = 10 * 60
#: Blocks after its superblock that a trigger is kept (GOVERNANCE_TRIGGER_EXPIRATION_BLOCKS;
#: Dash keeps 24 off main).
TRIGGER_EXPIRATION_BLOCKS = {"main": 576}
TRIGGER_EXPIRATION_BLOCKS_DEFAULT = 24


class Entry:
    """An object as this node holds it: its votes, cached flags and deletion state."""

    __slots__ = ("obj", "book", "flags", "deletion_time", "expired")

    def __init__(self, obj: GovernanceObject, book: Optional[VoteBook] = None,
                 flags: Flags = Flags(), deletion_time: int = 0, expired: bool = False) -> None:
        self.obj = obj
        self.book = book if book is not None else VoteBook()
        self.flags = flags
        self.deletion_time = deletion_time
        self.expired = expired


def trigger_height(obj: GovernanceObject) -> Optional[int]:
    """The superblock height a trigger names (``event_block_height``), None if it names none."""
    try:
        value = inner_object(obj.data_hex).get("event_block_height")
    except (DataError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class GovernanceStore:
    """Objects by hash (in arrival order), erased hashes, and votes waiting for their object."""

    def __init__(self) -> None:
        self.entries: Dict[bytes, Entry] = {}
        #: Erased object hashes and when they may be forgotten (never, for proposals).
        self.erased: Dict[bytes, int] = {}
        #: Votes for unknown objects, by object hash, with when they are dropped.
        self.orphans: Dict[bytes, List[Tuple[Vote, int]]] = {}
        #: When ``gobject diff`` last listed (GetLastDiffTime).
        self.last_diff_time = 0
        #: The object of each counted vote, by vote hash (to serve ``getdata``).
        self.vote_parents: Dict[bytes, bytes] = {}

    def __contains__(self, object_hash: bytes) -> bool:
        return object_hash in self.entries

    def get(self, object_hash: bytes) -> Optional[Entry]:
        return self.entries.get(object_hash)

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self.entries.values()))

    def find_vote(self, vote_hash: bytes) -> Optional[Vote]:
        """A counted vote by its hash, None if unknown or its object is gone."""
        entry = self.entries.get(self.vote_parents.get(vote_hash, b""))
        return entry.book.votes.get(vote_hash) if entry is not None else None

    def vote_count(self) -> int:
        return sum(len(entry.book.votes) for entry in self.entries.values())

    def add(self, obj: GovernanceObject, keys: MasternodeKeys, now: int) -> Entry:
        """Keep a checked object and count the votes that waited for it."""
        entry = self.entries.setdefault(obj.hash, Entry(obj))
        for vote, _ in self.orphans.pop(obj.hash, []):
            try:
                entry.book.add(vote, keys, now)
            except VoteError as e:
                log.debug("Orphan vote {vote} not counted: {why}", vote=hash_to_hex(vote.hash), why=e)
                continue
            self.vote_parents[vote.hash] = obj.hash
        return entry

    def add_vote(self, vote: Vote, keys: MasternodeKeys, now: int, rate_checks: bool = True) -> Entry:
        """Count ``vote`` on its object or raise VoteError; a vote for an unknown object is
        kept for a while (an orphan) in case the object arrives."""
        entry = self.entries.get(vote.parent_hash)
        if entry is None:
            waiting = self.orphans.setdefault(vote.parent_hash, [])
            if all(v.hash != vote.hash for v, _ in waiting):
                waiting.append((vote, now + ORPHAN_EXPIRATION_SECONDS))
            raise VoteError("CGovernanceManager::ProcessVote -- Unknown parent object , MN "
                            "outpoint = %s, governance object hash = %s"
                            % (vote.masternode_text(), hash_to_hex(vote.parent_hash)))
        if entry.flags.delete or entry.expired:
            raise VoteError("CGovernanceObject::ProcessVote -- ignoring vote for expired or "
                            "deleted object, hash = " + hash_to_hex(vote.parent_hash))
        entry.book.add(vote, keys, now, rate_checks)
        self.vote_parents[vote.hash] = entry.obj.hash
        return entry

    def update(self, keys: MasternodeKeys, params: GovernanceParams, network: str, now: int,
               height: int, target_spacing: int) -> List[bytes]:
        """Refresh flags, expire watchdogs and past triggers, erase what has been deleted or
        expired for DELETION_DELAY, drop stale orphans (UpdateCachesAndClean). Returns the
        erased hashes."""
        enabled = keys.enabled_count()
        keep_blocks = TRIGGER_EXPIRATION_BLOCKS.get(network, TRIGGER_EXPIRATION_BLOCKS_DEFAULT)
        erased = []
        for entry in self:
            obj = entry.obj
            entry.flags = entry.book.flags(params.min_quorum, enabled, entry.flags)
            if obj.object_type == OBJECT_WATCHDOG and obj.time + WATCHDOG_MAX_SECONDS < now:
                entry.expired = True
            if obj.object_type == OBJECT_TRIGGER:
                event = trigger_height(obj)
                if event is None or height > event + keep_blocks:
                    entry.expired = True
            if (entry.flags.delete or entry.expired) and entry.deletion_time == 0:
                entry.deletion_time = now
            if (entry.flags.delete or entry.expired) and now - entry.deletion_time >= DELETION_DELAY:
                forget = (obj.time + 2 * params.superblock_cycle * target_spacing + DELETION_DELAY
                          if obj.object_type in (OBJECT_TRIGGER, OBJECT_WATCHDOG) else 2**63 - 1)
                self.erased[obj.hash] = forget
                del self.entries[obj.hash]
                for vote_hash in entry.book.votes:
                    self.vote_parents.pop(vote_hash, None)
                erased.append(obj.hash)
        self.erased = {h: t for h, t in self.erased.items() if t >= now}
        self.orphans = {h: kept for h, kept in (
            (h, [(v, t) for v, t in votes if t >= now]) for h, votes in self.orphans.items()) if kept}
        return erased

    # ------------------------------------------------------------------ file

    def serialize(self) -> bytes:
        parts = [var_bytes(MAGIC), u32(FILE_VERSION), compact_size(len(self.entries))]
        for entry in self.entries.values():
            parts += [entry.obj.serialize(), i64(entry.deletion_time), bytes((entry.expired,)),
                      compact_size(len(entry.book.votes))]
            parts += [vote.serialize() for vote in entry.book.votes.values()]
            current = entry.book.current_votes()
            parts.append(compact_size(len(current)))
            parts += [vote.hash + i64(entry.book.current[vote.masternode][vote.signal].accepted)
                      for vote in current]
            parts.append(bytes(entry.flags))
        parts.append(compact_size(len(self.erased)))
        parts += [h + i64(t) for h, t in self.erased.items()]
        parts.append(i64(self.last_diff_time))
        return b"".join(parts)

    @classmethod
    def deserialize(cls, data: bytes) -> "GovernanceStore":
        """Raise DeserializationError (or ValueError) on anything but this node's format."""
        r = ByteReader(data)
        if r.read_var_bytes() != MAGIC:
            raise DeserializationError("not a governance file of this node")
        version = r.read_u32()
        if version != FILE_VERSION:
            raise DeserializationError("version %d, expected %d" % (version, FILE_VERSION))
        store = cls()
        for _ in range(r.read_compact_size()):
            obj = GovernanceObject.read(r)
            entry = store.entries[obj.hash] = Entry(obj, deletion_time=r.read_i64(),
                                                    expired=bool(r.read_u8()))
            for _ in range(r.read_compact_size()):
                vote = Vote.read(r)
                entry.book.votes[vote.hash] = vote
                store.vote_parents[vote.hash] = obj.hash
            for _ in range(r.read_compact_size()):
                vote = entry.book.votes[r.read(32)]
                entry.book.restore(vote, r.read_i64())
            entry.flags = Flags(*(bool(r.read_u8()) for _ in Flags._fields))
        for _ in range(r.read_compact_size()):
            erased = r.read(32)
            store.erased[erased] = r.read_i64()
        store.last_diff_time = r.read_i64()
        r.assert_end()
        return store

    def save(self, datadir: str) -> None:
        write_file_atomic(os.path.join(datadir, FILE_NAME), self.serialize())

    @classmethod
    def load(cls, datadir: str) -> "GovernanceStore":
        """The saved store; an empty one if there is none or it cannot be read (logged)."""
        path = os.path.join(datadir, FILE_NAME)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return cls()
        try:
            store = cls.deserialize(data)
        except (ValueError, KeyError) as e:
            log.warn("Ignoring {path}: {why}; governance objects will be fetched again",
                     path=path, why=e or "corrupt")
            return cls()
        log.info("Loaded {count} governance objects from {path}", count=len(store.entries), path=path)
        return store
