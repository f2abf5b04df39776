"""What a method handler receives: the per-call :class:`RPCContext`.

Third-party plugins use only its :class:`~coin.rpc.plugin.PluginContext` side (the typed
read views of coin.rpc.plugin). The node's own methods also reach the services behind
them through ``node``, a :class:`NodeFacade`; that part is internal and may change with
the node (style.md item 9). The daemon provides the concrete objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, AbstractSet, Mapping, Optional, Protocol, Sequence

from coin.rpc.errors import (
    RPC_METHOD_NOT_FOUND, RPC_WALLET_NOT_FOUND, RPC_WALLET_NOT_SPECIFIED, RPCError,
)

if TYPE_CHECKING:
    from coin.chain.access import ChainAccess
    from coin.governance.service import GovernanceService
    from coin.masternode.service import MasternodeService
    from coin.mempool.pool import Mempool
    from coin.mempool.service import MempoolService
    from coin.mining.service import MiningService
    from coin.notify.service import NotifyService
    from coin.p2p.connman import P2PService
    from coin.p2p.relay import TxRelay
    from coin.rpc.plugin import ChainView, PluginContext
    from coin.rpc.registry import MethodTable
    from coin.spork import SporkManager
    from coin.wallet.service import WalletService
    from coin.wallet.wallet import Wallet


class LogControl(Protocol):
    """Debug-log categories (Core's ``-debug=<category>``) over twisted.logger."""

    def categories(self) -> Sequence[str]:
        """Every category name, in the order ``logging`` lists them."""

    def is_enabled(self, category: str) -> bool:
        """Whether debug events of ``category`` are logged."""

    def set_enabled(self, category: str, enabled: bool) -> None:
        """Switch debug logging of one known ``category`` on or off."""


class NodeFacade(Protocol):
    """The node as the built-in RPC methods see it (internal: plugins use RPCContext)."""

    #: Chain reads, submissions and mining.
    chain: ChainAccess
    #: The memory pool service.
    mempool: MempoolService
    #: The wallet service; None with -disablewallet.
    wallet_service: Optional[WalletService]
    #: The P2P service.
    p2p: Optional[P2PService]
    #: Transaction announcements to peers (resendwallettransactions).
    tx_relay: TxRelay
    #: The network's sporks.
    sporks: SporkManager
    #: Masternodes: the list, payments, sync and this node's own masternode.
    masternodes: MasternodeService
    #: Governance objects and votes.
    governance: GovernanceService
    #: ZeroMQ publishers and -*notify commands.
    notify: NotifyService
    #: Loaded wallets by name ("" is the default wallet), in load order.
    wallets: Mapping[str, Wallet]
    #: Debug-log category switches.
    logging: LogControl
    #: The methods -deprecatedrpc re-enables (Core's IsDeprecatedRPCEnabled).
    deprecated_rpc: AbstractSet[str]
    #: Templates, block submission and long polls.
    mining: MiningService

    def shutdown(self) -> None:
        """Request an orderly shutdown; returns at once so the reply still goes out."""

    def uptime(self) -> int:
        """Seconds since the node started."""


@dataclass(frozen=True)
class RPCContext:
    """Per-call context handed to a handler as its first argument: a PluginContext."""

    node: NodeFacade
    #: The authenticated RPC user ("__cookie__" for cookie authentication).
    user: str
    #: The wallet the call runs against (methods with ``needs_wallet``), else None.
    wallet: Optional[Wallet]
    #: The wallet name from a ``/wallet/<name>`` path, None on ``/``.
    wallet_name: Optional[str]
    #: The method table serving this call (``help`` reads it).
    methods: MethodTable

    @property
    def wallets(self) -> Mapping[str, Wallet]:
        return self.node.wallets

    @property
    def mempool(self) -> Mempool:
        return self.node.mempool.pool

    @property
    def network(self) -> Optional[P2PService]:
        return self.node.p2p

    def chain(self) -> ChainView:
        return self.node.chain.snapshot()

    def uptime(self) -> int:
        return self.node.uptime()


if TYPE_CHECKING:
    def _satisfies_contract(ctx: RPCContext) -> PluginContext:
        """mypy checks here that the node's objects satisfy every view of the contract."""
        return ctx


def request_wallet(wallets: Mapping[str, Wallet], wallet_name: Optional[str]) -> Wallet:
    """Core's GetWalletForJSONRPCRequest + EnsureWalletIsAvailable: the wallet a call names
    (``/wallet/<name>``), else the only one loaded."""
    if wallet_name is not None:
        wallet = wallets.get(wallet_name)
        if wallet is None:
            raise RPCError(RPC_WALLET_NOT_FOUND, "Requested wallet does not exist or is not loaded")
        return wallet
    if len(wallets) == 1:
        return next(iter(wallets.values()))
    if not wallets:
        raise RPCError(RPC_METHOD_NOT_FOUND,
                       "Method not found (wallet method is disabled because no wallet is loaded)")
    raise RPCError(RPC_WALLET_NOT_SPECIFIED, "Wallet file not specified (must request wallet "
                   "RPC through /wallet/<filename> uri-path).")
