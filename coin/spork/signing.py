"""Spork signatures: the reference node's signed text, signed as ``signmessage`` signs.

The text is the decimal id, value and signing time run together (``"10007" "0"
"1800000000"`` -> ``"1000701800000000"``), hashed with the chain's message magic
(:mod:`coin.primitives.message`), and the compact signature must recover to the key of
the network's spork address.
"""

from __future__ import annotations

import base64

import coincurve

from coin.p2p.messages import SporkMessage
from coin.primitives.hashes import hash160
from coin.primitives.message import recover_message_pubkey, sign_message


def signed_text(spork_id: int, value: int, time_signed: int) -> str:
    """What the signature commits to (the reference's lexical_cast concatenation)."""
    return "%d%d%d" % (spork_id, value, time_signed)


def sign_spork(spork_id: int, value: int, time_signed: int, key: coincurve.PrivateKey,
               compressed: bool) -> SporkMessage:
    """A spork message signed by ``key`` (its WIF's compression picks the address form)."""
    text = signed_text(spork_id, value, time_signed)
    signature = base64.b64decode(sign_message(key, text, compressed))
    return SporkMessage(spork_id, value, time_signed, signature)


def signed_by(spork: SporkMessage, key_hash: bytes) -> bool:
    """Whether the signature recovers to the key whose hash160 is ``key_hash``."""
    text = signed_text(spork.spork_id, spork.value, spork.time_signed)
    recovered = recover_message_pubkey(spork.signature, text)
    return recovered is not None and hash160(recovered[0]) == key_hash
