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


def _ports(attribute: str) -> str:
    main, test, regtest = (getattr(NETWORKS[n], attribute) for n in ("main", "test", "regtest"))
    return "default: %d, testnet: %d, regtest: %d" % (main, test, regtest)


def node_options() -> OptionRegistry:
    """A fresh registry of every option coind accepts."""
    r = OptionRegistry()
    r.add("?", "Print this help message and exit")
    r.add("h", "", hidden=True)
    r.add("help", "", hidden=True)
    r.add("version", "Print version and exit", kind="bool")
    add_common_options(r)
    r.add("daemon", "Run in the background as a daemon and accept commands", kind="bool",
          default=False)
    r.add("dbcache", "Set database cache size in megabytes (4 to 16384, default: %d)"
          % DEFAULT_DBCACHE, kind="int", default=DEFAULT_DBCACHE, meta="=<n>")
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
    r.add("reindex", "Rebuild chain state and block index from the blk*.dat files on disk",
          kind="bool", default=False)
    r.add("reindex-chainstate", "Rebuild chain state from the currently indexed blocks",
          kind="bool", default=False)
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
    debug: Tuple[str, ...]
    txindex: bool
    prune: int
    reindex: bool
    reindex_chainstate: bool
    dbcache_mib: int
    #: None: the store's default.
    blockfile_size: Optional[int]
    persist_mempool: bool
    disable_wallet: bool
    #: -wallet names in load order, duplicates dropped ("" is the default wallet).
    wallets: Tuple[str, ...]
    keypool: int
    server: bool
    rest: bool
    #: -rpcport; 0 binds a free port (as in Core).
    rpc_port: int
    rpc_server_timeout: int
    rpc_max_connections: int

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
        debug_log = None
        if not config.is_negated("debuglogfile"):
            debug_log = config.resolve_path(config.get("debuglogfile", DEFAULT_DEBUG_LOG))
        daemon = config.get_bool("daemon", False)
        return cls(
            config=config, network=network, datadir=config.net_datadir,
            pid_file=config.resolve_path(config.get("pid", DEFAULT_PID_FILE)
                                         or DEFAULT_PID_FILE),
            debug_log=debug_log,
            print_to_console=config.get_bool("printtoconsole", not daemon),
            debug=tuple(config.get_all("debug")),
            txindex=txindex, prune=prune,
            reindex=config.get_bool("reindex", False),
            reindex_chainstate=config.get_bool("reindex-chainstate", False),
            dbcache_mib=max(4, config.get_int("dbcache") or DEFAULT_DBCACHE),
            blockfile_size=config.get_int("blockfilesize") or None,
            persist_mempool=config.get_bool("persistmempool", True),
            disable_wallet=config.get_bool("disablewallet", False),
            wallets=tuple(dict.fromkeys(config.get_all("wallet") or [""])),
            keypool=max(1, config.get_int("keypool")),
            server=config.get_bool("server", True),
            rest=config.get_bool("rest", True),
            rpc_port=config.get_int("rpcport", NETWORKS[network].rpc_port),
            rpc_server_timeout=timeout, rpc_max_connections=max_connections)
