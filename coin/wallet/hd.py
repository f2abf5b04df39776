"""BIP32 hierarchical deterministic keys, as Core 0.17's CExtKey / CExtPubKey.

The wallet derives every key from one seed so a backup of the seed restores them
all. Core 0.17 uses hardened steps only: external keys at ``m/0'/0'/k'``, change
keys at ``m/0'/1'/k'`` (:func:`external_path`, :func:`internal_path`).

A derivation that lands on an invalid key (I_L >= n, or a zero private key;
probability below 2**-127) raises :class:`DerivationError`, as Core's ``Derive``
returns false; BIP32 then says to go on with the next index, which is the
caller's choice (the wallet's key counter simply moves on).

Extended keys are strictly checked when parsed (BIP32 test vector 5): the
version, a ``00`` prefix before a private key, a valid compressed public key, a
private key in 1..n-1, and a depth-0 key with zero parent fingerprint and index.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, List, Union

import coincurve

from coin.primitives.base58 import Base58Error, b58check_decode, b58check_encode
from coin.primitives.hashes import hash160

#: Indexes at or above this are hardened (written ``i'``).
HARDENED = 0x80000000
#: Order of the secp256k1 group.
SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
#: version(4) depth(1) fingerprint(4) child(4) chain code(32) key(33).
EXTKEY_SIZE = 78
#: Base58 decoding is quadratic; an extended key is 111 characters.
_MAX_TEXT_LENGTH = 120
_MASTER_HMAC_KEY = b"Bitcoin seed"
_PATH_STEP = re.compile(r"([0-9]+)(['hH]?)\Z")


class ExtKeyError(ValueError):
    """Text or fields that are not a valid extended key."""


class DerivationError(ValueError):
    """The derivation produced an invalid key; BIP32 says to use the next index."""


def parse_path(path: str) -> List[int]:
    """``"m/0'/1/2h"`` -> ``[0x80000000, 1, 0x80000002]``; ``'``, ``h`` or ``H`` mark hardened."""
    parts = path.split("/")
    if parts[0] != "m":
        raise ValueError("key path must start with 'm': %r" % path)
    indexes = []
    for part in parts[1:]:
        match = _PATH_STEP.match(part)
        if match is None:
            raise ValueError("invalid key path step %r in %r" % (part, path))
        index = int(match.group(1))
        if index >= HARDENED:
            raise ValueError("key path index out of range in %r" % path)
        indexes.append(index | HARDENED if match.group(2) else index)
    return indexes


def format_path(indexes: Iterable[int]) -> str:
    """The inverse of :func:`parse_path`, in Core's ``hdkeypath`` style (``'`` for hardened)."""
    return "".join(["m"] + ["/%d'" % (i - HARDENED) if i >= HARDENED else "/%d" % i for i in indexes])


def external_path(k: int) -> str:
    """Core 0.17's path of the k-th receiving key."""
    return "m/0'/0'/%d'" % k


def internal_path(k: int) -> str:
    """Core 0.17's path of the k-th change key."""
    return "m/0'/1'/%d'" % k


def _check_index(index: int) -> None:
    if not 0 <= index <= 0xFFFFFFFF:
        raise ValueError("child index out of range: %r" % index)


def _check_common(depth: int, parent_fingerprint: bytes, child_number: int, chain_code: bytes) -> None:
    if not 0 <= depth <= 255:
        raise ExtKeyError("depth out of range")
    if len(parent_fingerprint) != 4:
        raise ExtKeyError("parent fingerprint must be 4 bytes")
    if not 0 <= child_number <= 0xFFFFFFFF:
        raise ExtKeyError("child number out of range")
    if len(chain_code) != 32:
        raise ExtKeyError("chain code must be 32 bytes")
    if depth == 0 and (parent_fingerprint != b"\x00" * 4 or child_number != 0):
        raise ExtKeyError("zero depth with non-zero parent fingerprint or index")


def _child_depth(depth: int) -> int:
    # Core stores the depth in a byte and would wrap; refuse instead.
    if depth >= 255:
        raise ValueError("maximum derivation depth reached")
    return depth + 1


def _header(version: bytes, depth: int, parent_fingerprint: bytes, child_number: int,
            chain_code: bytes) -> bytes:
    if len(version) != 4:
        raise ValueError("version must be 4 bytes")
    return (version + bytes((depth,)) + parent_fingerprint + child_number.to_bytes(4, "big")
            + chain_code)


def _decode(text: str, version: bytes) -> bytes:
    """Base58Check text -> the 78-byte payload, checking length and version."""
    if len(text) > _MAX_TEXT_LENGTH:
        raise ExtKeyError("extended key too long")
    try:
        raw = b58check_decode(text)
    except Base58Error as e:
        raise ExtKeyError(str(e)) from None
    if len(raw) != EXTKEY_SIZE:
        raise ExtKeyError("invalid extended key length")
    if raw[:4] != version:
        raise ExtKeyError("unexpected extended key version")
    return raw


