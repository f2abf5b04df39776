"""The GUI's HTTP server: the page, its static files, the JSON API and the WebSocket.

Paths and rules are the contract in coin/gui/README.md.  The request class is the RPC
server's (coin.rpc.resource.CoreHTTPRequest: 413 before a large body is stored, loopback
clients only) with the GUI's security headers and a Host check added; /api/call hands its
call to the node's JSON-RPC core (coin.rpc.jsonrpc.JSONRPCCore.answer), so the GUI sees
exactly what JSON-RPC answers.
"""

from __future__ import annotations

import csv
import io
import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import segno
from segno import DataOverflowError
from twisted.internet.defer import CancelledError, Deferred
from twisted.python.failure import Failure
from twisted.web import resource, server

from coin import __version__
from coin.gui.auth import GUIAuth
from coin.rpc.auth import AllowList
from coin.rpc.errors import (
    HTTP_BAD_METHOD, HTTP_BAD_REQUEST, HTTP_FORBIDDEN, HTTP_NOT_FOUND, HTTP_OK, HTTP_UNAUTHORIZED,
    RPC_INVALID_PARAMETER, RPC_INVALID_REQUEST, RPCError, map_exception,
)
from coin.rpc.jsonrpc import JSON_CONTENT_TYPE, JSONRPCCore, encode_json, parse_call, parse_json
from coin.rpc.resource import CoreHTTPRequest
from coin.http.lifetime import cancel_when_gone

#: The user name RPC handlers see for the GUI's calls (the node's owner, not an RPC user).
GUI_USER = "coin-qt"
#: Largest request body (bytes): a signed transaction of many inputs fits easily.
MAX_BODY = 4 << 20
#: Longest text /api/qr.svg encodes (a payment URI with label and message fits).
MAX_QR_DATA = 1000
#: Transactions /api/transactions.csv reads (listtransactions' count).
MAX_EXPORT = 10_000_000
STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
HTTP_SEE_OTHER = 303
HTTP_UNSUPPORTED_MEDIA_TYPE = 415

SECURITY_HEADERS = (
    (b"Content-Security-Policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     b"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
     b"frame-ancestors 'none'"),
    (b"X-Content-Type-Options", b"nosniff"),
    (b"Referrer-Policy", b"no-referrer"),
    (b"X-Frame-Options", b"DENY"),
)
HTML = b"text/html; charset=utf-8"
CONTENT_TYPES = {
    ".html": HTML,
    ".js": b"text/javascript; charset=utf-8",
    ".mjs": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".json": b"application/json",
    ".svg": b"image/svg+xml",
    ".png": b"image/png",
    ".ico": b"image/x-icon",
    ".woff2": b"font/woff2",
    ".txt": b"text/plain; charset=utf-8",
}
FORBIDDEN_PAGE = (b"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  b"<title>coin-qt</title></head><body><h1>Not signed in</h1><p>Open the URL "
                  b"that coin-qt printed when it started (it carries a one-time token).</p>"
                  b"</body></html>\n")
#: Qt's transaction export columns (TransactionView::exportClicked), amounts in coins.
CSV_COLUMNS = ("Confirmed", "Date", "Type", "Label", "Address", "Amount", "ID")
#: Qt's words for listtransactions' categories.
CSV_TYPES = {"send": "Sent to", "receive": "Received with", "generate": "Mined",
             "immature": "Mined", "orphan": "Mined"}


class GUIRequest(CoreHTTPRequest):
    """A request of the GUI server: the security headers on every answer; a Host other
    than the server's own (a DNS-rebinding page) refused with 403."""

    def process(self) -> None:
        for name, value in SECURITY_HEADERS:
            self.setHeader(name, value)
        if not self.channel.site.auth.host_ok(self):
            self._early_reply(HTTP_FORBIDDEN)
            return
        super().process()


