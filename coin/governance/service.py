"""The node's governance service: checks and keeps objects and votes, cleans up on a
timer, and keeps ``governance.dat`` across restarts."""

from __future__ import annotations

import base64

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Protocol, Tuple

import coincurve

from twisted.application import service
from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from coin.chainparams import ChainParams
from coin.governance.collateral import CollateralError, check_collateral
from coin.governance.object import (
    OBJECT_TRIGGER, OBJECT_TYPES, OBJECT_WATCHDOG, GovernanceObject, outpoint_text,
)
from coin.governance.params import MAX_OBJECT_DATA_SIZE, GovernanceParams, governance_params
from coin.governance.store import FILE_NAME, Entry, GovernanceStore
from coin.governance.vote import MasternodeKeys, NoMasternodes, Vote, signature_key_id
from coin.primitives.hashes import hash_to_hex
from coin.primitives.message import sign_message
from coin.primitives.transaction import OutPoint, Transaction, TxIn

log = Logger(namespace="coin.governance")

#: How often flags are refreshed and expired objects cleaned (the reference: every 5 minutes).
UPDATE_INTERVAL = 5 * 60
#: A masternode's last trigger times kept for the rate check (RATE_BUFFER_SIZE).
RATE_BUFFER_SIZE = 5
#: Objects dated further ahead than this are refused (MAX_TIME_FUTURE_DEVIATION).
MAX_TIME_FUTURE_DEVIATION = 60 * 60


def sign_text(key: coincurve.PrivateKey, text: str, compressed: bool) -> bytes:
    """A masternode key's 65-byte compact signature of ``text`` (CMessageSigner::SignMessage)."""
    return base64.b64decode(sign_message(key, text, compressed))


class MasternodeSigner(NamedTuple):
    """A masternode this node can sign for: its collateral outpoint and masternode key."""

    outpoint: OutPoint
    key: coincurve.PrivateKey
    compressed: bool


#: A transaction and the hash of the block it is in (None: not in a block).
KnownTx = Tuple[Transaction, Optional[bytes]]


class ObjectError(ValueError):
    """An object this node does not keep; ``str()`` is the reference's reason."""


class MissingMasternode(ObjectError):
    """A trigger or watchdog signed by a masternode this node does not know (yet): the
    reference's fMissingMasternode, kept until the masternode arrives."""


class ChainReader(Protocol):
    """What governance reads of the chain (coin.chain.access.ChainAccess)."""

    params: ChainParams

    def snapshot(self) -> Any:
        """The active chain: ``height``, ``lookup(hash)`` and ``contains(entry)``."""

    def get_transaction(self, txid: bytes) -> Deferred:
        """``(tx, block entry or None)`` or None, without needing -txindex."""