@dataclass(frozen=True)
class ExtKey:
    """An extended private key (CExtKey)."""

    depth: int
    parent_fingerprint: bytes
    child_number: int
    chain_code: bytes
    secret: bytes = field(repr=False)

    def __post_init__(self) -> None:
        _check_common(self.depth, self.parent_fingerprint, self.child_number, self.chain_code)
        if len(self.secret) != 32 or not 0 < int.from_bytes(self.secret, "big") < SECP256K1_N:
            raise ExtKeyError("private key not in 1..n-1")

    @classmethod
    def from_seed(cls, seed: bytes) -> "ExtKey":
        """The master key of a seed (CExtKey::SetSeed; Core 0.17 passes a 32-byte seed)."""
        digest = hmac.new(_MASTER_HMAC_KEY, seed, hashlib.sha512).digest()
        if not 0 < int.from_bytes(digest[:32], "big") < SECP256K1_N:
            raise DerivationError("seed gives an invalid master key")
        return cls(0, b"\x00" * 4, 0, digest[32:], digest[:32])

    @cached_property
    def privkey(self) -> coincurve.PrivateKey:
        return coincurve.PrivateKey(self.secret)

    @cached_property
    def pubkey(self) -> bytes:
        """The 33-byte compressed public key."""
        return self.privkey.public_key.format(compressed=True)

    @property
    def fingerprint(self) -> bytes:
        """What a child records as its parent fingerprint."""
        return hash160(self.pubkey)[:4]

    def derive(self, index: int) -> "ExtKey":
        """CKDpriv: the child at ``index`` (hardened when ``index >= HARDENED``)."""
        _check_index(index)
        depth = _child_depth(self.depth)
        if index >= HARDENED:
            data = b"\x00" + self.secret + index.to_bytes(4, "big")
        else:
            data = self.pubkey + index.to_bytes(4, "big")
        digest = hmac.new(self.chain_code, data, hashlib.sha512).digest()
        tweak = int.from_bytes(digest[:32], "big")
        if tweak >= SECP256K1_N:
            raise DerivationError("I_L >= n at index %d" % index)
        child = (tweak + int.from_bytes(self.secret, "big")) % SECP256K1_N
        if child == 0:
            raise DerivationError("zero child key at index %d" % index)
        return ExtKey(depth, self.fingerprint, index, digest[32:], child.to_bytes(32, "big"))

    def derive_path(self, path: Union[str, Iterable[int]]) -> "ExtKey":
        """Derive along ``path`` (text like ``"m/0'/1'/5'"`` or indexes), relative to this key."""
        key = self
        for index in parse_path(path) if isinstance(path, str) else path:
            key = key.derive(index)
        return key

    def neuter(self) -> "ExtPubKey":
        """The matching extended public key (watch-only derivation of non-hardened children)."""
        return ExtPubKey(self.depth, self.parent_fingerprint, self.child_number, self.chain_code,
                         self.pubkey)

    def serialize(self, version: bytes) -> str:
        """Base58Check text (``xprv...`` with main's version ``0488ADE4``)."""
        return b58check_encode(_header(version, self.depth, self.parent_fingerprint,
                                       self.child_number, self.chain_code) + b"\x00" + self.secret)

    @classmethod
    def parse(cls, text: str, version: bytes) -> "ExtKey":
        """The inverse of :meth:`serialize`; raises :class:`ExtKeyError`."""
        raw = _decode(text, version)
        if raw[45] != 0:
            raise ExtKeyError("private key data must start with 00")
        return cls(raw[4], raw[5:9], int.from_bytes(raw[9:13], "big"), raw[13:45], raw[46:78])


@dataclass(frozen=True)
class ExtPubKey:
    """An extended public key (CExtPubKey); ``key`` is 33 bytes, compressed."""

    depth: int
    parent_fingerprint: bytes
    child_number: int
    chain_code: bytes
    key: bytes
    _point: coincurve.PublicKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_common(self.depth, self.parent_fingerprint, self.child_number, self.chain_code)
        if len(self.key) != 33 or self.key[0] not in (2, 3):
            raise ExtKeyError("public key must be 33 bytes, compressed")
        try:
            point = coincurve.PublicKey(self.key)
        except ValueError:
            raise ExtKeyError("public key is not a point on the curve") from None
        object.__setattr__(self, "_point", point)  # parsed once, reused by derive

    @property
    def pubkey(self) -> bytes:
        """The 33-byte compressed public key (same as ``key``; named as on :class:`ExtKey`)."""
        return self.key

    @property
    def fingerprint(self) -> bytes:
        return hash160(self.key)[:4]

    def derive(self, index: int) -> "ExtPubKey":
        """CKDpub: the non-hardened child at ``index``; hardened indexes raise ValueError."""
        _check_index(index)
        if index >= HARDENED:
            raise ValueError("cannot derive a hardened child from a public key")
        depth = _child_depth(self.depth)
        digest = hmac.new(self.chain_code, self.key + index.to_bytes(4, "big"), hashlib.sha512).digest()
        if int.from_bytes(digest[:32], "big") >= SECP256K1_N:
            raise DerivationError("I_L >= n at index %d" % index)
        try:
            child = self._point.add(digest[:32])
        except ValueError:  # the point at infinity
            raise DerivationError("infinite child key at index %d" % index) from None
        return ExtPubKey(depth, self.fingerprint, index, digest[32:], child.format(compressed=True))

    def derive_path(self, path: Union[str, Iterable[int]]) -> "ExtPubKey":
        """Derive along a non-hardened ``path``, relative to this key."""
        key = self
        for index in parse_path(path) if isinstance(path, str) else path:
            key = key.derive(index)
        return key

    def serialize(self, version: bytes) -> str:
        """Base58Check text (``xpub...`` with main's version ``0488B21E``)."""
        return b58check_encode(_header(version, self.depth, self.parent_fingerprint,
                                       self.child_number, self.chain_code) + self.key)

    @classmethod
    def parse(cls, text: str, version: bytes) -> "ExtPubKey":
        """The inverse of :meth:`serialize`; raises :class:`ExtKeyError`."""
        raw = _decode(text, version)
        return cls(raw[4], raw[5:9], int.from_bytes(raw[9:13], "big"), raw[13:45], raw[45:78])
