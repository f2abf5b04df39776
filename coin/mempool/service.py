"""The mempool as a node service: acceptance, chain updates, persistence, fee estimates.

Everything that changes the pool runs on the validation worker thread (the
chain's single writer), so acceptance sees one consistent UTXO set and tip,
and block connection updates the pool before the next submission runs.
Readers (RPC, REST) use the pool's lock from the reactor thread.
"""

from __future__ import annotations

import os
from typing import Any, Callable, List, Optional, Tuple

from twisted.application import service
from twisted.internet.defer import Deferred, succeed
from twisted.logger import Logger

from coin.chain.chainstate import ChainState
from coin.chain.events import BlockConnected, BlockDisconnected, ChainEvent
from coin.chain.service import ValidationService
from coin.consensus.errors import ValidationError
from coin.mempool.accept import (
    Accepted, AlreadyInChain, PoolPolicy, accept_to_mempool, limit_pool_size, remove_for_reorg,
)
from coin.mempool.estimator import FeeEstimator
from coin.mempool.persist import (
    FILE_NAME, MempoolFileError, SavedPool, read_pool_file, serialize_pool,
)
from coin.mempool.pool import REMOVED_REORG, Mempool, MempoolEntry
from coin.primitives.transaction import Transaction
from coin.storage.atomicfile import write_file_atomic

log = Logger()

FEE_ESTIMATES_FILE = "fee_estimates.dat"


