"""coin-qt's back end as a browser (and an attacker's page) sees it: real coin-qt processes.

The token, the session cookie, the same-origin and CSRF rules, bad input on every endpoint,
the WebSocket's events, the RPC port's -server rule and a second coin-qt on one datadir.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile

from twisted.trial.unittest import TestCase

from coin.gui.web import STATIC_DIR
from tests.functional.test_twistd import twistd_script
from tests.guiharness import GUIProcess, WebSocketClient, coin_qt_command
from tests.nodeharness import ROOT, RPCFailure, _env, free_port, shared_fixture

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")

def _start_shared_gui() -> GUIProcess:
    gui = GUIProcess.start(tempfile.mkdtemp(prefix="coin-qt-shared-"))
    gui.call("generatetoaddress", 101, gui.call("getnewaddress"))
    return gui


def shared_gui() -> GUIProcess:
    """One coin-qt (default wallet, 101 blocks mined to it) for the tests that do not need
    a node of their own; stopped at exit."""
    return shared_fixture(shared_gui, _start_shared_gui, GUIProcess.stop)


def _error(body: bytes) -> dict:
    return json.loads(body)["error"]


class TokenTests(TestCase):
    """The printed URL's token buys the session cookie; nothing else does."""

    def setUp(self) -> None:
        self.gui = shared_gui()

    def test_valid_token_sets_the_session_cookie_and_redirects(self) -> None:
        status, headers, _ = self.gui.request("GET", "/?token=" + self.gui.token, cookie=False)
        self.assertEqual(status, 303)
        self.assertEqual(headers["location"], "/")
        cookie = headers["set-cookie"]
        self.assertRegex(cookie, r"^coinqt_session=[A-Za-z0-9_-]{40,};")
        for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
            self.assertIn(attribute, cookie.split("; "))
        self.assertNotIn(self.gui.token, cookie)

    def test_wrong_or_missing_token_is_403_with_a_hint(self) -> None:
        for path in ("/?token=" + self.gui.token[:-1] + "x", "/?token=", "/",
                     "/?token=%s&token=%s" % (self.gui.token, self.gui.token)):
            status, headers, body = self.gui.request("GET", path, cookie=False)
            self.assertEqual(status, 403, path)
            self.assertNotIn("set-cookie", headers)
            self.assertIn(b"Open the URL", body)

    def test_a_wrong_cookie_is_not_a_session(self) -> None:
        for path in ("/", "/api/session", "/static/index.html"):
            status, _, body = self.gui.request("GET", path, cookie=False,
                                               headers={"Cookie": "coinqt_session=forged"})
            self.assertIn(status, (401, 403), path)
            self.assertNotIn(self.gui.csrf.encode(), body)

    def test_page_with_the_cookie(self) -> None:
        if not os.path.isfile(os.path.join(STATIC_DIR, "index.html")):
            self.skipTest("coin/gui/static/index.html is not in this tree yet")
        status, headers, body = self.gui.request("GET", "/")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/html; charset=utf-8")
        self.assertIn(b"<html", body.lower())

    def test_security_headers_on_every_answer(self) -> None:
        for path, cookie in (("/", False), ("/?token=" + self.gui.token, False),
                             ("/api/session", True), ("/api/session", False),
                             ("/static/nothing.js", True), ("/nothing", True)):
            _, headers, _ = self.gui.request("GET", path, cookie=cookie)
            self.assertEqual(headers["content-security-policy"], CSP, path)
            self.assertEqual(headers["x-content-type-options"], "nosniff", path)
            self.assertEqual(headers["referrer-policy"], "no-referrer", path)
        _, headers, _ = self.gui.request("GET", "/api/session")
        self.assertEqual(headers["cache-control"], "no-store")

    def test_a_foreign_host_name_is_refused(self) -> None:
        """A DNS-rebinding page reaches 127.0.0.1 under its own name: refused."""
        status, _, body = self.gui.request(
            "GET", "/api/session", headers={"Host": "evil.example:%d" % self.gui.port})
        self.assertEqual(status, 403)
        self.assertNotIn(self.gui.csrf.encode(), body)

    def test_url_file_is_private_and_holds_the_url(self) -> None:
        path = os.path.join(self.gui.net_datadir, "coin-qt.url")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        with open(path) as f:
            self.assertEqual(f.read().strip(), self.gui.url)