class GUISite(server.Site):
    """Loopback clients only (the RPC server's rule), bodies up to MAX_BODY."""

    requestFactory = GUIRequest
    noisy = False

    def __init__(self, root: resource.Resource, auth: GUIAuth, reactor: Any = None) -> None:
        super().__init__(root, reactor=reactor)
        self.auth = auth
        self.allow = AllowList()
        self.max_body = MAX_BODY

    def log(self, request: server.Request) -> None:
        """No access log: the page's calls are not the node's events."""


def _answer(request: server.Request, status: int, body: bytes, content_type: bytes) -> bytes:
    request.setResponseCode(status)
    request.setHeader(b"Content-Type", content_type)
    return body


def json_error(request: server.Request, status: int, code: int, message: str) -> bytes:
    """An API refusal: ``{"error": {"code", "message"}}`` with an HTTP status."""
    return _answer(request, status, encode_json({"error": {"code": code, "message": message}}),
                   JSON_CONTENT_TYPE)


def _single_arg(request: server.Request, name: bytes) -> Optional[str]:
    """A query argument given once (UTF-8), else None; RPCError if given twice or not text."""
    values = request.args.get(name)
    if values is None:
        return None
    if len(values) != 1:
        raise RPCError(RPC_INVALID_PARAMETER, "%s given more than once" % name.decode())
    try:
        return values[0].decode("utf-8")
    except UnicodeDecodeError:
        raise RPCError(RPC_INVALID_PARAMETER, "%s is not UTF-8 text" % name.decode()) from None


class GUIRoot(resource.Resource):
    """``/``: the token exchange and the page; the other paths are its children."""

    def __init__(self, auth: GUIAuth, api: resource.Resource, websocket: resource.Resource) -> None:
        super().__init__()
        self._auth = auth
        self.putChild(b"static", StaticFiles(auth))
        self.putChild(b"api", api)
        self.putChild(b"ws", websocket)

    def getChild(self, path: bytes, request: server.Request) -> resource.Resource:
        if path == b"" and not request.postpath:
            return self
        return resource.NoResource()

    def render_GET(self, request: server.Request) -> bytes:
        tokens = request.args.get(b"token")
        if tokens is not None:
            if len(tokens) != 1 or not self._auth.token_ok(tokens[0]):
                return _answer(request, HTTP_FORBIDDEN, FORBIDDEN_PAGE, HTML)
            # Exchanged for the cookie; the redirect drops the token from the address bar.
            request.setHeader(b"Set-Cookie", self._auth.session_cookie())
            request.setHeader(b"Location", b"/")
            request.setHeader(b"Cache-Control", b"no-store")
            return _answer(request, HTTP_SEE_OTHER, b"", HTML)
        if not self._auth.session_ok(request):
            return _answer(request, HTTP_FORBIDDEN, FORBIDDEN_PAGE, HTML)
        return serve_file(request, os.path.join(STATIC_DIR, "index.html"))


def serve_file(request: server.Request, path: str) -> bytes:
    """A file of the static directory (small: read at once), typed by its extension."""
    try:
        with open(path, "rb") as f:
            body = f.read()
    except OSError:
        return _answer(request, HTTP_NOT_FOUND, b"Not found\n", b"text/plain")
    content_type = CONTENT_TYPES.get(os.path.splitext(path)[1].lower(),
                                     b"application/octet-stream")
    return _answer(request, HTTP_OK, body, content_type)


def static_path(root: str, segments: List[bytes]) -> Optional[str]:
    """The file ``segments`` name inside ``root``, or None if they lead anywhere else.

    Each segment must be a plain name (no empty, dot-leading or separator-bearing ones),
    and the real path (symbolic links followed) must stay inside the real root.
    """
    names = []
    for segment in segments:
        try:
            name = segment.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name:
            return None
        names.append(name)
    if not names:
        return None
    real_root = os.path.realpath(root)
    path = os.path.realpath(os.path.join(real_root, *names))
    if os.path.commonpath([real_root, path]) != real_root or not os.path.isfile(path):
        return None
    return path


