"""The tests' own minimal P2P wire client: a blocking socket speaking coin.p2p.messages.

    peer = RawPeer(node.p2p_port)             # connects to 127.0.0.1
    peer.handshake()                          # version/verack both ways
    peer.send(PingMessage(7))
    peer.wait_for("pong")                     # answers the node's pings meanwhile
    peer.send_raw(b"garbage")                 # anything, framed or not
    peer.wait_closed()                        # True once the node hung up
    RawPeer(port, bind="127.0.0.2")           # from another local address

Every wait has a deadline; nothing sleeps.
"""

from __future__ import annotations

import socket
import time
from typing import Any, List, Optional

from coin.chainparams import REGTEST
from coin.p2p.messages import (
    NODE_NETWORK,
    PROTOCOL_VERSION,
    MessageDecoder,
    PingMessage,
    PongMessage,
    ProtocolViolation,
    VerackMessage,
    VersionMessage,
    encode_message,
    frame_message,
)
from coin.p2p.netaddr import NetAddress


class Closed(Exception):
    """The node closed the connection."""


class RawPeer:
    """A P2P connection to a node, driven step by step by a test."""

    def __init__(self, port: int, host: str = "127.0.0.1",
                 magic: bytes = REGTEST.message_start, timeout: float = 30.0,
                 bind: Optional[str] = None) -> None:
        self.magic = magic
        self.timeout = timeout
        # ``bind`` picks the local address (e.g. 127.0.0.2: another peer address to the node).
        self.sock = socket.create_connection((host, port), timeout=timeout,
                                             source_address=(bind, 0) if bind else None)
        self.decoder = MessageDecoder(REGTEST.message_start)
        self.received: List[Any] = []
        self.closed = False
        self.nonce = 0x1234567890ABCDEF

    # ------------------------------------------------------------ sending

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, message: Any, magic: Optional[bytes] = None) -> None:
        self.send_raw(encode_message(magic or self.magic, message))

    def send_frame(self, command: str, payload: bytes) -> None:
        """A well-framed message with any payload (valid checksum)."""
        self.send_raw(frame_message(self.magic, command, payload))

    def version_message(self, version: int = PROTOCOL_VERSION, nonce: Optional[int] = None,
                        user_agent: str = "/p2pclient:0.1/", start_height: int = 0,
                        services: int = NODE_NETWORK) -> VersionMessage:
        return VersionMessage(
            version=version, services=services, timestamp=int(time.time()),
            addr_recv=NetAddress(NODE_NETWORK, "127.0.0.1", 0),
            addr_from=NetAddress(services, "0.0.0.0", 0),
            nonce=self.nonce if nonce is None else nonce, user_agent=user_agent,
            start_height=start_height, relay=True)

    def handshake(self, **version: Any) -> VersionMessage:
        """Send version, wait for the node's version and verack, send verack."""
        self.send(self.version_message(**version))
        theirs = self.wait_for("version")
        self.wait_for("verack")
        self.send(VerackMessage())
        return theirs

    # ------------------------------------------------------------ receiving

    def _read(self, deadline: float) -> None:
        """Read once (until ``deadline``); raise Closed on EOF or reset."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no message from the node in time")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise TimeoutError("no message from the node in time") from None
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            self.closed = True
            raise Closed()
        try:
            self.received.extend(self.decoder.feed(data))
        except ProtocolViolation as e:
            raise AssertionError("the node sent a broken stream: %s" % e) from None

    def next_message(self, timeout: Optional[float] = None) -> Any:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self.received:
            self._read(deadline)
        return self.received.pop(0)

    def wait_for(self, command: str, timeout: Optional[float] = None) -> Any:
        """The next ``command`` message; pings are answered, other messages kept aside."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        skipped: List[Any] = []
        try:
            while True:
                while self.received:
                    message = self.received.pop(0)
                    if message.command == command:
                        return message
                    if isinstance(message, PingMessage):
                        self.send(PongMessage(message.nonce))
                    skipped.append(message)
                self._read(deadline)
        finally:
            self.received[:0] = skipped

    def wait_closed(self, timeout: Optional[float] = None) -> bool:
        """True once the node closes the connection (messages meanwhile are kept)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        try:
            while True:
                self._read(deadline)
        except Closed:
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
