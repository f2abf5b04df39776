"""Running work under a wallet's lock without making the reactor wait for it.

A wallet's state is guarded by :attr:`Wallet.lock`, which the validation worker
also takes while it feeds the wallet blocks.  :func:`in_wallet` runs quick work
inline on the reactor when the lock is free, and anything slow (or anything
while another thread holds the lock) on a pool thread.
"""

from __future__ import annotations

from typing import Any, Callable

from twisted.internet.defer import Deferred, maybeDeferred

from coin.wallet.wallet import Wallet


def _locked_call(wallet: Wallet, write: bool, fn: Callable[..., Any], *args: Any) -> Any:
    with wallet.lock:
        if not write:
            return fn(*args)
        with wallet.db.batch():
            return fn(*args)


def in_wallet(wallet: Wallet, fn: Callable[..., Any], *args: Any, write: bool = False,
              slow: bool = False) -> Deferred:
    """``fn(*args)`` under the wallet's lock (and, with ``write``, in one transaction).

    Quick work runs at once on the reactor when the lock is free; ``slow`` work, or
    any work while another thread holds the lock, runs on a pool thread.
    """
    if not slow and wallet.lock.acquire(blocking=False):
        try:
            return maybeDeferred(_locked_call, wallet, write, fn, *args)
        finally:
            wallet.lock.release()
    return wallet.in_thread(_locked_call, wallet, write, fn, *args)