class GovernanceService(service.Service):
    """Holds the governance store; objects come in through :meth:`submit`, votes through
    :meth:`add_vote`."""

    name = "governance"

    def __init__(self, chain: ChainReader, datadir: str, now: Callable[[], int], reactor: Any,
                 keys: Optional[MasternodeKeys] = None) -> None:
        self.chain = chain
        self.datadir = datadir
        self.now = now
        self.reactor = reactor
        #: The masternode list; none until the masternode network is wired in.
        self.keys: MasternodeKeys = keys if keys is not None else NoMasternodes()
        self.store = GovernanceStore()
        #: Objects whose fee is good but not yet deep enough, kept until it is.
        self.postponed: Dict[bytes, GovernanceObject] = {}
        #: The reference's fRateChecksEnabled: a masternode may change a vote once an hour.
        self.rate_checks = True
        #: Run with each object and each vote newly kept, to relay them (coin.governance.relay).
        self.on_object: List[Callable[[GovernanceObject], None]] = []
        self.on_vote: List[Callable[[Vote], None]] = []
        #: Run after the store is loaded and after each timed update.
        self.on_update: List[Callable[[], None]] = []
        #: Creation times of each masternode's recent triggers (the reference's triggerBuffer).
        self._trigger_times: Dict[OutPoint, List[int]] = {}
        self._loop: Optional[LoopingCall] = None

    @property
    def params(self) -> GovernanceParams:
        return governance_params(self.chain.params)

    def startService(self) -> None:
        super().startService()
        self.store = GovernanceStore.load(self.datadir)
        for hook in self.on_update:  # the loaded objects count at once (superblocks)
            hook()
        self._loop = LoopingCall(self._tick)
        self._loop.clock = self.reactor
        self._loop.start(UPDATE_INTERVAL, now=False)

    def stopService(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        try:
            self.store.save(self.datadir)
        except OSError:
            log.failure("Could not save {file}", file=FILE_NAME)  # a cache: rebuilt from peers
        super().stopService()

    def _tick(self) -> Deferred:
        """One timed update; a failure is logged and the timer goes on."""
        return self.update().addErrback(lambda f: log.failure("Governance update failed", f))

    # ------------------------------------------------------------------ objects

    def check_signer(self, obj: GovernanceObject) -> None:
        """A trigger or watchdog must be signed by a known masternode's key."""
        outpoint = obj.masternode.prevout
        key_id = self.keys.key_id(outpoint)
        if key_id is None:
            raise MissingMasternode("Masternode not found: " + outpoint_text(outpoint))
        if signature_key_id(obj.signature, obj.signature_message()) != key_id:
            raise ObjectError("Invalid masternode signature for: %s, pubkey id = %s"
                              % (outpoint_text(outpoint), hash_to_hex(key_id)))

    def check_locally(self, obj: GovernanceObject) -> None:
        """The checks that need no chain (IsValidLocally without the collateral)."""
        if len(obj.data_hex) > MAX_OBJECT_DATA_SIZE:
            raise ObjectError("Object data exceeds %d bytes" % MAX_OBJECT_DATA_SIZE)
        if not obj.parsable:
            raise ObjectError("Object data unparseable")
        if obj.object_type not in OBJECT_TYPES:
            raise ObjectError("Invalid object type %d" % obj.object_type)

    def local_validity(self, obj: GovernanceObject) -> str:
        """``""`` or why the object is not valid locally (``gobject get``'s IsValidReason)."""
        try:
            self.check_locally(obj)
        except ObjectError as e:
            return str(e)
        return ""

    @inlineCallbacks
    def check(self, obj: GovernanceObject, known: Optional[KnownTx] = None) -> Any:
        """Raise ObjectError or CollateralError unless ``obj`` may be kept (IsValidLocally
        with the collateral). ``known`` is the fee transaction and its block hash as a
        wallet has it, used when the chain cannot find it (no -txindex and no unspent
        output of it left)."""
        self.check_locally(obj)
        if obj.object_type in (OBJECT_TRIGGER, OBJECT_WATCHDOG):
            self.check_signer(obj)
            return
        found = yield self.chain.get_transaction(obj.collateral_hash)
        view = self.chain.snapshot()
        tx, entry = found if found is not None else (None, None)
        if found is None and known is not None:
            tx, entry = known[0], view.lookup(known[1]) if known[1] is not None else None
        confirmations = 0
        if entry is not None and view.contains(entry):
            confirmations = view.height - entry.height + 1
        check_collateral(obj, tx, confirmations, self.params)

    @inlineCallbacks
    def submit(self, obj: GovernanceObject, known: Optional[KnownTx] = None) -> Any:
        """Check and keep ``obj``; one whose fee lacks only confirmations is kept aside and
        added once it has them (AddPostponedObject). Fires with the object's Entry (None
        when postponed)."""
        if obj.hash in self.store:
            return self.store.get(obj.hash)
        try:
            yield self.check(obj, known)
        except CollateralError as e:
            if not e.missing_confirmations:
                raise
            self.postponed[obj.hash] = obj
            log.info("Governance object {hash} postponed: {why}", hash=hash_to_hex(obj.hash), why=e)
            return None
        self.postponed.pop(obj.hash, None)
        return self._keep(obj)

    def rate_check(self, obj: GovernanceObject, record: bool = False) -> bool:
        """MasternodeRateCheck: a masternode's triggers may not be older than two cycles,
        more than an hour ahead, nor come faster than 2.2 per cycle over its last five.
        ``record`` keeps the time of an accepted one."""
        if obj.object_type != OBJECT_TRIGGER or not self.rate_checks:
            return True
        cycle_seconds = self.params.superblock_cycle * self.chain.params.target_spacing
        now = int(self.now())
        if obj.time < now - 2 * cycle_seconds or obj.time > now + MAX_TIME_FUTURE_DEVIATION:
            return False
        times = (self._trigger_times.get(obj.masternode.prevout, []) + [obj.time])[-RATE_BUFFER_SIZE:]
        if len(times) == RATE_BUFFER_SIZE:
            span = max(times) - min(times)
            if span == 0 or len(times) / span >= 2 * 1.1 / cycle_seconds:
                return False
        if record:
            self._trigger_times[obj.masternode.prevout] = times
        return True

    def _keep(self, obj: GovernanceObject) -> Entry:
        entry = self.store.add(obj, self.keys, self.now())
        entry.flags = entry.book.flags(self.params.min_quorum, self.keys.enabled_count(), entry.flags)
        self.rate_check(obj, record=True)
        log.info("Added governance object {hash}", hash=hash_to_hex(obj.hash))
        for hook in self.on_object:
            hook(obj)
        return entry

    def add_vote(self, vote: Vote) -> Entry:
        """Count ``vote`` or raise VoteError; refreshes its object's flags and relays it."""
        entry = self.store.add_vote(vote, self.keys, int(self.now()), self.rate_checks)
        entry.flags = entry.book.flags(self.params.min_quorum, self.keys.enabled_count(), entry.flags)
        for hook in self.on_vote:
            hook(vote)
        return entry

    def vote(self, signer: MasternodeSigner, object_hash: bytes, signal: int, outcome: int) -> Entry:
        """Sign a vote of ``signer``'s masternode dated now, count and relay it (VoteError)."""
        vote = Vote(signer.outpoint, object_hash, signal, outcome, int(self.now()))
        vote.signature = sign_text(signer.key, vote.signature_message(), signer.compressed)
        return self.add_vote(vote)

    @staticmethod
    def signed_by(obj: GovernanceObject, signer: MasternodeSigner) -> GovernanceObject:
        """``obj`` as ``signer``'s masternode signs it (a trigger or watchdog)."""
        unsigned = GovernanceObject(obj.parent_hash, obj.revision, obj.time, obj.collateral_hash,
                                    obj.data_hex, obj.object_type, TxIn(signer.outpoint))
        return GovernanceObject(obj.parent_hash, obj.revision, obj.time, obj.collateral_hash,
                                obj.data_hex, obj.object_type, TxIn(signer.outpoint),
                                sign_text(signer.key, unsigned.signature_message(), signer.compressed))

    # ------------------------------------------------------------------ upkeep

    @inlineCallbacks
    def update(self) -> Any:
        """Flags, expiry and deletion (UpdateCachesAndClean), and postponed objects whose
        fee is now deep enough."""
        for obj in list(self.postponed.values()):
            try:
                yield self.submit(obj)
            except (ObjectError, CollateralError) as e:
                del self.postponed[obj.hash]
                log.info("Governance object {hash} dropped: {why}", hash=hash_to_hex(obj.hash), why=e)
        chain = self.chain.params
        erased = self.store.update(self.keys, self.params, chain.name, int(self.now()),
                                   self.chain.snapshot().height, chain.target_spacing)
        for object_hash in erased:
            log.info("Erased governance object {hash}", hash=hash_to_hex(object_hash))
        for hook in self.on_update:
            hook()
