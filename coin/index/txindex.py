"""The transaction index (-txindex): txid -> where the transaction is stored.

One loop keeps the index at the active chain's tip, Core's BaseIndex in small
steps.  Each step runs on the validation service's writer thread (the only
database writer) and handles a bounded slice: while the block named by the
marker is off the active chain, its rows are removed and the marker moves to
its parent (reorgs); then up to :data:`SLICE_BLOCKS` blocks /
:data:`SLICE_TXS` transactions of the active chain after the marker are
indexed.  Rows and marker commit in one transaction, so after ``kill -9`` the
index is exactly at its marker and the loop resumes from there.

The loop runs whenever the tip changes and, while it is behind (``-txindex=1``
enabled on an existing chain), again and again with the reactor in between,
so RPC keeps being served and new blocks keep connecting (they queue on the
writer thread between two slices).  That is why enabling the index needs no
``-reindex``, unlike Core.

Disconnected blocks have their rows removed (Core keeps stale rows and checks
the block at lookup); lookups still check that the block is on the active
chain, which covers the moment between a reorg and the index catching up.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from twisted.application import service
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from coin.chain.chainstate import ChainState
from coin.chain.index import BlockIndexEntry
from coin.chain.service import ValidationService
from coin.primitives.serialize import compact_size
from coin.storage.txindex import TxRow, rows_for_block
from coin.storage.errors import DatabaseUnreachable

log = Logger()

#: Most blocks one step indexes (the writer thread is busy that long).
SLICE_BLOCKS = 200
#: Most transactions one step indexes.
SLICE_TXS = 5000
#: Seconds between progress lines while catching up.
LOG_INTERVAL = 10.0

NAME = "txindex"


def block_tx_offsets(block: Any) -> List[Tuple[bytes, int]]:
    """``(txid, byte offset inside the serialized block)`` for each transaction."""
    offset = 80 + len(compact_size(len(block.txs)))
    result = []
    for tx in block.txs:
        result.append((tx.txid, offset))
        offset += tx.size
    return result


class TxIndex(service.Service):
    """Keeps the ``tx_index`` table in step with the active chain; status for getindexinfo."""

    name = NAME

    def __init__(self, validation: ValidationService, reactor: Any, reindex: bool = False,
                 slice_blocks: int = SLICE_BLOCKS, slice_txs: int = SLICE_TXS,
                 log_interval: float = LOG_INTERVAL) -> None:
        self._validation = validation
        self._reactor = reactor
        self._reindex = reindex
        self.slice_blocks = slice_blocks
        self.slice_txs = slice_txs
        self.log_interval = log_interval
        #: Last indexed block (set in the reactor thread from each step's result).
        self.best: Optional[BlockIndexEntry] = None
        #: Writer-thread copy of the marker's entry.
        self._worker_best: Optional[BlockIndexEntry] = None
        self._loaded = False
        self._running: Optional[Deferred] = None
        self._again = False
        self._stopping = False
        self._announced = False
        self._last_log = 0.0
        self._start_height: Optional[int] = None
        self.error: Optional[str] = None
        #: Fires once the index first reaches the tip (tests, callers that must wait).
        self.synced_once: Deferred = Deferred()

    # -- status ---------------------------------------------------------------

    @property
    def best_height(self) -> int:
        return self.best.height if self.best is not None else -1

    @property
    def synced(self) -> bool:
        """True when every block of the active chain is indexed."""
        tip = self._validation.chainstate.tip
        return self._loaded and self.best is not None and self.best is tip

    def info(self) -> dict:
        """getindexinfo's entry: ``{"synced": bool, "best_block_height": n}``."""
        return {"synced": self.synced, "best_block_height": self.best_height}

    def covers(self, entry: BlockIndexEntry) -> bool:
        """Whether ``entry``'s transactions are certainly in the index."""
        best = self.best
        return best is not None and best.height >= entry.height and \
            best.get_ancestor(entry.height) is entry

    # -- life cycle -------------------------------------------------------------

    def startService(self) -> None:
        super().startService()
        self._validation.ready.addCallback(self._chain_ready)

    def _chain_ready(self, chainstate: ChainState) -> ChainState:
        if self._stopping:
            return chainstate
        self._validation.subscribe(self)
        self._running = self._validation.call(self._load, self._reindex)
        self._running.addCallbacks(self._stepped, self._failed)
        return chainstate

    def stopService(self) -> Optional[Deferred]:
        super().stopService()
        self._stopping = True
        try:
            self._validation.unsubscribe(self)
        except ValueError:
            pass
        if self._running is not None:
            d: Deferred = Deferred()
            self._running.addBoth(lambda r: (d.callback(None), r)[1])
            return d
        return None

    # -- chain events (reactor thread) -----------------------------------------

    def tip_changed(self, entry: BlockIndexEntry) -> None:
        self.kick()

    def kick(self) -> None:
        """Run a step now, or right after the one in flight."""
        if self._stopping or self.error is not None or not self._loaded:
            self._again = True
            return
        if self._running is not None:
            self._again = True
            return
        self._again = False
        self._running = self._validation.call(self._step)
        self._running.addCallbacks(self._stepped, self._failed)

    def _stepped(self, result: Tuple[Optional[BlockIndexEntry], bool]) -> None:
        self._running = None
        self._loaded = True
        self.best, behind = result
        height = self.best_height
        if self._start_height is None:
            self._start_height = height
        if behind:
            now = self._reactor.seconds()
            if now - self._last_log >= self.log_interval:
                self._last_log = now
                tip = self._validation.chainstate.height
                log.info("Syncing txindex with block chain from height {start}: height "
                         "{height} of {tip} ({percent:.1f}%)", start=self._start_height,
                         height=height, tip=tip,
                         percent=100.0 * max(height, 0) / tip if tip > 0 else 100.0)
        elif not self._announced:
            self._announced = True
            log.info("txindex is enabled at height {height}", height=height)
            self.synced_once.callback(height)
        if self._stopping:
            return
        if behind or self._again:
            self._again = False
            self._reactor.callLater(0, self.kick)

    def _failed(self, failure: Any) -> None:
        self._running = None
        if failure.check(DatabaseUnreachable) and self._loaded:
            # Not an indexing error: the step runs again once the database is back.
            self._again = True
            return
        self.error = failure.getErrorMessage()
        log.failure("txindex stopped: indexing failed", failure)

    # -- database outages (coin.storage.outage listener) ----------------------------

    def database_lost(self) -> None:
        """Nothing to do: the step that failed is run again by :meth:`database_back`."""

    def database_back(self) -> None:
        self.kick()

    # -- writer thread ------------------------------------------------------------

    def _load(self, chainstate: ChainState,
              reindex: bool) -> Tuple[Optional[BlockIndexEntry], bool]:
        store = chainstate.store
        if reindex:
            if store.txindex_has_data():
                log.info("Wiping the transaction index (-reindex)")
            store.txindex_wipe()
        marker = store.txindex_best()
        best = None
        if marker is not None:
            best = chainstate.lookup(marker)
            if best is None:
                log.warn("txindex best block {hash} is not in the block index; rebuilding "
                         "the transaction index", hash=marker[::-1].hex())
                store.txindex_wipe()
        self._worker_best = best
        return self._step(chainstate)

    def _step(self, chainstate: ChainState) -> Tuple[Optional[BlockIndexEntry], bool]:
        """Index one slice; ``(best entry, still behind the tip)``."""
        best = self._worker_best
        removed: List[Tuple[bytes, List[bytes]]] = []
        added: List[TxRow] = []
        blocks = txs = 0
        while best is not None and not chainstate.contains(best) and blocks < self.slice_blocks:
            block = chainstate.read_block(best)
            removed.append((best.hash, [tx.txid for tx in block.txs]))
            best = best.prev
            blocks += 1
        while blocks < self.slice_blocks and txs < self.slice_txs:
            if best is not None and not chainstate.contains(best):
                break
            nxt = chainstate.at_height(best.height + 1 if best is not None else 0)
            if nxt is None:
                break
            if nxt.height > 0:   # the genesis coinbase is not an ordinary transaction
                block = chainstate.read_block(nxt)
                added.extend(rows_for_block(nxt.hash, nxt.file_no, nxt.data_pos,
                                            block_tx_offsets(block)))
                txs += len(block.txs)
            best = nxt
            blocks += 1
        if best is not self._worker_best and best is not None:
            chainstate.store.txindex_apply(removed, added, best.hash)
            self._worker_best = best
        return best, best is not chainstate.tip


def drop_txindex(validation: ValidationService) -> Deferred:
    """``-txindex=0``: remove rows and marker of an index that was enabled before.

    Fires with True if there was something to drop.
    """
    def drop(chainstate: ChainState) -> bool:
        store = chainstate.store
        if not store.txindex_has_data():
            return False
        log.info("Dropping the transaction index (-txindex=0)")
        store.txindex_wipe()
        log.info("Transaction index dropped")
        return True
    return validation.call(drop)

