"""The typed plugin contract: everything an RPC plugin may import and use.

A plugin's handlers receive a :class:`PluginContext` and see the node only through the
read views defined here (:class:`ChainView`, :class:`MempoolView`, :class:`WalletView`,
:class:`NetworkView`), never its services, so the node can change behind them. This
module is the whole public surface: the names in ``__all__`` keep their meaning for every
``API_VERSION`` with the same major number; each member's docstring says in which version
it was added. doc/plugins.md is the plugin author's guide.

The node's own objects satisfy these protocols structurally (``ChainSnapshot`` is a
ChainView, the pool a MempoolView, a loaded wallet a WalletView, the P2P service a
NetworkView); :class:`coin.rpc.context.RPCContext` is the PluginContext.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Protocol, Sequence, runtime_checkable

from twisted.internet.defer import Deferred

from coin.primitives.block import Block
from coin.primitives.transaction import Transaction
from coin.rpc.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_MISC_ERROR, RPCError,
)
from coin.rpc.registry import (
    ANY, ARR, BOOL, INT, INT64, OBJ, REAL, STR, Arg, ArgType, RPCMethod, rpc_method,
)

__all__ = [
    "API_VERSION", "BlockEntry", "ChainView", "MempoolEntryView", "MempoolView", "WalletView",
    "NetworkView", "PluginContext",
    "Arg", "ArgType", "RPCMethod", "rpc_method",
    "STR", "INT", "INT64", "BOOL", "REAL", "OBJ", "ARR", "ANY",
    "RPCError", "RPC_MISC_ERROR", "RPC_INVALID_PARAMETER", "RPC_INVALID_ADDRESS_OR_KEY",
]

#: (major, minor): a new minor adds members; a new major may change or remove them. A plugin
#: that needs a minor checks ``API_VERSION >= (1, n)`` at import time and raises ImportError
#: otherwise, which the loader reports by distribution name.
API_VERSION = (1, 0)


@runtime_checkable
class BlockEntry(Protocol):
    """A block header the node knows, with its place in the header tree (added in 1.0)."""

    @property
    def hash(self) -> bytes:
        """The block hash, internal byte order (``hash[::-1].hex()`` is the RPC form)."""

    @property
    def height(self) -> int:
        """Height of the block in its branch (genesis is 0)."""

    @property
    def prev(self) -> Optional[BlockEntry]:
        """The parent's entry; None for genesis."""

    @property
    def version(self) -> int: ...

    @property
    def time(self) -> int:
        """Header time, Unix seconds."""

    @property
    def bits(self) -> int: ...

    @property
    def nonce(self) -> int: ...

    @property
    def merkle_root(self) -> bytes: ...

    @property
    def chainwork(self) -> int:
        """Total work of the chain up to and including this block."""

    def median_time_past(self) -> int:
        """Median time of the last 11 blocks up to this one (``mediantime``)."""


@runtime_checkable
class ChainView(Protocol):
    """The active chain as of one moment, never changing under the reader (added in 1.0).

    Take one per request (:meth:`PluginContext.chain`) and make every read of the request
    against it: ``tip`` then ``at_height`` can never mix two chains of a reorg.
    """

    @property
    def tip(self) -> Optional[BlockEntry]:
        """The active chain's last block; None only before genesis is loaded."""

    @property
    def height(self) -> int:
        """The tip's height (-1 before genesis is loaded)."""

    def lookup(self, block_hash: bytes) -> Optional[BlockEntry]:
        """Any known header's entry, on the active chain or not; None if unknown."""

    def at_height(self, height: int) -> Optional[BlockEntry]:
        """The active chain's entry at ``height``; None outside 0..height."""

    def read_block(self, block_hash: bytes) -> Deferred[Block]:
        """Fires with the stored block, read off the reactor thread.

        Fails with an error that carries Core's code: -5 "Block not found" for an unknown
        hash, -1 "Block not available (pruned data)" or "Block not found on disk" when the
        data is missing; return the Deferred from a handler and the client gets that error.
        """


@runtime_checkable
class MempoolEntryView(Protocol):
    """One pool transaction (added in 1.0)."""

    @property
    def tx(self) -> Transaction: ...

    @property
    def txid(self) -> bytes:
        """Internal byte order, as BlockEntry.hash."""

    @property
    def fee(self) -> int:
        """Fee paid, in base units (1 coin = 100,000,000)."""

    @property
    def size(self) -> int:
        """Serialized size in bytes."""

    @property
    def time(self) -> int:
        """When it entered the pool, Unix seconds."""

    @property
    def height(self) -> int:
        """Chain height when it entered the pool."""


@runtime_checkable
class MempoolView(Protocol):
    """Read access to the memory pool (added in 1.0)."""

    def __len__(self) -> int:
        """Number of transactions in the pool."""

    def __contains__(self, txid: bytes) -> bool: ...

    def get(self, txid: bytes) -> Optional[MempoolEntryView]:
        """The pool's entry for ``txid``, or None."""

    def txids(self) -> Sequence[bytes]:
        """Every transaction id in the pool, in no particular order."""

    @property
    def total_size(self) -> int:
        """Sum of the pool transactions' sizes in bytes (getmempoolinfo's ``bytes``)."""


@runtime_checkable
class WalletView(Protocol):
    """Read access to one loaded wallet (added in 1.0)."""

    @property
    def name(self) -> str:
        """The wallet's name ("" for the default wallet)."""

    def tx_count(self) -> int:
        """Transactions the wallet tracks."""

    def info(self) -> dict[str, Any]:
        """getwalletinfo's figures, amounts in base units; taken under the wallet's lock."""


@runtime_checkable
class NetworkView(Protocol):
    """Read access to the peer-to-peer service (added in 1.0)."""

    @property
    def network_active(self) -> bool:
        """False after ``setnetworkactive false``."""

    @property
    def user_agent(self) -> str:
        """The user agent this node announces (``subversion``)."""

    def connection_count(self) -> int:
        """Open peer connections, inbound and outbound."""

    def adjusted_time(self) -> float:
        """Network-adjusted time, Unix seconds."""


class PluginContext(Protocol):
    """What a handler receives as its first argument, once per call (added in 1.0)."""

    @property
    def user(self) -> str:
        """The authenticated RPC user ("__cookie__" for cookie authentication)."""

    @property
    def wallet_name(self) -> Optional[str]:
        """The wallet named by a ``/wallet/<name>`` path, None on ``/``."""

    @property
    def wallet(self) -> Optional[WalletView]:
        """The wallet a ``needs_wallet=True`` method runs against, else None."""

    @property
    def wallets(self) -> Mapping[str, WalletView]:
        """Every loaded wallet by name, in load order (empty with -disablewallet)."""

    @property
    def mempool(self) -> MempoolView: ...

    @property
    def network(self) -> Optional[NetworkView]:
        """The P2P service; None when the node runs without one."""

    def chain(self) -> ChainView:
        """A consistent view of the active chain as of now: take one per request."""

    def uptime(self) -> int:
        """Seconds since the node started."""
