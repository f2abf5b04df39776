"""Governance object data as users and sentinel write it: hex of ``[[kind, {...}]]``."""

from __future__ import annotations

import json
from typing import Any


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
