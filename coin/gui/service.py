"""The GUI service: a child of the node service that serves the page once the node is up.

It waits for the end of start-up (the chain loaded, the wallets of -wallet open), binds
127.0.0.1:-guiport, writes the URL with its token to ``<datadir>/coin-qt.url`` (0600, so
a second coin-qt can point to this one), prints it and opens the browser off the reactor
thread.  Stopping closes the port and the WebSockets and removes the URL file.
"""

from __future__ import annotations

import os
import sys
import webbrowser
from typing import Any, Optional, TextIO

from autobahn.twisted.resource import WebSocketResource
from twisted.application import service
from twisted.internet import threads
from twisted.internet.defer import Deferred, succeed
from twisted.internet.error import CannotListenError
from twisted.logger import Logger

from coin.gui.auth import GUIAuth
from coin.gui.events import EventFactory, EventHub
from coin.gui.web import GUI_USER, GUIRoot, GUISite, WebSocketGate, build_api
from coin.rpc.auth import Whitelist
from coin.rpc.jsonrpc import JSONRPCCore
from coin.service import NodeFacade

URL_FILE = "coin-qt.url"
GUI_HOST = "127.0.0.1"

log = Logger()


def url_file(datadir: str) -> str:
    """Where a running coin-qt leaves its URL (the network's data directory)."""
    return os.path.join(datadir, URL_FILE)


def write_private(path: str, text: str) -> None:
    """Write ``text`` to a file only its owner can read, whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text + "\n")


def open_browser(url: str) -> Deferred:
    """The default browser on ``url``, from a thread (it may block on a slow launcher)."""
    d = threads.deferToThread(webbrowser.open, url)
    d.addErrback(lambda f: log.failure("Opening the web browser failed", f))
    return d


class GUIService(service.Service):
    """The GUI's HTTP/WebSocket server on the loopback interface."""

    name = "gui"

    def __init__(self, node: Any, port: int, browser: bool, console: TextIO) -> None:
        self._node = node
        self._port_number = port
        self._browser = browser
        self._console = console
        self.auth = GUIAuth()
        self.core = JSONRPCCore(node.methods, NodeFacade(node, node.chain, node.categories),
                                whitelist=Whitelist(), warmup=node.warmup, clock=node.reactor,
                                in_thread=node.in_thread)
        self.hub = EventHub(node, self.core, GUI_USER)
        self.url: Optional[str] = None
        self._listening: Any = None

    def startService(self) -> None:
        super().startService()
        self._node.warmup.done.addCallback(self._node_ready)

    def _node_ready(self, result: Any) -> Any:
        if self.running:
            self._listen()
        return result

    def _listen(self) -> None:
        node = self._node
        settings = node.settings
        events = EventFactory(self.hub, "ws://%s" % GUI_HOST)
        websocket = WebSocketResource(events)
        api = build_api(self.auth, self.core, node.params.name,
                        settings.rpc_port if settings.server else None)
        root = GUIRoot(self.auth, api, WebSocketGate(self.auth, websocket))
        try:
            self._listening = node.reactor.listenTCP(self._port_number,
                                                     GUISite(root, self.auth, node.reactor),
                                                     interface=GUI_HOST)
        except CannotListenError as e:
            sys.stderr.write("Error: Unable to bind the GUI to %s:%d (%s)\n"
                             % (GUI_HOST, self._port_number, e.socketError))
            node.exit_code = 1
            node.request_shutdown()
            return
        port = self._listening.getHost().port
        self.auth.host = ("%s:%d" % (GUI_HOST, port)).encode("ascii")
        events.setSessionParameters(url="ws://%s:%d/ws" % (GUI_HOST, port))
        self.hub.start()
        self.url = "http://%s:%d/?token=%s" % (GUI_HOST, port, self.auth.token.decode("ascii"))
        write_private(url_file(node.datadir), self.url)
        log.info("GUI serving on {host}:{port}", host=GUI_HOST, port=port)
        self._console.write("coin-qt: open %s\n" % self.url)
        self._console.flush()
        if self._browser:
            open_browser(self.url)

    def stopService(self) -> Deferred:
        super().stopService()
        if self._listening is None:
            return succeed(None)
        self.hub.stop()
        try:
            os.unlink(url_file(self._node.datadir))
        except OSError:
            pass
        listening, self._listening = self._listening, None
        return listening.stopListening()