class APIAccessTests(TestCase):
    """401 without the cookie, 403 across origins or without the CSRF header."""

    def setUp(self) -> None:
        self.gui = shared_gui()

    def test_every_endpoint_needs_the_cookie(self) -> None:
        for method, path in (("GET", "/api/session"), ("POST", "/api/call"),
                             ("GET", "/api/qr.svg?data=x"), ("GET", "/api/transactions.csv"),
                             ("GET", "/static/index.html")):
            status, _, _ = self.gui.request(
                method, path, b'{"method":"getblockcount"}' if method == "POST" else None,
                {"Origin": self.gui.origin, "X-Coin-CSRF": self.gui.csrf,
                 "Content-Type": "application/json"}, cookie=False)
            self.assertEqual(status, 401, path)

    def test_session(self) -> None:
        status, _, body = self.gui.request("GET", "/api/session")
        self.assertEqual(status, 200)
        session = json.loads(body)
        self.assertEqual(session["csrf"], self.gui.csrf)
        self.assertEqual(session["network"], "regtest")
        self.assertIs(session["server"], False)
        self.assertIsNone(session["rpcport"])
        self.assertIsInstance(session["version"], str)

    def test_cross_origin_post_is_refused(self) -> None:
        for origin in ("http://evil.example", "http://127.0.0.1:%d" % (self.gui.port + 1),
                       "null", None):
            status, _, body = self.gui.post_call({"method": "getnewaddress"},
                                                 {"Origin": origin})
            self.assertEqual(status, 403, origin)
            self.assertEqual(_error(body)["code"], -32600)

    def test_csrf_header_missing_or_wrong_is_refused(self) -> None:
        for csrf in (None, "", self.gui.csrf[:-1], self.gui.token):
            status, _, _ = self.gui.post_call({"method": "getnewaddress"}, {"X-Coin-CSRF": csrf})
            self.assertEqual(status, 403, csrf)

    def test_a_get_naming_a_foreign_origin_is_refused(self) -> None:
        status, _, body = self.gui.request("GET", "/api/session",
                                           headers={"Origin": "http://evil.example"})
        self.assertEqual(status, 403)
        self.assertNotIn(self.gui.csrf.encode(), body)

    def test_refused_calls_change_nothing(self) -> None:
        before = self.gui.call("getblockcount")
        self.gui.post_call({"method": "generatetoaddress", "params": [1, "x"]},
                           {"Origin": "http://evil.example"})
        self.gui.post_call({"method": "generate", "params": [1]}, {"X-Coin-CSRF": None})
        self.assertEqual(self.gui.call("getblockcount"), before)


class CallTests(TestCase):
    """/api/call: JSON-RPC's answers in-process, bad input refused with 400/405/413/415."""

    def setUp(self) -> None:
        self.gui = shared_gui()

    def test_result_and_error_objects(self) -> None:
        status, headers, body = self.gui.post_call({"method": "getblockhash", "params": [0]})
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(headers["cache-control"], "no-store")
        reply = json.loads(body)
        self.assertIsNone(reply["error"])
        self.assertEqual(len(reply["result"]), 64)
        status, _, body = self.gui.post_call({"method": "getblockhash", "params": [-1]})
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body), {"result": None, "id": None, "error": {
            "code": -8, "message": "Block height out of range"}})

    def test_unknown_method_is_an_rpc_error_object(self) -> None:
        status, _, body = self.gui.post_call({"method": "nosuchmethod", "params": []})
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["error"], {"code": -32601, "message": "Method not found"})

    def test_named_params_and_amounts_pass_as_json_rpc(self) -> None:
        address = self.gui.call("getnewaddress")
        info = self.gui.call("validateaddress", address)
        self.assertTrue(info["isvalid"])
        status, _, body = self.gui.post_call(
            {"method": "getblockhash", "params": {"height": 1}})
        self.assertIsNone(json.loads(body)["error"])
        # An amount's exact text reaches the method (Decimal, as JSON-RPC parses it).
        status, _, body = self.gui.post_call({"method": "sendtoaddress", "params": [address, 1e-9]})
        self.assertEqual(json.loads(body)["error"]["code"], -3)

    def test_bad_bodies_are_400(self) -> None:
        cases = [(b"{", -32700), (b"", -32700), (b"\xff", -32700), (b"[]", -32600),
                 (b'"getblockcount"', -32600), (b"{}", -32600), (b'{"method": 5}', -32600),
                 (b'{"method": "getblockcount", "params": "x"}', -32600),
                 (b'{"method": "getblockcount", "wallet": 7}', -32600),
                 (b'{"method": "getblockcount", "wallet": []}', -32600)]
        for raw, code in cases:
            status, headers, body = self.gui.post_call(None, raw=raw)
            self.assertEqual(status, 400, raw)
            self.assertEqual(_error(body)["code"], code, raw)
            self.assertEqual(headers["content-type"], "application/json")

    def test_wrong_content_type_is_415(self) -> None:
        for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
            status, _, _ = self.gui.post_call({"method": "getblockcount"},
                                              {"Content-Type": content_type})
            self.assertEqual(status, 415, content_type)

    def test_get_is_405(self) -> None:
        status, headers, _ = self.gui.request("GET", "/api/call")
        self.assertEqual(status, 405)
        self.assertEqual(headers["allow"], "POST")
        status, _, _ = self.gui.request("POST", "/api/session", b"{}",
                                        {"Origin": self.gui.origin, "X-Coin-CSRF": self.gui.csrf})
        self.assertEqual(status, 405)

    def test_huge_body_is_413(self) -> None:
        raw = b'{"method": "echo", "params": ["' + b"a" * (5 << 20) + b'"]}'
        try:
            status, _, _ = self.gui.post_call(None, raw=raw)
        except (BrokenPipeError, ConnectionResetError):
            return  # refused before the whole body was sent: the 413 raced the upload
        self.assertEqual(status, 413)

    def test_wallet_selection_as_the_wallet_path(self) -> None:
        with self.assertRaises(RPCFailure) as caught:
            self.gui.call("getwalletinfo", wallet="nosuchwallet")
        self.assertEqual(caught.exception.code, -18)
        self.assertEqual(self.gui.call("getwalletinfo", wallet="")["walletname"], "")