class StaticFiles(resource.Resource):
    """``/static/<file>``: the package's static files, to a signed-in page only."""

    isLeaf = True

    def __init__(self, auth: GUIAuth, root: str = STATIC_DIR) -> None:
        super().__init__()
        self._auth = auth
        self._root = root

    def render_GET(self, request: server.Request) -> bytes:
        if not self._auth.session_ok(request):
            return _answer(request, HTTP_UNAUTHORIZED, FORBIDDEN_PAGE, HTML)
        path = static_path(self._root, request.postpath)
        if path is None:
            return _answer(request, HTTP_NOT_FOUND, b"Not found\n", b"text/plain")
        return serve_file(request, path)


class SignedIn(resource.Resource):
    """A resource for the signed-in page only.

    No session cookie: 401.  A POST needs the GUI's own Origin and the CSRF header (403
    without); any request that names a foreign Origin is refused too.  API answers are
    never cached.
    """

    isLeaf = True
    allowed_methods: Tuple[bytes, ...] = (b"GET",)
    #: Whether a request without Origin is refused even on GET.
    origin_required = False

    def __init__(self, auth: GUIAuth) -> None:
        super().__init__()
        self._auth = auth

    def render(self, request: server.Request) -> Any:
        request.setHeader(b"Cache-Control", b"no-store")
        if request.method not in self.allowed_methods:
            request.setHeader(b"Allow", b", ".join(self.allowed_methods))
            return json_error(request, HTTP_BAD_METHOD, RPC_INVALID_REQUEST, "Method not allowed")
        if not self._auth.session_ok(request):
            return json_error(request, HTTP_UNAUTHORIZED, RPC_INVALID_REQUEST,
                              "Not signed in: open the URL coin-qt printed")
        checked = (request.method == b"POST" or self.origin_required
                   or request.getHeader(b"Origin") is not None)
        if checked and not self._auth.origin_ok(request):
            return json_error(request, HTTP_FORBIDDEN, RPC_INVALID_REQUEST,
                              "Cross-origin request refused")
        if request.method == b"POST" and not self._auth.csrf_ok(request):
            return json_error(request, HTTP_FORBIDDEN, RPC_INVALID_REQUEST,
                              "Missing or wrong X-Coin-CSRF header")
        try:
            return self.serve(request)
        except RPCError as e:
            return json_error(request, HTTP_BAD_REQUEST, e.code, e.message)

    def serve(self, request: server.Request) -> Any:
        raise NotImplementedError


def _deferred_answer(request: server.Request, answer: Deferred,
                     write: Callable[[Any], Tuple[int, bytes, bytes]]) -> int:
    """Finish ``request`` with ``write(result)`` when ``answer`` fires; cancel it if the
    client leaves first."""
    lost = cancel_when_gone(request, answer)

    def send(body: bytes) -> None:
        request.setHeader(b"Content-Length", b"%d" % len(body))
        request.write(body)
        request.finish()

    def done(result: Any) -> None:
        if not lost:
            status, body, content_type = write(result)
            send(_answer(request, status, body, content_type))

    def failed(reason: Failure) -> None:
        if not (reason.check(CancelledError) or lost):
            error = map_exception(reason)[1]
            send(json_error(request, HTTP_BAD_REQUEST, error["code"], error["message"]))

    answer.addCallbacks(done, failed)
    return server.NOT_DONE_YET


class Session(SignedIn):
    """``/api/session``: the CSRF value and what the page shows of the node."""

    def __init__(self, auth: GUIAuth, network: str, rpcport: Optional[int]) -> None:
        super().__init__(auth)
        self._info = {"network": network, "version": __version__,
                      "server": rpcport is not None, "rpcport": rpcport}

    def serve(self, request: server.Request) -> bytes:
        body = dict(self._info, csrf=self._auth.csrf.decode("ascii"))
        return _answer(request, HTTP_OK, encode_json(body), JSON_CONTENT_TYPE)