class MempoolService(service.Service):
    """Owns the :class:`Mempool` and the :class:`FeeEstimator` of a node."""

    name = "mempool"

    def __init__(self, validation: ValidationService, pool: Mempool, policy: PoolPolicy,
                 now: Callable[[], float], datadir: Optional[str] = None,
                 persist: bool = True, max_tx_fee: int = 0) -> None:
        self.validation = validation
        #: sendrawtransaction's absurd-fee guard (-maxtxfee, satoshis).
        self.max_tx_fee = max_tx_fee
        self.pool = pool
        self.policy = policy
        self.estimator = FeeEstimator()
        self._now = now
        self._datadir = datadir
        self._persist = persist and datadir is not None
        #: True once mempool.dat has been read (savemempool refuses before).
        self.loaded = False
        self._listeners: List[Callable[[Transaction], None]] = []
        pool.on_removed = self._removed
        validation.add_worker_hook(self._chain_events)

    # ------------------------------------------------------------------ life cycle

    def startService(self) -> None:
        super().startService()
        if self._datadir is not None:
            self.estimator.load(os.path.join(self._datadir, FEE_ESTIMATES_FILE))
        self.validation.ready.addCallback(self._chain_ready)

    def _chain_ready(self, chainstate: Any) -> Any:
        """Load mempool.dat in the background (RPC is open meanwhile, as Core)."""
        if not self._persist:
            self.loaded = True
        else:
            self.validation.call(self._load_on_worker).addErrback(
                lambda f: log.failure("Loading the mempool failed", f))
        return chainstate

    def stopService(self) -> Deferred:
        super().stopService()
        if self._datadir is None:
            return succeed(None)
        d = self.validation.call(self._shutdown_on_worker)
        d.addErrback(lambda f: log.failure("Saving the mempool failed", f))
        return d

    def _shutdown_on_worker(self, _: ChainState) -> None:
        if self._persist and self.loaded:
            self._dump()
        with self.pool.lock:
            self.estimator.save(os.path.join(self._datadir, FEE_ESTIMATES_FILE))

    def add_listener(self, listener: Callable[[Transaction], None]) -> None:
        """Call ``listener(tx)`` on the worker thread for every transaction added to the pool."""
        self._listeners.append(listener)

    def _notify(self, tx: Transaction) -> None:
        for listener in self._listeners:
            try:
                listener(tx)
            except Exception:
                log.failure("Mempool listener {listener!r} failed", listener=listener)

    # ------------------------------------------------------------------ requests

    def accept(self, tx: Transaction, max_fee: int = 0, test_only: bool = False) -> Deferred:
        """Fires with :class:`Accepted`; fails with ValidationError or MissingInputs."""
        return self.validation.call(self.accept_on_worker, tx, max_fee, test_only)

    def accept_on_worker(self, chainstate: ChainState, tx: Transaction, max_fee: int = 0,
                         test_only: bool = False, accept_time: Optional[int] = None) -> Accepted:
        """Acceptance itself; only on the validation worker (wallets commit through it)."""
        now = int(self._now())
        result = accept_to_mempool(chainstate, self.pool, tx, self.policy, now=now,
                                   max_fee=max_fee, test_only=test_only, accept_time=accept_time)
        entry = result.entry
        if entry is not None:
            for gone in result.replaced:
                log.debug("replacing tx {old} with {new}", old=gone.tx.txid_hex,
                          new=entry.tx.txid_hex)
            with self.pool.lock:
                # A BIP125 replacement is not a sample for fee estimation (Core).
                self.estimator.process_transaction(entry.txid, entry.height, entry.fee,
                                                   entry.size,
                                                   not entry.parents and not result.replaced)
            log.debug("AcceptToMemoryPool: accepted {txid} (poolsz {size} txn, {kb} kB)",
                      txid=entry.tx.txid_hex, size=len(self.pool),
                      kb=self.pool.total_usage // 1000)
            self._notify(tx)
        return result

    def submit(self, tx: Transaction, max_fee: int = 0) -> Deferred:
        """sendrawtransaction's submission: fires once ``tx`` is in the pool (already there
        counts); fails with AlreadyInChain, MissingInputs or ValidationError.

        The pool and the UTXO set are checked and the transaction accepted in one job on
        the validation worker, so no block or other submission comes in between.
        """
        return self.validation.call(self.submit_on_worker, tx, max_fee)

    def submit_on_worker(self, chainstate: ChainState, tx: Transaction, max_fee: int = 0) -> None:
        """The submission itself; only on the validation worker."""
        if tx.txid in self.pool:
            return
        keys = [(tx.txid, n) for n in range(len(tx.vout))]
        if any(coin is not None for coin in chainstate.store.coins.fetch(keys)):
            raise AlreadyInChain(AlreadyInChain.message)
        self.accept_on_worker(chainstate, tx, max_fee)

    def estimate_smart_fee(self, target: int, conservative: bool) -> Tuple[Optional[int], int]:
        """estimatesmartfee: ``(satoshis per kB or None, blocks)``.

        Never below what this node would relay (the pool's floor, -minrelaytxfee), as
        later Core versions clamp it.
        """
        with self.pool.lock:
            rate, blocks = self.estimator.estimate_smart_fee(target, conservative)
            floor = self.pool.relay_floor()
        return (None if rate is None else max(rate, floor)), blocks

    def prioritise(self, txid: bytes, delta: int) -> Deferred:
        return self.validation.call(lambda _cs: self.pool.prioritise(txid, delta))

    def save(self) -> Deferred:
        """savemempool: fires once mempool.dat is on disk."""
        return self.validation.call(lambda _cs: self._dump())

    # ------------------------------------------------------------------ worker side

    def _removed(self, entry: MempoolEntry, reason: str) -> None:
        self.estimator.remove_transaction(entry.txid)

    def _chain_events(self, chainstate: ChainState, events: List[ChainEvent]) -> None:
        """Keep the pool in step with an activation (Core's removeForBlock + reorg update)."""
        returning: List[List[Transaction]] = []
        confirmed_here = set()
        for event in events:
            if isinstance(event, BlockDisconnected):
                returning.append(event.block.txs[1:])
            elif isinstance(event, BlockConnected):
                txs = event.block.txs
                with self.pool.lock:
                    self.estimator.process_block(event.entry.height, [tx.txid for tx in txs])
                self.pool.remove_for_block(txs)
                confirmed_here.update(tx.txid for tx in txs)
        if not returning:
            return
        # Oldest disconnected block first, so parents come back before children.
        now = int(self._now())
        for txs in reversed(returning):
            for tx in txs:
                if tx.txid in confirmed_here or tx.txid in self.pool.entries:
                    continue
                try:
                    accept_to_mempool(chainstate, self.pool, tx, self.policy, now=now,
                                      bypass_limits=True)
                    self._notify(tx)
                except Exception as error:
                    log.debug("Transaction {txid} from a disconnected block did not return "
                              "to the mempool: {error}", txid=tx.txid_hex, error=error)
                    self.pool.remove_recursive(tx, REMOVED_REORG)
        self.pool.recompute_all()
        remove_for_reorg(chainstate, self.pool)
        limit_pool_size(self.pool, self.policy, now)

    # ------------------------------------------------------------------ persistence

    def _path(self) -> str:
        assert self._datadir is not None
        return os.path.join(self._datadir, FILE_NAME)

    def _dump(self) -> None:
        write_file_atomic(self._path(), serialize_pool(self.pool))

    def _load_on_worker(self, chainstate: ChainState) -> None:
        path = self._path()
        try:
            saved: SavedPool = read_pool_file(path)
        except FileNotFoundError:
            self.loaded = True
            return
        except (OSError, MempoolFileError) as e:
            log.warn("Failed to deserialize mempool data on disk: {error}. Continuing anyway.",
                     error=e)
            self.loaded = True
            return
        now = int(self._now())
        succeeded = failed = expired = already = 0
        for item in saved.entries:
            if item.fee_delta:
                self.pool.prioritise(item.tx.txid, item.fee_delta)
            if item.time + self.policy.expiry_seconds <= now:
                expired += 1
                continue
            try:
                self.accept_on_worker(chainstate, item.tx, 0, False, accept_time=item.time)
                succeeded += 1
            except ValidationError as e:
                if e.reason == "txn-already-in-mempool":
                    already += 1
                else:
                    failed += 1
            except Exception:
                failed += 1
        for txid, delta in saved.deltas.items():
            self.pool.prioritise(txid, delta)
        log.info("Imported mempool transactions from disk: {ok} succeeded, {failed} failed, "
                 "{expired} expired, {already} already there", ok=succeeded, failed=failed,
                 expired=expired, already=already)
        self.loaded = True
