"""What a method handler receives: a small, stable facade of the node.

Plugins see only these protocols, never the node's internals, so the node can change
behind them (style.md item 9). The daemon provides the concrete objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from coin.rpc.registry import MethodTable


class LogControl(Protocol):
    """Debug-log categories (Core's ``-debug=<category>``) over twisted.logger."""

    def categories(self) -> Sequence[str]:
        """Every category name, in the order ``logging`` lists them."""

    def is_enabled(self, category: str) -> bool:
        """Whether debug events of ``category`` are logged."""

    def set_enabled(self, category: str, enabled: bool) -> None:
        """Switch debug logging of one known ``category`` on or off."""


class NodeFacade(Protocol):
    """The node as RPC methods see it."""

    #: Read access to chain state; its interface is defined by the chain views.
    chain: Any
    #: Loaded wallets by name ("" is the default wallet), in load order.
    wallets: Mapping[str, Any]
    #: Debug-log category switches.
    logging: LogControl
    #: Templates, block submission and long polls (coin.mining.service.MiningService).
    mining: Any

    def shutdown(self) -> None:
        """Request an orderly shutdown; returns at once so the reply still goes out."""

    def uptime(self) -> int:
        """Seconds since the node started."""


@dataclass(frozen=True)
class RPCContext:
    """Per-call context handed to a handler as its first argument."""

    node: NodeFacade
    #: The authenticated RPC user ("__cookie__" for cookie authentication).
    user: str
    #: The wallet the call runs against (methods with ``needs_wallet``), else None.
    wallet: Any
    #: The wallet name from a ``/wallet/<name>`` path, None on ``/``.
    wallet_name: str | None
    #: The method table serving this call (``help`` reads it).
    methods: MethodTable
