"""The address book of peers to try: Core's CAddrMan design, bucketed and keyed.

Addresses come from ``addr`` messages and from successful outbound connections.
They live in two tables of fixed-size buckets, as in Core (``addrman.h``):

* **new** (1,024 buckets of 64): addresses heard of but never connected to.  The
  bucket is a keyed hash of the address's network group and its *source's* group
  (any one source group reaches at most 64 buckets), the slot in it a keyed hash of
  the bucket and the address.
* **tried** (256 buckets of 64): addresses we connected to (:meth:`AddrMan.good`);
  bucket from the address and its group (any one group reaches at most 8 buckets).

The hashes are keyed by a random secret (``key``, Core's nKey) made when the book is
created and saved with it, so an attacker cannot aim at slots, and a restart puts every
address back where it was.  Inserting is constant time: one slot is computed and,
when it is taken, only its occupant is judged -- it is replaced if it is "terrible"
(Core's IsTerrible), else the newcomer is dropped.  No operation on the address path
scans the book.  A tried slot that is taken moves its occupant back to the new table.

Simplification of Core: an address is in at most one new bucket (Core lets an address
announced by several source groups take up to 8 references).

Saved as ``<datadir>/peers.json`` (atomic write); version 1 files (a flat list, no key)
are read and re-bucketed under a new key.

Only routable addresses are accepted (Core's IsRoutable), on every network: loopback and
private addresses never enter the book, so a node never dials one nobody asked for (a
regtest network joined by -connect/addnode stays as it was joined).  Books written by
earlier builds, which took them on regtest, lose them when loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from twisted.logger import Logger

from coin.p2p.banman import write_json_atomic
from coin.p2p.netaddr import NetAddress

log = Logger()

FILE_NAME = "peers.json"
FILE_VERSION = 2
#: Versions still read (1: flat list without key or tables).
_OLD_FILE_VERSIONS = (1,)
#: Core's ADDRMAN_NEW_BUCKET_COUNT, ADDRMAN_TRIED_BUCKET_COUNT and ADDRMAN_BUCKET_SIZE.
NEW_BUCKET_COUNT = 1024
TRIED_BUCKET_COUNT = 256
BUCKET_SIZE = 64
#: Core's ADDRMAN_NEW_BUCKETS_PER_SOURCE_GROUP and ADDRMAN_TRIED_BUCKETS_PER_GROUP.
NEW_BUCKETS_PER_SOURCE_GROUP = 64
TRIED_BUCKETS_PER_GROUP = 8
#: Most addresses answered to one getaddr (Core's MAX_ADDR_TO_SEND).
MAX_ADDR_TO_SEND = 1000
#: Percentage of the book a getaddr answer may reveal (Core's ADDRMAN_GETADDR_MAX_PCT).
GETADDR_MAX_PCT = 23
#: An address tried this recently (seconds) is not selected again.
RETRY_INTERVAL = 10 * 60
#: Addresses drawn by one :meth:`AddrMan.select` before giving up (Core's 100 tries).
SELECT_TRIES = 100
#: Core's IsTerrible thresholds.
HORIZON_DAYS = 30
RETRIES = 3
MAX_FAILURES = 10
MIN_FAIL_DAYS = 7

Key = Tuple[str, int]
#: The columns of an address row in peers.json (version 2).
_FIELDS = ("ip", "port", "services", "time", "last_try", "last_success", "attempts", "source",
           "tried")


@dataclass(slots=True)
class AddrInfo:
    """One known address, what we know of reaching it, and where it sits in the book."""

    ip: str
    port: int
    services: int = 0
    #: When the address was last seen advertised or connected (Unix seconds).
    time: int = 0
    last_try: int = 0
    last_success: int = 0
    attempts: int = 0
    #: The IP of the peer that told us about it (itself for our own connections).
    source: str = ""
    in_tried: bool = False
    #: Its slot: bucket * bucket size + position, in the new or the tried table.
    slot: int = -1

    @property
    def key(self) -> Key:
        return (self.ip, self.port)

    def net_address(self) -> NetAddress:
        return NetAddress(self.services, self.ip, self.port, max(0, min(self.time, 2 ** 32 - 1)))

    def is_terrible(self, now: int) -> bool:
        """Core's CAddrInfo::IsTerrible: not worth keeping or sharing."""
        if self.last_try and self.last_try >= now - 60:
            return False  # never remove things tried in the last minute
        if self.time > now + 10 * 60:
            return True  # came in a flying DeLorean
        if self.time == 0 or now - self.time > HORIZON_DAYS * 86400:
            return True  # not seen in recent history
        if self.last_success == 0 and self.attempts >= RETRIES:
            return True  # tried N times and never a success
        if now - self.last_success > MIN_FAIL_DAYS * 86400 and self.attempts >= MAX_FAILURES:
            return True  # N successive failures in the last week
        return False

    def chance(self, now: int) -> float:
        """Core's GetChance: relative odds of being selected for a connection."""
        odds = 0.66 ** min(self.attempts, 8)
        if now - self.last_try < RETRY_INTERVAL:
            odds *= 0.01
        return odds


