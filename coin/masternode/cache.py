"""``mncache.dat`` (and ``mnpayments.dat``): versioned, checksummed, written atomically.

Layout: ``var_bytes(name) || u32 version || message start || payload || sha256d(all
before)``.  A file of another name, version or network, or with a bad checksum or payload,
raises :class:`CacheError`: the service logs it and starts empty (the list is rebuilt
from the network), as the reference node does with a corrupt cache.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from coin.masternode.record import STATE_NAMES, Masternode
from coin.p2p.messages import MasternodeBroadcastMessage, MasternodePingMessage, PaymentVoteMessage
from coin.primitives.hashes import sha256d
from coin.primitives.serialize import ByteReader, DeserializationError, compact_size, i32, i64, var_bytes
from coin.primitives.transaction import OutPoint
from coin.storage.atomicfile import write_file_atomic

MNCACHE_NAME = b"MasternodeCache"
MNCACHE_VERSION = 1


class CacheError(Exception):
    """The file is not a usable cache (foreign, old, corrupt)."""


def write_cache(path: str, name: bytes, version: int, message_start: bytes, payload: bytes) -> None:
    body = var_bytes(name) + i32(version) + message_start + payload
    write_file_atomic(path, body + sha256d(body))


def read_cache(path: str, name: bytes, version: int, message_start: bytes) -> bytes:
    """The payload of a cache file; raises :class:`CacheError` or OSError."""
    with open(path, "rb") as f:
        data = f.read()
    body, digest = data[:-32], data[-32:]
    if len(data) < 32 or sha256d(body) != digest:
        raise CacheError("checksum mismatch, data corrupted")
    r = ByteReader(body)
    try:
        if r.read_var_bytes() != name:
            raise CacheError("invalid file name magic, not a %s file" % name.decode())
        found = r.read_i32()
        if found != version:
            raise CacheError("unsupported version %d (expected %d)" % (found, version))
        if r.read(4) != message_start:
            raise CacheError("invalid network magic number")
        return r.read(r.remaining())
    except DeserializationError as e:
        raise CacheError(str(e)) from None


Spent = Dict[OutPoint, Tuple[int, int]]


def encode_masternodes(masternodes: List[Masternode], spent: Spent) -> bytes:
    """Each entry: broadcast, latest ping, state, conf hash, last paid, spend record."""
    parts = [compact_size(len(masternodes))]
    for mn in masternodes:
        height, before = spent.get(mn.outpoint, (-1, 0))
        parts += [var_bytes(mn.broadcast.serialize()), var_bytes(mn.last_ping.serialize()),
                  bytes((mn.state,)), mn.collateral_hash, i32(mn.collateral_height),
                  i32(mn.last_paid_height),
                  i64(mn.last_paid_time), i32(height), bytes((before,))]
    return b"".join(parts)


def decode_masternodes(payload: bytes) -> Tuple[List[Masternode], Spent]:
    r = ByteReader(payload)
    masternodes, spent = [], {}
    try:
        for _ in range(r.read_compact_size()):
            mnb = MasternodeBroadcastMessage.deserialize(r.read_var_bytes())
            ping = MasternodePingMessage.deserialize(r.read_var_bytes())
            state = r.read_u8()
            if state not in STATE_NAMES:
                raise ValueError("unknown state %d" % state)
            mn = Masternode(mnb, r.read(32), r.read_i32(), state, r.read_i32(), r.read_i64())
            mn.last_ping = ping
            height, before = r.read_i32(), r.read_u8()
            if height >= 0:
                spent[mn.outpoint] = (height, before)
            masternodes.append(mn)
        r.assert_end()
    except (DeserializationError, ValueError) as e:
        raise CacheError("bad entry: %s" % e) from None
    return masternodes, spent


MNPAYMENTS_NAME = b"MasternodePayments"
MNPAYMENTS_VERSION = 1


def encode_votes(votes: List[PaymentVoteMessage]) -> bytes:
    return compact_size(len(votes)) + b"".join(var_bytes(v.serialize()) for v in votes)


def decode_votes(payload: bytes) -> List[PaymentVoteMessage]:
    r = ByteReader(payload)
    try:
        votes = [PaymentVoteMessage.deserialize(r.read_var_bytes())
                 for _ in range(r.read_compact_size())]
        r.assert_end()
    except (DeserializationError, ValueError) as e:
        raise CacheError("bad vote: %s" % e) from None
    return votes
