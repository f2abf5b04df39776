"""Votes on governance objects, the current vote of each masternode, tallies and flags.

A vote is signed by the masternode key over the reference's string; each masternode has
one current vote per signal on an object, and a newer vote replaces it (CGovernanceVote,
CGovernanceObject::ProcessVote, UpdateSentinelVariables).
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Protocol

from coin.governance.object import outpoint_short, outpoint_text, txin_text
from coin.primitives.hashes import hash160, hash_to_hex, sha256d
from coin.primitives.message import recover_message_pubkey
from coin.primitives.serialize import ByteReader, i32, i64, var_bytes
from coin.primitives.transaction import OutPoint, TxIn

SIGNAL_NONE = 0
SIGNAL_FUNDING = 1
SIGNAL_VALID = 2
SIGNAL_DELETE = 3
SIGNAL_ENDORSED = 4
#: Sentinel's custom signals (the reference's VOTE_SIGNAL_CUSTOM1..20).
FIRST_CUSTOM_SIGNAL = 16
LAST_CUSTOM_SIGNAL = 35
SIGNALS = {"funding": SIGNAL_FUNDING, "valid": SIGNAL_VALID, "delete": SIGNAL_DELETE,
           "endorsed": SIGNAL_ENDORSED}

OUTCOME_NONE = 0
OUTCOME_YES = 1
OUTCOME_NO = 2
OUTCOME_ABSTAIN = 3
OUTCOMES = {"yes": OUTCOME_YES, "no": OUTCOME_NO, "abstain": OUTCOME_ABSTAIN}

#: A masternode may change a vote once an hour (GOVERNANCE_UPDATE_MIN).
UPDATE_MIN_SECONDS = 60 * 60
#: Votes dated further ahead than this are refused.
MAX_FUTURE_SECONDS = 60 * 60


def signal_name(signal: int) -> str:
    """ConvertSignalToString."""
    for name, value in SIGNALS.items():
        if value == signal:
            return name.upper()
    if FIRST_CUSTOM_SIGNAL <= signal <= LAST_CUSTOM_SIGNAL:
        return "CUSTOM%d" % (signal - FIRST_CUSTOM_SIGNAL + 1)
    return "NONE"


def outcome_name(outcome: int) -> str:
    """ConvertOutcomeToString."""
    return {OUTCOME_NONE: "NONE", OUTCOME_YES: "YES", OUTCOME_NO: "NO",
            OUTCOME_ABSTAIN: "ABSTAIN"}.get(outcome, "error")


def signal_supported(signal: int) -> bool:
    """Funding, valid, delete, endorsed and the custom signals carry votes."""
    return SIGNAL_FUNDING <= signal <= SIGNAL_ENDORSED or (
        FIRST_CUSTOM_SIGNAL <= signal <= LAST_CUSTOM_SIGNAL)


class MasternodeKeys(Protocol):
    """The masternode list as governance sees it (stands in until the masternode network lands)."""

    def key_id(self, outpoint: OutPoint) -> Optional[bytes]:
        """The hash160 of the masternode key of the masternode at ``outpoint``, or None."""

    def enabled_count(self) -> int:
        """How many masternodes are enabled."""


class NoMasternodes:
    """A node that knows no masternode: every vote is for an unknown masternode."""

    def key_id(self, outpoint: OutPoint) -> Optional[bytes]:
        return None

    def enabled_count(self) -> int:
        return 0


def signature_key_id(signature: bytes, message: str) -> Optional[bytes]:
    """The key ID that made a compact message signature, or None if it is malformed."""
    recovered = recover_message_pubkey(signature, message)
    return hash160(recovered[0]) if recovered is not None else None


class Vote:
    """One masternode's vote on one signal of one object."""

    __slots__ = ("masternode", "parent_hash", "signal", "outcome", "time", "signature", "_hash")

    def __init__(self, masternode: OutPoint, parent_hash: bytes, signal: int, outcome: int,
                 time: int, signature: bytes = b"") -> None:
        self.masternode = masternode
        self.parent_hash = parent_hash
        self.signal = signal
        self.outcome = outcome
        self.time = time
        self.signature = signature
        self._hash: Optional[bytes] = None

    @property
    def hash(self) -> bytes:
        """The vote's identity: everything but the signature (GetHash)."""
        if self._hash is None:
            self._hash = sha256d(TxIn(self.masternode).serialize() + self.parent_hash
                                 + i32(self.signal) + i32(self.outcome) + i64(self.time))
        return self._hash

    def serialize(self) -> bytes:
        return (TxIn(self.masternode).serialize() + self.parent_hash + i32(self.outcome)
                + i32(self.signal) + i64(self.time) + var_bytes(self.signature))

    @classmethod
    def read(cls, r: ByteReader) -> "Vote":
        masternode, parent = TxIn.read(r).prevout, r.read(32)
        outcome, signal, time = r.read_i32(), r.read_i32(), r.read_i64()
        return cls(masternode, parent, signal, outcome, time, r.read_var_bytes())

    def masternode_text(self) -> str:
        return outpoint_text(self.masternode)

    def signature_message(self) -> str:
        return "|".join((outpoint_short(self.masternode), hash_to_hex(self.parent_hash),
                         str(self.signal), str(self.outcome), str(self.time)))

    def text(self) -> str:
        """CGovernanceVote::ToString, as getvotes shows it."""
        return "%s:%d:%s:%s" % (txin_text(TxIn(self.masternode)), self.time,
                                outcome_name(self.outcome), signal_name(self.signal))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vote) and self.serialize() == other.serialize()

    def __hash__(self) -> int:
        return hash(self.hash)


