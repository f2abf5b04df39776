"""The masternode list as governance sees it (the MasternodeKeys protocol over the node's
coin.masternode manager)."""

from __future__ import annotations

from typing import Any, Optional

from coin.primitives.hashes import hash160
from coin.primitives.transaction import OutPoint


class MasternodeList:
    """Key IDs and the enabled count read from a ``MasternodeManager`` (``get(outpoint)``,
    ``count_enabled()``); any listed masternode may vote, as in the reference's
    ``mnodeman.Get``."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    def key_id(self, outpoint: OutPoint) -> Optional[bytes]:
        masternode = self.manager.get(outpoint)
        return None if masternode is None else hash160(masternode.broadcast.masternode_pubkey)

    def enabled_count(self) -> int:
        return self.manager.count_enabled()
