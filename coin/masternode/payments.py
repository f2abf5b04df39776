"""Masternode payments: ``mnw`` votes, the payee of each height, the coinbase rule.

The ten best-ranked masternodes for a height (rank seeded by the block 101 below) each
vote for the payee they pick from the payment queue; a vote from outside the top ten is
refused (the sender scored 20 when outside the top twenty, as the reference does).  The
payee of a height is the one with the most votes (the reference's GetBestPayee; ties go to
the earliest voted); a block must pay it only once it has ``votes_required`` votes (6; 2 on
regtest) -- below that any payee is accepted, as in the reference.  Unlike the reference, a
miner with no vote for the height keeps the whole reward instead of guessing a payee
(design.md §6).

The payment is 45% of the block subsidy, in the coinbase's output 1, from the network's
payment start height on.
"""

from __future__ import annotations

import threading
from typing import Callable, Dict, List, Optional, Tuple

from twisted.logger import Logger

from coin.masternode import signing
from coin.masternode.manager import BlockHashAt, MasternodeError, MasternodeManager
from coin.masternode.params import MIN_PAYMENTS_PROTO, RANK_BLOCK_OFFSET, MasternodeParams
from coin.masternode.record import Masternode
from coin.p2p.messages import PaymentVoteMessage
from coin.primitives.hashes import hash160
from coin.primitives.transaction import OutPoint, Transaction
from coin.script.standard import p2pkh_script

log = Logger()

SIGNATURES_TOTAL = 10
#: Ban score of an ``mnw`` from far outside the top ten or with a bad signature.
BAN_BAD_VOTE = 20
#: Votes may name heights up to this far above the tip.
MAX_VOTE_AHEAD = 20
#: How many heights below the tip votes are kept (the reference keeps max(5000, 1.25 x list)).
MIN_STORAGE_BLOCKS = 5000
#: The active masternode votes for the height this far above the tip.
VOTE_AHEAD = 10
#: A masternode scheduled within this many heights is not picked again.
SCHEDULE_WINDOW = 8
#: Share of the block subsidy paid to the masternode, in percent (design.md §6).
PAYMENT_PERCENT = 45


def masternode_payment(subsidy: int) -> int:
    return subsidy * PAYMENT_PERCENT // 100


def payee_script(masternode: Masternode) -> bytes:
    """A masternode is paid to the P2PKH script of its collateral key."""
    return p2pkh_script(hash160(masternode.broadcast.collateral_pubkey))