class Call(SignedIn):
    """``/api/call``: one RPC call, answered as JSON-RPC answers it (always HTTP 200)."""

    allowed_methods = (b"POST",)

    def __init__(self, auth: GUIAuth, core: JSONRPCCore) -> None:
        super().__init__(auth)
        self._core = core

    def serve(self, request: server.Request) -> Any:
        content_type = (request.getHeader(b"Content-Type") or b"").split(b";")[0].strip().lower()
        if content_type != JSON_CONTENT_TYPE:
            return json_error(request, HTTP_UNSUPPORTED_MEDIA_TYPE, RPC_INVALID_REQUEST,
                              "Content-Type must be application/json")
        call = parse_json(request.content.read())
        method, params = parse_call(call)
        wallet = call.get("wallet")
        if wallet is not None and not isinstance(wallet, str):
            raise RPCError(RPC_INVALID_REQUEST, "wallet must be a string or null")
        answer = self._core.answer(method, params, GUI_USER, wallet)
        return _deferred_answer(request, answer,
                                lambda body: (HTTP_OK, body + b"\n", JSON_CONTENT_TYPE))


class QRCode(SignedIn):
    """``/api/qr.svg?data=<text>``: the text as a QR code (receive requests)."""

    def serve(self, request: server.Request) -> bytes:
        data = _single_arg(request, b"data")
        if not data:
            raise RPCError(RPC_INVALID_PARAMETER, "data is required")
        if len(data) > MAX_QR_DATA:
            raise RPCError(RPC_INVALID_PARAMETER, "data is longer than %d characters"
                           % MAX_QR_DATA)
        try:
            code = segno.make(data, error="m", micro=False)
        except DataOverflowError:
            raise RPCError(RPC_INVALID_PARAMETER, "data does not fit a QR code") from None
        out = io.BytesIO()
        code.save(out, kind="svg", scale=4, border=4, xmldecl=False)
        return _answer(request, HTTP_OK, out.getvalue(), b"image/svg+xml")


def transactions_csv(entries: List[Dict[str, Any]]) -> bytes:
    """listtransactions' entries in Qt's export format, newest first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(CSV_COLUMNS)
    for entry in reversed(entries):
        writer.writerow((
            "true" if entry.get("confirmations", 0) > 0 else "false",
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(entry["time"])),
            CSV_TYPES.get(entry["category"], entry["category"]),
            entry.get("label", ""), entry.get("address", ""), str(entry["amount"]),
            entry["txid"]))
    return out.getvalue().encode("utf-8")


class TransactionsCSV(SignedIn):
    """``/api/transactions.csv?wallet=<name>``: the wallet's transactions as a download."""

    def __init__(self, auth: GUIAuth, core: JSONRPCCore) -> None:
        super().__init__(auth)
        self._core = core

    def serve(self, request: server.Request) -> Any:
        wallet = _single_arg(request, b"wallet")
        answer = self._core.call("listtransactions", ["*", MAX_EXPORT, 0, True], GUI_USER, wallet)

        def write(entries: List[Dict[str, Any]]) -> Tuple[int, bytes, bytes]:
            request.setHeader(b"Content-Disposition",
                              b'attachment; filename="transactions.csv"')
            return HTTP_OK, transactions_csv(entries), b"text/csv; charset=utf-8"

        return _deferred_answer(request, answer, write)


class WebSocketGate(SignedIn):
    """``/ws``: the session cookie and the GUI's own Origin (browsers always send one on
    a WebSocket), then the WebSocket."""

    origin_required = True

    def __init__(self, auth: GUIAuth, websocket: resource.Resource) -> None:
        super().__init__(auth)
        self._websocket = websocket

    def serve(self, request: server.Request) -> Any:
        return self._websocket.render(request)


def build_api(auth: GUIAuth, core: JSONRPCCore, network: str,
              rpcport: Optional[int]) -> resource.Resource:
    """``/api/``: session, call, qr.svg, transactions.csv."""
    api = resource.Resource()
    api.putChild(b"session", Session(auth, network, rpcport))
    api.putChild(b"call", Call(auth, core))
    api.putChild(b"qr.svg", QRCode(auth))
    api.putChild(b"transactions.csv", TransactionsCSV(auth, core))
    return api
