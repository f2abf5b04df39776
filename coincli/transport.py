"""One HTTP/1.1 POST over a fresh TCP connection: the only code that touches the network.

A raw socket rather than http.client, whose imports (email, ssl) cost more
than the rest of coin-cli together. The request carries ``Connection: close``,
so the answer is read until the server closes (or Content-Length is reached).
"""

from __future__ import annotations

import socket

from coincli.errors import ConnectionFailed

_TIMEOUT_DETAIL = ' (error code 0 - "timeout reached")'


def post(host: str, port: int, path: str, authorization: str, body: bytes,
         timeout: float | None) -> tuple[int, bytes]:
    """(HTTP status, body) of the answer; ConnectionFailed if there is none."""
    try:
        with socket.create_connection((host, port), timeout) as sock:
            sock.sendall(build_request(host, path, authorization, body))
            data = _receive(sock)
        return parse_response(data)
    except TimeoutError:
        detail = _TIMEOUT_DETAIL
    except (OSError, ValueError):
        detail = ""
    raise ConnectionFailed("Could not connect to the server %s:%d%s\n\nMake sure the coind "
                           "server is running and that you are connecting to the correct RPC "
                           "port." % (host, port, detail))


def build_request(host: str, path: str, authorization: str, body: bytes) -> bytes:
    """The request bytes, with the headers coin-cli has always sent (Core's set)."""
    head = ("POST %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nAuthorization: %s\r\n"
            "Content-Length: %d\r\n\r\n" % (path, host, authorization, len(body)))
    return head.encode("latin-1") + body


def parse_response(data: bytes) -> tuple[int, bytes]:
    """(status, body) of a complete HTTP/1.x response; ValueError if it is not one."""
    status, headers, start = _parse_head(data)
    body = data[start:]
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return status, _dechunk(body)
    if "content-length" in headers:
        length = int(headers["content-length"])
        if len(body) < length:
            raise ValueError("response body truncated")
        return status, body[:length]
    return status, body


def _parse_head(data: bytes) -> tuple[int, dict[str, str], int]:
    end = data.find(b"\r\n\r\n")
    if end < 0:
        raise ValueError("incomplete response head")
    lines = data[:end].decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/"):
        raise ValueError("not an HTTP response")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(rest.split(" ", 1)[0]), headers, end + 4


def _receive(sock: socket.socket) -> bytes:
    data = b""
    expected = None
    while expected is None or len(data) < expected:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
        if expected is None:
            expected = _expected_size(data)
    return data


def _expected_size(data: bytes) -> int | None:
    """Total response size once the head says it (Content-Length), else None: read to EOF."""
    try:
        _, headers, start = _parse_head(data)
    except ValueError:
        return None
    if "content-length" not in headers or "transfer-encoding" in headers:
        return None
    return start + int(headers["content-length"])


def _dechunk(body: bytes) -> bytes:
    parts = []
    pos = 0
    while True:
        eol = body.index(b"\r\n", pos)
        size = int(body[pos:eol].split(b";", 1)[0], 16)
        if size == 0:
            return b"".join(parts)
        start = eol + 2
        if start + size > len(body):
            raise ValueError("chunk truncated")
        parts.append(body[start:start + size])
        pos = start + size + 2
