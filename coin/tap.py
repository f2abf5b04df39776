"""``coind`` and ``twistd coind``: Core-style arguments in, a running node out.

Both entry points share :func:`load_config` and :func:`build_node`; a bad argument or a
refused setting prints ``Error: ...`` on stderr and exits with status 1 before anything
is opened, and so before ``twistd`` (or ``-daemon``) forks.  The node's files and
sockets are opened by its ``privilegedStartService``, in the process that serves.
"""

from __future__ import annotations

import os
import sys
from typing import Any, List, Optional

from twisted.python import usage

from coin import __version__
from coin.collector import freeze_heap
from coin.config import Config, ConfigError
from coin.config.node import NodeConfig, check_node_values, node_options
from coin.config.options import OptionRegistry
from coin.eventloop import install as install_reactor, set_busypoll
from coin.service import NodeService, StartupError

USAGE = "Usage:  coind [options]                     Start Coin daemon\n"
#: Core's file creation mask: what the node writes (logs, peers, mempool, wallets) is private.
PRIVATE_UMASK = 0o077


def restrict_file_permissions(config: Config) -> None:
    """Core's AppInitBasicSetup: umask 077 unless -sysperms, before any file is created.

    As in Core, -sysperms needs -disablewallet (wallet files must never be readable by
    others); StartupError otherwise.
    """
    if not config.get_bool("sysperms", False):
        os.umask(PRIVATE_UMASK)
    elif not config.get_bool("disablewallet", False):
        raise StartupError("-sysperms is not allowed in combination with enabled wallet "
                           "functionality")


class Program:
    """What differs between the programs that run a node (``coind``, ``coin-qt``)."""

    name = "coind"
    title = "Coin Daemon"
    usage = USAGE

    def options(self) -> OptionRegistry:
        return node_options()

    def configure(self, config: Config) -> None:
        """Program defaults, once the arguments and coin.conf are read."""

    def build(self, config: Config, reactor: Any) -> NodeService:
        return build_node(config, reactor)

    def start_refused(self, config: Config, error: StartupError) -> int:
        """Exit status when opening the node failed (the datadir lock, a port)."""
        _refuse(error)
        return 1


def load_config(argv: List[str], out=sys.stdout, program: Optional[Program] = None
                ) -> Optional[Config]:
    """Parse arguments and coin.conf; None when a help/version request was answered."""
    program = program if program is not None else COIND
    config = Config(program.options())
    config.parse_command_line(argv)
    if config.get_bool("version", False):
        out.write("%s version v%s\n" % (program.title, __version__))
        return None
    if any(config.is_set(name) for name in ("?", "h", "help", "help-debug")):
        # help_text() begins with the first category's heading, "Options:".
        out.write("%s version v%s\n\n%s\n%s\n" % (
            program.title, __version__, program.usage,
            config.registry.help_text(config.is_set("help-debug"))))
        return None
    if config.args:
        raise ConfigError("Error: Command line contains unexpected token '%s', see %s -h "
                          "for a list of options." % (config.args[0], program.name))
    config.read_config_files()
    check_node_values(config)
    program.configure(config)
    return config


class Options(usage.Options):
    """twistd's options for ``coind``: the raw argument list goes to coin.config."""

    synopsis = "[coind options]"
    longdesc = "Run a coin node. Arguments are Core-style: -regtest -rpcport=31931 ..."
    program: Optional[Program] = None

    def parseOptions(self, options: Optional[List[str]] = None) -> None:
        argv = sys.argv[1:] if options is None else list(options)
        try:
            self.config = load_config(argv, program=self.program)
        except ConfigError as e:
            raise usage.UsageError(str(e)) from None
        if self.config is None:
            raise SystemExit(0)


def build_node(config: Config, reactor: Any) -> Any:
    """The node's service tree (a front end's with -frontend), nothing opened; ConfigError or
    StartupError if refused."""
    restrict_file_permissions(config)
    if config.get_bool("frontend", False):
        from coin.frontend.service import FrontendService
        from coin.frontend.workers import WORKER_OF_ENV

        worker_of = os.environ.get(WORKER_OF_ENV)
        return FrontendService(NodeConfig.from_config(config), reactor,
                               worker_of=int(worker_of) if worker_of else None)
    return NodeService(NodeConfig.from_config(config), reactor)


def _refuse(error: Exception) -> None:
    """Core's start-up error line on stderr (ConfigError texts carry "Error: " already)."""
    text = str(error)
    sys.stderr.write("%s\n" % (text if isinstance(error, ConfigError) else "Error: " + text))


def makeService(options: Options) -> NodeService:
    """twistd's entry: build the node; twistd then forks (unless -n) and starts it."""
    from twisted.internet import reactor

    set_busypoll(reactor, options.config.get_int("busypoll"))
    try:
        return (options.program or COIND).build(options.config, reactor)
    except (ConfigError, StartupError) as e:
        _refuse(e)
        raise SystemExit(1) from None


def _daemonize() -> None:
    """Detach from the terminal (double fork, new session, stdio to /dev/null)."""
    if os.fork():
        os._exit(0)
    os.setsid()
    if os.fork():
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def main(argv: Optional[List[str]] = None, program: Optional[Program] = None) -> int:
    """The ``coind`` console script (and, given its Program, ``coin-qt``'s)."""
    program = program if program is not None else COIND
    argv = sys.argv[1:] if argv is None else argv
    try:
        config = load_config(argv, program=program)
    except ConfigError as e:
        _refuse(e)
        return 1
    if config is None:
        return 0
    install_reactor(config.get_int("busypoll"))
    from twisted.internet import reactor
    from twisted.logger import globalLogBeginner

    try:
        node = program.build(config, reactor)
    except (ConfigError, StartupError) as e:
        _refuse(e)
        return 1
    if config.get_bool("daemon", False):
        # As Core: settings checked before the fork, the data directory locked after it.
        sys.stdout.write("Coin server starting\n")
        sys.stdout.flush()
        _daemonize()
    globalLogBeginner.beginLoggingTo([], redirectStandardIO=False, discardBuffer=True)
    try:
        node.privilegedStartService()
    except StartupError as e:
        return program.start_refused(config, e)
    reactor.callWhenRunning(node.startService)
    reactor.addSystemEventTrigger("before", "shutdown", node.stopService)
    warmup = getattr(node, "warmup", None)
    if warmup is not None:
        warmup.done.addCallback(lambda _: freeze_heap())
    reactor.run()
    return node.exit_code


COIND = Program()


if __name__ == "__main__":
    sys.exit(main())
