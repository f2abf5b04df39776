"""The node's wallets: where their files live, loading and unloading, keeping them in step.

Each wallet is one SQLite file: the default (empty-named) wallet is
``<walletdir>/wallet.dat``, wallet ``w2`` is ``<walletdir>/w2/wallet.dat``;
``<walletdir>`` is ``-walletdir`` or ``<network datadir>/wallets``; an absolute
name is a directory anywhere, as in Core 0.17.  A name becomes a path in one
place, :func:`resolve_wallet_path`, which resolves symlinks and refuses a
relative name that lands outside the wallet directory.  Loaded
wallets follow the chain through a validation worker hook (blocks connected
and disconnected, in order, before the next submission) and the mempool
through its acceptance listener.  A wallet behind the chain when it loads is
rescanned from its last block; its unconfirmed transactions are offered to
the mempool again (a crash between signing and broadcast loses nothing).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from twisted.application import service
from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.threadpool import ThreadPool

from coin.chain.chainstate import ChainState
from coin.chain.events import BlockConnected, BlockDisconnected, ChainEvent
from coin.chain.index import BlockIndexEntry
from coin.chain.service import ValidationService
from coin.chainparams import ChainParams
from coin.consensus.errors import ValidationError
from coin.mempool.accept import MissingInputs
from coin.mempool.service import MempoolService
from coin.primitives.hashes import hash_to_hex
from coin.primitives.transaction import Transaction
from coin.threads import ThreadRunner
from coin.wallet.access import in_wallet
from coin.wallet.addresses import ensure_unlocked
from coin.wallet.backup import check_dump_path, import_dump, read_dump_lines, write_dump
from coin.wallet.crypter import WrongPassphrase
from coin.wallet.db import COMPANION_SUFFIXES, WalletDB, WalletFileError
from coin.wallet.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_MISC_ERROR, RPC_WALLET_ERROR,
    RPC_WALLET_NOT_FOUND, RPC_WALLET_PASSPHRASE_INCORRECT, WalletError,
)
from coin.wallet.keystore import ISMINE_SPENDABLE
from coin.wallet.rescan import TIMESTAMP_WINDOW, Reservation, Rescanner, ScanResult, height_for_time
from coin.mempool.policy import FeeRate
from coin.wallet.spend import (
    DEFAULT_DISCARD_FEE, Bumped, Created, FeePolicy, Recipient, SpendError, WalletFeeSettings,
    bump_fee, create_transaction,
)
from coin.wallet.wallet import Output, Wallet

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


#: walletpassphrase clamps its timeout to this (Core's MAX_SLEEP_TIME).
MAX_SLEEP_TIME = 100_000_000
PASSPHRASE_INCORRECT = "Error: The wallet passphrase entered was incorrect."
#: The kernel's limits on one file name and on a whole path (bytes).
NAME_MAX = 255
PATH_MAX = 4096
#: Threads for long wallet file work (backups): never the reactor's shared pool.
FILE_THREADS = 2


class BackupError(Exception):
    """``backupwallet`` failed; Core gives one message whatever the reason (it is logged)."""

    rpc_code = RPC_WALLET_ERROR
    message = "Error: Wallet backup failed!"


def _invalid_path(name: str, walletdir: str) -> WalletLoadError:
    return WalletLoadError(
        RPC_WALLET_ERROR,
        "Wallet file verification failed: Invalid -wallet path '%s'. -wallet path should "
        "point to a directory where wallet.dat can be stored, a location where such a "
        "directory could be created, or (for backwards compatibility) the name of an "
        "existing data file in -walletdir (%s)" % (name, walletdir))


def _load_failed(name: str, reason: str) -> WalletLoadError:
    """Core's answer when the file system refuses a wallet path."""
    return WalletLoadError(RPC_WALLET_ERROR, "Wallet file verification failed: Error loading "
                           "wallet %s. %s" % (name, reason))


def duplicate_wallet(name: str) -> WalletLoadError:
    """Core's answer for a wallet whose file is already loaded (under any name)."""
    return WalletLoadError(RPC_WALLET_ERROR, "Wallet file verification failed: Error loading "
                           "wallet %s. Duplicate -wallet filename specified." % name)


def _inside(root: str, path: str) -> bool:
    return path != root and os.path.commonpath([root, path]) == root


