"""The ban list: IP addresses and subnets refused until a time (Core's BanMan).

Entries are keyed by :class:`ipaddress` networks (a single address is a /32 or
/128 network, as Core's ``CSubNet``).  IPv4-mapped IPv6 addresses are treated as
the IPv4 address they carry.  The list lives in ``<datadir>/banlist.json``,
written atomically (temporary file, fsync, rename); expired entries are swept
when the list is read, listed or saved.  The list is bounded: when
``MAX_ENTRIES`` is reached the entry that expires soonest makes room.
"""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Union

from twisted.logger import Logger

from coin.storage.atomicfile import write_file_atomic

log = Logger()

FILE_NAME = "banlist.json"
FILE_VERSION = 1
#: Core's DEFAULT_MISBEHAVING_BANTIME (seconds).
DEFAULT_BANTIME = 24 * 60 * 60
#: Most entries kept; a flood of misbehaving addresses cannot grow the list further.
MAX_ENTRIES = 10_000

REASON_UNKNOWN = "unknown"
REASON_NODE_MISBEHAVING = "node misbehaving"
REASON_MANUALLY_ADDED = "manually added"
_REASONS = (REASON_UNKNOWN, REASON_NODE_MISBEHAVING, REASON_MANUALLY_ADDED)

Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]


def normalize_ip(ip: Union[str, Address]) -> Address:
    """An address object, with IPv4-mapped IPv6 (``::ffff:a.b.c.d``) turned into IPv4."""
    addr = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return addr.ipv4_mapped
        if addr.scope_id:
            return ipaddress.IPv6Address(str(addr).split("%", 1)[0])
    return addr


def parse_subnet(text: str) -> Network:
    """``1.2.3.4``, ``1.2.3.0/24``, ``1.2.3.0/255.255.255.0`` or IPv6 -> a network.

    Host bits are cleared (Core's CSubNet does the same).  Raises ValueError.
    Host names are not resolved.
    """
    if not isinstance(text, str) or not text or text.strip() != text:
        raise ValueError("invalid IP/subnet")
    base, slash, mask = text.partition("/")
    addr = normalize_ip(base)
    if not slash:
        return ipaddress.ip_network(addr)
    if not mask:
        raise ValueError("invalid IP/subnet")
    if isinstance(addr, ipaddress.IPv4Address) and ":" in base:
        # An IPv4-mapped address with an IPv6 prefix length: shift it to IPv4.
        if not mask.isdigit() or not 96 <= int(mask) <= 128:
            raise ValueError("invalid IP/subnet")
        mask = str(int(mask) - 96)
    if isinstance(addr, ipaddress.IPv4Address):
        return ipaddress.IPv4Network("%s/%s" % (addr, mask), strict=False)
    if not mask.isdigit():
        raise ValueError("invalid IP/subnet")
    return ipaddress.IPv6Network("%s/%s" % (addr, mask), strict=False)


def subnet_text(net: Network) -> str:
    """Core's CSubNet::ToString: ``10.0.0.1/32``, ``10.0.0.0/24``, ``::1/128``."""
    return "%s/%d" % (net.network_address, net.prefixlen)


def _sort_key(net: Network) -> tuple:
    """Core's map order: the network as 16 bytes (IPv4 mapped), then the mask."""
    if net.version == 4:
        packed = bytes(10) + b"\xff\xff" + net.network_address.packed
        prefix = net.prefixlen + 96
    else:
        packed = net.network_address.packed
        prefix = net.prefixlen
    return (packed, prefix)


@dataclass
class BanEntry:
    """One ban: when it was made, until when it holds, and why."""

    created: int
    until: int
    reason: str = REASON_UNKNOWN

    def to_json(self, net: Network) -> dict:
        return {"address": subnet_text(net), "banned_until": self.until,
                "ban_created": self.created, "ban_reason": self.reason}


