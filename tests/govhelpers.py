"""Governance test helpers: object data as users and sentinel write it (hex of
``[[kind, {...}]]``) and a masternode list of generated keys."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, Dict, Optional

import coincurve

from coin.governance.vote import Vote
from coin.primitives.hashes import hash160
from coin.primitives.message import sign_message
from coin.primitives.transaction import OutPoint

NOW = 1_800_000_000


def object_hex(kind: str, fields: dict) -> str:
    return json.dumps([[kind, fields]]).encode().hex()


def proposal_hex(address: str, **overrides: Any) -> str:
    """A valid proposal paying ``address``; ``overrides`` change or (None) drop fields."""
    fields = {"end_epoch": 1800000000, "name": "coin-dev", "payment_address": address,
              "payment_amount": 12.5, "start_epoch": 1700000000, "type": 1,
              "url": "https://coin.example/p/coin-dev"}
    fields.update(overrides)
    return object_hex("proposal", {k: v for k, v in fields.items() if v is not None})


def trigger_hex(height: int = 120) -> str:
    return object_hex("trigger", {"event_block_height": height, "payment_addresses": "x",
                                  "payment_amounts": "1", "type": 2})


class FakeMasternodes:
    """A masternode list of generated keys (the MasternodeKeys protocol)."""

    def __init__(self, count: int, enabled: Optional[int] = None) -> None:
        # Keys from a fixed seed: signatures (RFC 6979) and so object and vote hashes are the
        # same in every run, so a bloom filter's false positive cannot make a test flaky.
        self.keys: Dict[OutPoint, coincurve.PrivateKey] = {
            OutPoint(bytes([n + 1]) * 32, n): coincurve.PrivateKey(
                hashlib.sha256(b"fake masternode %d" % n).digest()) for n in range(count)}
        self.enabled = count if enabled is None else enabled

    def key_id(self, outpoint: OutPoint) -> Optional[bytes]:
        key = self.keys.get(outpoint)
        return hash160(key.public_key.format()) if key is not None else None

    def enabled_count(self) -> int:
        return self.enabled

    def vote(self, n: int, parent: bytes, signal: int, outcome: int, time: int = NOW) -> Vote:
        outpoint = list(self.keys)[n]
        vote = Vote(outpoint, parent, signal, outcome, time)
        vote.signature = base64.b64decode(sign_message(self.keys[outpoint], vote.signature_message()))
        return vote
