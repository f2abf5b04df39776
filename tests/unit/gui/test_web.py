"""The GUI server's pure parts: static path checks, Qt's CSV format, the secrets' checks."""

from __future__ import annotations

import os
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import TestCase
from twisted.web import server
from twisted.web.test.requesthelper import DummyChannel

from coin.gui.auth import COOKIE, CSRF_HEADER, GUIAuth
from coin.gui.web import static_path, transactions_csv


class StaticPathTests(TestCase):
    def setUp(self) -> None:
        self.root = os.path.realpath(self.mktemp())
        os.makedirs(os.path.join(self.root, "css"))
        for name in ("index.html", os.path.join("css", "app.css")):
            with open(os.path.join(self.root, name), "w") as f:
                f.write("x")
        self.outside = os.path.join(os.path.dirname(self.root), "secret.txt")
        with open(self.outside, "w") as f:
            f.write("secret")

    def test_files_inside(self) -> None:
        self.assertEqual(static_path(self.root, [b"index.html"]),
                         os.path.join(self.root, "index.html"))
        self.assertEqual(static_path(self.root, [b"css", b"app.css"]),
                         os.path.join(self.root, "css", "app.css"))

    def test_refused(self) -> None:
        for segments in ([], [b""], [b".."], [b"..", b"secret.txt"], [b"css", b"..", b"index.html"],
                         [b"../secret.txt"], [b"..\\secret.txt"], [b".hidden"], [b"css"],
                         [b"index.html\0"], [b"\xff"], [b"css", b""], [self.outside.encode()]):
            self.assertIsNone(static_path(self.root, segments), segments)

    def test_symbolic_link_out_is_refused(self) -> None:
        os.symlink(self.outside, os.path.join(self.root, "link.txt"))
        self.assertIsNone(static_path(self.root, [b"link.txt"]))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.one_of(st.sampled_from([b"..", b".", b"", b"css", b"index.html",
                                               b"app.css", b"secret.txt", b"/", b"%2e"]),
                              st.binary(max_size=8)), max_size=5))
    def test_never_outside_the_root(self, segments: list) -> None:
        path = static_path(self.root, segments)
        if path is not None:
            self.assertEqual(os.path.commonpath([self.root, path]), self.root)
            self.assertTrue(os.path.isfile(path))


class CSVTests(TestCase):
    def test_qt_columns_newest_first(self) -> None:
        entries = [
            {"category": "generate", "amount": Decimal("50.00000000"), "confirmations": 101,
             "time": 1700000000, "txid": "aa" * 32, "address": "yAddr", "label": ""},
            {"category": "send", "amount": Decimal("-1.50000000"), "confirmations": 0,
             "time": 1700000060, "txid": "bb" * 32, "address": "yOther", "label": 'he said "hi", ok'},
        ]
        self.assertEqual(transactions_csv(entries).decode().splitlines(), [
            '"Confirmed","Date","Type","Label","Address","Amount","ID"',
            '"false","2023-11-14T22:14:20","Sent to","he said ""hi"", ok","yOther","-1.50000000","%s"'
            % ("bb" * 32),
            '"true","2023-11-14T22:13:20","Mined","","yAddr","50.00000000","%s"' % ("aa" * 32),
        ])


class AuthTests(TestCase):
    def setUp(self) -> None:
        self.auth = GUIAuth()
        self.auth.host = b"127.0.0.1:8332"

    def _request(self, headers: dict, cookie: bytes = b"") -> server.Request:
        request = server.Request(DummyChannel())
        for name, value in headers.items():
            request.requestHeaders.setRawHeaders(name, [value])
        if cookie:
            request.requestHeaders.setRawHeaders(b"Cookie", [COOKIE + b"=" + cookie])
        request.parseCookies()
        return request

    def test_secrets_are_distinct_and_long(self) -> None:
        values = {self.auth.token, self.auth.session, self.auth.csrf, GUIAuth().token}
        self.assertEqual(len(values), 4)
        self.assertTrue(all(len(v) >= 43 for v in values))

    def test_checks(self) -> None:
        good = self._request({b"Host": b"127.0.0.1:8332", b"Origin": b"http://127.0.0.1:8332",
                              CSRF_HEADER: self.auth.csrf}, self.auth.session)
        self.assertTrue(self.auth.session_ok(good))
        self.assertTrue(self.auth.host_ok(good))
        self.assertTrue(self.auth.origin_ok(good))
        self.assertTrue(self.auth.csrf_ok(good))
        bad = self._request({b"Host": b"localhost:8332", b"Origin": b"http://127.0.0.1:8333",
                             CSRF_HEADER: self.auth.csrf[:-1]}, self.auth.session + b"x")
        for check in (self.auth.session_ok, self.auth.host_ok, self.auth.origin_ok,
                      self.auth.csrf_ok):
            self.assertFalse(check(bad))
            self.assertFalse(check(self._request({})))
        self.assertFalse(self.auth.token_ok(None))
        self.assertFalse(self.auth.token_ok(self.auth.session))
        self.assertTrue(self.auth.token_ok(self.auth.token))
