"""Signed messages (signmessage / verifymessage): the hash, signing and key recovery.

A signature is Core's compact recoverable ECDSA signature, base64-encoded: a
header byte ``27 + recovery id + (4 if the address hashes the compressed
key)`` followed by r and s, over
``sha256d(ser_string(MESSAGE_MAGIC) + ser_string(message))``.  Signer (wallet,
signmessagewithprivkey) and verifier (verifymessage) share this module so
they cannot drift apart.
"""

from __future__ import annotations

import base64
from typing import Optional, Tuple

import coincurve

from coin.primitives.hashes import sha256d
from coin.primitives.serialize import var_bytes

#: Prefix of every signed message (design.md §2).
MESSAGE_MAGIC = b"Coin Signed Message:\n"
#: Header byte of a compact signature without the recovery id and compression flag.
COMPACT_HEADER_BASE = 27


def message_hash(message: str) -> bytes:
    """The hash a signed message commits to."""
    return sha256d(var_bytes(MESSAGE_MAGIC) + var_bytes(message.encode("utf-8", "surrogatepass")))


def sign_message(privkey: coincurve.PrivateKey, message: str, compressed: bool = True) -> str:
    """Core's signmessage: base64 of header || r || s, verifiable by address alone."""
    signature = privkey.sign_recoverable(message_hash(message), hasher=None)
    header = COMPACT_HEADER_BASE + signature[64] + (4 if compressed else 0)
    return base64.b64encode(bytes((header,)) + signature[:64]).decode("ascii")


def recover_message_pubkey(signature: bytes, message: str) -> Optional[Tuple[bytes, bool]]:
    """``(serialized public key, compressed)`` that made a 65-byte signature, or None.

    Core reads the header without a range check: ``(h - 27) & 3`` is the recovery id.
    """
    if len(signature) != 65:
        return None
    header = signature[0] - COMPACT_HEADER_BASE
    recoverable = signature[1:] + bytes((header & 3,))
    try:
        pubkey = coincurve.PublicKey.from_signature_and_message(
            recoverable, message_hash(message), hasher=None)
    except ValueError:
        return None
    compressed = bool(header & 4)
    return pubkey.format(compressed=compressed), compressed
