"""A bounded address book of peers to try (a much simplified Core CAddrMan).

Addresses come from ``addr`` messages and from successful outbound connections.
The book holds at most ``max_entries`` addresses; when it is full, a new
address replaces the worst one: "terrible" entries first (Core's IsTerrible),
then the one with the most failed attempts, then the oldest.  It is saved as
``<datadir>/peers.json`` (atomic write) and read back at start.

Selection for outbound attempts is random among entries that are not banned,
not connected or being connected, not ours, and not tried recently.

Only routable addresses are accepted (as Core), unless ``allow_unroutable`` is
set -- the node sets it on regtest so loopback test networks can use the book.
"""

from __future__ import annotations

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
FILE_VERSION = 1
#: Most addresses kept.
MAX_ENTRIES = 2000
#: Most addresses answered to one getaddr (Core's MAX_ADDR_TO_SEND).
MAX_ADDR_TO_SEND = 1000
#: Percentage of the book a getaddr answer may reveal (Core's ADDRMAN_GETADDR_MAX_PCT).
GETADDR_MAX_PCT = 23
#: An address tried this recently (seconds) is not selected again.
RETRY_INTERVAL = 10 * 60
#: Core's IsTerrible thresholds.
HORIZON_DAYS = 30
RETRIES = 3
MAX_FAILURES = 10
MIN_FAIL_DAYS = 7

Key = Tuple[str, int]


@dataclass
class AddrInfo:
    """One known address and what we know of reaching it."""

    ip: str
    port: int
    services: int = 0
    #: When the address was last seen advertised or connected (Unix seconds).
    time: int = 0
    last_try: int = 0
    last_success: int = 0
    attempts: int = 0

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

    def badness(self, now: int) -> Tuple[int, int, int]:
        """Sort key for eviction: larger is evicted first."""
        return (1 if self.is_terrible(now) else 0, self.attempts, -self.time)

    def to_json(self) -> dict:
        return {"ip": self.ip, "port": self.port, "services": self.services, "time": self.time,
                "last_try": self.last_try, "last_success": self.last_success,
                "attempts": self.attempts}


class AddrMan:
    """Known peer addresses, at most ``max_entries``; ``path`` None keeps it in memory."""

    def __init__(self, path: Optional[str], now: Callable[[], float],
                 max_entries: int = MAX_ENTRIES, allow_unroutable: bool = False,
                 rng: Optional[random.Random] = None) -> None:
        self.path = path
        self._now = now
        self.max_entries = max_entries
        self.allow_unroutable = allow_unroutable
        self._rng = rng or random.SystemRandom()
        self._entries: Dict[Key, AddrInfo] = {}
        self.dirty = False

    def _time(self) -> int:
        return int(self._now())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Key) -> bool:
        return key in self._entries

    def get(self, ip: str, port: int) -> Optional[AddrInfo]:
        return self._entries.get((ip, port))

    def acceptable(self, addr: NetAddress) -> bool:
        """Whether ``addr`` may enter the book (valid; routable unless allowed otherwise)."""
        if addr.port == 0 or not addr.is_valid():
            return False
        return self.allow_unroutable or addr.is_routable()

    # ------------------------------------------------------------ feeding

    def add(self, addrs: Iterable[NetAddress], source: Optional[NetAddress] = None,
            penalty: int = 0) -> int:
        """Add advertised addresses (Core's Add, simplified); returns how many were new.

        Times in the future are clamped to "5 days ago", as Core does; ``penalty``
        seconds are taken off the time of addresses relayed by others.
        """
        now = self._time()
        added = 0
        for addr in addrs:
            if not self.acceptable(addr):
                continue
            seen = addr.time if addr.time is not None else now
            if seen <= 100000000 or seen > now + 10 * 60:
                seen = now - 5 * 86400
            if source is None or source.ip != addr.ip:
                seen = max(0, seen - penalty)
            info = self._entries.get((addr.ip, addr.port))
            if info is not None:
                info.services |= addr.services
                if seen > info.time:
                    info.time = seen
                    self.dirty = True
                continue
            if not self._make_room(now):
                continue
            self._entries[(addr.ip, addr.port)] = AddrInfo(addr.ip, addr.port, addr.services,
                                                           seen)
            added += 1
            self.dirty = True
        return added

    def _make_room(self, now: int) -> bool:
        """Evict the worst entry when full; False if nothing could be evicted."""
        if len(self._entries) < self.max_entries:
            return True
        if not self._entries:
            return False
        worst = max(self._entries.values(), key=lambda info: info.badness(now))
        del self._entries[worst.key]
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
        """An outbound connection to ``addr`` completed its handshake (Core's Good)."""
        if not self.acceptable(addr):
            return
        now = self._time()
        info = self._entries.get((addr.ip, addr.port))
        if info is None:
            if not self._make_room(now):
                return
            info = AddrInfo(addr.ip, addr.port, addr.services, now)
            self._entries[info.key] = info
        info.services = addr.services or info.services
        info.time = now
        info.last_success = now
        info.last_try = now
        info.attempts = 0
        self.dirty = True

    def remove(self, ip: str, port: int) -> None:
        """Forget an address (e.g. our own, found through a self-connection)."""
        if self._entries.pop((ip, port), None) is not None:
            self.dirty = True

    # ------------------------------------------------------------ reading

    def select(self, exclude: Callable[[AddrInfo], bool]) -> Optional[AddrInfo]:
        """A random address worth an outbound attempt, or None.

        Skips entries tried in the last ``RETRY_INTERVAL`` seconds and those for
        which ``exclude(info)`` is true (banned, connected, our own...).
        Addresses with fewer failures are preferred (Core's GetChance, roughly).
        """
        now = self._time()
        candidates = [info for info in self._entries.values()
                      if now - info.last_try >= RETRY_INTERVAL and not exclude(info)]
        if not candidates:
            return None
        weights = [0.66 ** min(info.attempts, 8) for info in candidates]
        return self._rng.choices(candidates, weights=weights, k=1)[0]

    def get_addr(self, limit: int = MAX_ADDR_TO_SEND) -> List[NetAddress]:
        """Addresses for a getaddr answer: random, not terrible, at most 23% of the book."""
        now = self._time()
        count = min(limit, len(self._entries) * GETADDR_MAX_PCT // 100)
        if count <= 0 and self._entries:
            count = min(limit, len(self._entries))
        good = [info for info in self._entries.values() if not info.is_terrible(now)]
        self._rng.shuffle(good)
        return [info.net_address() for info in good[:count]]

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
            if not isinstance(data, dict) or data.get("version") != FILE_VERSION:
                raise ValueError("unknown file version")
            entries: Dict[Key, AddrInfo] = {}
            for item in data["addresses"][:self.max_entries]:
                addr = NetAddress(int(item["services"]), item["ip"], int(item["port"]))
                info = AddrInfo(addr.ip, addr.port, addr.services, int(item["time"]),
                                int(item["last_try"]), int(item["last_success"]),
                                int(item["attempts"]))
                entries[info.key] = info
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warn("Invalid or missing {name} ({error}); recreating it", name=FILE_NAME,
                     error=e)
            self.dirty = True
            return
        self._entries = entries
        self.dirty = False
        log.info("Loaded {count} addresses from {name}", count=len(entries), name=FILE_NAME)

    def save(self) -> None:
        if self.path is not None:
            write_json_atomic(self.path, {
                "version": FILE_VERSION,
                "addresses": [info.to_json() for info in self._entries.values()]})
        self.dirty = False
