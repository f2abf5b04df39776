"""The Twisted MultiService that assembles a node from its configuration.

Start-up order follows Core: lock the datadir, open logs, start the RPC
server (answering -28 "warming up" at once), then load the chain on the
validation worker and open RPC for real.  Shutdown reverses it and flushes
the chain state.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from typing import Any, Callable, List, Optional, Tuple

from twisted.application import service
from twisted.internet.defer import Deferred, DeferredList, inlineCallbacks, maybeDeferred
from twisted.internet.error import CannotListenError
from twisted.logger import Logger, globalLogPublisher

from coin import __version__
from coin.chain.access import ChainAccess
from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.pruning import PruneConfigError, prune_target_from_option
from coin.chain.service import ValidationService
from coin.chainparams import ChainParams, get_params
from coin.config import Config, ConfigError
from coin.index.txindex import TxIndex, drop_txindex
from coin.logs import DebugCategories, build_observers
from coin.mempool.accept import PoolPolicy
from coin.mempool.policy import FeeRate
from coin.mempool.pool import AncestorLimits, Mempool
from coin.mempool.service import MempoolService
from coin.mining.service import MiningService
from coin.p2p.banman import normalize_ip
from coin.p2p.relay import TxRelay
from coin.p2p.sync import BlockSync
from coin.p2p.connman import (
    P2PService, P2PSettings, P2PStartupError, check_user_agent, format_user_agent,
    split_host_port,
)
from coin.rpc.auth import AllowList, Authenticator, Whitelist, delete_cookie, rpc_bind_addresses
from coin.rpc.jsonrpc import JSONRPCCore, Warmup
from coin.rpc.registry import MethodTable, load_plugins
from coin.rpc.resource import RPCRoot, RPCSite
from coin.rest import RESTResource
from coin.storage.chainstore import DEFAULT_MAX_BLOCKFILE_SIZE, ChainStore
from coin.views.amounts import AmountError, parse_amount
from coin.wallet.service import (
    WalletLoadError, WalletService, default_walletdir, duplicate_wallet, resolve_wallet_path,
)

log = Logger()

#: Bytes in a MiB, for -dbcache.
_MIB = 1 << 20


class StartupError(Exception):
    """A fatal problem found while starting; the message is shown to the user."""


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
        #: Loaded wallets by name, in load order (the RPC core routes wallet calls here).
        self.wallets: dict = node.wallets.wallets if node.wallets is not None else {}
        #: Templates, block submission, long polls (stateless over the chain and its pool).
        self.mining = MiningService(chain, node.reactor)

    def shutdown(self) -> None:
        self._node.request_shutdown()

    def uptime(self) -> int:
        return self._node.uptime()


class NodeService(service.MultiService):
    """A whole node: chain, validation worker, RPC server."""

    def __init__(self, config: Config, reactor: Any, methods: Optional[MethodTable] = None) -> None:
        super().__init__()
        self.config = config
        self.reactor = reactor
        self.params: ChainParams = get_params(config.network or "main")
        self.datadir = config.net_datadir
        self.started_at = time.time()
        self._lock_file: Optional[Any] = None
        self._ports: List[Any] = []
        self._observers: List[Any] = []
        #: Process exit status (non-zero when start-up failed after the reactor ran).
        self.exit_code = 0
        self.categories = self._parse_debug()
        self.methods = methods
        self.warmup = Warmup("Loading block index...")
        self.clock = NodeClock()
        self.authenticator: Optional[Authenticator] = None
        self.validation: Optional[ValidationService] = None
        self.chain: Optional[ChainAccess] = None
        self.txindex: Optional[TxIndex] = None
        self.mempool: Optional[MempoolService] = None
        self.wallets: Optional[WalletService] = None
        self.p2p: Optional[P2PService] = None
        self.block_sync: Optional[BlockSync] = None
        self.tx_relay: Optional[TxRelay] = None

    # ------------------------------------------------------------ helpers

    def _parse_debug(self) -> DebugCategories:
        try:
            return DebugCategories.parse(self.config.get_all("debug"))
        except ValueError as e:
            raise StartupError(str(e)) from None

    def uptime(self) -> int:
        return int(time.time() - self.started_at)

    def request_shutdown(self) -> None:
        """Stop soon, after the current RPC reply is written (the ``stop`` RPC)."""
        self.reactor.callLater(0.05, self._stop_reactor)

    def _stop_reactor(self) -> None:
        if self.reactor.running:
            self.reactor.stop()

    # ------------------------------------------------------------ start-up

    def prepare(self) -> None:
        """Everything that can fail before the reactor runs; raises StartupError."""
        txindex = self.config.get_bool("txindex", False)
        if txindex and (self.config.get_int("prune") or 0):
            raise StartupError("Prune mode is incompatible with -txindex.")
        try:
            prune_mode, prune_target = prune_target_from_option(self.config.get_int("prune") or 0)
        except PruneConfigError as e:
            raise StartupError(str(e)) from None
        os.makedirs(self.datadir, exist_ok=True)
        self._lock_datadir()
        self._start_logging()
        log.info("Coin version v{version}", version=__version__)
        log.info("Using data directory {datadir}", datadir=self.datadir)
        for warning in self.config.warnings:
            log.warn("{warning}", warning=warning)
        if self.methods is None:
            try:
                self.methods = load_plugins()
            except Exception as e:
                raise StartupError("Error loading RPC plugins: %s" % e) from None
        self._verify_wallets()
        store = ChainStore(self.datadir, self.params,
                           dbcache_mib=max(4, self.config.get_int("dbcache") or 450),
                           max_blockfile_size=(self.config.get_int("blockfilesize")
                                               or DEFAULT_MAX_BLOCKFILE_SIZE))
        try:
            store.open()
        except Exception as e:
            raise StartupError("Error opening block database: %s" % e) from None
        self._check_prune_state(store, prune_mode)
        chainstate = ChainState(self.params, store, now=self.clock.now)
        chainstate.configure_pruning(prune_mode, prune_target)
        if prune_mode:
            if prune_target:
                log.info("Prune configured to target {mib}MiB on disk for block and undo "
                         "files.", mib=prune_target >> 20)
            else:
                log.info("Block pruning enabled.  Use RPC call pruneblockchain(height) to "
                         "manually prune block and undo files.")
        self.validation = ValidationService(
            chainstate, self.reactor, reindex=self.config.get_bool("reindex", False),
            reindex_chainstate=self.config.get_bool("reindex-chainstate", False))
        self.validation.setServiceParent(self)
        self.chain = ChainAccess(self.validation, self.clock, self.reactor)
        if txindex:
            # A child after validation: stops first, letting its current step finish.
            self.txindex = TxIndex(self.validation, self.reactor,
                                   reindex=self.config.get_bool("reindex", False))
            self.txindex.setServiceParent(self)
            self.chain.txindex = self.txindex
        policy, max_tx_fee = self._pool_policy()
        pool = Mempool(max_usage=policy.max_usage, min_relay_fee=policy.min_relay_fee,
                       incremental_relay_fee=policy.incremental_relay_fee, now=self.clock.now)
        # A child after validation: stops first, saving the pool before the chain closes.
        self.mempool = MempoolService(self.validation, pool, policy, now=self.clock.now,
                                      datadir=self.datadir,
                                      persist=self.config.get_bool("persistmempool", True),
                                      max_tx_fee=max_tx_fee)
        self.mempool.setServiceParent(self)
        self.chain.mempool = pool
        # A child after the mempool: stops before it, so no peer submits to a closing pool.
        self.p2p = self._make_p2p(chainstate, policy)
        self.p2p.setServiceParent(self)
        # Headers-first sync and transaction relay ride on the P2P service's hooks.
        self.block_sync = BlockSync(self.p2p, self.chain, self.validation.subscribe,
                                    now=self.clock.now)
        self.tx_relay = TxRelay(self.p2p, self.mempool, self.block_sync,
                                self.validation.subscribe,
                                min_fee_rate=self._fee_filter_rate(policy, pool))
        if not self.config.get_bool("disablewallet", False):
            walletdir = default_walletdir(self.config, self.datadir)
            os.makedirs(walletdir, mode=0o700, exist_ok=True)
            self.wallets = WalletService(self.validation, self.mempool, self.params, walletdir,
                                         now=self.clock.now,
                                         keypool_size=max(1, self.config.get_int("keypool")),
                                         reactor=self.reactor)
            self.wallets.setServiceParent(self)
        if self.config.get_bool("server", True):
            self._start_rpc()
        # Bound after the RPC server, as Core binds P2P late in start-up.
        try:
            self.p2p.listen()
        except P2PStartupError as e:
            raise StartupError(str(e)) from None
        self._write_pid_file()

    def _verify_wallets(self) -> None:
        """Check -walletdir and every -wallet name before anything is opened (Core's
        VerifyWallets): a bad one stops start-up with Core's message, nothing created."""
        if self.config.get_bool("disablewallet", False):
            return
        walletdir = default_walletdir(self.config, self.datadir)
        if self.config.is_set("walletdir") and not os.path.isdir(walletdir):
            raise StartupError("Specified -walletdir \"%s\" does not exist"
                               % self.config.get("walletdir"))
        paths = set()
        try:
            for name in dict.fromkeys(self.config.get_all("wallet") or [""]):
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
        port = config.get_int("port") or self.params.p2p_port
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
            distinct_unroutable_groups=self.params.name == "regtest")

    def _make_p2p(self, chainstate: ChainState, policy: PoolPolicy) -> P2PService:
        """The P2P service with its ban list and address book loaded (not listening yet)."""

        def set_time_offset(offset: int) -> None:
            chainstate.time_offset = offset

        p2p = P2PService(self.params, self._p2p_settings(), self.reactor, now=self.clock.now,
                         datadir=self.datadir, start_height=lambda: chainstate.height,
                         fee_filter_rate=lambda: policy.min_relay_fee.sat_per_kb,
                         set_time_offset=set_time_offset)
        p2p.load()
        return p2p

    @staticmethod
    def _fee_filter_rate(policy: PoolPolicy, pool: Mempool) -> Callable[[], int]:
        """The feefilter we send: the minimum relay fee or the pool's dynamic minimum."""

        def rate() -> int:
            return max(policy.min_relay_fee.sat_per_kb, pool.get_min_fee().sat_per_kb)

        return rate

    def _fee_option(self, name: str) -> int:
        text = self.config.get(name) or "0"
        try:
            return parse_amount(text)
        except (AmountError, ValueError):
            raise StartupError("Invalid amount for -%s=<amount>: '%s'" % (name, text)) from None

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
            expiry_seconds=config.get_int("mempoolexpiry") * 3600)
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
            raise StartupError("Cannot obtain a lock on data directory %s. Coin is probably "
                               "already running." % self.datadir) from None
        self._lock_file = handle

    def _start_logging(self) -> None:
        log_path = None
        if not self.config.is_negated("debuglogfile"):
            log_path = self.config.resolve_path(self.config.get("debuglogfile", "debug.log"))
        console_default = not self.config.get_bool("daemon", False)
        console = sys.stdout if self.config.get_bool("printtoconsole", console_default) else None
        self._observers = build_observers(self.categories, log_path, console)
        for observer in self._observers:
            globalLogPublisher.addObserver(observer)

    def _start_rpc(self) -> None:
        config = self.config
        try:
            self.authenticator = Authenticator.from_options(
                rpcuser=config.get("rpcuser", "") or "",
                rpcpassword=config.get("rpcpassword", "") or "",
                rpcauth=config.get_all("rpcauth"),
                cookie_path=config.cookie_path())
            allow = AllowList(config.get_all("rpcallowip"))
        except (ConfigError, ValueError) as e:
            # ConfigError texts carry Core's "Error: " already; main() adds it once.
            raise StartupError(str(e).removeprefix("Error: ")) from None
        default = config.get_bool("rpcwhitelistdefault") if config.is_set("rpcwhitelistdefault") \
            else None
        whitelist = Whitelist(config.get_all("rpcwhitelist"), default)
        facade = NodeFacade(self, self.chain, self.categories)
        core = JSONRPCCore(self.methods, facade, whitelist=whitelist, warmup=self.warmup,
                           clock=self.reactor)
        root = RPCRoot(core, self.authenticator, self.reactor)
        if config.get_bool("rest", True):
            # No RPC authentication on /rest, as Core; -rest=0 leaves the path a plain 404.
            root.putChild(b"rest", RESTResource(self.chain, self.mempool, warmup=self.warmup))
        timeout = config.get_int("rpcservertimeout")
        if timeout <= 0:
            raise StartupError("-rpcservertimeout must be at least 1")
        max_connections = config.get_int("rpcmaxconnections")
        if max_connections <= 0:
            raise StartupError("-rpcmaxconnections must be at least 1")
        site = RPCSite(root, allow=allow, timeout=timeout, max_connections=max_connections,
                       reactor=self.reactor)
        port = config.get_int("rpcport") or self.params.rpc_port
        endpoints, warnings = rpc_bind_addresses(config.get_all("rpcbind"),
                                                 config.get_all("rpcallowip"), port)
        for warning in warnings:
            log.warn("WARNING: {warning}", warning=warning)
        failures = []
        for host, p in endpoints:
            try:
                self._ports.append(self.reactor.listenTCP(p, site, interface=host))
                log.info("Binding RPC on address {host} port {port}", host=host, port=p)
            except CannotListenError as e:
                failures.append("%s:%d (%s)" % (host, p, e.socketError))
        for failure in failures:
            log.warn("Binding RPC on address {failure} failed.", failure=failure)
        if not self._ports:
            raise StartupError("Unable to start HTTP server. See debug log for details.")

    def _pid_path(self) -> str:
        return self.config.resolve_path(self.config.get("pid", "coind.pid") or "coind.pid")

    def _write_pid_file(self) -> None:
        with open(self._pid_path(), "w") as f:
            f.write("%d\n" % os.getpid())

    def startService(self) -> None:
        super().startService()
        assert self.validation is not None
        self.validation.ready.addCallbacks(self._loaded, self._load_failed)

    @inlineCallbacks
    def _loaded(self, chainstate: ChainState):
        log.info("Loaded best chain: height {height} hash {hash}", height=chainstate.height,
                 hash=chainstate.tip.hash[::-1].hex())
        if self.wallets is not None:
            self.warmup.set("Loading wallet...")
            names = self.config.get_all("wallet") or [""]
            try:
                for name in dict.fromkeys(names):
                    yield self.wallets.load(name, create=True)
            except Exception as e:
                log.failure("Loading wallet failed")
                sys.stderr.write("Error: %s\n" % getattr(e, "message", e))
                self.exit_code = 1
                self._stop_reactor()
                return
        self.warmup.finish()
        if self.p2p is not None:
            self.p2p.start_connections()
        if self.txindex is None:
            drop_txindex(self.validation).addErrback(
                lambda f: log.failure("Dropping the transaction index failed", f))

    def _load_failed(self, failure) -> None:
        log.failure("Error loading the chain state", failure)
        sys.stderr.write("Error: %s\n" % failure.getErrorMessage())
        self.exit_code = 1
        self._stop_reactor()

    # ------------------------------------------------------------ shutdown

    def stopService(self) -> Deferred:
        log.info("Shutdown: In progress...")
        stops = [maybeDeferred(p.stopListening) for p in self._ports]
        self._ports = []
        d = DeferredList(stops)
        d.addCallback(lambda _: super(NodeService, self).stopService())
        d.addBoth(self._finish_shutdown)
        return d

    def _finish_shutdown(self, result: Any) -> Any:
        if self.authenticator is not None and self.authenticator.cookie_path is not None:
            delete_cookie(self.authenticator.cookie_path)
        try:
            os.unlink(self._pid_path())
        except OSError:
            pass
        log.info("Shutdown: done")
        for observer in self._observers:
            globalLogPublisher.removeObserver(observer)
        return result