def resolve_wallet_path(walletdir: str, name: str) -> str:
    """The real path of wallet ``name``'s database file, checked as Core 0.17 checks it.

    The one place a wallet name becomes a path (resolve, then check).  The forms
    are Core's: a directory (existing, to be created, or a symlink to one) holding
    wallet.dat, or the name of an existing data file in walletdir.  A relative name
    is taken inside ``walletdir`` and must stay there (symlinks are resolved before
    the check, so none leads out); an absolute name, as Core accepts it, is the
    directory exactly as written: no "." or ".." part, no decoding, never a file.
    Raises WalletLoadError: -8 for a name that is not UTF-8, -4 for a refused path.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise WalletLoadError(RPC_INVALID_PARAMETER,
                              "Invalid wallet name: not a valid UTF-8 string") from None
    absolute = os.path.isabs(name)
    parts = name.split("/")[1 if absolute else 0:] if name else []
    if "\0" in name or (absolute and parts == [""]) \
            or any(p in ("", ".", "..") for p in parts):
        raise _invalid_path(name, walletdir)
    root = os.path.realpath(walletdir)
    named = os.path.join(os.sep if absolute else root, *parts)
    if any(len(p.encode("utf-8")) > NAME_MAX for p in parts) \
            or len(os.fsencode(os.path.join(named, WALLET_FILE))) >= PATH_MAX:
        raise _load_failed(name, os.strerror(errno.ENAMETOOLONG))
    try:
        mode: Optional[int] = os.lstat(named).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    except OSError as e:
        raise _load_failed(name, e.strerror) from None
    if mode is not None and stat.S_ISREG(mode):
        if absolute or len(parts) != 1 \
                or any(name.endswith(suffix) for suffix in COMPANION_SUFFIXES[1:]):
            raise _invalid_path(name, walletdir)  # nested, or some database's -wal/-shm
        path = named  # a data file directly in walletdir (Core's backwards-compatible form)
    elif mode is None or stat.S_ISDIR(mode) or (stat.S_ISLNK(mode) and os.path.isdir(named)):
        path = os.path.join(named, WALLET_FILE)
    else:
        raise _invalid_path(name, walletdir)
    real = os.path.realpath(path)
    # A folder called wallet.dat (or -wal, -shm) would stand where a wallet's file belongs.
    folders = (real if absolute else os.path.relpath(real, root)).split(os.sep)[:-1]
    if (not absolute and not _inside(root, real)) or any(WALLET_FILE + suffix in folders
                                                         for suffix in COMPANION_SUFFIXES):
        raise _invalid_path(name, walletdir)
    return real


def _identity(path: str) -> Optional[tuple]:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _make_directories(directory: str) -> None:
    """Create ``directory`` (a resolved real path) and its missing parents, each 0700."""
    missing = []
    walk = directory
    while not os.path.lexists(walk):
        missing.append(walk)
        walk = os.path.dirname(walk)
    for path in reversed(missing):
        os.mkdir(path, 0o700)
    if os.path.realpath(directory) != directory:  # a symlink swapped in meanwhile
        raise OSError(errno.ELOOP, "%s moved while it was created" % directory)


def backup_destination(destination: str, wallet_file: str, protected: List[str]) -> str:
    """The real path a backup goes to; ValueError for one that would overwrite a wallet.

    Refused: any file of a loaded wallet (``protected``: real paths with their
    -wal/-shm/-journal), and any existing file named like a wallet's (wallet.dat
    and its companions), loaded or not, of this node or another.
    """
    if "\0" in destination:
        raise ValueError("destination contains a NUL character")
    destination.encode("utf-8")  # UnicodeEncodeError (a ValueError) for lone surrogates
    if os.path.isdir(destination):
        destination = os.path.join(destination, wallet_file)
    real = os.path.realpath(destination)
    if real in protected or (os.path.lexists(real) and os.path.basename(real) in
                             [WALLET_FILE + suffix for suffix in COMPANION_SUFFIXES]):
        raise ValueError("%s is a wallet's file" % real)
    return real


class RescanError(Exception):
    """Blocks needed for a rescan are pruned."""

    rpc_code = RPC_MISC_ERROR


class TransactionRejected(Exception):
    """The mempool refused a wallet transaction just made; it has been abandoned.

    ``error`` is the pool's MissingInputs or ValidationError (the caller words it).
    """

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class WalletService(service.Service):
    """Loaded wallets by name, in load order (the RPC layer routes calls to them)."""

    name = "wallets"

    def __init__(self, validation: ValidationService, mempool: MempoolService,
                 params: ChainParams, walletdir: str, now: Callable[[], float],
                 keypool_size: int, reactor: Any = None, clock: Any = None,
                 in_thread: Optional[ThreadRunner] = None) -> None:
        self.validation = validation
        self.mempool = mempool
        self.params = params
        self.walletdir = walletdir
        self._now = now
        self.keypool_size = keypool_size
        #: -spendzeroconfchange, given to every wallet loaded.
        self.spend_zero_conf_change = True
        #: -paytxfee, -fallbackfee, -mintxfee, -txconfirmtarget.
        self.fee_settings = WalletFeeSettings()
        #: -rescan: every wallet loaded is scanned from the genesis block (Core's
        #: CreateWalletFromFile), not only from its last block.
        self.rescan_on_load = False
        #: -zapwallettxes: 0 (off), 1 (zap, keep metadata) or 2 (zap all), as Core.
        self.zap_mode = 0
        #: -walletbroadcast: with False, wallet transactions are recorded but never given
        #: to the mempool (so never relayed), at creation or again at load, as Core.
        self.broadcast = True
        self.wallets: Dict[str, Wallet] = {}
        #: Given to every wallet loaded (Wallet.tx_listeners): -walletnotify's.
        self.tx_listeners: List[Callable[[str, bytes], None]] = []
        self._reactor = reactor
        #: The node's pool, for wallet work under the lock and dump reads (see coin.threads).
        self.in_thread = in_thread if in_thread is not None else ThreadRunner()
        #: Schedules the relock after walletpassphrase (IReactorTime; default the reactor).
        self._clock = clock
        #: Pending relocks of unlocked wallets (walletpassphrase's timeout).
        self._relocks: Dict[Wallet, Any] = {}
        #: User-requested rescans (imports, rescanblockchain) and their abort flags.
        self.rescanner = Rescanner(self.rescan)
        self._file_pool = ThreadPool(minthreads=0, maxthreads=FILE_THREADS, name="wallet-files")
        #: Set at shutdown: file work in progress gives up at its next step.
        self._stopping = threading.Event()
        validation.add_worker_hook(self._chain_events)
        mempool.add_listener(self._transaction_added)

    # ------------------------------------------------------------------ paths

    def path_of(self, name: str) -> str:
        """The real path of wallet ``name``'s file (see resolve_wallet_path)."""
        return resolve_wallet_path(self.walletdir, name)

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
            raise duplicate_wallet(name)
        path = self.path_of(name)
        exists = os.path.lexists(path)
        if must_create and (exists or os.path.lexists(os.path.join(self.walletdir, name))):
            # Core: anything at all at the name's path; an existing wallet is never written.
            raise WalletLoadError(RPC_WALLET_ERROR, "Wallet %s already exists." % name)
        if any(loaded.db.path == path or loaded.db.identity == _identity(path)
               for loaded in self.wallets.values()):
            raise duplicate_wallet(name)  # also a hard link: opening it would drop its locks
        if not exists and not create:
            raise WalletLoadError(RPC_WALLET_NOT_FOUND, "Wallet %s not found." % name)
        db = WalletDB(path)
        try:
            if not exists:
                _make_directories(os.path.dirname(path))
            created = db.open(create=create)
        except WalletFileError as e:
            raise WalletLoadError(RPC_WALLET_ERROR, "Wallet loading failed: %s" % e) from None
        except OSError as e:
            raise _load_failed(name, e.strerror or str(e)) from None
        pool = self.mempool.pool
        wallet = Wallet(name, db, self.params, chainstate, lambda txid: txid in pool.entries,
                        self._now, self.keypool_size)
        wallet.in_thread = self.in_thread
        wallet.tx_listeners = self.tx_listeners
        wallet.spend_zero_conf_change = self.spend_zero_conf_change
        wallet.pay_tx_fee = self.fee_settings.pay_tx_fee
        try:
            wallet.open(created, disable_private_keys=disable_private_keys and created)
        except Exception as e:
            db.close()
            raise WalletLoadError(RPC_WALLET_ERROR, "Wallet loading failed: %s" % e) from None
        if created:
            # Nothing before now can pay a brand-new wallet: start at the tip, no rescan.
            wallet.mark_best_block(chainstate.tip.hash)
        self.wallets[name] = wallet
        log.info("Wallet {name!r} loaded from {path} ({count} transactions, {how})", name=name,
                 path=path, count=wallet.tx_count(),
                 how="from its load snapshot" if wallet.loaded_from_snapshot else "computed")
        return wallet

    @inlineCallbacks
    def load(self, name: str, create: bool = False, must_create: bool = False,
             disable_private_keys: bool = False):
        """Load (or create) ``name``, catch it up with the chain, resubmit its pending txs."""
        wallet = yield self.validation.call(self.open_wallet, name, create, must_create,
                                            disable_private_keys)
        zapped = (yield self.validation.call(lambda _cs: wallet.zap_transactions())
                  ) if self.zap_mode else []
        start = yield self.validation.call(_catch_up_height, wallet)
        if self.rescan_on_load or self.zap_mode:
            start = 0
        if start is not None:
            try:
                yield self.validation.call(_check_have_data, start, None, LOAD_BEYOND_PRUNED)
            except RescanError:
                yield self.remove(name)  # a wallet that cannot catch up is not loaded
                raise
            yield self.rescan(wallet, start, None)
        if self.zap_mode == 1:
            yield self.validation.call(lambda _cs: wallet.restore_metadata(zapped))
        yield self.reaccept(wallet)
        return wallet

    def unload(self, name: str) -> None:
        wallet = self.wallets.pop(name)
        self._cancel_relock(wallet)
        with wallet.lock:
            wallet.close()

    def remove(self, name: str) -> Deferred:
        """``unloadwallet``: stop the wallet's rescan, then unload it on the validation worker
        (so no block event is being delivered to the wallet as it closes); -18 if not loaded."""
        wallet = self.wallets.get(name)
        if wallet is None:
            raise WalletError(RPC_WALLET_NOT_FOUND,
                              "Requested wallet does not exist or is not loaded")
        self.rescanner.abort(wallet)
        self._cancel_relock(wallet)
        return self.validation.call(lambda _chainstate: self.unload(name)
                                    if self.wallets.get(name) is wallet else None)

    def startService(self) -> None:
        super().startService()
        self._file_pool.start()

    def stopService(self) -> Any:
        """Unload every wallet; a backup running now stops at its next step (bounded)."""
        super().stopService()
        self._stopping.set()
        for name in list(self.wallets):
            self.unload(name)
        self._file_pool.stop()

    # ------------------------------------------------------------------ files

    def backup(self, wallet: Wallet, destination: str) -> Deferred:
        """``backupwallet``: copy ``wallet`` to ``destination`` on the file pool.

        Fails with BackupError for a destination that is any loaded wallet's file
        (compared by real path) or another wallet file (see backup_destination).
        """
        protected = [loaded.db.path + suffix  # real paths already (resolve_wallet_path)
                     for loaded in self.wallets.values() for suffix in COMPANION_SUFFIXES]
        reactor = self._reactor
        if reactor is None:
            from twisted.internet import reactor
        return deferToThreadPool(reactor, self._file_pool, self._backup, wallet, destination,
                                 protected)

    def _backup(self, wallet: Wallet, destination: str, protected: List[str]) -> None:
        try:
            target = backup_destination(destination, os.path.basename(wallet.db.path),
                                        protected)
            wallet.db.backup(target, self._stopping.is_set)
        except (OSError, ValueError, sqlite3.Error) as e:
            log.warn("Backup of wallet {name!r} to {destination!r} failed: {error}",
                     name=wallet.name, destination=destination, error=e)
            raise BackupError() from None

    # ------------------------------------------------------------------ encryption

    def _timer(self) -> Any:
        if self._clock is not None:
            return self._clock
        if self._reactor is not None:
            return self._reactor
        from twisted.internet import reactor
        return reactor

    def _cancel_relock(self, wallet: Wallet) -> None:
        relock = self._relocks.pop(wallet, None)
        if relock is not None and relock.active():
            relock.cancel()

    def _relock(self, wallet: Wallet) -> None:
        self._relocks.pop(wallet, None)
        with wallet.lock:
            wallet.keys.lock()

    async def _unlock(self, wallet: Wallet, passphrase: bytes, timeout: int) -> None:
        await in_wallet(wallet, _unlock_keys, wallet, passphrase, slow=True)
        timeout = min(timeout, MAX_SLEEP_TIME)
        self._cancel_relock(wallet)
        wallet.keys.unlocked_until = int(self._now()) + timeout
        self._relocks[wallet] = self._timer().callLater(timeout, self._relock, wallet)

    def unlock(self, wallet: Wallet, passphrase: bytes, timeout: int) -> Deferred:
        """``walletpassphrase``: decrypt the keys (on a thread: 25,000 SHA-512 rounds) and
        lock them again ``timeout`` seconds later (capped at MAX_SLEEP_TIME); a new unlock
        replaces the pending relock.  -14 for a wrong passphrase."""
        return Deferred.fromCoroutine(self._unlock(wallet, passphrase, timeout))

    def lock(self, wallet: Wallet) -> Deferred:
        """``walletlock``: forget the keys now; no relock stays pending."""
        self._cancel_relock(wallet)
        return in_wallet(wallet, wallet.keys.lock)

    def change_passphrase(self, wallet: Wallet, old: bytes, new: bytes) -> Deferred:
        """``walletpassphrasechange`` (on a thread, one transaction); -14 for a wrong ``old``."""
        return in_wallet(wallet, _change_passphrase, wallet, old, new, write=True, slow=True)

    def encrypt(self, wallet: Wallet, passphrase: bytes) -> Deferred:
        """``encryptwallet`` (on a thread).  Not inside an outer transaction: encrypting ends by
        rewriting the file (VACUUM)."""
        return in_wallet(wallet, wallet.keys.encrypt, passphrase, slow=True)

    # ------------------------------------------------------------------ spending

    def send(self, wallet: Wallet, recipients: List[Recipient], fees: FeePolicy) -> Deferred:
        """Create, sign, record and submit a payment in one turn of the validation worker.

        The chain's single writer: no other send can pick the same coins in between,
        and the wallet file holds the spend before the mempool sees it, so a crash right
        after loses nothing.  Fires with the Created transaction; fails with SpendError,
        or TransactionRejected when the pool refuses it (it is then abandoned at once,
        giving its coins back).
        """
        return self.validation.call(_send_on_worker, self.mempool, wallet, recipients, fees,
                                    self.broadcast)

    def fund(self, wallet: Wallet, tx: Transaction, recipients: List[Recipient],
             fees: FeePolicy, change_script: Optional[bytes], watching: bool,
             lock: bool) -> Deferred:
        """``fundrawtransaction``: add unsigned inputs (and change) to ``tx``'s outputs.

        ``tx``'s own inputs must spend wallet outputs; ``watching`` lets watch-only coins
        that the wallet can solve be chosen; ``lock`` locks the inputs added.  Fires with
        the Created transaction (its first inputs are ``tx``'s); fails with SpendError.
        """
        return self.validation.call(_fund_on_worker, wallet, tx, recipients, fees,
                                    change_script, watching, lock)

    def bump(self, wallet: Wallet, txid: bytes, fees: FeePolicy, total_fee: int) -> Deferred:
        """``bumpfee``: replace ``txid`` by a copy paying more from its change, record it,
        submit it and mark the original replaced, in one turn of the validation worker.

        Fires with ``(Bumped, the pool's refusal or None)``: as in Core, a refused
        replacement stays in the wallet and the original is marked replaced all the same.
        Fails with SpendError when no replacement can be made.
        """
        return self.validation.call(_bump_on_worker, self.mempool, wallet, txid, fees, total_fee,
                                    self.broadcast)

    def abandon(self, wallet: Wallet, txid: bytes) -> Deferred:
        """``abandontransaction``: give back the inputs of an unconfirmed transaction that is
        not in the mempool, and of its wallet descendants.  On the validation worker, so it
        cannot enter the pool between the check and the change (and a settled transaction is
        read from the file under the wallet's lock); -5 when unknown or not eligible."""
        return self.validation.call(_abandon_on_worker, wallet, txid)

    # ------------------------------------------------------------------ user rescans

    async def _rescan_blockchain(self, wallet: Wallet, start_height: Optional[int],
                                 stop_height: Optional[int]) -> Tuple[int, int]:
        with self.rescanner.reserve(wallet) as reservation:
            tip_height = self.validation.chainstate.height
            start = 0
            if start_height is not None:
                if not 0 <= start_height <= tip_height:
                    raise WalletError(RPC_INVALID_PARAMETER, "Invalid start_height")
                start = start_height
            if stop_height is not None:
                if not 0 <= stop_height <= tip_height:
                    raise WalletError(RPC_INVALID_PARAMETER, "Invalid stop_height")
                if stop_height < start:
                    raise WalletError(RPC_INVALID_PARAMETER,
                                      "stop_height must be greater than start_height")
            await self.validation.call(_check_have_data, start, stop_height)
            last = (await reservation.scan(start, stop_height)).last
            if reservation.aborting:
                raise WalletError(RPC_MISC_ERROR, "Rescan aborted.")
        return start, last if stop_height is None else stop_height

    def rescan_blockchain(self, wallet: Wallet, start_height: Optional[int],
                          stop_height: Optional[int]) -> Deferred:
        """``rescanblockchain``: scan ``start..stop`` heights (default genesis..tip) under a
        reservation; fires with ``(start, last height scanned)``."""
        return Deferred.fromCoroutine(self._rescan_blockchain(wallet, start_height,
                                                              stop_height))

    async def store_and_rescan(self, wallet: Wallet, reservation: Optional[Reservation],
                               store: Callable[..., Any], *args: Any) -> Any:
        """An import: ``store(wallet, *args)`` in one transaction, then, under
        ``reservation`` (None: no rescan) and when ``store`` did not answer False, a
        rescan of the whole chain; fires with what ``store`` returned."""
        stored = await in_wallet(wallet, store, wallet, *args, write=True)
        if reservation is not None and stored is not False:
            await reservation.scan_to_tip(0)
        return stored

    def _tip(self) -> BlockIndexEntry:
        tip = self.validation.chainstate.tip
        assert tip is not None  # wallets load after the chain, which has its genesis block
        return tip

    async def _import_wallet(self, wallet: Wallet, filename: str) -> None:
        with self.rescanner.reserve(wallet) as reservation:
            ensure_unlocked(wallet)
            lines = await self.in_thread(read_dump_lines, filename)
            time_begin, good = await in_wallet(wallet, import_dump, wallet, lines,
                                               self._tip().time, write=True, slow=True)
            await self.rescan_from_time(wallet, reservation, time_begin)
        if not good:
            raise WalletError(RPC_WALLET_ERROR, "Error adding some keys/scripts to wallet")

    async def rescan_from_time(self, wallet: Wallet, reservation: Reservation,
                               timestamp: int) -> int:
        """Core's RescanFromTime: from the first block within TIMESTAMP_WINDOW of
        ``timestamp`` to the tip (nothing when every block is older).  Returns the
        earliest time the scan covers: ``timestamp``, or later when a block could not be
        read (just past the window after the last such block's time)."""
        chain = self.validation.chainstate.published
        start = height_for_time(chain, timestamp)
        if start is None:
            return timestamp
        failed = (await reservation.scan_to_tip(start)).failed
        if failed is None:
            return timestamp
        return chain.at_height(failed).time_max + TIMESTAMP_WINDOW + 1

    def import_wallet(self, wallet: Wallet, filename: str) -> Deferred:
        """``importwallet``: the keys and scripts of a dump file, then a rescan from the
        earliest key's birth time (less TIMESTAMP_WINDOW), under a reservation."""
        return Deferred.fromCoroutine(self._import_wallet(wallet, filename))

    def dump_wallet(self, wallet: Wallet, filename: str) -> Deferred:
        """``dumpwallet``: every key and script to a new file; fires with its absolute path."""
        ensure_unlocked(wallet)
        path = check_dump_path(filename)
        tip = self._tip()
        return in_wallet(wallet, write_dump, wallet, path, int(self._now()),
                         (tip.height, hash_to_hex(tip.hash), tip.time),
                         slow=True).addCallback(lambda _: path)

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

    def reaccept(self, wallet: Wallet) -> Deferred:
        """Offer the wallet's unconfirmed transactions to the pool again (Core's
        ReacceptWalletTransactions: at load, and after an import's rescan)."""
        return self.validation.call(self._reaccept, wallet)

    def _reaccept(self, chainstate: ChainState, wallet: Wallet) -> int:
        """Offer the wallet's unconfirmed transactions to the mempool again."""
        count = 0
        if not self.broadcast:
            return count
        for wtx in wallet.maybe_unconfirmed():
            if wtx.abandoned or wallet.depth(wtx) != 0 or wtx.tx.is_coinbase():
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

    def resend(self, wallet: Wallet) -> Deferred:
        """resendwallettransactions: the wallet's unconfirmed transactions that are (or are
        now accepted) in the mempool, oldest received first, for the caller to announce."""
        return self.validation.call(_resend_on_worker, self.mempool, wallet)

    # ------------------------------------------------------------------ rescan

    @inlineCallbacks
    def rescan(self, wallet: Wallet, start: int, stop: Optional[int],
               abort: Optional[Callable[[], bool]] = None):
        """Scan blocks ``start..stop`` (default: to the tip) for the wallet's transactions.

        Runs in chunks on the validation worker; fires with a :class:`ScanResult`.
        ``abort()`` is asked between chunks (abortrescan): when true the scan stops there.
        """
        height = start
        result = ScanResult(start - 1, None)
        while True:
            if abort is not None and abort():
                return result
            done = yield self.validation.call(_rescan_chunk, wallet, height, stop, RESCAN_CHUNK)
            if done is None:
                return result
            last, failed = done
            result = ScanResult(last, failed if failed is not None else result.failed)
            height = last + 1


