"""``coin-qt`` and ``twistd coin-qt``: the node of ``coind`` with the GUI service added.

Same arguments and coin.conf as coind, plus the UI options; the JSON-RPC server is off
unless ``-server``/``server=1`` (the interface spec's rule for the GUI).  A second coin-qt
on a data directory that one already runs on prints the running one's URL, opens it and
exits 0.
"""

from __future__ import annotations

import sys
import webbrowser
from typing import Any, List, Optional

from coin import tap
from coin.config import Config
from coin.config.options import OptionRegistry
from coin.gui.service import GUIService, url_file
from coin.service import DatadirLocked, NodeService, StartupError

USAGE = "Usage:  coin-qt [command-line options]      Start Coin with its GUI\n"
UI_OPTIONS = "UI Options"


def add_gui_options(registry: OptionRegistry) -> None:
    """coin-qt's own options (coind does not know them)."""
    registry.add("guiport", "Serve the GUI on this port of 127.0.0.1 (default: 0, a free "
                 "port)", kind="int", default=0, category=UI_OPTIONS, meta="=<port>")
    registry.add("browser", "Open the GUI in the default web browser at start (default: 1; "
                 "-nobrowser to only print its URL)", kind="bool", default=True,
                 category=UI_OPTIONS)


class QtProgram(tap.Program):
    name = "coin-qt"
    title = "Coin Core"
    usage = USAGE

    def options(self) -> OptionRegistry:
        registry = super().options()
        add_gui_options(registry)
        return registry

    def configure(self, config: Config) -> None:
        if not config.is_set("server"):
            config.force_set("server", "0")

    def build(self, config: Config, reactor: Any) -> NodeService:
        node = super().build(config, reactor)
        gui = GUIService(node, config.get_int("guiport"), config.get_bool("browser"), sys.stdout)
        gui.setServiceParent(node)
        return node

    def start_refused(self, config: Config, error: StartupError) -> int:
        if isinstance(error, DatadirLocked):
            try:
                with open(url_file(config.net_datadir)) as f:
                    url = f.read().strip()
            except OSError:
                url = ""
            if url:
                sys.stdout.write("coin-qt is already running on this datadir: %s\n" % url)
                sys.stdout.flush()
                if config.get_bool("browser"):
                    webbrowser.open(url)
                return 0
        return super().start_refused(config, error)


QT = QtProgram()


class Options(tap.Options):
    synopsis = "[coin-qt options]"
    longdesc = "Run a coin node with its GUI. Arguments are Core-style: -regtest -guiport=8080 ..."
    program = QT


def makeService(options: Options) -> NodeService:
    return tap.makeService(options)


def main(argv: Optional[List[str]] = None) -> int:
    """The ``coin-qt`` console script."""
    return tap.main(argv, QT)