class BanMan:
    """The set of banned subnets, persisted in ``path`` (None: memory only)."""

    def __init__(self, path: Optional[str], now: Callable[[], float],
                 default_bantime: int = DEFAULT_BANTIME, max_entries: int = MAX_ENTRIES) -> None:
        self.path = path
        self._now = now
        self.default_bantime = default_bantime if default_bantime > 0 else DEFAULT_BANTIME
        self.max_entries = max_entries
        self._entries: Dict[Network, BanEntry] = {}
        #: The entries wider than one address (checked by scanning; hosts by lookup).
        self._subnets: set = set()
        #: True when the in-memory list differs from the file.
        self.dirty = False

    def _time(self) -> int:
        return int(self._now())

    # ------------------------------------------------------------ queries

    def is_banned(self, ip: Union[str, Address]) -> bool:
        """Whether ``ip`` lies in any banned subnet whose ban has not expired."""
        try:
            addr = normalize_ip(ip)
        except ValueError:
            return False
        now = self._time()
        entry = self._entries.get(ipaddress.ip_network(addr))
        if entry is not None and entry.until > now:
            return True
        for net in self._subnets:
            if net.version == addr.version and addr in net and self._entries[net].until > now:
                return True
        return False

    def is_subnet_banned(self, net: Network) -> bool:
        """Whether exactly ``net`` is banned and the ban has not expired (Core)."""
        entry = self._entries.get(net)
        return entry is not None and entry.until > self._time()

    def banned(self) -> List[dict]:
        """listbanned's entries, expired ones swept first, in Core's map order."""
        self.sweep()
        return [self._entries[net].to_json(net) for net in sorted(self._entries, key=_sort_key)]

    def __len__(self) -> int:
        return len(self._entries)

    # ------------------------------------------------------------ changes

    def ban(self, net: Network, reason: str = REASON_MANUALLY_ADDED, bantime: int = 0,
            absolute: bool = False) -> bool:
        """Ban ``net``; ``bantime`` <= 0 means -bantime from now.  Core's CConnman::Ban.

        An existing ban is only ever extended.  Returns whether the list changed.
        """
        now = self._time()
        if bantime <= 0:
            until = now + self.default_bantime
        else:
            until = bantime if absolute else now + bantime
        existing = self._entries.get(net)
        if existing is not None:
            if existing.until >= until:
                return False
            existing.until = until
            existing.reason = reason
            existing.created = now
        else:
            if len(self._entries) >= self.max_entries:
                self.sweep()
            if len(self._entries) >= self.max_entries:
                soonest = min(self._entries, key=lambda n: self._entries[n].until)
                self._remove(soonest)
            self._entries[net] = BanEntry(now, until, reason)
            if net.num_addresses > 1:
                self._subnets.add(net)
        self.dirty = True
        return True

    def unban(self, net: Network) -> bool:
        """Lift the ban of exactly ``net``; False when it was not banned."""
        if net not in self._entries:
            return False
        self._remove(net)
        self.dirty = True
        return True

    def _remove(self, net: Network) -> None:
        del self._entries[net]
        self._subnets.discard(net)

    def clear(self) -> None:
        self._entries.clear()
        self._subnets.clear()
        self.dirty = True

    def sweep(self) -> None:
        """Drop expired entries."""
        now = self._time()
        expired = [net for net, entry in self._entries.items() if entry.until <= now]
        for net in expired:
            self._remove(net)
        if expired:
            self.dirty = True

    # ------------------------------------------------------------ persistence

    def load(self) -> None:
        """Read the file if it exists; a damaged file is logged and ignored (as Core)."""
        if self.path is None or not os.path.exists(self.path):
            return
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            if not isinstance(data, dict) or data.get("version") != FILE_VERSION:
                raise ValueError("unknown file version")
            entries: Dict[Network, BanEntry] = {}
            for item in data["banned"][:self.max_entries]:
                net = parse_subnet(item["address"])
                reason = item.get("ban_reason", REASON_UNKNOWN)
                entries[net] = BanEntry(int(item["ban_created"]), int(item["banned_until"]),
                                        reason if reason in _REASONS else REASON_UNKNOWN)
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warn("Invalid or missing {name} ({error}); recreating it",
                     name=FILE_NAME, error=e)
            self.dirty = True
            return
        self._entries = entries
        self._subnets = {net for net in entries if net.num_addresses > 1}
        self.dirty = False
        self.sweep()
        log.info("Loaded {count} banned node ips/subnets from {name}", count=len(entries),
                 name=FILE_NAME)

    def save(self) -> None:
        """Write the swept list atomically (temporary file, fsync, rename)."""
        self.sweep()
        if self.path is None:
            self.dirty = False
            return
        entries = [self._entries[net].to_json(net) for net in sorted(self._entries, key=_sort_key)]
        write_json_atomic(self.path, {"version": FILE_VERSION, "banned": entries})
        self.dirty = False


def write_json_atomic(path: str, data: object) -> None:
    """Write ``data`` as compact JSON to ``path`` so a crash leaves the old or the new file."""
    write_file_atomic(path, json.dumps(data, separators=(",", ":")).encode("utf-8"))
