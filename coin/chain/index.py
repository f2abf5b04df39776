"""The in-memory block index: one entry per known header, linked to its parent.

Entries are created and mutated only by the validation pipeline; everyone else
reads them.  Persisted rows live in ``coin.storage.blockindex``.
"""

from __future__ import annotations

from typing import Optional

# Validity levels (low bits) and flags, as Core's BlockStatus.
BLOCK_VALID_HEADER = 1
BLOCK_VALID_TREE = 2
BLOCK_VALID_TRANSACTIONS = 3
BLOCK_VALID_CHAIN = 4
BLOCK_VALID_SCRIPTS = 5
BLOCK_VALID_MASK = 7
BLOCK_HAVE_DATA = 8
BLOCK_HAVE_UNDO = 16
BLOCK_FAILED_VALID = 32
BLOCK_FAILED_CHILD = 64
BLOCK_FAILED_MASK = BLOCK_FAILED_VALID | BLOCK_FAILED_CHILD

MEDIAN_TIME_SPAN = 11


def _invert_lowest_one(n: int) -> int:
    return n & (n - 1)


def skip_height(height: int) -> int:
    """Height of the skip-list ancestor (Core's GetSkipHeight): O(log n) ancestor walks."""
    if height < 2:
        return 0
    if height & 1:
        return _invert_lowest_one(_invert_lowest_one(height - 1)) + 1
    return _invert_lowest_one(height)


class BlockIndexEntry:
    """A header we know of, where its data lives, and how far it was validated."""

    __slots__ = ("hash", "height", "prev", "skip", "version", "merkle_root", "time",
                 "bits", "nonce", "chainwork", "status", "tx_count", "chain_tx",
                 "file_no", "data_pos", "undo_file", "undo_pos", "sequence_id",
                 "time_max", "_mtp")

    def __init__(self, hash: bytes, height: int, prev: Optional["BlockIndexEntry"],
                 version: int, merkle_root: bytes, time: int, bits: int, nonce: int,
                 chainwork: int) -> None:
        self.hash = hash
        self.height = height
        self.prev = prev
        self.skip = prev.get_ancestor(skip_height(height)) if prev is not None else None
        self.version = version
        self.merkle_root = merkle_root
        self.time = time
        self.bits = bits
        self.nonce = nonce
        self.chainwork = chainwork
        self.status = BLOCK_VALID_HEADER
        self.tx_count = 0
        #: Transactions in the chain up to and including this block (0 if unknown).
        self.chain_tx = 0
        self.file_no = -1
        self.data_pos = -1
        self.undo_file = -1
        self.undo_pos = -1
        #: Arrival order of block data; earlier wins ties in chain work.
        self.sequence_id = 0
        self.time_max = time if prev is None else max(prev.time_max, time)
        self._mtp: Optional[int] = None

    @property
    def prev_hash(self) -> bytes:
        return self.prev.hash if self.prev is not None else b"\x00" * 32

    def get_ancestor(self, height: int) -> Optional["BlockIndexEntry"]:
        """The ancestor at ``height`` (self if equal), or None if out of range."""
        if height > self.height or height < 0:
            return None
        # Core's walk; an entry's skip height is its skip entry's (no recomputation), and
        # the previous height's is only worked out when the skip would overshoot.
        walk = self
        while walk.height > height:
            skip = walk.skip
            if skip is not None:
                h_skip = skip.height
                if h_skip == height:
                    return skip
                if h_skip > height:
                    h_skip_prev = skip_height(walk.height - 1)
                    if not (h_skip_prev < h_skip - 2 and h_skip_prev >= height):
                        walk = skip
                        continue
            prev = walk.prev
            assert prev is not None  # height > 0 here
            walk = prev
        return walk

    def median_time_past(self) -> int:
        """Median of the last 11 block times ending here (BIP113)."""
        mtp = self._mtp
        if mtp is None:
            times = []
            walk: Optional[BlockIndexEntry] = self
            while walk is not None and len(times) < MEDIAN_TIME_SPAN:
                times.append(walk.time)
                walk = walk.prev
            times.sort()
            mtp = self._mtp = times[len(times) // 2]
        return mtp

    def is_valid(self, up_to: int = BLOCK_VALID_TRANSACTIONS) -> bool:
        if self.status & BLOCK_FAILED_MASK:
            return False
        return (self.status & BLOCK_VALID_MASK) >= up_to

    def raise_validity(self, up_to: int) -> bool:
        """Raise the validity level; returns True if it changed."""
        if self.status & BLOCK_FAILED_MASK:
            return False
        if (self.status & BLOCK_VALID_MASK) < up_to:
            self.status = (self.status & ~BLOCK_VALID_MASK) | up_to
            return True
        return False

    def have_data(self) -> bool:
        return bool(self.status & BLOCK_HAVE_DATA)

    def failed(self) -> bool:
        return bool(self.status & BLOCK_FAILED_MASK)

    def __repr__(self) -> str:
        return "BlockIndexEntry(%s, height=%d)" % (self.hash[::-1].hex(), self.height)
