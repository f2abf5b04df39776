"""``coind -frontend``: the service tree of a read-only front end.

No data directory lock (the writer holds it), no P2P, validation, mempool or wallet.  The
chain database is opened read-only before the reactor runs; the RPC sockets are bound only
once the first commit is loaded, so a worker sharing its node's port never takes a
connection it would answer "warming up".
"""

from __future__ import annotations

import os
import sys
from typing import Any, List, Optional

from twisted.application import service
from twisted.internet.defer import inlineCallbacks, maybeDeferred
from twisted.internet.task import LoopingCall
from twisted.logger import Logger, globalLogPublisher

from coin import __version__
from coin.chain.access import ChainAccess
from coin.chain.clock import NodeClock
from coin.chain.pruning import PruneConfigError, prune_target_from_option
from coin.chainparams import get_params
from coin.config.node import NodeConfig
from coin.eventloop import describe as describe_event_loop
from coin.frontend.chain import CommittedChain
from coin.frontend.forward import WriterClient
from coin.frontend.rest import FrontendREST
from coin.frontend.rpc import LOCAL_METHODS, FrontendCore, local_method_table
from coin.frontend.status import WriterStatus
from coin.frontend.workers import die_with_parent
from coin.logs import DebugCategories, build_observers
from coin.rpc.auth import rpc_bind_addresses
from coin.rpc.jsonrpc import JSONRPCCore, Warmup
from coin.rpc.registry import MethodTable, load_plugins
from coin.rpc.resource import RPCRoot, RPCSite
from coin.service import RPCListeners, StartupError, metrics_listeners, rpc_access
from coin.storage.chainstore import ChainStore
from coin.threads import ThreadRunner

log = Logger()

#: Where front ends log, in the data directory they share with the writer.
FRONTEND_LOG = "frontend.log"
#: Seconds between looks at the writer's cookie (it writes a new one at each start).
COOKIE_CHECK_INTERVAL = 1.0


class _CommittedTxIndex:
    """What getrawtransaction asks of ``chain.txindex``: the writer runs -txindex."""

    synced = True


class FrontendFacade:
    """What local RPC handlers see of a front end (a NodeFacade without node parts)."""

    def __init__(self, frontend: "FrontendService") -> None:
        self._frontend = frontend
        self.chain = frontend.chain
        self.logging = frontend.categories
        self.wallets: dict = {}
        self.mempool = self.p2p = self.sporks = self.masternodes = self.governance = None
        self.wallet_service = self.mining = None

    def shutdown(self) -> None:
        self._frontend.reactor.callLater(0.05, self._frontend.reactor.stop)

    def lag(self) -> float:
        """Seconds the database read is behind the writer's (a lagging replica), else 0."""
        return self._frontend.committed.lag

    def uptime(self) -> int:
        return int(self._frontend.clock.now() - self._frontend.started_at)