def _unlock_keys(wallet: Wallet, passphrase: bytes) -> None:
    try:
        wallet.unlock(passphrase)
    except WrongPassphrase:
        raise WalletError(RPC_WALLET_PASSPHRASE_INCORRECT, PASSPHRASE_INCORRECT) from None


def _change_passphrase(wallet: Wallet, old: bytes, new: bytes) -> None:
    try:
        wallet.keys.change_passphrase(old, new)
    except WrongPassphrase:
        raise WalletError(RPC_WALLET_PASSPHRASE_INCORRECT, PASSPHRASE_INCORRECT) from None


def _send_on_worker(chainstate: ChainState, mempool: MempoolService, wallet: Wallet,
                    recipients: List[Recipient], fees: FeePolicy, broadcast: bool) -> Created:
    """Create, record, then submit (unless -walletbroadcast=0): one turn of the worker."""
    with wallet.lock:
        created = create_transaction(wallet, recipients, fees)
        # In the wallet file before the pool sees it: a crash never forgets the spend.
        wallet.sync_transaction(created.tx, None)
    if not broadcast:
        return created
    try:
        mempool.accept_on_worker(chainstate, created.tx, mempool.max_tx_fee)
        return created
    except (MissingInputs, ValidationError) as e:
        error: Exception = e
    wallet.abandon(created.tx.txid)
    raise TransactionRejected(error)