class _RandomSet:
    """Keys with O(1) add, remove and uniform random choice (Core's vRandom)."""

    __slots__ = ("items", "_index")

    def __init__(self) -> None:
        self.items: List[Key] = []
        self._index: Dict[Key, int] = {}

    def add(self, key: Key) -> None:
        self._index[key] = len(self.items)
        self.items.append(key)

    def remove(self, key: Key) -> None:
        i = self._index.pop(key)
        last = self.items.pop()
        if i < len(self.items):
            self.items[i] = last
            self._index[last] = i

    def __len__(self) -> int:
        return len(self.items)


class AddrMan:
    """Known peer addresses in keyed new/tried tables; ``path`` None keeps it in memory.

    ``key`` (32 bytes) is the secret of the bucket hashes: random unless given (tests)
    or read from peers.json.  The table sizes may be scaled down (tests); the shape
    stays Core's.
    """

    def __init__(self, path: Optional[str], now: Callable[[], float],
                 rng: Optional[random.Random] = None,
                 key: Optional[bytes] = None, new_buckets: int = NEW_BUCKET_COUNT,
                 tried_buckets: int = TRIED_BUCKET_COUNT, bucket_size: int = BUCKET_SIZE
                 ) -> None:
        self.path = path
        self._now = now
        self._rng = rng or random.SystemRandom()
        self.new_buckets = new_buckets
        self.tried_buckets = tried_buckets
        self.bucket_size = bucket_size
        self._reset(key or os.urandom(32))
        #: -allowprivatenet: private (RFC1918) addresses are kept as well.
        self.allow_private = False
        self.dirty = False

    def _reset(self, key: bytes) -> None:
        self.key = key
        self._entries: Dict[Key, AddrInfo] = {}
        self._new: List[Optional[Key]] = [None] * (self.new_buckets * self.bucket_size)
        self._tried: List[Optional[Key]] = [None] * (self.tried_buckets * self.bucket_size)
        self._new_keys = _RandomSet()
        self._tried_keys = _RandomSet()

    def _time(self) -> int:
        return int(self._now())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Key) -> bool:
        return key in self._entries

    @property
    def new_count(self) -> int:
        return len(self._new_keys)

    @property
    def tried_count(self) -> int:
        return len(self._tried_keys)

    def get(self, ip: str, port: int) -> Optional[AddrInfo]:
        return self._entries.get((ip, port))

    def acceptable(self, addr: NetAddress) -> bool:
        """Whether ``addr`` may enter the book: routable (so valid) and with a port; with
        -allowprivatenet an RFC1918 address is taken too, as Dash's IsRoutable does."""
        return addr.port != 0 and (addr.is_routable() or (
            self.allow_private and addr.is_valid() and addr.is_rfc1918()))

    # ------------------------------------------------------------ bucket positions

    def _hash(self, *parts: bytes) -> int:
        """Keyed 64-bit hash of length-prefixed ``parts`` (Core hashes nKey with them)."""
        data = b"".join(bytes([len(p)]) + p for p in parts)
        return int.from_bytes(hashlib.blake2b(data, digest_size=8, key=self.key).digest(),
                              "little")

    def _group(self, addr: NetAddress) -> bytes:
        return addr.group()

    def _source_group(self, info: AddrInfo) -> bytes:
        return self._group(NetAddress(0, info.source or info.ip, 0))

    def _slot(self, table: bytes, bucket: int, addr: NetAddress) -> int:
        position = self._hash(table, bucket.to_bytes(4, "little"), _addr_key(addr)) \
            % self.bucket_size
        return bucket * self.bucket_size + position

    def _new_slot(self, addr: NetAddress, source_group: bytes) -> int:
        """Core's GetNewBucket and GetBucketPosition."""
        spread = self._hash(self._group(addr), source_group) % NEW_BUCKETS_PER_SOURCE_GROUP
        bucket = self._hash(source_group, spread.to_bytes(8, "little")) % self.new_buckets
        return self._slot(b"N", bucket, addr)

    def _tried_slot(self, addr: NetAddress) -> int:
        """Core's GetTriedBucket and GetBucketPosition."""
        spread = self._hash(_addr_key(addr)) % TRIED_BUCKETS_PER_GROUP
        bucket = self._hash(self._group(addr), spread.to_bytes(8, "little")) % self.tried_buckets
        return self._slot(b"K", bucket, addr)

    # ------------------------------------------------------------ table operations

    def _place(self, info: AddrInfo, tried: bool, slot: int) -> None:
        """Put ``info`` (in no table) into a free ``slot`` of the new or tried table."""
        info.in_tried = tried
        info.slot = slot
        (self._tried if tried else self._new)[slot] = info.key
        (self._tried_keys if tried else self._new_keys).add(info.key)
        self._entries[info.key] = info

    def _unplace(self, info: AddrInfo) -> None:
        """Take ``info`` out of its table (it stays known only if placed again)."""
        (self._tried if info.in_tried else self._new)[info.slot] = None
        (self._tried_keys if info.in_tried else self._new_keys).remove(info.key)
        del self._entries[info.key]

    def _insert_new(self, info: AddrInfo, slot: int, now: int) -> bool:
        """Core's Add_ collision rule: only a terrible occupant of the one slot gives way."""
        occupant = self._new[slot]
        if occupant is not None:
            if not self._entries[occupant].is_terrible(now):
                return False
            self._unplace(self._entries[occupant])
        self._place(info, False, slot)
        return True

    # ------------------------------------------------------------ feeding

    def add(self, addrs: Iterable[NetAddress], source: Optional[NetAddress] = None,
            penalty: int = 0) -> int:
        """Add advertised addresses (Core's Add); returns how many were new.

        Times in the future are clamped to "5 days ago", as Core does; ``penalty``
        seconds are taken off the time of addresses relayed by others.  Each address
        costs a constant amount of work, whatever the size of the book.
        """
        now = self._time()
        added = 0
        group = self._group(source) if source is not None else b""
        for addr in addrs:
            if not self.acceptable(addr):
                continue
            seen = addr.time if addr.time is not None else now
            if seen <= 100000000 or seen > now + 10 * 60:
                seen = now - 5 * 86400
            if source is None or source.ip != addr.ip:
                seen = max(0, seen - penalty)
            source_ip, source_group = (source.ip, group) if source is not None \
                else (addr.ip, self._group(addr))
            added += self._add_one(addr, source_ip, source_group, seen, now)
        return added

    def _add_one(self, addr: NetAddress, source_ip: str, source_group: bytes, seen: int,
                 now: int) -> bool:
        info = self._entries.get((addr.ip, addr.port))
        if info is not None:
            if addr.services & ~info.services:
                info.services |= addr.services
                self.dirty = True
            # Core: move the time forward only by more than an hour (a day if not recent).
            interval = 60 * 60 if now - seen < 24 * 60 * 60 else 24 * 60 * 60
            if seen > info.time + interval or info.time == 0:
                info.time = seen
                self.dirty = True
            return False
        info = AddrInfo(addr.ip, addr.port, addr.services, seen, source=source_ip)
        if not self._insert_new(info, self._new_slot(addr, source_group), now):
            return False
        self.dirty = True
        return True

    def attempt(self, ip: str, port: int, count_failure: bool = True) -> None:
        """An outbound attempt to a known address starts (Core's Attempt)."""
        info = self._entries.get((ip, port))
        if info is None:
            return
        info.last_try = self._time()
        if count_failure:
            info.attempts += 1
        self.dirty = True

    def good(self, addr: NetAddress) -> None:
        """An outbound connection to ``addr`` completed its handshake (Core's Good).

        The address moves to the tried table (an unknown one enters it directly); a
        tried entry in its slot goes back to the new table.
        """
        if not self.acceptable(addr):
            return
        now = self._time()
        info = self._entries.get((addr.ip, addr.port))
        if info is None:
            info = AddrInfo(addr.ip, addr.port, addr.services, now, source=addr.ip)
        elif not info.in_tried:
            self._unplace(info)
        if not info.in_tried:
            self._make_tried(info, addr)
        info.services = addr.services or info.services
        info.time = now
        info.last_success = now
        info.last_try = now
        info.attempts = 0
        self.dirty = True

    def _make_tried(self, info: AddrInfo, addr: NetAddress) -> None:
        """Core's MakeTried: the slot's previous tried occupant returns to new."""
        slot = self._tried_slot(addr)
        occupant_key = self._tried[slot]
        if occupant_key is not None:
            evicted = self._entries[occupant_key]
            self._unplace(evicted)
            new_slot = self._new_slot(evicted.net_address(), self._source_group(evicted))
            displaced = self._new[new_slot]
            if displaced is not None:
                self._unplace(self._entries[displaced])
            self._place(evicted, False, new_slot)
        self._place(info, True, slot)

    def remove(self, ip: str, port: int) -> None:
        """Forget an address (e.g. our own, found through a self-connection)."""
        info = self._entries.get((ip, port))
        if info is not None:
            self._unplace(info)
            self.dirty = True

    # ------------------------------------------------------------ reading

    def select(self, exclude: Callable[[AddrInfo], bool]) -> Optional[AddrInfo]:
        """A random address worth an outbound attempt, or None (Core's Select).

        Tried or new table with even odds, then random entries accepted with Core's
        GetChance (fewer failures, not tried recently), the odds growing each draw.
        Entries tried in the last ``RETRY_INTERVAL`` seconds and those for which
        ``exclude(info)`` is true (banned, connected, our own...) are drawn again, up
        to ``SELECT_TRIES`` times.
        """
        now = self._time()
        for _ in range(SELECT_TRIES):
            info = self._draw(now)
            if info is None:
                return None
            if now - info.last_try >= RETRY_INTERVAL and not exclude(info):
                return info
        return None

    def _draw(self, now: int) -> Optional[AddrInfo]:
        tried, new = self._tried_keys.items, self._new_keys.items
        if not tried and not new:
            return None
        keys = tried if tried and (not new or self._rng.random() < 0.5) else new
        factor = 1.0
        while True:
            info = self._entries[keys[self._rng.randrange(len(keys))]]
            if self._rng.random() < factor * info.chance(now):
                return info
            factor *= 1.2

    def get_addr(self, limit: int = MAX_ADDR_TO_SEND) -> List[NetAddress]:
        """Addresses for a getaddr answer: random, not terrible, at most 23% of the book.

        A partial shuffle stops as soon as enough are found (Core's GetAddr).
        """
        now = self._time()
        keys = self._new_keys.items + self._tried_keys.items
        count = min(limit, len(keys) * GETADDR_MAX_PCT // 100)
        if count <= 0 and keys:
            count = min(limit, len(keys))
        answer: List[NetAddress] = []
        for i in range(len(keys)):
            if len(answer) >= count:
                break
            j = self._rng.randrange(i, len(keys))
            keys[i], keys[j] = keys[j], keys[i]
            info = self._entries[keys[i]]
            if not info.is_terrible(now):
                answer.append(info.net_address())
        return answer

    def entries(self) -> List[AddrInfo]:
        return list(self._entries.values())

    # ------------------------------------------------------------ persistence

    def load(self) -> None:
        """Read the file; a damaged file is logged and the book starts empty."""
        if self.path is None or not os.path.exists(self.path):
            return
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            if not isinstance(data, dict) or data.get("version") not in \
                    (FILE_VERSION,) + _OLD_FILE_VERSIONS:
                raise ValueError("unknown file version")
            if data["version"] == FILE_VERSION:
                key = bytes.fromhex(data["key"])
                if len(key) != 32 or data["fields"] != list(_FIELDS):
                    raise ValueError("bad key or fields")
                items = [dict(zip(_FIELDS, row)) for row in data["addresses"]]
            else:
                key, items = os.urandom(32), data["addresses"]
            parsed = [_parse_entry(item) for item in items]
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warn("Invalid or missing {name} ({error}); recreating it", name=FILE_NAME,
                     error=e)
            self.dirty = True
            return
        self._reset(key)
        now = self._time()
        # Tried first: their slots depend on nothing else; then new ones, each where
        # its source put it.  With the same key and table sizes every address finds
        # its old slot; otherwise collisions drop the later one.
        source_groups: Dict[str, bytes] = {}  # many entries share a source
        for info, addr, source in sorted(parsed, key=lambda entry: not entry[0].in_tried):
            if info.key in self._entries or not self.acceptable(addr):
                continue
            if info.in_tried:
                slot = self._tried_slot(addr)
                if self._tried[slot] is None:
                    self._place(info, True, slot)
                continue
            group = source_groups.get(source.ip)
            if group is None:
                group = source_groups[source.ip] = self._group(source)
            self._insert_new(info, self._new_slot(addr, group), now)
        self.dirty = data["version"] != FILE_VERSION
        log.info("Loaded {count} addresses from {name} ({new} new, {tried} tried)",
                 count=len(self), name=FILE_NAME, new=self.new_count, tried=self.tried_count)

    def save(self) -> None:
        """Write the key and one row per address (rows: ``_FIELDS``, compact and fast)."""
        if self.path is not None:
            write_json_atomic(self.path, {
                "version": FILE_VERSION, "key": self.key.hex(), "fields": list(_FIELDS),
                "addresses": [[i.ip, i.port, i.services, i.time, i.last_try, i.last_success,
                               i.attempts, i.source, i.in_tried]
                              for i in self._entries.values()]})
        self.dirty = False


def _addr_key(addr: NetAddress) -> bytes:
    """Core's CService::GetKey: the 16 address bytes and the port."""
    return addr.packed + addr.port.to_bytes(2, "big")


def _parse_entry(item: dict) -> Tuple[AddrInfo, NetAddress, NetAddress]:
    """An entry of peers.json, its address and its source (version 1: no source, itself)."""
    addr = NetAddress(int(item["services"]), item["ip"], int(item["port"]))
    source = NetAddress(0, item.get("source") or addr.ip, 0)
    info = AddrInfo(addr.ip, addr.port, addr.services, int(item["time"]), int(item["last_try"]),
                    int(item["last_success"]), int(item["attempts"]), source.ip,
                    bool(item.get("tried", False)))
    return info, addr, source