class StaticAndDownloadTests(TestCase):
    """/static path checks, the QR code and the CSV export."""

    def setUp(self) -> None:
        self.gui = shared_gui()

    def test_paths_outside_the_static_directory_are_404(self) -> None:
        for path in ("/static/../web.py", "/static/%2e%2e/web.py", "/static/%2E%2E%2Fweb.py",
                     "/static/..%2fweb.py", "/static/%2e%2e/%2e%2e/tap.py", "/static/",
                     "/static", "/static/.hidden", "/static/%00", "/static/..%5cweb.py",
                     "/static//etc/passwd", "/static/%2fetc%2fpasswd", "/static/\xff".encode(
                         "latin-1").decode("latin-1")):
            try:
                status, _, body = self.gui.request("GET", path)
            except UnicodeEncodeError:
                continue
            self.assertIn(status, (400, 404), path)
            self.assertNotIn(b"import", body, path)

    def test_qr_code(self) -> None:
        status, headers, body = self.gui.request("GET", "/api/qr.svg?data=coin%3Ayaddress%3Famount%3D1")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "image/svg+xml")
        self.assertTrue(body.startswith(b"<svg"))
        self.assertNotIn(b"<script", body)

    def test_qr_code_bad_input(self) -> None:
        for query in ("", "?data=", "?data=" + "a" * 1001, "?data=a&data=b", "?data=%ff"):
            status, _, body = self.gui.request("GET", "/api/qr.svg" + query)
            self.assertEqual(status, 400, query)
            self.assertEqual(_error(body)["code"], -8)

    def test_csv_export(self) -> None:
        status, headers, body = self.gui.request("GET", "/api/transactions.csv?wallet=")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/csv; charset=utf-8")
        self.assertEqual(headers["content-disposition"], 'attachment; filename="transactions.csv"')
        lines = body.decode().splitlines()
        self.assertEqual(lines[0], '"Confirmed","Date","Type","Label","Address","Amount","ID"')
        listed = self.gui.call("listtransactions", "*", 100000, 0, True)
        self.assertEqual(len(lines) - 1, len(listed))
        first = lines[1].split(",")
        self.assertEqual(first[0], '"true"')
        self.assertEqual(first[2], '"Mined"')
        self.assertRegex(first[1], r'^"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"$')
        self.assertEqual(first[6], '"%s"' % listed[-1]["txid"])

    def test_csv_of_a_missing_wallet(self) -> None:
        status, _, body = self.gui.request("GET", "/api/transactions.csv?wallet=nosuchwallet")
        self.assertEqual(status, 400)
        self.assertEqual(_error(body)["code"], -18)