class PaymentVotes:
    """Votes by height and the payee rules over them."""

    def __init__(self, manager: MasternodeManager, params: MasternodeParams) -> None:
        self.manager = manager
        self.params = params
        #: height -> payee script -> voters (in arrival order).
        self._votes: Dict[int, Dict[bytes, List[OutPoint]]] = {}
        self._seen: Dict[bytes, PaymentVoteMessage] = {}
        self._voted: Dict[Tuple[OutPoint, int], bytes] = {}
        #: The miner and the payee rule read the votes on the validation worker.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._seen)

    def votes(self) -> List[PaymentVoteMessage]:
        return list(self._seen.values())

    def has_seen(self, vote_hash: bytes) -> bool:
        return vote_hash in self._seen

    # ------------------------------------------------------------ votes

    def add_vote(self, vote: PaymentVoteMessage, tip_height: int, block_hash_at: BlockHashAt
                 ) -> bool:
        """Check and count ``vote``; False if already seen or the voter already voted."""
        if vote.hash in self._seen:
            return False
        first = tip_height - max(MIN_STORAGE_BLOCKS, len(self.manager) * 5 // 4)
        if not first <= vote.height <= tip_height + MAX_VOTE_AHEAD:
            raise MasternodeError("mnw: vote out of range: height %d, tip %d"
                                  % (vote.height, tip_height))
        if (vote.outpoint, vote.height) in self._voted:
            raise MasternodeError("mnw: masternode already voted, masternode=%s"
                                  % signing.outpoint_short(vote.outpoint))
        voter = self.manager.get(vote.outpoint)
        if voter is None:
            raise MasternodeError("mnw: unknown masternode %s" % signing.outpoint_short(vote.outpoint))
        if voter.broadcast.protocol_version < MIN_PAYMENTS_PROTO:
            raise MasternodeError("mnw: masternode protocol is too old")
        rank = self.manager.rank(vote.outpoint, vote.height, block_hash_at)
        if rank is None:
            raise MasternodeError("mnw: can't calculate rank for masternode")
        if rank > SIGNATURES_TOTAL:
            score = BAN_BAD_VOTE if rank > 2 * SIGNATURES_TOTAL else 0
            raise MasternodeError("mnw: masternode is not in the top %d (%d)"
                                  % (SIGNATURES_TOTAL * (2 if score else 1), rank), score)
        if not signing.verify(voter.broadcast.masternode_pubkey, vote.signature,
                              signing.vote_string(vote)):
            raise MasternodeError("mnw: invalid signature", BAN_BAD_VOTE)
        self._record(vote)
        return True

    def _record(self, vote: PaymentVoteMessage) -> None:
        with self._lock:
            self._seen[vote.hash] = vote
            self._voted[(vote.outpoint, vote.height)] = vote.hash
            self._votes.setdefault(vote.height, {}).setdefault(vote.payee, []).append(vote.outpoint)

    def load(self, votes: List[PaymentVoteMessage]) -> None:
        """Votes read from ``mnpayments.dat`` (checked when they were received)."""
        for vote in votes:
            if vote.hash not in self._seen and (vote.outpoint, vote.height) not in self._voted:
                self._record(vote)

    def prune(self, tip_height: int) -> None:
        """Forget votes for heights below the storage limit."""
        first = tip_height - max(MIN_STORAGE_BLOCKS, len(self.manager) * 5 // 4)
        with self._lock:
            for height in [h for h in self._votes if h < first]:
                del self._votes[height]
            self._seen = {h: v for h, v in self._seen.items() if v.height >= first}
            self._voted = {k: h for k, h in self._voted.items() if k[1] >= first}

    # ------------------------------------------------------------ payees

    def best_payee(self, height: int) -> Optional[bytes]:
        """The payee with the most votes for ``height`` (first voted wins a tie), or None."""
        best, count = None, 0
        for payee, votes in self.payees(height):
            if votes > count:
                best, count = payee, votes
        return best

    def payees(self, height: int) -> List[Tuple[bytes, int]]:
        """``(payee script, votes)`` for ``height``, in first-vote order."""
        with self._lock:
            return [(payee, len(voters)) for payee, voters in self._votes.get(height, {}).items()]

    def block_payee(self, height: int, subsidy: int) -> Optional[Tuple[bytes, int]]:
        """What the miner pays at ``height``: ``(script, amount)``, or None (keeps it all)."""
        if height < self.params.payments_start_height:
            return None
        payee = self.best_payee(height)
        return None if payee is None else (payee, masternode_payment(subsidy))

    def is_coinbase_valid(self, coinbase: Transaction, height: int, subsidy: int) -> bool:
        """The reference's IsTransactionValid: with a payee of 6+ votes, an output must pay
        one such payee exactly the masternode payment."""
        if height < self.params.payments_start_height:
            return True
        required = self.params.votes_required
        elected = [payee for payee, count in self.payees(height) if count >= required]
        if not elected:
            return True
        amount = masternode_payment(subsidy)
        return any(out.script_pubkey in elected and out.value == amount for out in coinbase.vout)

    def is_scheduled(self, masternode: Masternode, tip_height: int, not_height: int) -> bool:
        script = payee_script(masternode)
        return any(h != not_height and self.best_payee(h) == script
                   for h in range(tip_height, tip_height + SCHEDULE_WINDOW + 1))

    def next_in_queue(self, height: int, tip_height: int, now: int, block_hash_at: BlockHashAt,
                      filter_sig_time: bool = True) -> Tuple[Optional[Masternode], int]:
        """The reference's GetNextMasternodeInQueueForPayment: among the payable masternodes
        not yet scheduled, old enough and with enough collateral confirmations, the tenth
        paid longest ago; the best score among them.  Returns ``(masternode, qualifying)``."""
        listed = [mn for mn in self.manager if mn.broadcast.protocol_version >= MIN_PAYMENTS_PROTO]
        count = len(listed)
        queue = [mn for mn in listed
                 if mn.is_valid_for_payment()
                 and not self.is_scheduled(mn, tip_height, height)
                 and not (filter_sig_time and mn.broadcast.sig_time + count * 156 > now)
                 and tip_height - mn.collateral_height + 1 >= count]
        if filter_sig_time and len(queue) < count / 3:
            return self.next_in_queue(height, tip_height, now, block_hash_at, False)
        block_hash = block_hash_at(height - RANK_BLOCK_OFFSET)
        if block_hash is None or not queue:
            return None, len(queue)
        queue.sort(key=lambda mn: (mn.last_paid_height, mn.outpoint.key()))
        tenth = queue[:max(1, count // 10)]
        best = max(tenth, key=lambda mn: mn.score(block_hash))
        return best, len(queue)

    def payments_string(self, height: int, address_of: Callable[[bytes], str]) -> str:
        """``masternode winners``: "address:votes, ..." or "Unknown"."""
        text = ", ".join("%s:%d" % (address_of(payee), count) for payee, count in self.payees(height))
        return text or "Unknown"

    # ------------------------------------------------------------ blocks

    def block_connected(self, height: int, block_time: int, coinbase: Transaction,
                        subsidy: int) -> None:
        """Record who the block at ``height`` paid (the "lastpaid" list modes, the queue)."""
        if height < self.params.payments_start_height:
            return
        amount = masternode_payment(subsidy)
        paid = {out.script_pubkey for out in coinbase.vout[1:] if out.value == amount}
        for masternode in self.manager:
            if payee_script(masternode) in paid:
                masternode.last_paid_height, masternode.last_paid_time = height, block_time

    def block_disconnected(self, height: int) -> None:
        """A payment undone by a reorg is forgotten (the next payment sets it again)."""
        for masternode in self.manager:
            if masternode.last_paid_height >= height:
                masternode.last_paid_height, masternode.last_paid_time = 0, 0
