"""Addresses (P2PKH / P2SH) and WIF private keys for a network's prefixes."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Optional, Tuple

from coin.primitives.base58 import Base58Error, b58check_decode, b58check_encode

if TYPE_CHECKING:
    from coin.chainparams import ChainParams


#: Longer text is rejected before decoding: Base58 decoding is quadratic in the
#: length, and every address (34-35 chars) and WIF key (51-52) is far shorter.
MAX_TEXT_LENGTH = 100


class AddressError(ValueError):
    """Not a valid address or key for this network."""


class Destination(NamedTuple):
    """Where an output pays: ``kind`` is ``"pubkeyhash"`` or ``"scripthash"``."""

    kind: str
    hash160: bytes


def encode_address(dest: Destination, params: ChainParams) -> str:
    prefix = params.pubkey_prefix if dest.kind == "pubkeyhash" else params.script_prefix
    return b58check_encode(bytes((prefix,)) + dest.hash160)


def decode_address(text: str, params: ChainParams) -> Destination:
    if len(text) > MAX_TEXT_LENGTH:
        raise AddressError("invalid address length")
    try:
        raw = b58check_decode(text)
    except Base58Error as e:
        raise AddressError(str(e)) from None
    if len(raw) != 21:
        raise AddressError("invalid address length")
    if raw[0] == params.pubkey_prefix:
        return Destination("pubkeyhash", raw[1:])
    if raw[0] == params.script_prefix:
        return Destination("scripthash", raw[1:])
    raise AddressError("address is for another network")


def encode_wif(secret: bytes, params: ChainParams, compressed: bool = True) -> str:
    payload = bytes((params.wif_prefix,)) + secret + (b"\x01" if compressed else b"")
    return b58check_encode(payload)


def decode_wif(text: str, params: ChainParams) -> Tuple[bytes, bool]:
    """Return ``(secret32, compressed)``."""
    if len(text) > MAX_TEXT_LENGTH:
        raise AddressError("invalid key length")
    try:
        raw = b58check_decode(text)
    except Base58Error as e:
        raise AddressError(str(e)) from None
    if not raw or raw[0] != params.wif_prefix:
        raise AddressError("key is for another network")
    if len(raw) == 34 and raw[33] == 1:
        return raw[1:33], True
    if len(raw) == 33:
        return raw[1:33], False
    raise AddressError("invalid key length")


def try_decode_address(text: str, params: ChainParams) -> Optional[Destination]:
    try:
        return decode_address(text, params)
    except AddressError:
        return None