class FrontendService(service.MultiService):
    """A read-only front end of the writer at ``-writer`` (see the module docstring).

    ``worker_of`` is the pid of the node that started this process as one of its
    -rpcworkers: then it shares the node's port (SO_REUSEPORT), dies with it and forwards
    ``stop`` to it; a stand-alone front end answers ``stop`` by stopping itself.
    """

    def __init__(self, settings: NodeConfig, reactor: Any, methods: Optional[MethodTable] = None,
                 worker_of: Optional[int] = None) -> None:
        super().__init__()
        self.settings = settings
        self.config = config = settings.config
        self.reactor = reactor
        self.worker_of = worker_of
        self.exit_code = 0
        self.clock = NodeClock()
        self.started_at = self.clock.now()
        self.in_thread = ThreadRunner(reactor)
        try:
            self.categories = DebugCategories.parse(settings.debug, settings.debug_exclude)
            prune_mode, _ = prune_target_from_option(settings.prune)
            methods = methods if methods is not None else load_plugins(settings.rpc_plugins)
        except (ValueError, PruneConfigError) as e:
            raise StartupError(str(e)) from None
        writer_url = config.get("writer")
        if not writer_url:
            raise StartupError("-frontend needs -writer=<URL of the writer's RPC server>")
        try:
            password = config.get("rpcpassword")
            self.writer = WriterClient(reactor, writer_url, config.cookie_path(),
                                       (config.get("rpcuser", "") or "", password)
                                       if password else None)
        except ValueError as e:
            raise StartupError(str(e)) from None
        self.params = get_params(settings.network)
        self.store = ChainStore(settings.datadir, self.params, dbcache_mib=settings.dbcache_mib,
                                dbengine=settings.dbengine)
        self.committed = CommittedChain(self.params, self.store, reactor, self.clock,
                                        self.in_thread, prune_mode)
        self.committed.setServiceParent(self)
        self.chain = ChainAccess(self.committed, self.clock, reactor, self.in_thread)
        self.chain.txindex = _CommittedTxIndex() if settings.txindex else None
        self.writer_status = WriterStatus(self.writer, reactor,
                                          self.chain.is_initial_block_download)
        self.writer_status.setServiceParent(self)
        self.chain.is_initial_block_download = self.writer_status.initial_block_download
        self.chain.warnings = self.writer_status.warnings
        self.committed.subscribe(self.writer_status)
        self.warmup = Warmup("Loading block index...")
        self.authenticator, allow, whitelist = rpc_access(config)
        names = LOCAL_METHODS if worker_of is not None else LOCAL_METHODS | {"stop"}
        local = local_method_table(methods, names)
        # A worker gets its node's arguments: the node serves -metricsbind, not its workers.
        instruments = (self._make_metrics(local)
                       if config.get_all("metricsbind") and worker_of is None else None)
        core = JSONRPCCore(local, FrontendFacade(self),
                           whitelist=whitelist, warmup=self.warmup, clock=reactor,
                           in_thread=self.in_thread,
                           observe=instruments.rpc_call if instruments else None)
        fresh = self.committed.fresh
        root = RPCRoot(FrontendCore(core, self.writer, whitelist, fresh), self.authenticator,
                       reactor)
        if settings.rest:
            root.putChild(b"rest", FrontendREST(self.chain, self.writer, warmup=self.warmup,
                                                fresh=fresh,
                                                lag=lambda: self.committed.lag,
                                                observe=(instruments.rest_request
                                                         if instruments else None)))
        site = RPCSite(root, allow=allow, timeout=settings.rpc_server_timeout,
                       max_connections=settings.rpc_max_connections, reactor=reactor,
                       categories=self.categories)
        endpoints, _ = rpc_bind_addresses(config.get_all("rpcbind"),
                                          config.get_all("rpcallowip"), settings.rpc_port)
        self.rpc_listeners = RPCListeners(reactor, site, endpoints,
                                          reuse_port=worker_of is not None)
        self._cookie_loop: Optional[LoopingCall] = None
        self._cookie_mtime: Optional[float] = None
        self._observers: List[Any] = []
        self._bound = False

    def _make_metrics(self, methods: MethodTable) -> Any:
        """-metricsbind: the front end's own registry (local RPC calls by method, REST
        replies, the committed chain's height, the database's reachability and lag) and
        its /metrics listeners, bound at start; forwarded calls are the writer's to count."""
        from coin.metrics.collector import FrontendCollector

        listeners, instruments = metrics_listeners(self.reactor, self.config,
                                                   self.settings.rpc_port, methods,
                                                   block_connect=False)
        instruments.registry.register(FrontendCollector(self.committed))
        listeners.setServiceParent(self)
        return instruments

    # ------------------------------------------------------------ start-up

    def privilegedStartService(self) -> None:
        """Open the chain database read-only and read the writer's cookie (if used)."""
        if self.worker_of is not None:
            die_with_parent(self.worker_of)
        self._start_logging()
        log.info("Coin version v{version} (front end of {writer})", version=__version__,
                 writer=self.writer.url)
        log.info("{line}", line=describe_event_loop(self.reactor))
        try:
            self.store.open_read_only()
        except Exception as e:
            self._stop_logging()
            raise StartupError("Error opening block database: %s" % e) from None
        if not self.config.get("rpcpassword"):
            try:
                self._check_cookie()
            except OSError as e:
                self.store.close()
                self._stop_logging()
                raise StartupError("Cannot read the writer's RPC cookie %s (%s): start the "
                                   "writer first" % (self.config.cookie_path(), e.strerror)
                                   ) from None
            self._cookie_loop = LoopingCall(self._refresh_cookie)
            self._cookie_loop.clock = self.reactor
        super().privilegedStartService()

    def _start_logging(self) -> None:
        # A front end on PostgreSQL may have a data directory of its own (on another
        # machine): its network subdirectory is made here, as the writer makes its own.
        try:
            os.makedirs(self.settings.datadir, exist_ok=True)
        except OSError as e:
            raise StartupError("Cannot create data directory %s: %s"
                               % (self.settings.datadir, e.strerror)) from None
        path = (os.path.join(self.settings.datadir, FRONTEND_LOG)
                if self.settings.debug_log else None)
        console = sys.stdout if self.settings.print_to_console else None
        self._observers = build_observers(self.categories, path, console,
                                          micros=self.settings.log_time_micros,
                                          timestamps=self.settings.log_timestamps)
        for observer in self._observers:
            globalLogPublisher.addObserver(observer)

    def _stop_logging(self) -> None:
        for observer in self._observers:
            globalLogPublisher.removeObserver(observer)
        self._observers = []

    def _check_cookie(self) -> None:
        path = self.config.cookie_path()
        mtime = os.stat(path).st_mtime
        if mtime != self._cookie_mtime:
            self.authenticator.read_cookie(path)
            self._cookie_mtime = mtime

    def _refresh_cookie(self) -> None:
        try:
            self._check_cookie()
        except OSError:
            pass  # the writer is restarting: keep the last cookie until the new one is there

    def startService(self) -> None:
        super().startService()
        if self._cookie_loop is not None:
            self._cookie_loop.start(COOKIE_CHECK_INTERVAL, now=False)
        self.committed.ready.addCallbacks(self._loaded, self._load_failed)

    def _loaded(self, chainstate: Any) -> None:
        try:
            self.rpc_listeners.privilegedStartService()
        except StartupError as e:
            sys.stderr.write("Error: %s\n" % e)
            self._fail()
            return
        self.rpc_listeners.startService()
        self._bound = True
        self.warmup.finish()
        tip = chainstate.tip
        log.info("Front end ready: height {height}, writer {writer}",
                 height=tip.height if tip is not None else -1, writer=self.writer.url)

    def _load_failed(self, failure: Any) -> None:
        sys.stderr.write("Error: %s\n" % failure.getErrorMessage())
        self._fail()

    def _fail(self) -> None:
        self.exit_code = 1
        if self.reactor.running:
            self.reactor.stop()

    # ------------------------------------------------------------ shutdown

    @inlineCallbacks
    def stopService(self):
        """Listeners first, then the chain follower, the writer's connections, the store."""
        log.info("Shutdown: In progress...")
        if self._cookie_loop is not None and self._cookie_loop.running:
            self._cookie_loop.stop()
        if self._bound:
            yield maybeDeferred(self.rpc_listeners.stopService)
        yield super().stopService()
        yield self.writer.close()
        self.store.close()
        log.info("Shutdown: done")
        self._stop_logging()