def _discard_rate(mempool: MempoolService) -> FeeRate:
    """Core 0.17's GetDiscardRate: the economical estimate for the longest target, capped at
    DEFAULT_DISCARD_FEE (that alone without an estimate), at least the dust relay rate
    (three times the minimum relay rate here, 3000/kB at the defaults, as Core's)."""
    estimator = mempool.estimator
    with mempool.pool.lock:
        estimate, _ = estimator.estimate_smart_fee(estimator.max_target(), conservative=False)
    rate = DEFAULT_DISCARD_FEE if not estimate else min(estimate, DEFAULT_DISCARD_FEE)
    return FeeRate(max(rate, 3 * mempool.policy.min_relay_fee.sat_per_kb))


def _bump_on_worker(chainstate: ChainState, mempool: MempoolService, wallet: Wallet,
                    txid: bytes, fees: FeePolicy, total_fee: int,
                    broadcast: bool) -> Tuple[Bumped, Optional[Exception]]:
    with wallet.lock:
        bumped = bump_fee(wallet, mempool.pool, txid, fees, total_fee,
                          mempool.policy.incremental_relay_fee, _discard_rate(mempool))
        wallet.sync_transaction(bumped.tx, None)
    refusal: Optional[Exception] = None
    if broadcast:
        try:
            mempool.accept_on_worker(chainstate, bumped.tx, mempool.max_tx_fee)
        except (MissingInputs, ValidationError) as e:
            refusal = e
    wallet.mark_replaced(txid, bumped.tx.txid)
    return bumped, refusal


