"""The options coin-cli accepts, and its -help text."""

from __future__ import annotations

import coin
from coin.config import NETWORKS, OptionRegistry, add_common_options

DEFAULT_RPCCONNECT = "127.0.0.1"
DEFAULT_CLIENT_TIMEOUT = 900  # seconds

_USAGE = """\
Usage:  coin-cli [options] <command> [params]  Send command to Coin Core
or:     coin-cli [options] -named <command> [name=value]...  Send command to Coin Core \
(with named arguments)
or:     coin-cli [options] help                List commands
or:     coin-cli [options] help <command>      Get help for a command
"""


def cli_options() -> OptionRegistry:
    """A fresh registry of every option coin-cli accepts."""
    r = OptionRegistry()
    r.add("?", "This help message")
    r.add("h", "", hidden=True)
    r.add("help", "", hidden=True)
    r.add("version", "Print version and exit", kind="bool")
    add_common_options(r)
    r.add("getinfo", "Get general information from the remote server. Note that unlike "
          "server-side RPC calls, the results of -getinfo is the result of multiple "
          "non-atomic requests. Some entries in the result may represent results from "
          "different states (e.g. wallet balance may be as of a different block from the "
          "chain state reported)", kind="bool", default=False)
    r.add("generate", "Generate blocks immediately, equivalent to RPC getnewaddress followed "
          "by RPC generatetoaddress. Optional positional integer arguments are number of blocks "
          "to generate (default: 1) and maximum iterations to try (default: 1000000), "
          "equivalent to RPC generatetoaddress nblocks and maxtries arguments. Example: "
          "coin-cli -generate 4 1000", kind="bool", default=False)
    r.add("named", "Pass named instead of positional arguments (default: 0)", kind="bool",
          default=False)
    r.add("netinfo", "Get network peer connection information from the remote server. An "
          "optional integer argument from 0 to 4 can be passed for different peers listings "
          "(default: 0).", kind="bool", default=False)
    r.add("rpcclienttimeout", "Timeout in seconds during HTTP requests, or 0 for no timeout. "
          "(default: %d)" % DEFAULT_CLIENT_TIMEOUT, kind="int", default=DEFAULT_CLIENT_TIMEOUT,
          meta="=<n>")
    r.add("rpcconnect", "Send commands to node running on <ip> (default: %s)"
          % DEFAULT_RPCCONNECT, default=DEFAULT_RPCCONNECT, meta="=<ip>")
    r.add("rpccookiefile", "Location of the auth cookie. Relative paths will be prefixed by a "
          "net-specific datadir location. (default: data dir)", meta="=<loc>")
    r.add("rpcpassword", "Password for JSON-RPC connections", meta="=<pw>")
    r.add("rpcport", "Connect to JSON-RPC on <port> (default: %d, testnet: %d, regtest: %d)"
          % tuple(NETWORKS[n].rpc_port for n in ("main", "test", "regtest")), kind="int",
          meta="=<port>")
    r.add("rpcuser", "Username for JSON-RPC connections", meta="=<user>")
    r.add("rpcwait", "Wait for RPC server to start", kind="bool", default=False)
    r.add("rpcwallet", "Send RPC for non-default wallet on RPC server (needs to exactly match "
          "corresponding -wallet option passed to coind)", meta="=<walletname>")
    r.add("stdin", "Read extra arguments from standard input, one per line until EOF/Ctrl-D "
          "(recommended for sensitive information such as passphrases). When combined with "
          "-stdinrpcpass, the first line from standard input is used for the RPC password.",
          kind="bool", default=False)
    r.add("stdinrpcpass", "Read RPC password from standard input as a single line. When "
          "combined with -stdin, the first line from standard input is used for the RPC "
          "password.", kind="bool", default=False)
    return r


def usage(registry: OptionRegistry, version_only: bool) -> str:
    """What -version (first line only) and -help print."""
    text = "Coin Core RPC client version v%s\n" % coin.__version__
    if version_only:
        return text
    return text + "\n" + _USAGE + "\n" + registry.help_text()
