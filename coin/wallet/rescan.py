"""User-requested rescans: one per wallet at a time, abortable (Core's WalletRescanReserver).

A rescan started by an import or by ``rescanblockchain`` first reserves the
wallet; a second one is refused until the first ends, and ``abortrescan`` (or
unloading the wallet) asks the running one to stop at its next chunk.  The
reservations belong to the wallet service, so every caller (RPC, GUI, plugins)
shares them.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Dict, Iterator, NamedTuple, Optional

from twisted.internet.defer import Deferred

from coin.chain.snapshot import ChainSnapshot
from coin.wallet.errors import RPC_MISC_ERROR, RPC_WALLET_ERROR, WalletError
from coin.wallet.wallet import Wallet

#: Core's TIMESTAMP_WINDOW: a rescan from a key's birth time starts this much earlier.
TIMESTAMP_WINDOW = 2 * 60 * 60

RESCANNING = "Wallet is currently rescanning. Abort existing rescan or wait."

class ScanResult(NamedTuple):
    """What a scan did: the last height scanned, and the highest block it could not read
    (pruned or unreadable; None when it read them all)."""

    last: int
    failed: Optional[int]


#: ``scan(wallet, start, stop, abort)``: WalletService.rescan.
ScanFunction = Callable[[Wallet, int, Optional[int], Callable[[], bool]], Deferred]


class Reservation:
    """A wallet reserved for one rescan; ``aborting`` once someone asked it to stop."""

    __slots__ = ("wallet", "aborting", "_scan")

    def __init__(self, wallet: Wallet, scan: ScanFunction) -> None:
        self.wallet = wallet
        self.aborting = False
        self._scan = scan

    async def scan(self, start: int, stop: Optional[int] = None) -> ScanResult:
        """Scan ``start..stop`` (default: to the tip)."""
        result: ScanResult = await self._scan(self.wallet, start, stop, lambda: self.aborting)
        return result

    async def scan_to_tip(self, start: int) -> ScanResult:
        """Core's RescanWallet: to the tip from ``start``; -1 when aborted."""
        result = await self.scan(start)
        if self.aborting:
            raise WalletError(RPC_MISC_ERROR, "Rescan aborted by user.")
        return result


class Rescanner:
    """The wallets being rescanned on a user's request, and their abort flags."""

    def __init__(self, scan: ScanFunction) -> None:
        self._scan = scan
        self._active: Dict[Wallet, Reservation] = {}

    @contextmanager
    def reserve(self, wallet: Wallet) -> Iterator[Reservation]:
        """Hold ``wallet`` for one rescan; -4 while another one runs."""
        if wallet in self._active:
            raise WalletError(RPC_WALLET_ERROR, RESCANNING)
        reservation = self._active[wallet] = Reservation(wallet, self._scan)
        try:
            yield reservation
        finally:
            del self._active[wallet]

    @contextmanager
    def maybe_reserve(self, wallet: Wallet, rescan: bool) -> Iterator[Optional[Reservation]]:
        """:meth:`reserve` when ``rescan``, else nothing (imports without a rescan)."""
        if not rescan:
            yield None
            return
        with self.reserve(wallet) as reservation:
            yield reservation

    def abort(self, wallet: Wallet) -> bool:
        """Ask a running rescan to stop; False when none runs or it is already stopping."""
        reservation = self._active.get(wallet)
        if reservation is None or reservation.aborting:
            return False
        reservation.aborting = True
        return True


def height_for_time(chain: ChainSnapshot, timestamp: int) -> Optional[int]:
    """First active-chain height with a block time at or after ``timestamp - 2h``
    (Core's FindEarliestAtLeast over the running maximum block time), or None."""
    threshold = timestamp - TIMESTAMP_WINDOW
    if chain.tip.time_max < threshold:
        return None
    low, high = 0, chain.height
    while low < high:
        middle = (low + high) // 2
        if chain.at_height(middle).time_max < threshold:
            low = middle + 1
        else:
            high = middle
    return low
