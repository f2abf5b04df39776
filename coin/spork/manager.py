"""The spork manager: the network's signed settings, received, checked, kept and relayed.

As the reference node (dimecoin 2.3.0.0, Dash 0.12.3's design) does it:

- A ``spork`` whose signing time is not newer than the one held for its id is dropped
  quietly ("seen"): peers relay and answer ``getsporks`` with the same sporks, so
  this is no misbehaviour. A newer one whose signature does not recover to the spork
  address scores its sender 100 (a ban at the default -banscore). A valid one
  replaces the held value and is announced to every peer (``inv`` MSG_SPORK), which
  fetches it with ``getdata``.
- Every new peer is asked ``getsporks`` once the handshake is done; the answer is one
  ``spork`` per held spork.
- Sporks live in memory only, as in the reference node: a restarted node learns them
  again from its peers' ``getsporks`` answers (doc/spork.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

import coincurve
from twisted.logger import Logger

from coin.chainparams import ChainParams
from coin.p2p.messages import (
    MSG_SPORK, GetDataMessage, GetSporksMessage, InvItem, InvMessage, SporkMessage,
)
from coin.primitives.address import AddressError, decode_address, decode_wif
from coin.spork.signing import sign_spork, signed_by
from coin.spork.sporks import SPORK_OFF, default_value

if TYPE_CHECKING:
    from coin.p2p.connman import P2PService
    from coin.p2p.peer import PeerProtocol

log = Logger()

#: Score of a spork whose signature is not the spork key's (the reference's Misbehaving).
BAD_SIGNATURE_BAN_SCORE = 100
#: Unknown spork hashes asked for per ``inv``: a real announcement carries one.
MAX_REQUESTS_PER_INV = 16
#: The reference node's start-up errors for -sporkkey and (Dash's) for -sporkaddr.
WRONG_KEY = "Unable to sign spork message, wrong key?"
BAD_ADDRESS = "Invalid spork address specified with -sporkaddr"
ADDRESS_ON_MAIN = "-sporkaddr is only allowed on test and regtest"


class SporkConfigError(Exception):
    """A -sporkkey or -sporkaddr the node cannot start with; the message is the user's."""


