"""The Twisted MultiService that assembles a node from its configuration.

Building the service tree opens nothing.  Start-up order follows Core:
``privilegedStartService`` locks the datadir, opens the logs and the chain store
and binds the RPC server (answering -28 "warming up" at once), then P2P;
``startService`` loads the chain on the validation worker and opens RPC for
real.  Shutdown reverses it: listeners, P2P, wallets, mempool, the chain state
flushed and closed, the lock released last.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from typing import Any, Callable, List, Optional, Tuple

from twisted.application import service
from twisted.internet.defer import inlineCallbacks, maybeDeferred
from twisted.internet.error import CannotListenError
from twisted.logger import Logger, globalLogPublisher
from twisted.python.threadpool import ThreadPool

from coin import __version__
from coin.chain.access import ChainAccess
from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.events import ChainEvent, TipChanged
from coin.chain.ibd import DEFAULT_PROGRESS_INTERVAL, ProgressLog
from coin.chain.pruning import PruneConfigError, prune_target_from_option
from coin.chain.scriptcheck import assume_valid_from_option
from coin.chain.service import ValidationService
from coin.chain.stop import StopAtHeight
from coin.chain.verify import verify_chain
from coin.chain.warnings import ChainWarningMonitor
from coin.chain.workers import ScriptCheckPool, script_check_threads
from coin.governance.masternodes import MasternodeList
from coin.governance.relay import GovernanceRelay
from coin.governance.sentinel import Sentinel
from coin.governance.superblock import Superblocks
from coin.governance.service import GovernanceService
from coin.chainparams import ChainParams, get_params
from coin.config import ConfigError
from coin.config.node import NodeConfig
from coin.config.rpcauth import parse_rpcauth
from coin.eventloop import describe as describe_event_loop
from coin.frontend.workers import WorkerPool
from coin.index.txindex import TxIndex, drop_txindex
from coin.listeners import ListenerGroup
from coin.logs import DebugCategories, build_observers
from coin.masternode.service import (
    MasternodeConfigError, MasternodeService, active_from_config,
)
from coin.mempool.accept import PoolPolicy
from coin.mempool.policy import FeeRate
from coin.mempool.pool import AncestorLimits, Mempool
from coin.mempool.service import MempoolService
from coin.mining.service import MiningService
from coin.notify.service import NotifyService
from coin.p2p.banman import normalize_ip
from coin.p2p.relay import TxRelay
from coin.p2p.sync import BlockSync
from coin.p2p.connman import (
    P2PService, P2PSettings, P2PStartupError, check_user_agent, format_user_agent,
    parse_whitelist, split_host_port,
)
from coin.rpc.auth import AllowList, Authenticator, Whitelist, delete_cookie, rpc_bind_addresses
from coin.rpc.jsonrpc import JSONRPCCore, Warmup
from coin.rpc.registry import MethodTable, load_plugins
from coin.rpc.resource import RPCRoot, RPCSite
from coin.spork import SporkConfigError, SporkManager
from coin.rest import RESTResource
from coin.storage.chainstore import DEFAULT_MAX_BLOCKFILE_SIZE, ChainStore
from coin.storage.database import describe
from coin.storage.outage import DatabaseOutage
from coin.threads import ThreadRunner
from coin.views.amounts import AmountError, parse_amount
from coin.wallet.service import (
    WalletLoadError, WalletService, default_walletdir, duplicate_wallet, resolve_wallet_path,
)
from coin.wallet.spend import WalletFeeSettings

log = Logger()

#: Bytes in a MiB, for -dbcache.
_MIB = 1 << 20


class StartupError(Exception):
    """A fatal problem found while starting; the message is shown to the user."""


class DatadirLocked(StartupError):
    """Another process holds the data directory (coin-qt then points to the running one)."""


class NodeFacade:
    """What RPC method handlers see of the node (coin.rpc.context.NodeFacade)."""

    def __init__(self, node: "NodeService", chain: ChainAccess, logging: DebugCategories) -> None:
        self._node = node
        self.chain = chain
        self.logging = logging
        #: The mempool service (coin.mempool.service.MempoolService).
        self.mempool = node.mempool
        #: The wallet service (coin.wallet.service.WalletService), None with -disablewallet.
        self.wallet_service = node.wallets
        #: The P2P service (coin.p2p.connman.P2PService).
        self.p2p = node.p2p
        #: Transaction announcements to peers (coin.p2p.relay.TxRelay).
        self.tx_relay = node.tx_relay
        #: The network's sporks (coin.spork.SporkManager).
        self.sporks = node.sporks
        #: Masternodes (coin.masternode.service.MasternodeService).
        self.masternodes = node.masternodes
        #: Governance objects and votes (coin.governance.service.GovernanceService).
        self.governance = node.governance
        #: ZeroMQ publishers and -*notify commands (coin.notify.service.NotifyService).
        self.notify = node.notify
        #: Loaded wallets by name, in load order (the RPC core routes wallet calls here).
        self.wallets: dict = node.wallets.wallets if node.wallets is not None else {}
        #: Templates, block submission, long polls (stateless over the chain and its pool).
        self.mining = MiningService(chain, node.reactor)
        #: The methods -deprecatedrpc re-enables.
        self.deprecated_rpc = frozenset(node.config.get_all("deprecatedrpc"))

    def shutdown(self) -> None:
        self._node.request_shutdown()

    def uptime(self) -> int:
        return self._node.uptime()


def rpc_access(config: Any) -> Tuple[Authenticator, AllowList, Whitelist]:
    """Who may call RPC, from where, and which methods: -rpcuser/-rpcpassword and -rpcauth
    (no cookie yet), -rpcallowip, -rpcwhitelist; StartupError for a malformed entry."""
    try:
        rpcauth = [parse_rpcauth(entry) for entry in config.get_all("rpcauth")]
        allow = AllowList(config.get_all("rpcallowip"))
    except (ConfigError, ValueError) as e:
        # ConfigError texts carry Core's "Error: " already; main() adds it once.
        raise StartupError(str(e).removeprefix("Error: ")) from None
    password = config.get("rpcpassword", "") or ""
    authenticator = Authenticator(
        (config.get("rpcuser", "") or "", password) if password else None, rpcauth)
    default = config.get_bool("rpcwhitelistdefault") if config.is_set("rpcwhitelistdefault") \
        else None
    return authenticator, allow, Whitelist(config.get_all("rpcwhitelist"), default)


def commit_new_tip(chainstate: ChainState, events: List[ChainEvent]) -> None:
    """-servefrontends: commit each new tip at once (a worker hook, on the writer thread),
    so front ends, which read only what is committed, see it without waiting for a flush."""
    if any(isinstance(event, TipChanged) for event in events):
        chainstate.flush()


class NodeService(service.MultiService):
    """A whole node: chain, validation worker, mempool, P2P, wallets, RPC server.

    Building one opens nothing; a bad setting raises StartupError (or ConfigError) at
    once.  :meth:`privilegedStartService` locks and opens the data directory and binds
    the listening sockets (under ``twistd``, after its fork); :meth:`startService`
    loads the chain; :meth:`stopService` undoes it all in reverse order.
    """

    def __init__(self, settings: NodeConfig, reactor: Any,
                 methods: Optional[MethodTable] = None, threadpool: Optional[ThreadPool] = None,
                 on_shutdown: Optional[Callable[[], object]] = None) -> None:
        super().__init__()
        self.settings = settings
        self.config = settings.config
        self.reactor = reactor
        #: The one place blocking reads, parses and encodes hop to: ``threadpool`` (started and
        #: stopped by the caller), or None for the reactor's own pool.
        self.in_thread = ThreadRunner(reactor, threadpool)
        #: What the ``stop`` RPC and a failed start call: by default, stop the reactor (the
        #: node owns the process); code that embeds the node passes its own.
        self._on_shutdown = on_shutdown
        self.params: ChainParams = get_params(settings.network)
        self.datadir = settings.datadir
        self.started_at = time.time()
        self._lock_file: Optional[Any] = None
        self._observers: List[Any] = []
        #: What start-up logs as warnings (coin.conf's, -rpcbind's).
        self._warnings = list(settings.config.warnings)
        #: Events logged while building (a skipped optional plugin), for debug.log once open.
        self._early_events: List[dict] = []
        #: Whether the chain store is open and no service has closed it yet.
        self._store_opened = False
        #: The console stream, taken now: under twistd, stdout is redirected to the log later.
        self._console = sys.stdout if settings.print_to_console else None
        #: Process exit status (non-zero when start-up failed after the reactor ran).
        self.exit_code = 0
        self.categories = self._parse_debug()
        self.methods = methods if methods is not None else self._load_methods()
        self.warmup = Warmup("Loading block index...")
        self.clock = NodeClock()
        self.authenticator: Optional[Authenticator] = None
        self.txindex: Optional[TxIndex] = None
        self.wallets: Optional[WalletService] = None
        self.rpc_listeners: Optional[ListenerGroup] = None
        #: With -rpcworkers: the node's own loopback socket the workers forward to (the
        #: shared port would hand a forwarded call to a worker again).
        self.worker_listener: Optional[ListenerGroup] = None
        self.p2p_listeners: Optional[ListenerGroup] = None
        self.metrics_listeners: Optional[ListenerGroup] = None
        #: This node's metrics (coin.metrics.Instruments) with -metricsbind, else None.
        self.instruments: Optional[Any] = None
        #: On PostgreSQL: whether the database server is reachable (pauses P2P intake).
        self.outage: Optional[DatabaseOutage] = None
        self._build()

    # ------------------------------------------------------------ helpers

    def _parse_debug(self) -> DebugCategories:
        try:
            return DebugCategories.parse(self.settings.debug, self.settings.debug_exclude)
        except ValueError as e:
            raise StartupError(str(e)) from None

    def _load_methods(self) -> MethodTable:
        """The built-in methods and the -rpcplugin ones: imported now, so a bad plugin is
        refused before any fork; what loading logs waits for debug.log to open."""
        observer = self._early_events.append
        globalLogPublisher.addObserver(observer)
        try:
            return load_plugins(self.settings.rpc_plugins)
        except Exception as e:
            raise StartupError("Error loading RPC plugins: %s" % e) from None
        finally:
            globalLogPublisher.removeObserver(observer)

    def uptime(self) -> int:
        """Seconds since start-up by the node's clock: setmocktime moves it, as in Core."""
        return int(self.clock.now()) - int(self.started_at)

    def request_shutdown(self) -> None:
        """Stop soon, after the current RPC reply is written (the ``stop`` RPC)."""
        self.reactor.callLater(0.05, self._shut_down)

    def _shut_down(self) -> None:
        if self._on_shutdown is not None:
            self._on_shutdown()
        elif self.reactor.running:
            self.reactor.stop()

    # ------------------------------------------------------------ the service tree

    def _build(self) -> None:
        """Every service, in start order (they stop in reverse); nothing opened yet."""
        settings = self.settings
        try:
            prune_mode, prune_target = prune_target_from_option(settings.prune)
        except PruneConfigError as e:
            raise StartupError(str(e)) from None
        self._prune_mode = prune_mode
        self.store = ChainStore(self.datadir, self.params, dbcache_mib=settings.dbcache_mib,
                                dbengine=settings.dbengine, max_blockfile_size=(settings.blockfile_size
                                                    or DEFAULT_MAX_BLOCKFILE_SIZE))
        # First child: ZeroMQ sockets are bound before any event, and close after the rest.
        self.notify = NotifyService(self.config, self.reactor)
        self.notify.setServiceParent(self)
        chainstate = ChainState(self.params, self.store, clock=self.clock, in_thread=self.in_thread)
        chainstate.configure_pruning(prune_mode, prune_target)
        chainstate.script_workers = ScriptCheckPool(
            script_check_threads(self.config.get_int("par")) - 1)
        chainstate.assume_valid = assume_valid_from_option(self.config.get("assumevalid"),
                                                           self.params.default_assume_valid)
        chainstate.progress = ProgressLog(
            self.config.get_int("progressinterval", DEFAULT_PROGRESS_INTERVAL))
        self.validation = ValidationService(
            chainstate, self.reactor, reindex=settings.reindex,
            reindex_chainstate=settings.reindex_chainstate)
        self.validation.setServiceParent(self)
        self.clock.set_mock_time(self.config.get_int("mocktime"))
        if self.config.get_int("stopatheight") > 0:
            self.validation.subscribe(StopAtHeight(self.config.get_int("stopatheight"),
                                                   self.request_shutdown))
        self.chain = ChainAccess(self.validation, self.clock, self.reactor, self.in_thread)
        self.chain.print_priority = self.config.get_bool("printpriority", False)
        if settings.txindex:
            # A child after validation: stops first, letting its current step finish.
            self.txindex = TxIndex(self.validation, self.reactor, reindex=settings.reindex)
            self.txindex.setServiceParent(self)
            self.chain.txindex = self.txindex
        self.notify.watch_disconnects(self.validation)
        policy, max_tx_fee = self._pool_policy()
        pool = Mempool(max_usage=policy.max_usage, min_relay_fee=policy.min_relay_fee,
                       incremental_relay_fee=policy.incremental_relay_fee, now=self.clock.now)
        # A child after validation: stops first, saving the pool before the chain closes.
        self.mempool = MempoolService(self.validation, pool, policy, now=self.clock.now,
                                      datadir=self.datadir, persist=settings.persist_mempool,
                                      max_tx_fee=max_tx_fee)
        self.mempool.setServiceParent(self)
        self.chain.mempool = pool
        # A child after the mempool: stops before it, so no peer submits to a closing pool.
        self.p2p = self._make_p2p(chainstate, policy)
        self.p2p.setServiceParent(self)
        # Headers-first sync and transaction relay ride on the P2P service's hooks.
        self.block_sync = BlockSync(self.p2p, self.chain, self.validation.subscribe,
                                    now=self.clock.now)
        self.block_sync.max_tip_age = self.config.get_int("maxtipage")
        self.chain.is_initial_block_download = self.block_sync.is_initial_block_download
        if self.store.db_url is not None:
            # A database server can go away and come back: intake pauses meanwhile.
            self.outage = DatabaseOutage(self.reactor, self.store.ping, self.in_thread,
                                         describe(self.store.db_url))
            self.store.on_unreachable = self.outage.lost
            self.outage.add_listener(self.block_sync)
            if self.txindex is not None:
                self.outage.add_listener(self.txindex)
        if settings.serve_frontends:
            self.validation.add_worker_hook(commit_new_tip)
        self.validation.add_worker_hook(ChainWarningMonitor(
            self.chain.warnings, chainstate, self.block_sync.is_initial_block_download))
        self.tx_relay = TxRelay(self.p2p, self.mempool, self.block_sync,
                                self.validation.subscribe,
                                min_fee_rate=pool.relay_floor)
        self.tx_relay.orphans.max_count = max(0, self.config.get_int("maxorphantx"))
        try:
            self.sporks = SporkManager.for_node(self.params, self.p2p, self.config.get("sporkkey"),
                                                self.config.get("sporkaddr"))
        except SporkConfigError as e:
            raise StartupError(str(e)) from None
        try:
            active = active_from_config(self.config.get_bool("masternode", False),
                                        self.config.get("masternodeprivkey"), self.params)
        except MasternodeConfigError as e:
            raise StartupError(str(e)) from None
        self.masternodes = MasternodeService(
            self.params, self.chain, self.p2p, self.block_sync.is_initial_block_download,
            self.validation.subscribe, chainstate.adjusted_time, self.reactor, self.datadir,
            self.config.get("mnconf", "masternode.conf"), active, sporks=self.sporks)
        self.masternodes.setServiceParent(self)
        self.governance = GovernanceService(self.chain, self.datadir, self.clock.adjusted_time,
                                            self.reactor, MasternodeList(self.masternodes.manager))
        self.governance.setServiceParent(self)
        GovernanceRelay(self.p2p, self.governance, self.masternodes.sync, self.params.name)
        Superblocks(self.governance, chainstate, self.sporks, self.masternodes.sync)
        if self.config.get_bool("sentinel", active is not None):
            Sentinel(self.governance, self.masternodes, self.reactor).setServiceParent(self)
        if not settings.disable_wallet:
            self.wallets = WalletService(self.validation, self.mempool, self.params,
                                         default_walletdir(self.config, self.datadir),
                                         now=self.clock.now, keypool_size=settings.keypool,
                                         reactor=self.reactor, in_thread=self.in_thread)
            self.wallets.spend_zero_conf_change = self.config.get_bool("spendzeroconfchange")
            self.wallets.fee_settings = self._wallet_fees(policy)
            self.wallets.rescan_on_load = self.config.get_bool("rescan")
            self.wallets.broadcast = self.config.get_bool("walletbroadcast")
            self.wallets.zap_mode = settings.zap_mode
            self.wallets.setServiceParent(self)
        self.notify.attach(self.validation, self.mempool, self.governance, self.wallets,
                           self.chain.warnings, self.block_sync.is_initial_block_download)
        if self.config.get_all("metricsbind"):
            # Before the RPC server, whose dispatch it instruments; listening last.
            self.metrics_listeners = self._make_metrics(chainstate)
        # The listeners come last, so they stop first: RPC, P2P (bound late, as Core), then
        # metrics.
        if settings.server:
            self.rpc_listeners = self._make_rpc()
            self.rpc_listeners.setServiceParent(self)
        p2p_settings = self.p2p.settings
        if p2p_settings.listen:
            self.p2p_listeners = P2PListeners(
                self.reactor, self.p2p.inbound_factory(),
                p2p_settings.binds or [("::", p2p_settings.port), ("0.0.0.0", p2p_settings.port)],
                explicit=bool(p2p_settings.binds))
            self.p2p_listeners.setServiceParent(self)
        if self.metrics_listeners is not None:
            self.metrics_listeners.setServiceParent(self)
        self.rpc_workers: Optional[WorkerPool] = None
        if settings.rpc_workers and self.rpc_listeners is not None:
            self.worker_listener = RPCListeners(self.reactor, self.rpc_listeners.factory,
                                                [("127.0.0.1", 0)])
            self.worker_listener.setServiceParent(self)
            # Last, so stopped first: no worker forwards to a node that is closing.
            self.rpc_workers = WorkerPool(
                self.reactor, settings.rpc_workers, self._worker_arguments,
                self._writer_address, self._add_worker_credential)
            self.rpc_workers.setServiceParent(self)

    def _verify_wallets(self) -> None:
        """Check -walletdir and every -wallet name before anything is opened (Core's
        VerifyWallets): a bad one stops start-up with Core's message, nothing created."""
        if self.wallets is None:
            return
        walletdir = self.wallets.walletdir
        if self.config.is_set("walletdir") and not os.path.isdir(walletdir):
            raise StartupError("Specified -walletdir \"%s\" does not exist"
                               % self.config.get("walletdir"))
        paths = set()
        try:
            for name in self.settings.wallets:
                path = resolve_wallet_path(walletdir, name)
                if path in paths:  # two names for one file (Core refuses even equal names)
                    raise duplicate_wallet(name)
                paths.add(path)
        except WalletLoadError as e:
            raise StartupError(e.message.removeprefix("Wallet file verification failed: ")
                               ) from None

    def _p2p_settings(self) -> P2PSettings:
        """-listen, -bind, -port, -connect, -addnode, ... as Core's InitParameterInteraction."""
        config = self.config
        port = config.get_int("port", self.params.p2p_port)  # 0: a free port, as Core
        binds = []
        for spec in config.get_all("bind"):
            host, bind_port = split_host_port(spec, port)
            try:
                binds.append((str(normalize_ip(host)), bind_port))
            except ValueError:
                raise StartupError("Cannot resolve -bind address: '%s'" % spec) from None
        connect_set = config.is_set("connect")
        connect = config.get_all("connect")
        if connect == ["0"]:
            connect = []
        # -bind implies -listen=1; -connect (even -connect=0) implies -listen=0 (soft).
        listen = config.get_bool("listen", bool(binds) or not connect_set)
        comments = config.get_all("uacomment")
        user_agent = format_user_agent("Coin", __version__, comments)
        try:
            check_user_agent(comments, user_agent)
            whitelist = parse_whitelist(config.get_all("whitelist"))
        except P2PStartupError as e:
            raise StartupError(str(e)) from None
        timeout_ms = config.get_int("timeout")
        if timeout_ms is None or timeout_ms <= 0:
            timeout_ms = 5000
        return P2PSettings(
            port=port, listen=listen, binds=binds, connect=connect,
            use_addrman=not connect_set, addnodes=config.get_all("addnode"),
            max_connections=max(0, config.get_int("maxconnections")),
            bantime=config.get_int("bantime"), ban_threshold=config.get_int("banscore"),
            user_agent=user_agent, connect_timeout=timeout_ms / 1000.0,
            distinct_unroutable_groups=self.params.name == "regtest",
            allow_private=config.get_bool("allowprivatenet"),
            blocks_only=config.get_bool("blocksonly"),
            whitelist=whitelist, whitelist_relay=config.get_bool("whitelistrelay"),
            max_send_buffer=(config.get_int("maxsendbuffer") * 1000
                             if config.is_set("maxsendbuffer") else None),
            max_receive_buffer=(config.get_int("maxreceivebuffer") * 1000
                                if config.is_set("maxreceivebuffer") else None),
            max_upload_target=max(0, config.get_int("maxuploadtarget")) * 1024 * 1024)

    def _make_p2p(self, chainstate: ChainState, policy: PoolPolicy) -> P2PService:
        """The P2P service (its ban list and address book are read at start)."""
        p2p = P2PService(self.params, self._p2p_settings(), self.reactor, now=self.clock.now,
                         datadir=self.datadir, start_height=lambda: chainstate.height,
                         fee_filter_rate=lambda: policy.min_relay_fee.sat_per_kb,
                         set_time_offset=self.clock.set_time_offset,
                         warnings=self.chain.warnings)
        return p2p

    def _fee_option(self, name: str) -> int:
        text = self.config.get(name) or "0"
        try:
            return parse_amount(text)
        except (AmountError, ValueError):
            raise StartupError("Invalid amount for -%s=<amount>: '%s'" % (name, text)) from None

    def _wallet_fees(self, policy: PoolPolicy) -> WalletFeeSettings:
        """-paytxfee, -fallbackfee, -mintxfee, -txconfirmtarget (Core's checks)."""
        fees = WalletFeeSettings(self._fee_option("paytxfee"), self._fee_option("fallbackfee"),
                                 self._fee_option("mintxfee"),
                                 max(1, self.config.get_int("txconfirmtarget")),
                                 self.config.get_bool("walletrbf", False))
        if 0 < fees.pay_tx_fee < policy.min_relay_fee.sat_per_kb:
            raise StartupError("Invalid amount for -paytxfee=<amount>: '%s' (must be at least %s)"
                               % (self.config.get("paytxfee"), policy.min_relay_fee.to_string()))
        return fees

    def _pool_policy(self) -> Tuple[PoolPolicy, int]:
        """The relay policy from -minrelaytxfee, -maxmempool, -limit*, ...; and -maxtxfee."""
        config = self.config
        descendant_size = config.get_int("limitdescendantsize") * 1000
        max_usage = config.get_int("maxmempool") * 1_000_000
        minimum = descendant_size * 40
        if max_usage < 0 or max_usage < minimum:
            raise StartupError("-maxmempool must be at least %d MB" % -(-minimum // 1_000_000))
        if config.is_set("acceptnonstdtxn") and self.params.require_standard:
            raise StartupError("acceptnonstdtxn is not currently supported for %s chain"
                               % self.params.name)
        require_standard = not config.get_bool("acceptnonstdtxn",
                                               not self.params.require_standard)
        policy = PoolPolicy(
            min_relay_fee=FeeRate(self._fee_option("minrelaytxfee")),
            incremental_relay_fee=FeeRate(self._fee_option("incrementalrelayfee")),
            require_standard=require_standard,
            max_datacarrier=(config.get_int("datacarriersize")
                             if config.get_bool("datacarrier", True) else None),
            permit_bare_multisig=config.get_bool("permitbaremultisig", True),
            limits=AncestorLimits(config.get_int("limitancestorcount"),
                                  config.get_int("limitancestorsize") * 1000,
                                  config.get_int("limitdescendantcount"), descendant_size),
            max_usage=max_usage,
            expiry_seconds=config.get_int("mempoolexpiry") * 3600,
            replacement=config.get_bool("mempoolreplacement", True))
        return policy, self._fee_option("maxtxfee")

    def _check_prune_state(self, store: ChainStore, prune_mode: bool) -> None:
        """Refuse what a pruned data directory cannot do (the store is closed on refusal)."""
        try:
            have_pruned = store.have_pruned()
        except Exception as e:
            store.close()
            raise StartupError("Error opening block database: %s" % e) from None
        if not have_pruned:
            return
        message = None
        if self.config.get_bool("reindex", False) or \
                self.config.get_bool("reindex-chainstate", False):
            # Core would wipe and download again; this node has no block download yet.
            message = ("Block files of this data directory have been pruned, so -reindex and "
                       "-reindex-chainstate cannot rebuild from them and there is no "
                       "peer-to-peer download to fetch them again.  Start with an empty data "
                       "directory instead")
        elif not prune_mode:
            message = ("You need to rebuild the database using -reindex to go back to "
                       "unpruned mode.  This will redownload the entire blockchain")
        if message is not None:
            store.close()
            raise StartupError(message)

    def _lock_datadir(self) -> None:
        path = os.path.join(self.datadir, ".lock")
        handle = open(path, "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise DatadirLocked("Cannot obtain a lock on data directory %s. Coin is probably "
                               "already running." % self.datadir) from None
        self._lock_file = handle

    def _start_logging(self) -> None:
        self._observers = build_observers(self.categories, self.settings.debug_log,
                                          self._console, micros=self.settings.log_time_micros,
                                          timestamps=self.settings.log_timestamps)
        for observer in self._observers:
            globalLogPublisher.addObserver(observer)
            for event in self._early_events:
                observer(event)
        self._early_events = []

    def _make_rpc(self) -> ListenerGroup:
        """The JSON-RPC and REST server on its -rpcbind addresses (bound at start)."""
        config = self.config
        settings = self.settings
        # Without -rpcpassword the cookie is written at start (privilegedStartService).
        self.authenticator, allow, whitelist = rpc_access(config)
        self._whitelist = whitelist
        facade = NodeFacade(self, self.chain, self.categories)
        core = JSONRPCCore(self.methods, facade, whitelist=whitelist, warmup=self.warmup,
                           clock=self.reactor, in_thread=self.in_thread,
                           observe=self.instruments.rpc_call if self.instruments else None)
        root = RPCRoot(core, self.authenticator, self.reactor)
        if settings.rest:
            # No RPC authentication on /rest, as Core; -rest=0 leaves the path a plain 404.
            root.putChild(b"rest", RESTResource(self.chain, self.mempool, warmup=self.warmup,
                                                observe=(self.instruments.rest_request
                                                         if self.instruments else None)))
        site = RPCSite(root, allow=allow, timeout=settings.rpc_server_timeout,
                       max_connections=settings.rpc_max_connections, reactor=self.reactor,
                       categories=self.categories)
        endpoints, warnings = rpc_bind_addresses(config.get_all("rpcbind"),
                                                 config.get_all("rpcallowip"), settings.rpc_port)
        self._warnings += ["WARNING: " + warning for warning in warnings]
        return RPCListeners(self.reactor, site, endpoints, reuse_port=settings.rpc_workers > 0)

    def _add_worker_credential(self, user: str, password: str) -> None:
        """Accept the workers' internal credential, for every method (they checked the
        caller's -rpcwhitelist before forwarding)."""
        self.authenticator.add_credential(user, password)
        self._whitelist.unrestrict(user)

    def _writer_address(self) -> Tuple[str, int]:
        """Where the -rpcworkers forward to: the node's own loopback socket."""
        return self.worker_listener.addresses[0]

    def _worker_arguments(self) -> List[str]:
        """The node's own arguments; with -rpcport=0, the port it got (the workers share it)."""
        if self.settings.rpc_port:
            return list(self.config.command_line)
        port = min(self.rpc_listeners.addresses, key=lambda address: ":" in address[0])[1]
        return self.config.command_line + ["-rpcport=%d" % port]

    def _make_metrics(self, chainstate: ChainState) -> ListenerGroup:
        """-metricsbind: this node's registry (its own: several nodes may share a process),
        the instruments RPC, REST and block connection feed, the collector reading the
        node at scrape time, and the /metrics listeners (bound at start)."""
        # Imported only here: a node without -metricsbind never loads prometheus-client.
        from coin.metrics.collector import NodeCollector

        listeners, self.instruments = metrics_listeners(self.reactor, self.config,
                                                        self.settings.rpc_port, self.methods)
        chainstate.connect_observer = self.instruments.block_connected
        self.instruments.registry.register(NodeCollector(
            self.chain, self.mempool, self.p2p, self.store.coins,
            self.wallets.wallets if self.wallets is not None else None,
            self.masternodes.manager, self.outage))
        return listeners

    def _write_pid_file(self) -> None:
        with open(self.settings.pid_file, "w") as f:
            f.write("%d\n" % os.getpid())

    # ------------------------------------------------------------ start-up

    def privilegedStartService(self) -> None:
        """Lock and open the data directory and bind the sockets, in Core's order.

        Runs before the reactor (under ``twistd``, in the daemon after its fork).  On
        failure everything opened so far is released again and StartupError raised.
        """
        try:
            self._open()
            super().privilegedStartService()  # binds the listeners
            self._write_pid_file()
        except BaseException:
            for group in (self.rpc_listeners, self.worker_listener, self.p2p_listeners,
                          self.metrics_listeners):
                if group is not None:
                    group.close()
            self._release()
            raise

    def _open(self) -> None:
        if not os.path.isdir(self.datadir):
            # Core's first run creates the wallets folder with the datadir, wallet or not.
            os.makedirs(os.path.join(self.datadir, "wallets"), mode=0o700)
        self._lock_datadir()
        self._start_logging()
        log.info("Coin version v{version}", version=__version__)
        log.info("Using data directory {datadir}", datadir=self.datadir)
        log.info("{line}", line=describe_event_loop(self.reactor))
        for warning in self._warnings:
            # Not a "warning" key: the legacy log system reserves it for Python warnings.
            log.warn("{text}", text=warning)
        self._verify_wallets()
        try:
            self.store.open()
        except Exception as e:
            raise StartupError("Error opening block database: %s" % e) from None
        try:
            self.store.claim_writer()
        except Exception as e:
            self.store.close()
            raise StartupError(str(e)) from None
        self._store_opened = True
        self._check_prune_state(self.store, self._prune_mode)
        if self._prune_mode:
            if self.validation.chainstate.prune_target:
                log.info("Prune configured to target {mib}MiB on disk for block and undo "
                         "files.", mib=self.validation.chainstate.prune_target >> 20)
            else:
                log.info("Block pruning enabled.  Use RPC call pruneblockchain(height) to "
                         "manually prune block and undo files.")
        self.p2p.load()
        if self.wallets is not None:
            os.makedirs(self.wallets.walletdir, mode=0o700, exist_ok=True)
        if self.authenticator is not None and not self.config.get("rpcpassword"):
            self.authenticator.create_cookie(self.config.cookie_path())

    def startService(self) -> None:
        """Start the children: the validation worker loads the chain (RPC answers -28)."""
        super().startService()
        self.validation.ready.addCallbacks(self._loaded, self._load_failed)

    @inlineCallbacks
    def _loaded(self, chainstate: ChainState):
        log.info("Loaded best chain: height {height} hash {hash}", height=chainstate.height,
                 hash=chainstate.tip.hash[::-1].hex())
        # Core's start-up VerifyDB (-checklevel, -checkblocks).
        verified = yield self.chain.call(verify_chain, self.config.get_int("checklevel"),
                                         self.config.get_int("checkblocks"))
        if not verified:
            sys.stderr.write("Error: Corrupted block database detected.\nPlease restart with "
                             "-reindex or -reindex-chainstate to recover.\n")
            self.exit_code = 1
            self._shut_down()
            return
        if self.wallets is not None:
            self.warmup.set("Loading wallet...")
            try:
                for name in self.settings.wallets:
                    yield self.wallets.load(name, create=True)
            except Exception as e:
                log.failure("Loading wallet failed")
                sys.stderr.write("Error: %s\n" % getattr(e, "message", e))
                self.exit_code = 1
                self._shut_down()
                return
        self.warmup.finish()
        if self.rpc_workers is not None:
            self.rpc_workers.launch()
        self.p2p.start_connections()
        if self.txindex is None:
            drop_txindex(self.validation).addErrback(
                lambda f: log.failure("Dropping the transaction index failed", f))

    def _load_failed(self, failure) -> None:
        log.failure("Error loading the chain state", failure)
        sys.stderr.write("Error: %s\n" % failure.getErrorMessage())
        self.exit_code = 1
        self._shut_down()

    # ------------------------------------------------------------ shutdown

    @inlineCallbacks
    def stopService(self):
        """Stop the children one after the other, in reverse start order, then release.

        So the listeners close first, then P2P, wallets, the mempool (saved through the
        validation worker) and the validation worker (which flushes and closes the chain
        store); the data directory lock goes last.
        """
        log.info("Shutdown: In progress...")
        service.Service.stopService(self)
        if self.outage is not None:
            self.outage.stop()
        for child in reversed(list(self)):
            try:
                yield maybeDeferred(child.stopService)
            except Exception:
                log.failure("Stopping {name} failed", name=child.name or child)
        self._store_opened = False  # the validation worker closed it
        self._release()

    def _release(self) -> None:
        """Undo :meth:`_open`: cookie, pid file, store (if still open), logs, lock last."""
        if self.authenticator is not None and self.authenticator.cookie_path is not None:
            delete_cookie(self.authenticator.cookie_path)
        try:
            os.unlink(self.settings.pid_file)
        except OSError:
            pass
        if self._store_opened:
            self.store.close()
            self._store_opened = False
        log.info("Shutdown: done")
        for observer in self._observers:
            globalLogPublisher.removeObserver(observer)
        self._observers = []
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


class RPCListeners(ListenerGroup):
    """Core's HTTP server binding: failures are logged; none bound stops start-up."""

    def bound(self, host: str, port: int) -> None:
        log.info("Binding RPC on address {host} port {port}", host=host, port=port)

    def failed(self, host: str, port: int, error: CannotListenError) -> None:
        log.warn("Binding RPC on address {host}:{port} ({error}) failed.", host=host, port=port,
                 error=error.socketError)

    def none_bound(self) -> None:
        raise StartupError("Unable to start HTTP server. See debug log for details.")


def metrics_listeners(reactor: Any, config: Any, rpc_port: int, methods: Any,
                      block_connect: bool = True) -> Tuple["MetricsListeners", Any]:
    """-metricsbind of a node or a front end: its /metrics listeners (bound at start) and
    the :class:`~coin.metrics.Instruments` of a registry of its own (several nodes may share
    a process); StartupError for an address it refuses."""
    from coin.metrics import Instruments
    from coin.metrics.service import MetricsConfigError, metrics_bind_addresses, metrics_site

    try:
        addresses = metrics_bind_addresses(config.get_all("metricsbind"),
                                           config.get_all("rpcallowip"), rpc_port)
        allow = AllowList(config.get_all("rpcallowip"))
    except (MetricsConfigError, ConfigError) as e:
        raise StartupError(str(e).removeprefix("Error: ")) from None
    instruments = Instruments.in_own_registry(methods, block_connect=block_connect)
    site = metrics_site(instruments.registry, allow)
    return MetricsListeners(reactor, site, addresses), instruments


class MetricsListeners(ListenerGroup):
    """Like the RPC server's: a failed address is logged; none bound stops start-up."""

    def bound(self, host: str, port: int) -> None:
        log.info("Binding metrics on address {host} port {port}", host=host, port=port)

    def failed(self, host: str, port: int, error: CannotListenError) -> None:
        log.warn("Binding metrics on address {host}:{port} ({error}) failed.", host=host,
                 port=port, error=error.socketError)

    def none_bound(self) -> None:
        raise StartupError("Unable to start the metrics server. See debug log for details.")


class P2PListeners(ListenerGroup):
    """Core's P2P binding: each -bind address must bind; of the two defaults, one."""

    def __init__(self, reactor: Any, factory: Any, addresses: List[Tuple[str, int]],
                 explicit: bool) -> None:
        super().__init__(reactor, factory, addresses)
        self.explicit = explicit

    def bound(self, host: str, port: int) -> None:
        log.info("Bound to {host}:{port}", host=host, port=port)

    def failed(self, host: str, port: int, error: CannotListenError) -> None:
        # Without -bind one of the two default sockets may fail (no IPv6, or a dual-stack
        # "::" that already covers IPv4): only all failing is an error.
        log.info("Unable to bind to {host}:{port} on this computer ({error})", host=host,
                 port=port, error=error.socketError)
        if self.explicit:
            raise StartupError("Unable to bind to %s:%d on this computer. Coin is probably "
                               "already running." % (host, port))

    def none_bound(self) -> None:
        raise StartupError("Failed to listen on any port. Use -listen=0 if you want this.")
