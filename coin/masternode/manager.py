"""The masternode list: accepting broadcasts and pings, states on a clock, ranks, spends.

Pure logic, no I/O: the caller (the service) looks up the collateral in the UTXO set and
block hashes in the chain, and passes ``now`` in, so the rules are tested with plain
numbers.  Every rejection raises :class:`MasternodeError` with the reason and the ban
score the reference node gives the sending peer (0: just ignored).

Reorg safety: a spent collateral marks its masternode OUTPOINT_SPENT and remembers the
height and the previous state; disconnecting that block restores it.  Spent entries are
forgotten once the spending block is ``SPENT_KEEP_DEPTH`` deep.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from coin.masternode import signing
from coin.masternode.params import (
    BAN_BAD_PING_SIGNATURE, BAN_BAD_SIGNATURE, BAN_FUTURE, MAX_FUTURE_SECONDS, MAX_PING_BLOCK_AGE,
    MIN_MNP_SECONDS, MIN_PAYMENTS_PROTO, RANK_BLOCK_OFFSET, MasternodeParams,
)
from coin.masternode.record import NEW_START_REQUIRED, OUTPOINT_SPENT, Masternode
from coin.p2p.messages import MasternodeBroadcastMessage, MasternodePingMessage
from coin.primitives.coin import Coin
from coin.primitives.hashes import hash160
from coin.primitives.transaction import OutPoint
from coin.script.standard import p2pkh_script

#: Depth after which a spent masternode is dropped (no reorg that deep is expected).
SPENT_KEEP_DEPTH = 100

BlockHashAt = Callable[[int], Optional[bytes]]


class MasternodeError(Exception):
    """A refused broadcast or ping: ``reason`` and the sending peer's ``ban_score``."""

    def __init__(self, reason: str, ban_score: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.ban_score = ban_score


def _check_time(sig_time: int, now: int, what: str) -> None:
    if sig_time > now + MAX_FUTURE_SECONDS:
        raise MasternodeError("%s signature rejected, too far into the future" % what, BAN_FUTURE)


class MasternodeManager:
    """The list, keyed by collateral outpoint, and the broadcasts and pings seen."""

    def __init__(self, params: MasternodeParams, default_port: int) -> None:
        self.params = params
        self.default_port = default_port
        self._masternodes: Dict[OutPoint, Masternode] = {}
        #: Outpoint -> (spending height, state before): what a disconnect restores.
        self._spent: Dict[OutPoint, Tuple[int, int]] = {}
        self._seen_pings: Dict[bytes, int] = {}

    # ------------------------------------------------------------ the list

    def __len__(self) -> int:
        return len(self._masternodes)

    def __iter__(self) -> Iterator[Masternode]:
        return iter(list(self._masternodes.values()))

    def get(self, outpoint: OutPoint) -> Optional[Masternode]:
        return self._masternodes.get(outpoint)

    def count_enabled(self) -> int:
        return sum(1 for mn in self._masternodes.values() if mn.is_enabled())

    def snapshot(self) -> Tuple[List[Masternode], Dict[OutPoint, Tuple[int, int]]]:
        """The entries and spend records ``mncache.dat`` keeps."""
        return list(self._masternodes.values()), dict(self._spent)

    def load(self, masternodes: List[Masternode], spent: Dict[OutPoint, Tuple[int, int]]) -> None:
        """Replace the list with entries read from ``mncache.dat``."""
        self._masternodes = {mn.outpoint: mn for mn in masternodes}
        self._spent = {o: v for o, v in spent.items() if o in self._masternodes}
        self._seen_pings = {mn.last_ping.hash: mn.last_ping.sig_time for mn in masternodes}

    # ------------------------------------------------------------ broadcasts

    def check_broadcast(self, mnb: MasternodeBroadcastMessage, now: int) -> None:
        """The checks that need no chain: time, protocol, keys, port and both signatures."""
        _check_time(mnb.sig_time, now, "mnb")
        if mnb.protocol_version < MIN_PAYMENTS_PROTO:
            raise MasternodeError("mnb: ignoring outdated masternode, protocol %d"
                                  % mnb.protocol_version)
        if len(mnb.collateral_pubkey) not in (33, 65) or len(mnb.masternode_pubkey) not in (33, 65):
            raise MasternodeError("mnb: invalid public key", BAN_BAD_SIGNATURE)
        if mnb.last_ping.outpoint != mnb.outpoint:
            raise MasternodeError("mnb: ping of another masternode", BAN_BAD_SIGNATURE)
        if self.params.default_port_only and mnb.port != self.default_port:
            raise MasternodeError("mnb: invalid port %d, only %d is supported on this network"
                                  % (mnb.port, self.default_port), BAN_BAD_SIGNATURE)
        if not signing.verify(mnb.collateral_pubkey, mnb.signature, signing.broadcast_string(mnb)):
            raise MasternodeError("mnb: bad signature", BAN_BAD_SIGNATURE)
        self._check_ping_signature(mnb.last_ping, mnb.masternode_pubkey)

    def check_collateral(self, mnb: MasternodeBroadcastMessage, coin: Optional[Coin],
                         tip_height: int, block_hash_at: BlockHashAt) -> bytes:
        """The collateral must be unspent, exactly the collateral amount, paid to the
        collateral key and confirmed enough; returns the score-seeding block hash."""
        if coin is None:
            raise MasternodeError("mnb: failed to find masternode UTXO %s"
                                  % signing.outpoint_short(mnb.outpoint))
        if coin.value != self.params.collateral:
            raise MasternodeError("mnb: masternode UTXO should have %d coins"
                                  % (self.params.collateral // 100_000_000), BAN_BAD_SIGNATURE)
        if coin.script_pubkey != p2pkh_script(hash160(mnb.collateral_pubkey)):
            raise MasternodeError("mnb: got mismatched collateral key and outpoint", 33)
        confirmations = tip_height - coin.height + 1
        if confirmations < self.params.min_confirmations:
            raise MasternodeError("mnb: masternode UTXO must have at least %d confirmations"
                                  % self.params.min_confirmations)
        conf_hash = block_hash_at(coin.height + self.params.min_confirmations - 1)
        assert conf_hash is not None  # confirmations were checked against the same chain
        return conf_hash

    def add_broadcast(self, mnb: MasternodeBroadcastMessage, coin: Optional[Coin],
                      tip_height: int, block_hash_at: BlockHashAt, now: int) -> bool:
        """Accept a new or newer broadcast; False if it adds nothing (seen, older)."""
        existing = self._masternodes.get(mnb.outpoint)
        if existing is not None and (existing.broadcast.hash == mnb.hash
                                     or existing.broadcast.sig_time >= mnb.sig_time):
            return False
        self.check_broadcast(mnb, now)
        conf_hash = self.check_collateral(mnb, coin, tip_height, block_hash_at)
        assert coin is not None
        if existing is not None and existing.broadcast.collateral_pubkey != mnb.collateral_pubkey:
            raise MasternodeError("mnb: collateral key changed", 33)
        paid = (existing.last_paid_height, existing.last_paid_time) if existing else (0, 0)
        masternode = Masternode(mnb, conf_hash, coin.height, last_paid_height=paid[0],
                                last_paid_time=paid[1])
        self._masternodes[mnb.outpoint] = masternode
        self._spent.pop(mnb.outpoint, None)
        self._seen_pings[mnb.last_ping.hash] = mnb.last_ping.sig_time
        masternode.check(now)
        return True

    # ------------------------------------------------------------ pings

    def _check_ping_signature(self, mnp: MasternodePingMessage, pubkey: bytes) -> None:
        if not signing.verify(pubkey, mnp.signature, signing.ping_string(mnp)):
            raise MasternodeError("mnp: bad signature", BAN_BAD_PING_SIGNATURE)

    def process_ping(self, mnp: MasternodePingMessage, now: int, ping_block_height: Optional[int],
                     tip_height: int) -> bool:
        """Accept a ping; False for one already seen (duplicates and replays are ignored)."""
        if mnp.hash in self._seen_pings:
            return False
        _check_time(mnp.sig_time, now, "mnp")
        masternode = self._masternodes.get(mnp.outpoint)
        if masternode is None:
            raise MasternodeError("mnp: unknown masternode %s" % signing.outpoint_short(mnp.outpoint))
        if ping_block_height is None:
            raise MasternodeError("mnp: unknown block hash %s" % mnp.block_hash[::-1].hex())
        if ping_block_height < tip_height - MAX_PING_BLOCK_AGE:
            raise MasternodeError("mnp: block hash is too old")
        if masternode.state in (NEW_START_REQUIRED, OUTPOINT_SPENT):
            raise MasternodeError("mnp: masternode is %s, ignoring ping" % masternode.state_name)
        if mnp.sig_time - masternode.last_ping.sig_time < MIN_MNP_SECONDS - 60:
            raise MasternodeError("mnp: ping arrived too early")
        self._check_ping_signature(mnp, masternode.broadcast.masternode_pubkey)
        self._seen_pings[mnp.hash] = mnp.sig_time
        masternode.last_ping = mnp
        masternode.check(now)
        return True

    # ------------------------------------------------------------ clock and blocks

    def check_all(self, now: int) -> List[Tuple[Masternode, int]]:
        """Every masternode to its current state; returns ``(masternode, old state)`` changes."""
        changed = []
        for masternode in self._masternodes.values():
            old = masternode.check(now)
            if old is not None:
                changed.append((masternode, old))
        horizon = now - 2 * 60 * 60 * 24
        self._seen_pings = {h: t for h, t in self._seen_pings.items() if t > horizon}
        return changed

    def block_connected(self, height: int, spent: Iterable[OutPoint]) -> List[Masternode]:
        """Collaterals spent by the block at ``height`` -> OUTPOINT_SPENT; old ones dropped."""
        marked = []
        for outpoint in spent:
            masternode = self._masternodes.get(outpoint)
            if masternode is not None and masternode.state != OUTPOINT_SPENT:
                self._spent[outpoint] = (height, masternode.state)
                masternode.state = OUTPOINT_SPENT
                marked.append(masternode)
        for outpoint, (spent_height, _) in list(self._spent.items()):
            if spent_height <= height - SPENT_KEEP_DEPTH:
                del self._spent[outpoint]
                self._masternodes.pop(outpoint, None)
        return marked

    def block_disconnected(self, height: int) -> List[Masternode]:
        """Undo the spends of the block at ``height`` (a reorg or invalidateblock)."""
        restored = []
        for outpoint, (spent_height, state) in list(self._spent.items()):
            masternode = self._masternodes.get(outpoint)
            if spent_height == height and masternode is not None:
                masternode.state = state
                del self._spent[outpoint]
                restored.append(masternode)
        return restored

    # ------------------------------------------------------------ ranks

    def ranked(self, height: int, block_hash_at: BlockHashAt) -> List[Masternode]:
        """Masternodes by descending score for ``height`` (seeded by the block hash at
        ``height - 101``); empty when that block does not exist."""
        block_hash = block_hash_at(height - RANK_BLOCK_OFFSET)
        if block_hash is None:
            return []
        eligible = [mn for mn in self._masternodes.values()
                    if mn.broadcast.protocol_version >= MIN_PAYMENTS_PROTO]
        eligible.sort(key=lambda mn: (mn.score(block_hash), mn.outpoint.key()), reverse=True)
        return eligible

    def rank(self, outpoint: OutPoint, height: int, block_hash_at: BlockHashAt) -> Optional[int]:
        """1-based rank of ``outpoint`` at ``height``, or None if it is not ranked."""
        for index, masternode in enumerate(self.ranked(height, block_hash_at)):
            if masternode.outpoint == outpoint:
                return index + 1
        return None
