"""Network addresses as the wire carries them (Core's CNetAddr, CService and CAddress).

On the wire an address is 16 bytes: IPv6, with IPv4 as an IPv4-mapped IPv6 address
(``::ffff:a.b.c.d``) and Tor v2 hidden services as OnionCat (``fd87:d87e:eb43::/48``).
The port is big-endian.  In text an address is shown as Core's ``ToStringIP`` shows it:
``1.2.3.4``, ``2001:db8::1`` or ``abcdefghijklmnop.onion``.

The classification methods (:meth:`NetAddress.is_routable` and friends) follow Core
0.12's ``CNetAddr`` checks.
"""

from __future__ import annotations

import base64
import ipaddress
import struct
from dataclasses import dataclass, field
from typing import Optional, Union

from coin.primitives.serialize import ByteReader, u32, u64

IPV4_PREFIX = bytes(10) + b"\xff\xff"
ONIONCAT_PREFIX = bytes.fromhex("fd87d87eeb43")
_PORT = struct.Struct(">H")

# Networks, as Core's GetNetwork() names them in getnetworkinfo.
NET_UNROUTABLE = "unroutable"
NET_IPV4 = "ipv4"
NET_IPV6 = "ipv6"
NET_ONION = "onion"
#: Core's network numbers, the first byte of a group.
_GROUP_UNROUTABLE, _GROUP_IPV4, _GROUP_IPV6, _GROUP_ONION = 0, 1, 2, 3


def ip_to_bytes(text: str) -> bytes:
    """IPv4, IPv6 or ``.onion`` (v2, 16 characters) text -> the 16 wire bytes.

    Raises ValueError for anything else (host names are not resolved here).
    """
    if not isinstance(text, str):
        raise ValueError("IP address must be text")
    if text.endswith(".onion"):
        label = text[:-len(".onion")]
        if len(label) != 16:
            raise ValueError("invalid onion address %r" % text)
        try:
            raw = base64.b32decode(label.upper())
        except ValueError:
            raise ValueError("invalid onion address %r" % text) from None
        return ONIONCAT_PREFIX + raw
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError("invalid IP address %r" % text) from None
    if ip.version == 4:
        return IPV4_PREFIX + ip.packed
    return ip.packed


def bytes_to_ip(raw: bytes) -> str:
    """The 16 wire bytes -> text: dotted IPv4 for IPv4-mapped, ``.onion`` for OnionCat."""
    if len(raw) != 16:
        raise ValueError("an address is 16 bytes, not %d" % len(raw))
    raw = bytes(raw)
    if raw[:12] == IPV4_PREFIX:
        return "%d.%d.%d.%d" % tuple(raw[12:])
    if raw[:6] == ONIONCAT_PREFIX:
        return base64.b32encode(raw[6:]).decode("ascii").lower() + ".onion"
    return ipaddress.IPv6Address(raw).compressed


