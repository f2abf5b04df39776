"""The sporks this chain knows: ids, names and default values (design.md §6).

The ids and defaults are the reference node's (Dash 0.12.3's), less its proof-of-stake
SPORK_15. A time-valued spork is on when its value is below the network-adjusted time,
so 0 means on and :data:`SPORK_OFF` (2099-01-01) means off.
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional

#: Dash's "off" value for a time-based spork (2099-01-01).
SPORK_OFF = 4070908800

SPORK_2_INSTANTSEND_ENABLED = 10001
SPORK_3_INSTANTSEND_BLOCK_FILTERING = 10002
SPORK_5_INSTANTSEND_MAX_VALUE = 10004
SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT = 10007
SPORK_9_SUPERBLOCKS_ENABLED = 10008
SPORK_10_MASTERNODE_PAY_UPDATED_NODES = 10009
SPORK_12_RECONSIDER_BLOCKS = 10011
SPORK_13_OLD_SUPERBLOCK_FLAG = 10012
SPORK_14_REQUIRE_SENTINEL_FLAG = 10013


class SporkDef(NamedTuple):
    spork_id: int
    name: str
    default: int


#: Every known spork in id order (the order ``spork show`` lists them).
SPORK_DEFS = (
    SporkDef(SPORK_2_INSTANTSEND_ENABLED, "SPORK_2_INSTANTSEND_ENABLED", 0),
    SporkDef(SPORK_3_INSTANTSEND_BLOCK_FILTERING, "SPORK_3_INSTANTSEND_BLOCK_FILTERING", 0),
    SporkDef(SPORK_5_INSTANTSEND_MAX_VALUE, "SPORK_5_INSTANTSEND_MAX_VALUE", 1000),
    SporkDef(SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, "SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT",
             SPORK_OFF),
    SporkDef(SPORK_9_SUPERBLOCKS_ENABLED, "SPORK_9_SUPERBLOCKS_ENABLED", 0),
    SporkDef(SPORK_10_MASTERNODE_PAY_UPDATED_NODES, "SPORK_10_MASTERNODE_PAY_UPDATED_NODES",
             SPORK_OFF),
    SporkDef(SPORK_12_RECONSIDER_BLOCKS, "SPORK_12_RECONSIDER_BLOCKS", 0),
    SporkDef(SPORK_13_OLD_SUPERBLOCK_FLAG, "SPORK_13_OLD_SUPERBLOCK_FLAG", SPORK_OFF),
    SporkDef(SPORK_14_REQUIRE_SENTINEL_FLAG, "SPORK_14_REQUIRE_SENTINEL_FLAG", SPORK_OFF),
)

_BY_ID: Dict[int, SporkDef] = {d.spork_id: d for d in SPORK_DEFS}
_BY_NAME: Dict[str, SporkDef] = {d.name: d for d in SPORK_DEFS}


def spork_id_by_name(name: str) -> Optional[int]:
    """The id of a spork name, None if unknown (the reference's -1)."""
    found = _BY_NAME.get(name)
    return found.spork_id if found is not None else None


def default_value(spork_id: int) -> Optional[int]:
    """A known spork's default, None for an unknown id."""
    found = _BY_ID.get(spork_id)
    return found.default if found is not None else None
