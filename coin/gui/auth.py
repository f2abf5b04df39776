"""The per-start secrets of the GUI and the checks every request passes.

The printed URL carries the *token*; a valid token is exchanged for the *session* cookie
(HttpOnly, SameSite=Strict) and never appears in a URL again.  State-changing calls also
need the *CSRF* value (from /api/session, kept in the page's memory) in a header and the
GUI's own Origin.  All compares are constant-time.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Optional

from twisted.web.server import Request

COOKIE = b"coinqt_session"
CSRF_HEADER = b"X-Coin-CSRF"
#: Bytes of randomness in each secret (256 bits).
SECRET_BYTES = 32


def _same(given: Optional[bytes], expected: bytes) -> bool:
    return given is not None and hmac.compare_digest(given, expected)


class GUIAuth:
    """The token, session and CSRF secrets of one coin-qt start, and the origin it serves."""

    def __init__(self) -> None:
        self.token = secrets.token_urlsafe(SECRET_BYTES).encode("ascii")
        self.session = secrets.token_urlsafe(SECRET_BYTES).encode("ascii")
        self.csrf = secrets.token_urlsafe(SECRET_BYTES).encode("ascii")
        #: ``127.0.0.1:PORT``, set once the port is bound.
        self.host = b""

    @property
    def origin(self) -> bytes:
        return b"http://" + self.host

    def token_ok(self, token: Optional[bytes]) -> bool:
        return _same(token, self.token)

    def session_ok(self, request: Request) -> bool:
        return _same(request.getCookie(COOKIE), self.session)

    def host_ok(self, request: Request) -> bool:
        """The Host header names this server (a DNS-rebound name does not)."""
        return _same(request.getHeader(b"Host"), self.host)

    def origin_ok(self, request: Request) -> bool:
        """The request comes from a page of this server (a missing Origin does not)."""
        return _same(request.getHeader(b"Origin"), self.origin)

    def csrf_ok(self, request: Request) -> bool:
        return _same(request.getHeader(CSRF_HEADER), self.csrf)

    def session_cookie(self) -> bytes:
        return COOKIE + b"=" + self.session + b"; HttpOnly; SameSite=Strict; Path=/"