def _resend_on_worker(chainstate: ChainState, mempool: MempoolService,
                      wallet: Wallet) -> List[Transaction]:
    """Core's ResendWalletTransactionsBefore and RelayWalletTransaction, without the
    announcing: a transaction not pooled is offered again (-maxtxfee applies)."""
    with wallet.lock:
        pending = sorted((wtx for wtx in wallet.maybe_unconfirmed()
                          if not wtx.tx.is_coinbase() and not wtx.abandoned
                          and wallet.depth(wtx) == 0),
                         key=lambda wtx: (wtx.time_received, wtx.txid))
    relayed = []
    for wtx in pending:
        if wtx.txid not in mempool.pool.entries:
            try:
                mempool.accept_on_worker(chainstate, wtx.tx, mempool.max_tx_fee)
            except (MissingInputs, ValidationError):
                continue
        relayed.append(wtx.tx)
    return relayed


def _preset_inputs(wallet: Wallet, tx: Transaction) -> List[Output]:
    """The transaction's own inputs as wallet outputs (Core requires them in the wallet)."""
    preset = []
    for txin in tx.vin:
        wtx = wallet.txs.get(txin.prevout.txid)
        if wtx is None or txin.prevout.n >= len(wtx.tx.vout):
            raise SpendError(RPC_WALLET_ERROR, "Insufficient funds")
        mine = wallet.is_mine(wtx.tx.vout[txin.prevout.n].script_pubkey)
        preset.append(Output(wtx, txin.prevout.n, wallet.depth(wtx), bool(mine & ISMINE_SPENDABLE),
                             bool(mine & ISMINE_SPENDABLE), wallet.is_trusted(wtx)))
    return preset


