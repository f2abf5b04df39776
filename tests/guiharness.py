"""Real ``coin-qt`` processes for tests: the GUI's URL read from its console, a signed-in client.

    gui = GUIProcess.start(self.mktemp())             # coin-qt -regtest -nobrowser
    gui.call("getblockcount")                         # POST /api/call, signed in
    gui.request("GET", "/api/session")                # (status, headers, body), with the cookie
    gui.stop()

The client does what the page does: it opens the printed URL, keeps the session cookie and
sends the CSRF header and the GUI's own Origin on POST.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import select
import socket
import struct
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from tests.nodeharness import ROOT, RPCFailure, _default_sigint, _env, free_port

URL_LINE = re.compile(rb"coin-qt: open (http://127\.0\.0\.1:(\d+)/\?token=(\S+))")
Response = Tuple[int, Dict[str, str], bytes]


#: How tests start coin-qt (the console script's module).
COIN_QT = (sys.executable, "-m", "coin.gui")


def coin_qt_command(datadir: str, args: Sequence[str],
                    launcher: Sequence[str] = COIN_QT) -> List[str]:
    """``coin-qt -regtest`` on ``datadir`` (console output only, no browser, P2P on a test
    port unless ``args`` name one); ``launcher`` is what runs coin-qt."""
    command = list(launcher) + ["-regtest", "-datadir=%s" % datadir, "-nobrowser",
                                "-printtoconsole=0"]
    if not any(a.startswith("-port=") for a in args):
        command.append("-port=%d" % free_port())
    return command + list(args)


class GUIProcess:
    """A ``coin-qt -regtest -nobrowser`` child process and a signed-in client of its GUI."""

    def __init__(self, datadir: str, args: Sequence[str]) -> None:
        self.datadir = os.path.abspath(datadir)
        self.args = list(args)
        self.process: Optional[subprocess.Popen] = None
        self.url = ""
        self.port = 0
        self.token = ""
        self.cookie = ""
        self.csrf = ""

    @classmethod
    def start(cls, datadir: str, args: Sequence[str] = (), sign_in: bool = True,
              launcher: Sequence[str] = COIN_QT) -> "GUIProcess":
        os.makedirs(datadir, exist_ok=True)
        gui = cls(datadir, args)
        gui.process = subprocess.Popen(
            coin_qt_command(gui.datadir, args, launcher), cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=open(os.path.join(gui.datadir, "stderr.txt"), "w"),
            preexec_fn=_default_sigint)
        gui._read_url()
        if sign_in:
            gui.sign_in()
        return gui

    @property
    def net_datadir(self) -> str:
        return os.path.join(self.datadir, "regtest")

    @property
    def origin(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def stderr_text(self) -> str:
        with open(os.path.join(self.datadir, "stderr.txt")) as f:
            return f.read()

    def _read_url(self, timeout: float = 60.0) -> None:
        # Read the pipe with os.read, not readline: a buffered readline can pull the URL
        # line into Python's buffer along with an earlier one, and select() would then
        # wait on an empty pipe for a line already read.
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        pending = b""
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                chunk = os.read(fd, 65536)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    match = URL_LINE.search(line)
                    if match:
                        self.url = match.group(1).decode()
                        self.port = int(match.group(2))
                        self.token = match.group(3).decode()
                        return
                if chunk:
                    continue
            if self.process.poll() is not None:
                raise RuntimeError("coin-qt exited with %s: %s"
                                   % (self.process.returncode, self.stderr_text()))
        raise RuntimeError("coin-qt printed no URL (last line %r): %s" % (line, self.stderr_text()))

    def request(self, method: str, path: str, body: Optional[bytes] = None,
                headers: Optional[Dict[str, str]] = None, cookie: bool = True) -> Response:
        """One raw HTTP request to the GUI; ``headers`` values of None are left out."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            h: Dict[str, Optional[str]] = {}
            if cookie and self.cookie:
                h["Cookie"] = "coinqt_session=" + self.cookie
            h.update(headers or {})
            conn.putrequest(method, path, skip_host="Host" in h, skip_accept_encoding=True)
            for name, value in h.items():
                if value is not None:
                    conn.putheader(name, value)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            response = conn.getresponse()
            return (response.status, {k.lower(): v for k, v in response.getheaders()},
                    response.read())
        finally:
            conn.close()

    def sign_in(self) -> None:
        """What the page does first: the token for the cookie, then the CSRF value."""
        status, headers, _ = self.request("GET", urlsplit(self.url)._replace(
            scheme="", netloc="").geturl(), cookie=False)
        if status != 303:
            raise RuntimeError("token refused: %d" % status)
        self.cookie = re.match(r"coinqt_session=([^;]+)", headers["set-cookie"]).group(1)
        self.csrf = json.loads(self.request("GET", "/api/session")[2])["csrf"]

    def post_call(self, payload: Any, headers: Optional[Dict[str, Optional[str]]] = None,
                  raw: Optional[bytes] = None) -> Response:
        """POST /api/call as the page sends it; ``headers`` override (None drops one)."""
        h: Dict[str, Optional[str]] = {"Content-Type": "application/json", "Origin": self.origin,
                                       "X-Coin-CSRF": self.csrf}
        h.update(headers or {})
        body = raw if raw is not None else json.dumps(payload).encode()
        return self.request("POST", "/api/call", body, h)

    def call(self, method: str, *params: Any, wallet: Optional[str] = None) -> Any:
        status, _, body = self.post_call({"method": method, "params": list(params),
                                          "wallet": wallet})
        reply = json.loads(body)
        if reply["error"] is not None:
            raise RPCFailure(status, reply["error"]["code"], reply["error"]["message"])
        return reply["result"]

    def websocket(self, headers: Optional[Dict[str, Optional[str]]] = None,
                  cookie: bool = True) -> "WebSocketClient":
        return WebSocketClient(self, headers, cookie)

    def stop(self, timeout: float = 60.0) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        try:
            self.call("stop")
        except (OSError, ValueError, RPCFailure):
            self.process.terminate()
        try:
            return self.process.wait(timeout)
        finally:
            self.process.stdout.close()


