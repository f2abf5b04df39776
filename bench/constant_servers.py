"""Constant HTTP servers, the floor under coind's RPC server in ``bench/rpc.py``.

    python bench/constant_servers.py web   # a twisted.web Site with a constant leaf resource
    python bench/constant_servers.py raw   # a bare Twisted protocol, minimal HTTP/1.1 framing

Each listens on a free loopback port, prints ``PORT <n>`` on stdout once listening, and
answers every request (keep-alive, pipelining allowed) with the same JSON-RPC reply,
shaped like coind's answer to ``getbestblockhash``, until it is killed.
"""

from __future__ import annotations

import sys

from twisted.internet import protocol, reactor
from twisted.web import resource, server

BODY = b'{"result":"%s","error":null,"id":1}\n' % (b"0f9188f1" * 8)
RAW_REPLY = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
             % len(BODY) + BODY)


class Constant(resource.Resource):
    """What twisted.web costs on its own: header parsing, Request objects, Date, length."""

    isLeaf = True

    def render(self, request: server.Request) -> bytes:
        request.content.read()
        request.setHeader(b"Content-Type", b"application/json")
        return BODY


class RawHTTP(protocol.Protocol):
    """Just enough HTTP/1.1: split at the blank line, skip Content-Length bytes, reply."""

    def connectionMade(self) -> None:
        self._buffer = b""
        self._body_left: int | None = None

    def dataReceived(self, data: bytes) -> None:
        self._buffer += data
        replies = 0
        while True:
            if self._body_left is None:
                end = self._buffer.find(b"\r\n\r\n")
                if end < 0:
                    break
                head, self._buffer = self._buffer[:end], self._buffer[end + 4:]
                self._body_left = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        self._body_left = int(value)
            if len(self._buffer) < self._body_left:
                break
            self._buffer = self._buffer[self._body_left:]
            self._body_left = None
            replies += 1
        if replies:
            self.transport.write(RAW_REPLY * replies)


def main(kind: str) -> None:
    if kind == "web":
        factory: protocol.Factory = server.Site(Constant())
        factory.noisy = False
        factory.log = lambda request: None  # no access log, as coind without -debug=http
    elif kind == "raw":
        factory = protocol.Factory.forProtocol(RawHTTP)
    else:
        raise SystemExit("usage: constant_servers.py web|raw")
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    sys.stdout.write("PORT %d\n" % port.getHost().port)
    sys.stdout.flush()
    reactor.run()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