def _fund_on_worker(chainstate: ChainState, wallet: Wallet, tx: Transaction,
                    recipients: List[Recipient], fees: FeePolicy, change_script: Optional[bytes],
                    watching: bool, lock: bool) -> Created:
    with wallet.lock:
        preset = _preset_inputs(wallet, tx)
        coins = [c._replace(spendable=True) if watching and c.solvable else c
                 for c in wallet.available_coins(include_watch_only=watching)]
        created = create_transaction(wallet, recipients, fees, coins, change_script, preset,
                                     sign=False)
        if lock:
            wallet.lock_coins((txin.prevout.txid, txin.prevout.n)
                              for txin in created.tx.vin[len(tx.vin):])
        return created


def _abandon_on_worker(chainstate: ChainState, wallet: Wallet, txid: bytes) -> None:
    try:
        wallet.abandon(txid)
    except KeyError:
        raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid or non-wallet transaction id") from None
    except ValueError as e:
        raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, str(e)) from None


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
                  count: int) -> Optional[Tuple[int, Optional[int]]]:
    """Scan up to ``count`` blocks from ``start``: the last height scanned and the highest
    one whose block could not be read (pruned), or None past the end.  Like Core's
    ScanForWalletTransactions, a missing block is passed over and reported, not fatal."""
    tip_height = chainstate.height
    end = tip_height if stop is None else min(stop, tip_height)
    if start > end:
        return None
    last = min(end, start + count - 1)
    failed = None
    with wallet.lock, wallet.db.batch():  # one commit per chunk
        for height in range(start, last + 1):
            entry = chainstate.at_height(height)
            if entry.have_data():
                wallet.block_connected(height, chainstate.read_block(entry))
            else:
                failed = height
    return last, failed


#: rescanblockchain's refusal, and a loading wallet's (Core's init error).
BEYOND_PRUNED = ("Can't rescan beyond pruned data. Use RPC call getblockchaininfo to determine "
                 "your pruned height.")
LOAD_BEYOND_PRUNED = ("Prune: last wallet synchronisation goes beyond pruned data. You need to "
                      "-reindex (download the whole blockchain again in case of pruned node)")


def _check_have_data(chainstate: ChainState, start: int, stop: Optional[int],
                     message: str = BEYOND_PRUNED) -> None:
    """Core's check before a scan that must not pass over a block: every block of the
    range on disk (walked down from the end, as Core, so it stops at the pruned edge)."""
    end = chainstate.height if stop is None else stop
    for height in range(end, start - 1, -1):
        if not chainstate.at_height(height).have_data():
            raise RescanError(message)


def default_walletdir(config: Any, datadir: str) -> str:
    """``-walletdir`` or ``<network datadir>/wallets``."""
    configured = config.get("walletdir")
    if configured:
        return os.path.abspath(configured)
    return os.path.join(datadir, "wallets")