class WebSocketClient:
    """A minimal RFC 6455 client: the handshake, then unmasked text frames from the server."""

    def __init__(self, gui: GUIProcess, headers: Optional[Dict[str, Optional[str]]],
                 cookie: bool) -> None:
        self.sock = socket.create_connection(("127.0.0.1", gui.port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        h: Dict[str, Optional[str]] = {
            "Host": "127.0.0.1:%d" % gui.port, "Upgrade": "websocket", "Connection": "Upgrade",
            "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13", "Origin": gui.origin,
            "Cookie": "coinqt_session=" + gui.cookie if cookie else None}
        h.update(headers or {})
        request = "GET /ws HTTP/1.1\r\n" + "".join(
            "%s: %s\r\n" % (k, v) for k, v in h.items() if v is not None) + "\r\n"
        self.sock.sendall(request.encode())
        self._buffer = b""
        head = self._read_until(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1])

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self._buffer:
            data = self.sock.recv(65536)
            if not data:
                break
            self._buffer += data
        head, _, self._buffer = self._buffer.partition(marker)
        return head

    def _read(self, n: int) -> bytes:
        while len(self._buffer) < n:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("WebSocket closed")
            self._buffer += data
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def receive(self) -> Any:
        """The next text frame, decoded from JSON (pings and other control frames skipped)."""
        while True:
            first, second = self._read(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack("!H", self._read(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(length)
            if first & 0x0F == 1:
                return json.loads(payload)
            if first & 0x0F == 8:
                raise ConnectionError("WebSocket closed by the server")

    def expect(self, *events: Any, timeout: float = 30.0) -> None:
        """Until each of ``events`` has arrived, in any order (others skipped)."""
        missing = list(events)
        self.sock.settimeout(timeout)
        while missing:
            event = self.receive()
            if event in missing:
                missing.remove(event)

    def close(self) -> None:
        self.sock.close()