@dataclass(frozen=True, slots=True)
class NetAddress:
    """``services``, ``ip`` (text, canonical), ``port`` and, in ``addr`` messages, ``time``.

    ``ip`` may be given as text or as the 16 wire bytes; it is stored as canonical text
    (``"::ffff:1.2.3.4"`` becomes ``"1.2.3.4"``), so equal addresses compare equal.
    """

    services: int
    ip: str
    port: int
    time: Optional[int] = None
    packed: bytes = field(init=False, repr=False, compare=False)

    def __init__(self, services: int, ip: Union[str, bytes], port: int,
                 time: Optional[int] = None) -> None:
        if isinstance(ip, (bytes, bytearray, memoryview)):
            packed = bytes(ip)
            text = bytes_to_ip(packed)
        else:
            packed = ip_to_bytes(ip)
            text = bytes_to_ip(packed)
        if not 0 <= services < 2 ** 64:
            raise ValueError("services out of range")
        if not 0 <= port <= 0xFFFF:
            raise ValueError("port out of range")
        if time is not None and not 0 <= time < 2 ** 32:
            raise ValueError("time out of range")
        object.__setattr__(self, "services", services)
        object.__setattr__(self, "ip", text)
        object.__setattr__(self, "port", port)
        object.__setattr__(self, "time", time)
        object.__setattr__(self, "packed", packed)

    # -- wire format -------------------------------------------------------------

    def serialize(self, with_time: bool) -> bytes:
        """26 bytes (services, ip, port), or 30 with the leading uint32 ``time``.

        ``version`` messages carry addresses without time, ``addr`` messages with it.
        """
        body = u64(self.services) + self.packed + _PORT.pack(self.port)
        if not with_time:
            return body
        if self.time is None:
            raise ValueError("address has no time to serialize")
        return u32(self.time) + body

    @classmethod
    def read(cls, r: ByteReader, with_time: bool) -> "NetAddress":
        time = r.read_u32() if with_time else None
        services = r.read_u64()
        packed = r.read(16)
        (port,) = _PORT.unpack(r.read(2))
        return cls(services, packed, port, time)

    # -- classification (Core 0.12 CNetAddr) ---------------------------------------

    def _byte(self, n: int) -> int:
        """Core's GetByte(n): bytes counted from the end."""
        return self.packed[15 - n]

    def is_ipv4(self) -> bool:
        return self.packed[:12] == IPV4_PREFIX

    def is_tor(self) -> bool:
        return self.packed[:6] == ONIONCAT_PREFIX

    def is_ipv6(self) -> bool:
        return not self.is_ipv4() and not self.is_tor()

    def is_rfc1918(self) -> bool:
        """IPv4 private networks (10/8, 192.168/16, 172.16/12)."""
        a, b = self._byte(3), self._byte(2)
        return self.is_ipv4() and (a == 10 or (a == 192 and b == 168) or (a == 172 and 16 <= b <= 31))

    def is_rfc2544(self) -> bool:
        """IPv4 inter-network communications (198.18/15)."""
        return self.is_ipv4() and self._byte(3) == 198 and self._byte(2) in (18, 19)

    def is_rfc3927(self) -> bool:
        """IPv4 autoconfig (169.254/16)."""
        return self.is_ipv4() and self._byte(3) == 169 and self._byte(2) == 254

    def is_rfc6598(self) -> bool:
        """IPv4 ISP-level NAT (100.64/10)."""
        return self.is_ipv4() and self._byte(3) == 100 and 64 <= self._byte(2) <= 127

    def is_rfc5737(self) -> bool:
        """IPv4 documentation addresses (192.0.2/24, 198.51.100/24, 203.0.113/24)."""
        abc = (self._byte(3), self._byte(2), self._byte(1))
        return self.is_ipv4() and abc in ((192, 0, 2), (198, 51, 100), (203, 0, 113))

    def is_rfc3849(self) -> bool:
        """IPv6 documentation addresses (2001:db8::/32)."""
        return self.packed[:4] == b"\x20\x01\x0d\xb8"

    def is_rfc3964(self) -> bool:
        """IPv6 6to4 tunnelling (2002::/16)."""
        return self.packed[:2] == b"\x20\x02"

    def is_rfc6052(self) -> bool:
        """IPv6 well-known prefix (64:ff9b::/96)."""
        return self.packed[:12] == b"\x00\x64\xff\x9b" + bytes(8)

    def is_rfc4380(self) -> bool:
        """IPv6 Teredo tunnelling (2001::/32)."""
        return self.packed[:4] == b"\x20\x01\x00\x00"

    def is_rfc4862(self) -> bool:
        """IPv6 autoconfig (fe80::/64)."""
        return self.packed[:8] == b"\xfe\x80" + bytes(6)

    def is_rfc4193(self) -> bool:
        """IPv6 unique local (fc00::/7)."""
        return self.packed[0] & 0xFE == 0xFC

    def is_rfc6145(self) -> bool:
        """IPv6 IPv4-translated address (::ffff:0:0:0/96)."""
        return self.packed[:12] == bytes(8) + b"\xff\xff\x00\x00"

    def is_rfc4843(self) -> bool:
        """IPv6 ORCHID (2001:10::/28)."""
        p = self.packed
        return p[:3] == b"\x20\x01\x00" and p[3] & 0xF0 == 0x10

    def is_local(self) -> bool:
        """Loopback: IPv4 127/8 and 0/8, IPv6 ::1."""
        if self.is_ipv4() and self._byte(3) in (127, 0):
            return True
        return self.packed == bytes(15) + b"\x01"

    def is_valid(self) -> bool:
        """Core's IsValid: not unspecified, not a documentation or broadcast address."""
        p = self.packed
        # 3-byte shifted addresses from pre-0.2.9 addr messages.
        if p[:9] == bytes(7) + b"\xff\xff":
            return False
        if p == bytes(16):
            return False
        if self.is_rfc3849():
            return False
        if self.is_ipv4() and p[12:] in (b"\xff\xff\xff\xff", b"\x00\x00\x00\x00"):
            return False
        return True

    def is_routable(self) -> bool:
        """Core's IsRoutable: valid and not private, link-local, documentation or local."""
        return self.is_valid() and not (
            self.is_rfc1918() or self.is_rfc2544() or self.is_rfc3927() or self.is_rfc4862()
            or self.is_rfc6598() or self.is_rfc5737() or (self.is_rfc4193() and not self.is_tor())
            or self.is_rfc4843() or self.is_local())

    def group(self, distinct_unroutable: bool = False) -> bytes:
        """Core's GetGroup: the network group addresses and peers are spread over.

        A network class byte and a prefix: IPv4 /16 (6to4 and Teredo by the IPv4 address
        they carry), IPv6 /32 (he.net /36), Tor the first 4 bits of the onion.  All
        unroutable addresses (loopback, private) are one group, as in Core -- unless
        ``distinct_unroutable``, then each is its own: regtest networks on loopback
        addresses (127.0.0.1, 127.0.0.2...) model distinct peers that way.
        """
        p = self.packed
        if not self.is_routable():
            return bytes([_GROUP_UNROUTABLE]) + (p if distinct_unroutable else b"")
        if self.is_ipv4() or self.is_rfc6145() or self.is_rfc6052():
            return bytes([_GROUP_IPV4]) + p[12:14]
        if self.is_rfc3964():
            return bytes([_GROUP_IPV4]) + p[2:4]
        if self.is_rfc4380():
            return bytes([_GROUP_IPV4, p[12] ^ 0xFF, p[13] ^ 0xFF])
        if self.is_tor():
            return bytes([_GROUP_ONION, p[6] | 0x0F])
        if p[:4] == b"\x20\x01\x04\x70":
            return bytes([_GROUP_IPV6]) + p[:4] + bytes([p[4] | 0x0F])
        return bytes([_GROUP_IPV6]) + p[:4]

    @property
    def network(self) -> str:
        """``unroutable``, ``ipv4``, ``ipv6`` or ``onion`` (Core's GetNetwork)."""
        if not self.is_routable():
            return NET_UNROUTABLE
        if self.is_ipv4():
            return NET_IPV4
        if self.is_tor():
            return NET_ONION
        return NET_IPV6

    def with_time(self, time: Optional[int]) -> "NetAddress":
        return NetAddress(self.services, self.packed, self.port, time)

    def __str__(self) -> str:
        """``ip:port``, with IPv6 in brackets (Core's ToStringIPPort)."""
        if self.is_ipv6():
            return "[%s]:%d" % (self.ip, self.port)
        return "%s:%d" % (self.ip, self.port)