class WebSocketTests(TestCase):
    """/ws: the cookie and the GUI's Origin, then status, block, mempool and wallet events."""

    def setUp(self) -> None:
        self.gui = shared_gui()

    def test_refused_without_cookie_or_from_another_origin(self) -> None:
        for headers, cookie, expected in (({}, False, 401),
                                          ({"Origin": "http://evil.example"}, True, 403),
                                          ({"Origin": None}, True, 403)):
            ws = self.gui.websocket(headers, cookie)
            self.addCleanup(ws.close)
            self.assertEqual(ws.status, expected)

    def test_status_then_block_mempool_and_wallet_events(self) -> None:
        ws = self.gui.websocket()
        self.addCleanup(ws.close)
        self.assertEqual(ws.status, 101)
        status = ws.receive()
        self.assertEqual(status["event"], "status")
        self.assertEqual(status["blocks"], self.gui.call("getblockcount"))
        self.assertEqual(status["locked"], {"": None})
        for key in ("headers", "progress", "ibd", "peers", "connections_in", "connections_out"):
            self.assertIn(key, status)
        address = self.gui.call("getnewaddress")
        [block_hash] = self.gui.call("generatetoaddress", 1, address)
        coinbase = self.gui.call("getblock", block_hash)["tx"][0]
        # The block, then its transactions of the wallet.
        self.assertEqual(self._next_other_than_status(ws), {
            "event": "block", "height": status["blocks"] + 1, "hash": block_hash})
        self.assertEqual(self._next_other_than_status(ws),
                         {"event": "wallet", "wallet": "", "txid": coinbase})
        txid = self.gui.call("sendtoaddress", address, 1)
        ws.expect({"event": "mempool", "txid": txid},
                  {"event": "wallet", "wallet": "", "txid": txid})

    @staticmethod
    def _next_other_than_status(ws: WebSocketClient) -> dict:
        while True:
            event = ws.receive()
            if event["event"] != "status":
                return event


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class ProcessTests(TestCase):
    """-server, a second coin-qt on the same datadir."""

    def test_rpc_port_closed_without_server_and_open_with_it(self) -> None:
        rpcport = free_port()
        gui = GUIProcess.start(self.mktemp(), ["-rpcport=%d" % rpcport, "-rpcuser=u",
                                               "-rpcpassword=p"])
        self.addCleanup(gui.stop)
        self.assertFalse(_port_open(rpcport))
        self.assertEqual(gui.call("getblockcount"), 0)
        self.assertEqual(gui.stop(), 0)
        gui = GUIProcess.start(gui.datadir, ["-server", "-rpcport=%d" % rpcport, "-rpcuser=u",
                                             "-rpcpassword=p"])
        self.addCleanup(gui.stop)
        self.assertTrue(_port_open(rpcport))
        session = json.loads(gui.request("GET", "/api/session")[2])
        self.assertEqual((session["server"], session["rpcport"]), (True, rpcport))
        result = subprocess.run(
            [sys.executable, "-m", "coincli", "-regtest", "-rpcport=%d" % rpcport,
             "-rpcuser=u", "-rpcpassword=p", "getblockhash", "0"], capture_output=True,
            text=True, cwd=ROOT, env=_env(), timeout=60)
        self.assertEqual(result.stdout.strip(), gui.call("getblockhash", 0))

    def test_second_coin_qt_on_the_datadir_points_to_the_first(self) -> None:
        gui = shared_gui()
        result = subprocess.run(coin_qt_command(gui.datadir, []), capture_output=True,
                                text=True, cwd=ROOT, env=_env(), timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout,
                         "coin-qt is already running on this datadir: %s\n" % gui.url)
        self.assertEqual(gui.call("getblockcount") >= 101, True)

    def test_a_taken_guiport_stops_start_up(self) -> None:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            datadir = os.path.abspath(self.mktemp())
            os.makedirs(datadir)
            result = subprocess.run(coin_qt_command(datadir, ["-guiport=%d" % port]),
                                    capture_output=True, text=True, cwd=ROOT, env=_env(),
                                    timeout=120)
        self.assertEqual(result.returncode, 1)
        self.assertIn("Error: Unable to bind the GUI to 127.0.0.1:%d" % port, result.stderr)
        self.assertEqual(result.stdout, "")
        self.assertFalse(os.path.exists(os.path.join(datadir, "regtest", "coin-qt.url")))

    def test_coind_refuses_gui_options(self) -> None:
        result = subprocess.run(
            [sys.executable, "-m", "coin.tap", "-regtest", "-guiport=1"],
            capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertIn("guiport", result.stderr)

    def test_twistd_n_coin_qt_serves_the_gui(self) -> None:
        """``twistd -n coin-qt``: the plugin is found and runs the same GUI."""
        gui = GUIProcess.start(self.mktemp(), launcher=(sys.executable, twistd_script(), "-n",
                                                        "--pidfile=", "coin-qt"))
        self.addCleanup(gui.stop)
        self.assertEqual(json.loads(gui.request("GET", "/api/session")[2])["csrf"], gui.csrf)
        self.assertEqual(gui.call("getblockcount"), 0)
        gui.process.send_signal(signal.SIGTERM)
        self.assertIn(gui.process.wait(60), (0, -signal.SIGTERM))
        self.assertFalse(os.path.exists(os.path.join(gui.net_datadir, "coin-qt.url")))