def vote_is_valid(vote: Vote, key_id: bytes, now: int) -> bool:
    """CGovernanceVote::IsValid for a known masternode: not from the future, a known
    outcome, signed by the masternode's key."""
    if vote.time > now + MAX_FUTURE_SECONDS or not OUTCOME_YES <= vote.outcome <= OUTCOME_ABSTAIN:
        return False
    return signature_key_id(vote.signature, vote.signature_message()) == key_id


class VoteError(ValueError):
    """A vote not counted; ``str()`` is the reference's message. ``score`` is the misbehaviour
    points its sender earns; ``orphan`` marks a vote kept until its masternode is known."""

    def __init__(self, message: str, score: int = 0, orphan: bool = False) -> None:
        super().__init__(message)
        self.score = score
        self.orphan = orphan


class Instance(NamedTuple):
    """A masternode's current vote on one signal and when it was accepted (for the rate
    limit); the vote's own time decides which is newer."""

    vote: Vote
    accepted: int


class Tally(NamedTuple):
    yes: int
    no: int
    abstain: int

    @property
    def absolute_yes(self) -> int:
        return self.yes - self.no


class Flags(NamedTuple):
    """The cached sentinel flags (fCachedValid, fCachedFunding, ...)."""

    valid: bool = True
    funding: bool = False
    delete: bool = False
    endorsed: bool = False


def vote_threshold(min_quorum: int, enabled: int) -> int:
    """Net yes votes a signal needs: max(quorum, enabled masternodes / 10)."""
    return max(min_quorum, enabled // 10)


def delete_threshold(min_quorum: int, enabled: int) -> int:
    """Net yes votes deletion needs: max(quorum, 2/3 of the enabled masternodes)."""
    return max(min_quorum, 2 * enabled // 3)


class VoteBook:
    """Every vote on one object, and the current one of each masternode per signal."""

    def __init__(self) -> None:
        self.current: Dict[OutPoint, Dict[int, Instance]] = {}
        self.votes: Dict[bytes, Vote] = {}

    def add(self, vote: Vote, keys: MasternodeKeys, now: int, rate_checks: bool = True) -> None:
        """Count ``vote`` or raise VoteError (ProcessVote's checks, in its order)."""
        key_id = keys.key_id(vote.masternode)
        if key_id is None:
            raise VoteError("CGovernanceObject::ProcessVote -- Masternode index not found",
                            orphan=True)
        if vote.signal == SIGNAL_NONE:
            raise VoteError("CGovernanceObject::ProcessVote -- Vote signal: none")
        if not signal_supported(vote.signal):
            raise VoteError("CGovernanceObject::ProcessVote -- Unsupported vote signal: "
                            + signal_name(vote.signal), score=20)
        instances = self.current.get(vote.masternode, {})
        previous = instances.get(vote.signal)
        if previous is not None and vote.time < previous.vote.time:
            raise VoteError("CGovernanceObject::ProcessVote -- Obsolete vote")
        if previous is not None and rate_checks and now - previous.accepted < UPDATE_MIN_SECONDS:
            raise VoteError("CGovernanceObject::ProcessVote -- Masternode voting too often, MN "
                            "outpoint = %s, governance object hash = %s, time delta = %d"
                            % (outpoint_text(vote.masternode), hash_to_hex(vote.parent_hash),
                               now - previous.accepted))
        if not vote_is_valid(vote, key_id, now):
            raise VoteError("CGovernanceObject::ProcessVote -- Invalid vote, MN outpoint = %s, "
                            "governance object hash = %s, vote hash = %s"
                            % (outpoint_text(vote.masternode), hash_to_hex(vote.parent_hash),
                               hash_to_hex(vote.hash)), score=20)
        self.restore(vote, now)
        self.votes.setdefault(vote.hash, vote)

    def restore(self, vote: Vote, accepted: int) -> None:
        """Make a saved vote current again, as it was when the node stopped."""
        self.current.setdefault(vote.masternode, {})[vote.signal] = Instance(vote, accepted)

    def tally(self, signal: int) -> Tally:
        counts = [0, 0, 0, 0]
        for instances in self.current.values():
            instance = instances.get(signal)
            if instance is not None:
                counts[instance.vote.outcome] += 1
        return Tally(counts[OUTCOME_YES], counts[OUTCOME_NO], counts[OUTCOME_ABSTAIN])

    def current_votes(self, masternode: Optional[OutPoint] = None) -> List[Vote]:
        """The votes that count now (all masternodes', or one's), as getcurrentvotes lists them."""
        return [instance.vote for outpoint, instances in self.current.items()
                if masternode is None or outpoint == masternode
                for instance in instances.values()]

    def flags(self, min_quorum: int, enabled: int, previous: Flags) -> Flags:
        """The cached flags against the quorum; with no enabled masternode nothing changes.
        Once set, the delete flag stays (the reference keeps fCachedDelete)."""
        if enabled == 0:
            return previous
        needed = vote_threshold(min_quorum, enabled)
        return Flags(valid=-self.tally(SIGNAL_VALID).absolute_yes < needed,
                     funding=self.tally(SIGNAL_FUNDING).absolute_yes >= needed,
                     delete=previous.delete or self.tally(SIGNAL_DELETE).absolute_yes
                     >= delete_threshold(min_quorum, enabled),
                     endorsed=self.tally(SIGNAL_ENDORSED).absolute_yes >= needed)
