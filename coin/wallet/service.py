"""The node's wallets: where their files live, loading and unloading, keeping them in step.

Each wallet is one SQLite file: the default (empty-named) wallet is
``<walletdir>/wallet.dat``, wallet ``w2`` is ``<walletdir>/w2/wallet.dat``;
``<walletdir>`` is ``-walletdir`` or ``<network datadir>/wallets``.  Loaded
wallets follow the chain through a validation worker hook (blocks connected
and disconnected, in order, before the next submission) and the mempool
through its acceptance listener.  A wallet behind the chain when it loads is
rescanned from its last block; its unconfirmed transactions are offered to
the mempool again (a crash between signing and broadcast loses nothing).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional

from twisted.application import service
from twisted.internet.defer import inlineCallbacks
from twisted.logger import Logger

from coin.chain.chainstate import ChainState
from coin.chain.events import BlockConnected, BlockDisconnected, ChainEvent
from coin.chain.service import ValidationService
from coin.chainparams import ChainParams
from coin.mempool.service import MempoolService
from coin.primitives.transaction import Transaction
from coin.wallet.db import WalletDB, WalletFileError
from coin.wallet.wallet import Wallet

log = Logger()

WALLET_FILE = "wallet.dat"
#: Blocks rescanned per turn on the validation worker (other work interleaves).
RESCAN_CHUNK = 200


class WalletLoadError(Exception):
    """A wallet cannot be loaded or created; ``code`` is the RPC error (-4, -18, ...)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.rpc_code = code
        self.message = message


RPC_WALLET_ERROR = -4
RPC_WALLET_NOT_FOUND = -18


class RescanError(Exception):
    """Blocks needed for a rescan are pruned."""

    rpc_code = -1


