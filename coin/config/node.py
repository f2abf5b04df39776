"""The options coind knows at this stage of the project.

Later components add theirs to the registry :func:`node_options` returns (or
to this module, while they are small). Help texts follow Core 0.17's wording.
:class:`NodeConfig` is what the daemon's start-up reads from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from coin.config.args import Config
from coin.config.errors import ConfigError
from coin.config.networks import NETWORKS
from coin.config.options import OptionRegistry, add_common_options
from coin.eventloop import DEFAULT_BUSYPOLL_US, MAX_BUSYPOLL_US
from coin.notify import DEFAULT_HWM as ZMQ_DEFAULT_HWM, TOPIC_HELP as ZMQ_TOPIC_HELP, TOPICS as ZMQ_TOPICS
from coin.storage.database import SQLITE, server_url
from coin.storage.errors import StorageError

DEFAULT_DBCACHE = 450           # MiB
DEFAULT_MAX_CONNECTIONS = 125
DEFAULT_BANTIME = 24 * 60 * 60  # seconds
DEFAULT_BANSCORE = 100
DEFAULT_CONNECT_TIMEOUT = 5000  # milliseconds
DEFAULT_MAX_MEMPOOL = 300       # MB
DEFAULT_MEMPOOL_EXPIRY = 336    # hours
DEFAULT_KEYPOOL = 1000
DEFAULT_MIN_RELAY_TX_FEE = "0.00001000"  # coins per kB
DEFAULT_MAX_TX_FEE = "0.10000000"        # coins
DEFAULT_INCREMENTAL_RELAY_FEE = "0.00001000"  # coins per kB
DEFAULT_DATACARRIER_SIZE = 83
DEFAULT_ANCESTOR_LIMIT = 25
DEFAULT_ANCESTOR_SIZE_LIMIT = 101      # kB
DEFAULT_DESCENDANT_LIMIT = 25
DEFAULT_DESCENDANT_SIZE_LIMIT = 101    # kB
DEFAULT_PID_FILE = "coind.pid"
DEFAULT_DEBUG_LOG = "debug.log"
DEFAULT_RPC_MAX_CONNECTIONS = 256
DEFAULT_RPC_SERVER_TIMEOUT = 30  # seconds (Core's -rpcservertimeout)
DEFAULT_MAX_TIP_AGE = 24 * 60 * 60  # seconds (Core's -maxtipage)
DEFAULT_FALLBACK_FEE = "0.0002"      # coins per kB (Core's -fallbackfee)
DEFAULT_MIN_TX_FEE = "0.00001"       # coins per kB (Core's -mintxfee)

#: Core 0.17's -help sections, in its order.
CATEGORY_ORDER = (
    "Options", "Connection options", "Wallet options", "Wallet debugging/testing options",
    "ZeroMQ notification options", "Debugging/Testing options", "Chain selection options",
    "Masternode options", "Node relay options", "Block creation options", "RPC server options",
)

#: Reasons shared by several refused options.
_NO_PROXY = "it has no SOCKS5 proxy support yet"
_NO_TOR = "it has no Tor support"
_NO_INSTANTSEND = "it has no InstantSend"
_NO_BDB = "its wallets are SQLite databases, not Berkeley DB"
_NO_DNS_SEEDS = "it has no DNS seeds"


def _ports(attribute: str) -> str:
    main, test, regtest = (getattr(NETWORKS[n], attribute) for n in ("main", "test", "regtest"))
    return "default: %d, testnet: %d, regtest: %d" % (main, test, regtest)


def node_options() -> OptionRegistry:
    """A fresh registry of every option coind accepts."""
    r = OptionRegistry(CATEGORY_ORDER)
    r.add("?", "Print this help message and exit")
    r.add("h", "", hidden=True)
    r.add("help", "", hidden=True)
    r.add("version", "Print version and exit", kind="bool")
    add_common_options(r)
    r.add("busypoll", "Before the event loop sleeps, poll for up to <n> microseconds while "
          "events keep arriving that soon; it adapts as Linux's haltpoll does, so an idle "
          "node never polls (0 to disable, at most %d; default: %d)"
          % (MAX_BUSYPOLL_US, DEFAULT_BUSYPOLL_US), kind="int", default=DEFAULT_BUSYPOLL_US,
          meta="=<n>")
    r.add("daemon", "Run in the background as a daemon and accept commands", kind="bool",
          default=False)
    r.add("dbcache", "Set database cache size in megabytes (4 to 16384, default: %d)"
          % DEFAULT_DBCACHE, kind="int", default=DEFAULT_DBCACHE, meta="=<n>")
    r.add("dbengine", "Where the block index, chain state and transaction index are kept: "
          "'sqlite' (a file in the data directory) or a PostgreSQL database, "
          "postgresql://<user>[:<password>]@<host>[:<port>]/<database> (default: sqlite)",
          default="sqlite", meta="=<engine>")
    r.add("debuglogfile", "Specify location of debug log file. Relative paths will be prefixed "
          "by a net-specific datadir location. (-nodebuglogfile to disable; default: %s)"
          % DEFAULT_DEBUG_LOG, default=DEFAULT_DEBUG_LOG, meta="=<file>")
    r.add("maxmempool", "Keep the transaction memory pool below <n> megabytes (default: %d)"
          % DEFAULT_MAX_MEMPOOL, kind="int", default=DEFAULT_MAX_MEMPOOL, meta="=<n>")
    r.add("mempoolexpiry", "Do not keep transactions in the mempool longer than <n> hours "
          "(default: %d)" % DEFAULT_MEMPOOL_EXPIRY, kind="int", default=DEFAULT_MEMPOOL_EXPIRY,
          meta="=<n>")
    r.add("persistmempool", "Whether to save the mempool on shutdown and load on restart "
          "(default: 1)", kind="bool", default=True)
    r.add("pid", "Specify pid file. Relative paths will be prefixed by a net-specific datadir "
          "location. (default: %s)" % DEFAULT_PID_FILE, default=DEFAULT_PID_FILE,
          meta="=<file>")
    r.add("prune", "Reduce storage requirements by enabling pruning (deleting) of old blocks. "
          "This allows the pruneblockchain RPC to be called to delete specific blocks, and "
          "enables automatic pruning of old blocks if a target size in MiB is provided. This "
          "mode is incompatible with -txindex. Warning: Reverting this setting requires "
          "re-downloading the entire blockchain. (default: 0 = disable pruning blocks, 1 = "
          "allow manual pruning via RPC, >550 = automatically prune block files to stay under "
          "the specified target size in MiB)", kind="int", default=0, meta="=<n>")
    r.add("blockfilesize", "Roll block and undo files over at <n> bytes (tests of pruning; "
          "default: %d)" % (128 << 20), kind="int", meta="=<n>", debug_only=True)
    r.add("progressinterval", "Seconds between the progress lines logged during initial "
          "block download and -reindex (0: after every block; default: 10)", kind="int", meta="=<n>",
          debug_only=True)
    r.add("reindex", "Rebuild chain state and block index from the blk*.dat files on disk",
          kind="bool", default=False)
    r.add("reindex-chainstate", "Rebuild chain state from the currently indexed blocks",
          kind="bool", default=False)
    r.add("sporkaddr", "Override the spork address (test and regtest only)",
          meta="=<address>")
    r.add("sporkkey", "Private key to send spork messages", meta="=<key>")
    r.add("sysperms", "Create new files with system default permissions, instead of umask 077 "
          "(only effective with disabled wallet functionality)", kind="bool", default=False)
    r.add("txindex", "Maintain a full transaction index, used by the getrawtransaction rpc "
          "call (default: 0)", kind="bool", default=False)

    c = "Connection options"
    r.add("addnode", "Add a node to connect to and attempt to keep the connection open (see "
          "the `addnode` RPC command help for more info). This option can be specified "
          "multiple times to add multiple nodes.", repeatable=True, category=c, meta="=<ip>")
    r.add("banscore", "Threshold for disconnecting misbehaving peers (default: %d)"
          % DEFAULT_BANSCORE, kind="int", default=DEFAULT_BANSCORE, category=c, meta="=<n>")
    r.add("bantime", "Number of seconds to keep misbehaving peers from reconnecting "
          "(default: %d)" % DEFAULT_BANTIME, kind="int", default=DEFAULT_BANTIME, category=c,
          meta="=<n>")
    r.add("bind", "Bind to given address and always listen on it. Use [host]:port notation "
          "for IPv6", repeatable=True, category=c, meta="=<addr>")
    r.add("connect", "Connect only to the specified node(s); -connect=0 disables automatic "
          "connections (the rules for this peer are the same as for -addnode). This option "
          "can be specified multiple times to connect to multiple nodes.", repeatable=True,
          category=c, meta="=<ip>")
    r.add("listen", "Accept connections from outside (default: 1 if no -connect)",
          kind="bool", category=c)
    r.add("maxconnections", "Maintain at most <n> connections to peers (default: %d)"
          % DEFAULT_MAX_CONNECTIONS, kind="int", default=DEFAULT_MAX_CONNECTIONS, category=c,
          meta="=<n>")
    r.add("port", "Listen for connections on <port> (%s)" % _ports("p2p_port"), kind="int",
          category=c, meta="=<port>")
    r.add("timeout", "Specify connection timeout in milliseconds (minimum: 1, default: %d)"
          % DEFAULT_CONNECT_TIMEOUT, kind="int", default=DEFAULT_CONNECT_TIMEOUT, category=c,
          meta="=<n>")
    r.add("uacomment", "Append comment to the user agent string", repeatable=True,
          category=c, meta="=<cmt>")

    c = "Wallet options"
    r.add("disablewallet", "Do not load the wallet and disable wallet RPC calls", kind="bool",
          default=False, category=c)
    r.add("keypool", "Set key pool size to <n> (default: %d)" % DEFAULT_KEYPOOL, kind="int",
          default=DEFAULT_KEYPOOL, category=c, meta="=<n>")
    r.add("maxtxfee", "Maximum total fees (in COIN) to use in a single wallet transaction or "
          "raw transaction; setting this too low may abort large transactions (default: %s)"
          % DEFAULT_MAX_TX_FEE, default=DEFAULT_MAX_TX_FEE, category=c, meta="=<amt>")
    r.add("wallet", "Specify wallet database path. Can be specified multiple times to load "
          "multiple wallets. Path is interpreted relative to <walletdir> if it is not "
          "absolute, and will be created if it does not exist.", repeatable=True, category=c,
          meta="=<path>")
    r.add("walletdir", "Specify directory to hold wallets (default: <datadir>/wallets if it "
          "exists, otherwise <datadir>)", category=c, meta="=<dir>")

    c = "Debugging/Testing options"
    r.add("debug", "Output debugging information (default: 0, supplying <category> is "
          "optional). If <category> is not supplied or if <category> = 1, output all "
          "debugging information. This option can be specified multiple times.",
          repeatable=True, category=c, meta="=<category>")
    r.add("help-debug", "Print help message with debugging options and exit", kind="bool",
          category=c)
    r.add("printtoconsole", "Send trace/debug info to console (default: 1 when no -daemon. "
          "To disable logging to file, set -nodebuglogfile)", kind="bool", category=c)

    c = "Node relay options"
    r.add("acceptnonstdtxn", "Relay and mine \"non-standard\" transactions (testnet/regtest "
          "only; default: 1)", kind="bool", category=c, debug_only=True)
    r.add("datacarrier", "Relay and mine data carrier transactions (default: 1)", kind="bool",
          default=True, category=c)
    r.add("datacarriersize", "Maximum size of data in data carrier transactions we relay and "
          "mine (default: %d)" % DEFAULT_DATACARRIER_SIZE, kind="int",
          default=DEFAULT_DATACARRIER_SIZE, category=c, meta="=<n>")
    r.add("incrementalrelayfee", "Fee rate (in COIN/kB) used to define cost of relay, used for "
          "mempool limiting and BIP 125 replacement. (default: %s)"
          % DEFAULT_INCREMENTAL_RELAY_FEE, default=DEFAULT_INCREMENTAL_RELAY_FEE, category=c,
          meta="=<amt>", debug_only=True)
    r.add("limitancestorcount", "Do not accept transactions if number of in-mempool ancestors "
          "is <n> or more (default: %d)" % DEFAULT_ANCESTOR_LIMIT, kind="int",
          default=DEFAULT_ANCESTOR_LIMIT, category=c, meta="=<n>", debug_only=True)
    r.add("limitancestorsize", "Do not accept transactions whose size with all in-mempool "
          "ancestors exceeds <n> kilobytes (default: %d)" % DEFAULT_ANCESTOR_SIZE_LIMIT,
          kind="int", default=DEFAULT_ANCESTOR_SIZE_LIMIT, category=c, meta="=<n>",
          debug_only=True)
    r.add("limitdescendantcount", "Do not accept transactions if any ancestor would have <n> "
          "or more in-mempool descendants (default: %d)" % DEFAULT_DESCENDANT_LIMIT,
          kind="int", default=DEFAULT_DESCENDANT_LIMIT, category=c, meta="=<n>",
          debug_only=True)
    r.add("limitdescendantsize", "Do not accept transactions if any ancestor would have more "
          "than <n> kilobytes of in-mempool descendants (default: %d)."
          % DEFAULT_DESCENDANT_SIZE_LIMIT, kind="int", default=DEFAULT_DESCENDANT_SIZE_LIMIT,
          category=c, meta="=<n>", debug_only=True)
    r.add("permitbaremultisig", "Relay non-P2SH multisig (default: 1)", kind="bool",
          default=True, category=c)
    r.add("minrelaytxfee", "Fees (in COIN/kB) smaller than this are considered zero fee for "
          "relaying, mining and transaction creation (default: %s)" % DEFAULT_MIN_RELAY_TX_FEE,
          default=DEFAULT_MIN_RELAY_TX_FEE, category=c, meta="=<amt>")

    c = "RPC server options"
    r.add("rest", "Accept public REST requests (default: 1)", kind="bool", default=True,
          category=c)
    r.add("metricsbind", "Serve Prometheus metrics at /metrics on this address (off by "
          "default). Port is optional (default: the RPC port + 2). Only loopback addresses "
          "unless -rpcallowip is also passed, which then says who may scrape. Use [host]:port "
          "notation for IPv6. This option can be specified multiple times", repeatable=True,
          category=c, meta="=<addr>[:port]")
    r.add("rpcallowip", "Allow JSON-RPC connections from specified source. Valid for <ip> are "
          "a single IP (e.g. 1.2.3.4), a network/netmask (e.g. 1.2.3.4/255.255.255.0) or a "
          "network/CIDR (e.g. 1.2.3.4/24). This option can be specified multiple times",
          repeatable=True, category=c, meta="=<ip>")
    r.add("rpcauth", "Username and HMAC-SHA-256 hashed password for JSON-RPC connections. The "
          "field <userpw> comes in the format: <USERNAME>:<SALT>$<HASH>. A canonical python "
          "script is included in share/rpcuser. The client then connects normally using the "
          "rpcuser=<USERNAME>/rpcpassword=<PASSWORD> pair of arguments. This option can be "
          "specified multiple times", repeatable=True, category=c, meta="=<userpw>")
    r.add("rpcbind", "Bind to given address to listen for JSON-RPC connections. Do not expose "
          "the RPC server to untrusted networks such as the public internet! This option is "
          "ignored unless -rpcallowip is also passed. Port is optional and overrides "
          "-rpcport. Use [host]:port notation for IPv6. This option can be specified multiple "
          "times (default: 127.0.0.1 and ::1 i.e., localhost)", repeatable=True, category=c,
          meta="=<addr>[:port]")
    r.add("rpccookiefile", "Location of the auth cookie. Relative paths will be prefixed by a "
          "net-specific datadir location. (default: data dir)", category=c, meta="=<loc>")
    r.add("rpcmaxconnections", "Accept at most <n> RPC and REST connections at once; more are "
          "answered 503 and closed (default: %d)" % DEFAULT_RPC_MAX_CONNECTIONS, kind="int",
          default=DEFAULT_RPC_MAX_CONNECTIONS, category=c, meta="=<n>")
    r.add("rpcpassword", "Password for JSON-RPC connections", category=c, meta="=<pw>")
    r.add("rpcplugin", "Load the RPC methods of this installed distribution's coin.rpc entry "
          "points (doc/plugins.md); start-up fails if it cannot be loaded, unless given as "
          "<dist>:optional. This option can be specified multiple times", repeatable=True,
          category=c, meta="=<dist>")
    r.add("frontend", "Run as a read-only front end of the writer given by -writer: no P2P, "
          "validation or wallet; read-only RPC and REST served from this data directory's "
          "chain database, every other call forwarded (doc/frontend.md)", kind="bool",
          default=False, category=c)
    r.add("rpcworkers", "Start <n> read-only front-end processes on the RPC port(s) "
          "(SO_REUSEPORT) to serve read-only RPC and REST next to this node (default: 0)",
          kind="int", default=0, category=c, meta="=<n>")
    r.add("servefrontends", "Commit the chain state after every new tip so -frontend processes "
          "see it at once (default: 1 with -rpcworkers, else 0)", kind="bool", category=c)
    r.add("writer", "With -frontend: URL of the writer's RPC server, credentials included "
          "(http://user:pass@host:port/; without credentials the cookie of -datadir is used)",
          category=c, meta="=<url>")
    r.add("rpcport", "Listen for JSON-RPC connections on <port> (%s)" % _ports("rpc_port"),
          kind="int", category=c, meta="=<port>")
    r.add("rpcservertimeout", "Timeout during HTTP requests: idle connections are closed, and "
          "a request's headers must arrive within it (default: %d)" % DEFAULT_RPC_SERVER_TIMEOUT,
          kind="int", default=DEFAULT_RPC_SERVER_TIMEOUT, category=c, meta="=<n>",
          debug_only=True)
    r.add("rpcuser", "Username for JSON-RPC connections", category=c, meta="=<user>")
    r.add("rpcwhitelist", "Set a whitelist to filter incoming RPC calls for a specific user. "
          "The field <whitelist> comes in the format: <USERNAME>:<rpc 1>,<rpc 2>,...,<rpc n>. "
          "If multiple whitelists are set for a given user, they are set-intersected. See "
          "-rpcwhitelistdefault documentation for information on default whitelist behavior.",
          repeatable=True, category=c, meta="=<whitelist>")
    r.add("rpcwhitelistdefault", "Sets default behavior for rpc whitelisting. Unless "
          "rpcwhitelistdefault is set to 0, if any -rpcwhitelist is set, the rpc server acts "
          "as if all rpc users are subject to empty-unless-otherwise-specified whitelists. If "
          "rpcwhitelistdefault is set to 1 and no -rpcwhitelist is set, rpc server acts as if "
          "all rpc users are subject to empty whitelists.", kind="bool", category=c)
    r.add("server", "Accept command line and JSON-RPC commands", kind="bool", default=True,
          category=c)

    c = "Masternode options"
    r.add("masternode", "Enable the client to act as a masternode (0-1, default: 0)", kind="bool",
          default=False, category=c, meta="=<n>")
    r.add("mnconf", "Specify masternode configuration file (default: masternode.conf)",
          default="masternode.conf", category=c, meta="=<file>")
    r.add("masternodeprivkey", "Set the masternode private key", category=c, meta="=<n>")
    r.add("sentinel", "Run the built-in sentinel: make and vote superblock triggers (0-1, "
          "default: 1 with -masternode)", kind="bool", category=c, meta="=<n>")

    _add_core_options(r)
    return r


@dataclass(frozen=True)
class NodeConfig:
    """The daemon's start-up settings, read and checked from parsed options.

    :meth:`from_config` is pure: no file is read or created, so a bad setting is
    refused before ``twistd`` forks and tests need no data directory.  Components read
    their own options from :attr:`config` when the service tree is built.
    """

    #: The parsed options (command line and coin.conf).
    config: Config
    network: str
    #: The network's data directory (created and locked at start).
    datadir: str
    pid_file: str
    #: None with -nodebuglogfile.
    debug_log: Optional[str]
    print_to_console: bool
    #: -logtimemicros, -logtimestamps.
    log_time_micros: bool
    log_timestamps: bool
    debug: Tuple[str, ...]
    debug_exclude: Tuple[str, ...]
    txindex: bool
    prune: int
    reindex: bool
    reindex_chainstate: bool
    dbcache_mib: int
    #: -dbengine: "sqlite" or a postgresql:// URL (checked by ``storage.database.server_url``).
    dbengine: str
    #: None: the store's default.
    blockfile_size: Optional[int]
    #: -persistmempool; -zapwallettxes turns its default off (as Core).
    persist_mempool: bool
    disable_wallet: bool
    #: -zapwallettxes as Core reads it: 0 off, 2 drop all, else 1 (keep metadata).
    zap_mode: int
    #: -wallet names in load order, duplicates dropped ("" is the default wallet).
    wallets: Tuple[str, ...]
    keypool: int
    server: bool
    rest: bool
    #: -rpcport; 0 binds a free port (as in Core).
    rpc_port: int
    rpc_server_timeout: int
    rpc_max_connections: int
    #: -rpcplugin distributions, loaded when the node is built.
    rpc_plugins: Tuple[str, ...]
    #: -rpcworkers: front-end processes sharing the RPC port(s).
    rpc_workers: int
    #: -servefrontends: commit the chain state at every new tip.
    serve_frontends: bool

    @classmethod
    def from_config(cls, config: Config) -> "NodeConfig":
        """Read the settings; ConfigError (with Core's ``Error: ...`` text) if one is refused."""
        network = config.network or "main"
        txindex = config.get_bool("txindex", False)
        prune = config.get_int("prune") or 0
        if txindex and prune:
            raise ConfigError("Error: Prune mode is incompatible with -txindex.")
        timeout = config.get_int("rpcservertimeout")
        if timeout <= 0:
            raise ConfigError("Error: -rpcservertimeout must be at least 1")
        max_connections = config.get_int("rpcmaxconnections")
        if max_connections <= 0:
            raise ConfigError("Error: -rpcmaxconnections must be at least 1")
        rpc_workers = config.get_int("rpcworkers")
        if rpc_workers < 0:
            raise ConfigError("Error: -rpcworkers must not be negative")
        debug_log = None
        if not config.is_negated("debuglogfile"):
            debug_log = config.resolve_path(config.get("debuglogfile", DEFAULT_DEBUG_LOG))
        daemon = config.get_bool("daemon", False)
        dbengine = config.get("dbengine") or SQLITE
        try:
            server_url(dbengine)
        except StorageError as e:
            raise ConfigError("Error: %s" % e) from None
        zap_mode = 0
        if config.get_bool("zapwallettxes"):
            zap_mode = 2 if config.get("zapwallettxes") == "2" else 1
        return cls(
            config=config, network=network, datadir=config.net_datadir,
            pid_file=config.resolve_path(config.get("pid", DEFAULT_PID_FILE)
                                         or DEFAULT_PID_FILE),
            debug_log=debug_log,
            print_to_console=config.get_bool("printtoconsole", not daemon),
            log_time_micros=config.get_bool("logtimemicros"),
            log_timestamps=config.get_bool("logtimestamps"),
            debug=tuple(config.get_all("debug")),
            debug_exclude=tuple(config.get_all("debugexclude")),
            txindex=txindex, prune=prune,
            reindex=config.get_bool("reindex", False),
            reindex_chainstate=config.get_bool("reindex-chainstate", False),
            dbcache_mib=max(4, config.get_int("dbcache") or DEFAULT_DBCACHE), dbengine=dbengine,
            blockfile_size=config.get_int("blockfilesize") or None,
            persist_mempool=config.get_bool("persistmempool", not zap_mode),
            disable_wallet=config.get_bool("disablewallet", False), zap_mode=zap_mode,
            wallets=tuple(dict.fromkeys(config.get_all("wallet") or [""])),
            keypool=max(1, config.get_int("keypool")),
            server=config.get_bool("server", True),
            rest=config.get_bool("rest", True),
            rpc_port=config.get_int("rpcport", NETWORKS[network].rpc_port),
            rpc_server_timeout=timeout, rpc_max_connections=max_connections,
            rpc_plugins=tuple(config.get_all("rpcplugin")),
            rpc_workers=rpc_workers,
            serve_frontends=config.get_bool("servefrontends", rpc_workers > 0))


def check_node_values(config: Config) -> None:
    """Refuse values of implemented options this chain cannot honour (ConfigError).

    Only legacy addresses exist without segwit, so ``-addresstype=bech32`` is Core's
    "Unknown address type" error with the reason; -mocktime pins the clock of test
    chains only, as ``setmocktime`` does; -rpcserialversion takes Core's 0 and 1.
    """
    for name, what in (("addresstype", "address"), ("changetype", "change")):
        value = config.get(name)
        if value is not None and value != "legacy":
            raise ConfigError("Error: Unknown %s type '%s' (this chain has no segwit: the only "
                              "type is 'legacy')" % (what, value))
    if config.get_int("mocktime") and config.network != "regtest":
        raise ConfigError("Error: -mocktime is for regression testing (-regtest mode) only")
    if config.get_bool("zapwallettxes") and len(config.get_all("wallet")) > 1:
        raise ConfigError("Error: -zapwallettxes is only allowed with a single wallet file")
    busypoll = config.get_int("busypoll")
    if not 0 <= busypoll <= MAX_BUSYPOLL_US:
        raise ConfigError("Error: -busypoll must be from 0 to %d microseconds"
                          % MAX_BUSYPOLL_US)
    if config.get_int("rpcserialversion") < 0:
        raise ConfigError("Error: rpcserialversion must be non-negative.")
    if config.get_int("rpcserialversion") > 1:
        raise ConfigError("Error: unknown rpcserialversion requested.")


def _add_core_options(r: OptionRegistry) -> None:
    """The rest of Core 0.17's -help and -help-debug: implemented, or refused with a reason.

    A refused option parses, so a Core-era command line is not "Invalid parameter", but a
    value other than what the node already does stops start-up (see doc/config.md).
    """
    r.add("alertnotify", "Execute command when a relevant alert is received or we see a "
          "really long fork (%s in cmd is replaced by message)", meta="=<cmd>")
    r.add("assumevalid", "If this block is in the chain assume that it and its ancestors are "
          "valid and potentially skip their script verification (0 to verify all)",
          meta="=<hex>")
    r.add("blocknotify", "Execute command when the best block changes (%s in cmd is replaced "
          "by block hash)", meta="=<cmd>")
    r.add("blockreconstructionextratxn", "Extra transactions to keep in memory for compact "
          "block reconstructions (default: 100)", kind="int", meta="=<n>",
          refused="it has no compact blocks")
    r.add("blocksonly", "Whether to operate in a blocks only mode (default: 0)", kind="bool",
          default=False)
    r.add("dbbatchsize", "Maximum database write batch size in bytes (default: 16777216)",
          kind="int", meta="=<n>", debug_only=True,
          refused="it writes each chain state flush as one database transaction")
    r.add("feefilter", "Tell other nodes to filter invs to us by our mempool min fee "
          "(default: 1)", kind="bool", debug_only=True, node_does=True,
          refused="it always sends feefilter")
    r.add("loadblock", "Imports blocks from external blk000??.dat file on startup",
          repeatable=True, meta="=<file>", refused="importing external block files is not "
          "implemented (copy them to blocks/ and use -reindex)")
    r.add("maxorphantx", "Keep at most <n> unconnectable transactions in memory (default: "
          "100)", kind="int", default=100, meta="=<n>")
    r.add("par", "Set the number of script verification threads (-2 to 16, 0 = auto, <0 = "
          "leave that many cores free, default: 0)", kind="int", default=0, meta="=<n>")
    r.add("shrinkdebugfile", "Shrink debug.log file on client startup (default: 1 when no "
          "-debug)", kind="bool", refused="it never shrinks debug.log (only "
          "-shrinkdebugfile=0)")

    c = "Connection options"
    for name, text, reason, does in (
            ("discover", "Discover own IP addresses (default: 1 when listening and no "
             "-externalip or -proxy)", "it does not discover or advertise its own address",
             False),
            ("dns", "Allow DNS lookups for -addnode, -seednode and -connect (default: 1)",
             "it resolves no host names", False),
            ("dnsseed", "Query for peer addresses via DNS lookup, if low on addresses "
             "(default: 1 unless -connect used)", _NO_DNS_SEEDS, False),
            ("enablebip61", "Send reject messages per BIP61 (default: 1)",
             "sending BIP61 reject messages is not configurable", True),
            ("forcednsseed", "Always query for peer addresses via DNS lookup (default: 0)",
             _NO_DNS_SEEDS, False),
            ("listenonion", "Automatically create Tor hidden service (default: 1)", _NO_TOR,
             False),
            ("peerbloomfilters", "Support filtering of blocks and transaction with bloom "
             "filters (default: 1)", "it serves no BIP37 bloom filters", False),
            ("upnp", "Use UPnP to map the listening port (default: 0)", "it has no UPnP support",
             False)):
        r.add(name, text, kind="bool", category=c, refused=reason, node_does=does)
    r.add("allowprivatenet", "Allow RFC1918 addresses to be relayed and connected to "
          "(default: 0)", kind="bool", default=False, category=c)
    r.add("externalip", "Specify your own public address", repeatable=True, category=c,
          meta="=<ip>", refused="it does not advertise its own address")
    r.add("maxreceivebuffer", "Maximum per-connection receive buffer, <n>*1000 bytes "
          "(Core's default: 5000; here reading stops while a message is processed unless "
          "given)", kind="int", category=c, meta="=<n>")
    r.add("maxsendbuffer", "Maximum per-connection send buffer, <n>*1000 bytes (Core's "
          "default: 1000; here 64 KiB unless given)", kind="int", category=c, meta="=<n>")
    r.add("maxtimeadjustment", "Maximum allowed median peer time offset adjustment. Local "
          "perspective of time may be influenced by peers forward or backward by this amount. "
          "(default: 4200 seconds)", kind="int", category=c, meta="=<n>",
          refused="the adjustment limit is fixed at 4200 seconds")
    r.add("maxuploadtarget", "Tries to keep outbound traffic under the given target (in MiB "
          "per 24h), 0 = no limit (default: 0)", kind="int", default=0, category=c,
          meta="=<n>")
    r.add("onion", "Use separate SOCKS5 proxy to reach peers via Tor hidden services "
          "(default: -proxy)", category=c, meta="=<ip:port>", refused=_NO_PROXY)
    r.add("onlynet", "Make outgoing connections only through network <net> (ipv4, ipv6 or "
          "onion). Incoming connections are not affected by this option. This option can be "
          "specified multiple times to allow multiple networks.", repeatable=True, category=c,
          meta="=<net>", refused="outgoing connections cannot be limited by network")
    r.add("proxy", "Connect through SOCKS5 proxy", category=c, meta="=<ip:port>",
          refused=_NO_PROXY)
    r.add("proxyrandomize", "Randomize credentials for every proxy connection. This enables "
          "Tor stream isolation (default: 1)", kind="bool", category=c, refused=_NO_PROXY)
    r.add("seednode", "Connect to a node to retrieve peer addresses, and disconnect",
          repeatable=True, category=c, meta="=<ip>", refused="it has no seed node connections")
    r.add("torcontrol", "Tor control port to use if onion listening enabled (default: "
          "127.0.0.1:9051)", category=c, meta="=<ip>:<port>", refused=_NO_TOR)
    r.add("torpassword", "Tor control port password (default: empty)", category=c,
          meta="=<pass>", refused=_NO_TOR)
    r.add("whitebind", "Bind to given address and whitelist peers connecting to it. Use "
          "[host]:port notation for IPv6", repeatable=True, category=c, meta="=<addr>",
          refused="a whitelisting listener is not implemented (use -bind and -whitelist)")
    r.add("whitelist", "Whitelist peers connecting from the given IP address (e.g. 1.2.3.4) "
          "or CIDR notated network (e.g. 1.2.3.0/24). Can be specified multiple times. "
          "Whitelisted peers cannot be DoS banned or evicted, connect while their address is "
          "banned, and with -whitelistrelay their transactions are taken under -blocksonly",
          repeatable=True, category=c, meta="=<IP address or network>")

    c = "Wallet options"
    r.add("addresstype", "What type of addresses to use (only \"legacy\": this chain has no "
          "segwit; default: legacy)", default="legacy", category=c, meta="=<type>")
    r.add("changetype", "What type of change to use (only \"legacy\": this chain has no "
          "segwit; default: legacy)", category=c, meta="=<type>")
    r.add("discardfee", "The fee rate (in COIN/kB) that indicates your tolerance for "
          "discarding change by adding it to the fee", category=c, meta="=<amt>",
          refused="change below the dust threshold is discarded, a fixed rule")
    for name, text, default in (
            ("fallbackfee", "A fee rate (in COIN/kB) that will be used when fee estimation "
             "has insufficient data", DEFAULT_FALLBACK_FEE),
            ("mintxfee", "Fees (in COIN/kB) smaller than this are considered zero fee for "
             "transaction creation", DEFAULT_MIN_TX_FEE),
            ("paytxfee", "Fee (in COIN/kB) to add to transactions you send", "0.00")):
        r.add(name, "%s (default: %s)" % (text, default), default=default, category=c,
              meta="=<amt>")
    r.add("rescan", "Rescan the block chain for missing wallet transactions on startup",
          kind="bool", default=False, category=c)
    r.add("salvagewallet", "Attempt to recover private keys from a corrupt wallet on startup",
          kind="bool", category=c, refused=_NO_BDB)
    r.add("spendzeroconfchange", "Spend unconfirmed change when sending transactions "
          "(default: 1)", kind="bool", default=True, category=c)
    r.add("txconfirmtarget", "If paytxfee is not set, include enough fee so transactions "
          "begin confirmation on average within n blocks (default: 6)", kind="int",
          default=6, category=c, meta="=<n>")
    r.add("upgradewallet", "Upgrade wallet to latest format on startup", kind="bool",
          category=c, refused="its wallets have a single format")
    r.add("walletbroadcast", "Make the wallet broadcast transactions (default: 1)",
          kind="bool", default=True, category=c)
    r.add("walletnotify", "Execute command when a wallet transaction changes (%s in cmd is "
          "replaced by TxID, %w by the wallet name)", category=c, meta="=<cmd>")
    r.add("walletrbf", "Send transactions with full-RBF opt-in enabled (default: 0)",
          kind="bool", default=False, category=c)
    r.add("zapwallettxes", "Delete all wallet transactions and only recover those parts of "
          "the blockchain through -rescan on startup (1 = keep tx meta data e.g. account "
          "owner and payment request information, 2 = drop tx meta data)", category=c,
          meta="=<mode>")
    c = "Wallet debugging/testing options"
    r.add("dblogsize", "Flush wallet database activity from memory to disk log every <n> "
          "megabytes (default: 100)", kind="int", category=c, meta="=<n>", debug_only=True,
          refused=_NO_BDB)
    for name, text in (
            ("flushwallet", "Run a thread to flush wallet periodically (default: 1)"),
            ("privdb", "Sets the DB_PRIVATE flag in the wallet db environment (default: 1)")):
        r.add(name, text, kind="bool", category=c, debug_only=True, refused=_NO_BDB)
    r.add("walletrejectlongchains", "Wallet will not create transactions that violate mempool "
          "chain limits (default: 0)", kind="bool", category=c, debug_only=True,
          refused="the wallet gives up any payment the mempool refuses, whatever the reason")

    c = "ZeroMQ notification options"
    for topic in ZMQ_TOPICS:
        what = ZMQ_TOPIC_HELP.get(topic, topic.replace("hash", "hash ").replace("raw", "raw "))
        r.add("zmqpub" + topic, "Enable publish %s in <address>" % what, category=c,
              meta="=<address>")
        r.add("zmqpub%shwm" % topic, "Set publish %s outbound message high water mark "
              "(default: %d)" % (what, ZMQ_DEFAULT_HWM), kind="int", category=c, meta="=<n>")
    for topic, what in (("hashtxlock", "hash transaction (locked via InstantSend)"),
                        ("rawtxlock", "raw transaction (locked via InstantSend)"),
                        ("hashinstantsenddoublespend", "transaction hashes of attempted "
                         "InstantSend double spend"),
                        ("rawinstantsenddoublespend", "raw transactions of attempted "
                         "InstantSend double spend")):
        r.add("zmqpub" + topic, "Enable publish %s in <address>" % what, category=c,
              meta="=<address>", refused=_NO_INSTANTSEND)

    c = "Debugging/Testing options"
    r.add("addrmantest", "Allows to test address relay on localhost", kind="bool",
          category=c, debug_only=True, refused="regtest keeps unroutable addresses already")
    r.add("checkblockindex", "Do a full consistency check for mapBlockIndex, setBlockIndex"
          "Candidates, chainActive and mapBlocksUnlinked occasionally. (default: 0, regtest: "
          "1)", kind="bool", category=c, debug_only=True,
          refused="it has no periodic block index check")
    r.add("checkblocks", "How many blocks to check at startup (default: 6, 0 = all)",
          kind="int", default=6, category=c, meta="=<n>", debug_only=True)
    r.add("checklevel", "How thorough the block verification of -checkblocks is (0-4, "
          "default: 3)", kind="int", default=3, category=c, meta="=<n>", debug_only=True)
    r.add("checkmempool", "Run checks every <n> transactions (default: 0, regtest: 1)",
          kind="int", category=c, meta="=<n>", debug_only=True,
          refused="it has no periodic mempool check (only -checkmempool=0)")
    r.add("checkpoints", "Disable expensive verification for known chain history (default: "
          "1)", kind="bool", category=c, debug_only=True, refused="it has no checkpoints")
    r.add("debugexclude", "Exclude debugging information for a category. Can be used in "
          "conjunction with -debug=1 to output debug logs for all categories except one or "
          "more specified categories.", repeatable=True, category=c, meta="=<category>")
    r.add("deprecatedrpc", "Allows deprecated RPC method(s) to be used (this node has one, "
          "signrawtransaction; any other value is accepted and changes nothing, as Core with a "
          "name it does not know)",
          repeatable=True, category=c, meta="=<method>", debug_only=True)
    r.add("dropmessagestest", "Randomly drop 1 of every <n> network messages", kind="int",
          category=c, meta="=<n>", debug_only=True, refused="it drops no messages for tests")
    r.add("logips", "Include IP addresses in debug output (default: 0)", kind="bool",
          category=c, node_does=True, refused="logging of peer addresses is not configurable")
    r.add("logtimemicros", "Add microsecond precision to debug timestamps (default: 0)",
          kind="bool", default=False, category=c, debug_only=True)
    r.add("logtimestamps", "Prepend debug output with timestamp (default: 1)", kind="bool",
          default=True, category=c)
    r.add("maxsigcachesize", "Limit sum of signature cache and script execution cache sizes "
          "to <n> MiB (default: 32)", kind="int", category=c, meta="=<n>", debug_only=True,
          refused="it has no signature cache (only -maxsigcachesize=0)")
    r.add("maxtipage", "Maximum tip age in seconds to consider node in initial block download "
          "(default: %d)" % DEFAULT_MAX_TIP_AGE, kind="int", default=DEFAULT_MAX_TIP_AGE,
          category=c, meta="=<n>", debug_only=True)
    r.add("mocktime", "Replace actual time with <n> seconds since epoch (default: 0; regtest "
          "only)", kind="int", default=0, category=c, meta="=<n>", debug_only=True)
    r.add("printpriority", "Log transaction fee per kB when mining blocks (default: 0)",
          kind="bool", default=False, category=c, debug_only=True)
    r.add("stopafterblockimport", "Stop running after importing blocks from disk (default: "
          "0)", kind="bool", category=c, debug_only=True, refused="it has no block import")
    r.add("stopatheight", "Stop running after reaching the given height in the main chain "
          "(default: 0)", kind="int", default=0, category=c, meta="=<n>", debug_only=True)
    r.add("vbparams", "Use given start/end times for specified version bits deployment "
          "(regtest-only)", repeatable=True, category=c, meta="=deployment:start:end",
          debug_only=True, refused="version bits deployments are fixed")

    c = "Node relay options"
    r.add("bytespersigop", "Equivalent bytes per sigop in transactions for relay and mining "
          "(default: 20)", kind="int", category=c, meta="=<n>",
          refused="the sigop policy is fixed")
    r.add("dustrelayfee", "Fee rate (in COIN/kB) used to defined dust, the value of an output "
          "such that it will cost more than its value in fees at this fee rate to spend it. "
          "(default: 0.00003)", category=c, meta="=<amt>", debug_only=True,
          refused="the dust fee rate is fixed")
    r.add("mempoolreplacement", "Enable transaction replacement in the memory pool (default: "
          "1)", kind="bool", default=True, category=c)
    r.add("whitelistforcerelay", "Force relay of transactions from whitelisted peers even if "
          "they violate local relay policy (Core's default: 1)", kind="bool", category=c,
          refused="whitelisted peers' transactions are relayed only once the mempool accepts "
          "them (only -whitelistforcerelay=0)")
    r.add("whitelistrelay", "Accept relayed transactions received from whitelisted peers even "
          "when not relaying transactions (default: 1)", kind="bool", default=True,
          category=c)

    c = "Block creation options"
    r.add("blockmaxweight", "Set maximum BIP141 block weight (default: 3996000)", kind="int",
          category=c, meta="=<n>", refused="this chain has no block weight")
    r.add("blockmaxsize", "Set maximum block size in bytes", kind="int", category=c,
          meta="=<n>", refused="the block size limit of templates is fixed")
    r.add("blockmintxfee", "Set lowest fee rate (in COIN/kB) for transactions to be included "
          "in block creation. (default: 0.00001)", category=c, meta="=<amt>",
          refused="the block minimum fee rate is fixed")
    r.add("blockversion", "Override block version to test forking scenarios", kind="int",
          category=c, meta="=<n>", debug_only=True, refused="block versions are fixed")

    c = "RPC server options"
    r.add("rpcserialversion", "Sets the serialization of raw transaction or block hex returned "
          "in non-verbose mode, non-segwit(0) or segwit(1) (default: 1; without segwit on "
          "this chain both are the same bytes)", kind="int", default=1, category=c,
          meta="=<n>")
    r.add("rpcthreads", "Set the number of threads to service RPC calls (default: 4)",
          kind="int", category=c, meta="=<n>",
          refused="RPC calls are served by the event loop, not a thread pool")
    r.add("rpcworkqueue", "Set the depth of the work queue to service RPC calls (default: 16)",
          kind="int", category=c, meta="=<n>", debug_only=True,
          refused="RPC calls are served by the event loop, not a work queue")