class SporkManager:
    """Held sporks by id and by hash; signs with -sporkkey; see the module docstring.

    ``now`` is the network-adjusted time (signing time of our own sporks).
    """

    def __init__(self, params: ChainParams, now: Callable[[], float],
                 address: Optional[str] = None) -> None:
        self.params = params
        self.now = now
        if address is not None and params.name == "main":
            raise SporkConfigError(ADDRESS_ON_MAIN)
        try:
            destination = decode_address(address or params.spork_address, params)
        except AddressError:
            raise SporkConfigError(BAD_ADDRESS) from None
        if destination.kind != "pubkeyhash":
            raise SporkConfigError(BAD_ADDRESS)
        self._key_hash = destination.hash160
        self._key: Optional[coincurve.PrivateKey] = None
        self._compressed = True
        #: The newest valid spork of each id (mapSporksActive).
        self._active: Dict[int, SporkMessage] = {}
        #: Every valid spork seen, by inventory hash (mapSporks): served to getdata.
        self._by_hash: Dict[bytes, SporkMessage] = {}
        self.p2p: Optional["P2PService"] = None

    @classmethod
    def for_node(cls, params: ChainParams, p2p: "P2PService", key: Optional[str],
                 address: Optional[str]) -> "SporkManager":
        """The node's manager: on ``p2p``'s adjusted time, with -sporkkey and -sporkaddr
        checked as the reference's start-up checks them (SporkConfigError)."""
        manager = cls(params, p2p.adjusted_time, address)
        if key is not None:
            manager.set_private_key(key)
        manager.attach(p2p)
        return manager

    # ------------------------------------------------------------ values

    def value(self, spork_id: int) -> int:
        """The held value, else the default; -1 for an unknown id (the reference's)."""
        return self._value(spork_id, -1)

    def is_active(self, spork_id: int, now: int) -> bool:
        """On when the value is below ``now`` (network-adjusted); unknown ids are off."""
        return self._value(spork_id, SPORK_OFF) < now

    def _value(self, spork_id: int, unknown: int) -> int:
        held = self._active.get(spork_id)
        if held is not None:
            return held.value
        default = default_value(spork_id)
        return unknown if default is None else default

    # ------------------------------------------------------------ signing

    def set_private_key(self, wif: str) -> None:
        """-sporkkey: a key whose test signature verifies against the spork address."""
        try:
            secret, compressed = decode_wif(wif, self.params)
            key = coincurve.PrivateKey(secret)
        except (AddressError, ValueError):
            raise SporkConfigError(WRONG_KEY) from None
        if not signed_by(sign_spork(0, 0, 0, key, compressed), self._key_hash):
            raise SporkConfigError(WRONG_KEY)
        self._key, self._compressed = key, compressed
        log.info("CSporkManager::SetPrivKey -- Successfully initialized as spork signer")

    @property
    def can_sign(self) -> bool:
        return self._key is not None

    def update(self, spork_id: int, value: int) -> bool:
        """``spork <name> <value>``: sign at the adjusted time, hold and relay; False
        without -sporkkey (the reference's "failure")."""
        if self._key is None:
            return False
        spork = sign_spork(spork_id, value, int(self.now()), self._key, self._compressed)
        self._accept(spork)
        return True

    # ------------------------------------------------------------ P2P

    def attach(self, p2p: "P2PService") -> None:
        """Claim ``spork``, ``getsporks`` and MSG_SPORK inventory; ask new peers."""
        self.p2p = p2p
        p2p.register_handler(SporkMessage.command, self.on_spork)
        p2p.register_handler(GetSporksMessage.command, self.on_getsporks)
        p2p.register_inventory(MSG_SPORK, self)
        p2p.on_handshake.append(self._ask_sporks)

    def _ask_sporks(self, peer: "PeerProtocol") -> None:
        peer.send(GetSporksMessage())

    def on_spork(self, peer: "PeerProtocol", spork: SporkMessage) -> None:
        item_hash = spork.hash
        peer.known_inventory.add(item_hash)
        held = self._active.get(spork.spork_id)
        summary = "hash: %s id: %d value: %10d peer=%d" % (
            item_hash[::-1].hex(), spork.spork_id, spork.value, peer.id)
        if held is not None and held.time_signed >= spork.time_signed:
            log.debug("SPORK -- {summary} seen", summary=summary)
            return
        if not signed_by(spork, self._key_hash):
            log.info("ProcessSpork -- invalid signature: {summary}", summary=summary)
            peer.misbehaving(BAD_SIGNATURE_BAN_SCORE, "invalid spork signature")
            return
        log.info("ProcessSpork -- SPORK -- {summary} {state}", summary=summary,
                 state="updated" if held is not None else "new")
        self._accept(spork)

    def on_getsporks(self, peer: "PeerProtocol", message: Any) -> None:
        for spork in self._active.values():
            peer.send(spork)

    def on_inv(self, peer: "PeerProtocol", items: List[InvItem]) -> None:
        """Fetch announced sporks we do not hold."""
        wanted: List[InvItem] = []
        for item in items:
            peer.known_inventory.add(item.hash)
            if item.hash not in self._by_hash and len(wanted) < MAX_REQUESTS_PER_INV:
                wanted.append(item)
        if wanted:
            peer.send(GetDataMessage(tuple(wanted)))

    def lookup(self, item_hash: bytes) -> Optional[SporkMessage]:
        return self._by_hash.get(item_hash)

    def _accept(self, spork: SporkMessage) -> None:
        item_hash = spork.hash
        self._by_hash[item_hash] = spork
        self._active[spork.spork_id] = spork
        if self.p2p is None:
            return
        announcement = InvMessage((InvItem(MSG_SPORK, item_hash),))
        for peer in self.p2p.handshaked_peers():
            if item_hash not in peer.known_inventory:
                peer.known_inventory.add(item_hash)
                peer.send(announcement)