class WalletService(service.Service):
    """Loaded wallets by name, in load order (the RPC layer routes calls to them)."""

    name = "wallets"

    def __init__(self, validation: ValidationService, mempool: MempoolService,
                 params: ChainParams, walletdir: str, now: Callable[[], float],
                 keypool_size: int) -> None:
        self.validation = validation
        self.mempool = mempool
        self.params = params
        self.walletdir = walletdir
        self._now = now
        self.keypool_size = keypool_size
        self.wallets: Dict[str, Wallet] = {}
        validation.add_worker_hook(self._chain_events)
        mempool.add_listener(self._transaction_added)

    # ------------------------------------------------------------------ paths

    def path_of(self, name: str) -> str:
        """The wallet file for ``name``; WalletLoadError for a name that leaves walletdir."""
        parts = name.split("/") if name else []
        if "\0" in name or os.path.isabs(name) or any(p in ("", ".", "..") for p in parts):
            raise WalletLoadError(
                RPC_WALLET_ERROR,
                "Wallet file verification failed: Invalid -wallet path '%s'. -wallet path should "
                "point to a directory where wallet.dat can be stored, a location where such a "
                "directory could be created, or (for backwards compatibility) the name of an "
                "existing data file in -walletdir (%s)" % (name, self.walletdir))
        return os.path.join(self.walletdir, *parts, WALLET_FILE)

    def list_dir(self) -> List[str]:
        """Names of the wallets in walletdir (listwalletdir)."""
        found = []
        for root, _dirs, files in os.walk(self.walletdir):
            if WALLET_FILE in files:
                found.append(os.path.relpath(root, self.walletdir).replace(os.sep, "/")
                             if root != self.walletdir else "")
        return sorted(found)

    # ------------------------------------------------------------------ load / unload

    def open_wallet(self, chainstate: ChainState, name: str, create: bool,
                    must_create: bool = False, disable_private_keys: bool = False) -> Wallet:
        """Open a wallet file on the validation worker (so no block slips by unseen)."""
        if name in self.wallets:
            raise WalletLoadError(RPC_WALLET_ERROR, "Wallet file verification failed: Error "
                                  "loading wallet %s. Duplicate -wallet filename specified." % name)
        path = self.path_of(name)
        exists = WalletDB.exists(path)
        if must_create and exists:
            raise WalletLoadError(RPC_WALLET_ERROR, "Wallet %s already exists." % name)
        if not exists and not create:
            raise WalletLoadError(RPC_WALLET_NOT_FOUND, "Wallet %s not found." % name)
        db = WalletDB(path)
        try:
            created = db.open(create=create)
        except WalletFileError as e:
            raise WalletLoadError(RPC_WALLET_ERROR, "Wallet loading failed: %s" % e) from None
        pool = self.mempool.pool
        wallet = Wallet(name, db, self.params, chainstate, lambda txid: txid in pool.entries,
                        self._now, self.keypool_size)
        try:
            wallet.open(created, disable_private_keys=disable_private_keys and created)
        except Exception as e:
            db.close()
            raise WalletLoadError(RPC_WALLET_ERROR, "Wallet loading failed: %s" % e) from None
        if created:
            # Nothing before now can pay a brand-new wallet: start at the tip, no rescan.
            wallet.mark_best_block(chainstate.tip.hash)
        self.wallets[name] = wallet
        log.info("Wallet {name!r} loaded from {path} ({count} transactions)", name=name,
                 path=path, count=wallet.tx_count())
        return wallet

    @inlineCallbacks
    def load(self, name: str, create: bool = False, must_create: bool = False,
             disable_private_keys: bool = False):
        """Load (or create) ``name``, catch it up with the chain, resubmit its pending txs."""
        wallet = yield self.validation.call(self.open_wallet, name, create, must_create,
                                            disable_private_keys)
        start = yield self.validation.call(_catch_up_height, wallet)
        if start is not None:
            yield self.rescan(wallet, start, None)
        yield self.validation.call(self._reaccept, wallet)
        return wallet

    def unload(self, name: str) -> None:
        wallet = self.wallets.pop(name)
        with wallet.lock:
            wallet.close()

    def stopService(self) -> Any:
        super().stopService()
        for name in list(self.wallets):
            self.unload(name)

    # ------------------------------------------------------------------ chain and pool

    def _chain_events(self, chainstate: ChainState, events: List[ChainEvent]) -> None:
        for wallet in list(self.wallets.values()):
            for event in events:
                if isinstance(event, BlockConnected):
                    wallet.block_connected(event.entry.height, event.block)
                elif isinstance(event, BlockDisconnected):
                    wallet.block_disconnected(event.block)

    def _transaction_added(self, tx: Transaction) -> None:
        for wallet in list(self.wallets.values()):
            wallet.transaction_added_to_mempool(tx)

    def _reaccept(self, chainstate: ChainState, wallet: Wallet) -> int:
        """Offer the wallet's unconfirmed transactions to the mempool again."""
        count = 0
        for wtx in wallet.ordered_txs():
            if wtx.abandoned or wtx.tx.is_coinbase() or wallet.depth(wtx) != 0:
                continue
            if wtx.txid in self.mempool.pool.entries:
                continue
            try:
                self.mempool.accept_on_worker(chainstate, wtx.tx)
                count += 1
            except Exception as e:
                log.debug("Wallet transaction {txid} not accepted again: {error}",
                          txid=wtx.tx.txid_hex, error=e)
        return count

    # ------------------------------------------------------------------ rescan

    @inlineCallbacks
    def rescan(self, wallet: Wallet, start: int, stop: Optional[int],
               abort: Optional[Callable[[], bool]] = None):
        """Scan blocks ``start..stop`` (default: to the tip) for the wallet's transactions.

        Runs in chunks on the validation worker; fires with the last height scanned.
        ``abort()`` is asked between chunks (abortrescan): when true the scan stops there.
        """
        height = start
        last = start - 1
        while True:
            if abort is not None and abort():
                return last
            done = yield self.validation.call(_rescan_chunk, wallet, height, stop, RESCAN_CHUNK)
            if done is None:
                return last
            last = done
            height = done + 1


def _catch_up_height(chainstate: ChainState, wallet: Wallet) -> Optional[int]:
    """First height a loading wallet has not seen, or None when it is up to date."""
    tip = chainstate.tip
    best = wallet.best_block
    if best == tip.hash:
        return None
    entry = chainstate.lookup(best) if best else None
    if entry is None:
        return 0
    fork = chainstate.find_fork(tip, entry)
    if entry is not fork:
        # The wallet followed a branch that is no longer active: unconfirm what it saw there.
        walk = entry
        while walk is not fork:
            wallet.block_disconnected(chainstate.read_block(walk))
            walk = walk.prev
    return fork.height + 1


def _rescan_chunk(chainstate: ChainState, wallet: Wallet, start: int, stop: Optional[int],
                  count: int) -> Optional[int]:
    """Scan up to ``count`` blocks from ``start``; the last height scanned, or None."""
    tip_height = chainstate.height
    end = tip_height if stop is None else min(stop, tip_height)
    if start > end:
        return None
    last = min(end, start + count - 1)
    with wallet.lock, wallet.db.batch():  # one commit per chunk
        for height in range(start, last + 1):
            entry = chainstate.at_height(height)
            if not entry.have_data():
                raise RescanError("Can't rescan beyond pruned data. Use RPC call "
                                  "getblockchaininfo to determine your pruned height.")
            wallet.block_connected(height, chainstate.read_block(entry))
    return last


def default_walletdir(config: Any, datadir: str) -> str:
    """``-walletdir`` or ``<network datadir>/wallets``."""
    configured = config.get("walletdir")
    if configured:
        return os.path.abspath(configured)
    return os.path.join(datadir, "wallets")

