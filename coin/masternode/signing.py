"""The strings the reference node signs for ``mnb``, ``mnp`` and ``mnw``, and their checks.

Signatures are ``signmessage`` signatures (:mod:`coin.primitives.message`): compact
recoverable ECDSA over the message magic and the string.  The strings are Dash 0.12.3's
"old format" ones (its SPORK_6 never switched them on the reference network), so our
messages verify on the reference node and the other way round.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Optional, Tuple

import coincurve

from coin.p2p.messages import (
    PROTOCOL_VERSION, MasternodeBroadcastMessage, MasternodePingMessage, PaymentVoteMessage,
)
from coin.primitives.hashes import hash160
from coin.primitives.message import recover_message_pubkey, sign_message
from coin.primitives.script import script_to_asm
from coin.primitives.transaction import OutPoint

#: A private key and whether its public key is used compressed.
SigningKey = Tuple[coincurve.PrivateKey, bool]


def _key_id(pubkey: bytes) -> str:
    """CKeyID::ToString(): hash160 shown as a uint160 (reversed hex)."""
    return hash160(pubkey)[::-1].hex()


def outpoint_short(outpoint: OutPoint) -> str:
    """COutPoint::ToStringShort(): ``txid-n``, the key of every masternode list."""
    return "%s-%d" % (outpoint.txid[::-1].hex(), outpoint.n)


def service_string(ip: str, port: int) -> str:
    """CService::ToString(): ``ip:port``, an IPv6 address in brackets."""
    return ("[%s]:%d" if ":" in ip else "%s:%d") % (ip, port)


def broadcast_string(mnb: MasternodeBroadcastMessage) -> str:
    return "%s%d%s%s%d" % (service_string(mnb.ip, mnb.port), mnb.sig_time,
                           _key_id(mnb.collateral_pubkey), _key_id(mnb.masternode_pubkey),
                           mnb.protocol_version)


def ping_string(mnp: MasternodePingMessage) -> str:
    """CTxIn(outpoint).ToString() + block hash + time, as Dash 0.12.3 signs a ping."""
    return "CTxIn(COutPoint(%s, %d), scriptSig=)%s%d" % (
        mnp.outpoint.txid[::-1].hex()[:10], mnp.outpoint.n, mnp.block_hash[::-1].hex(),
        mnp.sig_time)


def vote_string(vote: PaymentVoteMessage) -> str:
    return "%s%d%s" % (outpoint_short(vote.outpoint), vote.height, script_to_asm(vote.payee))


def sign(privkey: coincurve.PrivateKey, text: str, compressed: bool) -> bytes:
    """The raw 65-byte compact signature of ``text``."""
    return base64.b64decode(sign_message(privkey, text, compressed))


def verify(pubkey: bytes, signature: bytes, text: str) -> bool:
    """Dash's CMessageSigner::VerifyMessage: the recovered key's ID must be ``pubkey``'s."""
    recovered: Optional[tuple] = recover_message_pubkey(signature, text)
    return recovered is not None and hash160(recovered[0]) == hash160(pubkey)


def make_ping(outpoint: OutPoint, block_hash: bytes, sig_time: int,
              key: coincurve.PrivateKey, compressed: bool,
              sentinel_version: Optional[int] = None) -> MasternodePingMessage:
    """A ping signed with the masternode key (the active masternode's job); with a
    ``sentinel_version``, it says the sentinel is current (fields outside the signature)."""
    unsigned = MasternodePingMessage(outpoint, block_hash, sig_time)
    if sentinel_version is not None:
        unsigned = replace(unsigned, sentinel_current=True, sentinel_version=sentinel_version)
    return replace(unsigned, signature=sign(key, ping_string(unsigned), compressed))


def make_broadcast(outpoint: OutPoint, ip: str, port: int, collateral: SigningKey,
                   masternode: SigningKey, sig_time: int, ping: MasternodePingMessage,
                   protocol_version: int = PROTOCOL_VERSION) -> MasternodeBroadcastMessage:
    """A broadcast signed with the collateral key (the controller wallet's job).

    Keys are ``(private key, compressed)`` pairs, as a wallet or WIF gives them.
    """
    unsigned = MasternodeBroadcastMessage(
        outpoint, ip, port, collateral[0].public_key.format(compressed=collateral[1]),
        masternode[0].public_key.format(compressed=masternode[1]), b"", sig_time,
        protocol_version, ping)
    return replace(unsigned, signature=sign(collateral[0], broadcast_string(unsigned), collateral[1]))
