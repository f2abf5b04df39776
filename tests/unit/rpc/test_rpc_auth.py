"""RPC authentication and access: basic auth, cookie, rpcauth, whitelist, allowed IPs, binding."""

from __future__ import annotations

import base64
import os
import shutil
import stat
import tempfile
from pathlib import Path

from twisted.internet.address import IPv4Address, IPv6Address, UNIXAddress
from twisted.internet.error import ConnectionDone
from twisted.logger import capturedLogs, formatEvent
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

import coin.rpc.auth
from coin.config.errors import ConfigError
from coin.config.rpcauth import make_rpcauth, parse_rpcauth
from coin.rpc.auth import (
    COOKIE_USER, AllowList, Authenticator, Whitelist, delete_cookie, generate_cookie,
    rpc_bind_addresses, split_host_port,
)

from tests.rpchelpers import ALICE_RPCAUTH, FakeNode, Server, post, reference_wallets, split_response


def basic(user: str, password: str) -> bytes:
    return b"Basic " + base64.b64encode(f"{user}:{password}".encode())


class AuthenticatorTests(SynchronousTestCase):

    def setUp(self):
        self.auth = Authenticator(("u", "p"), [parse_rpcauth(ALICE_RPCAUTH),
                                               parse_rpcauth(make_rpcauth("bob", "bobpw"))])

    def test_accepts_each_credential_source(self):
        self.assertEqual(self.auth.authenticate(basic("u", "p")), "u")
        self.assertEqual(self.auth.authenticate(basic("alice", "alicepw")), "alice")
        self.assertEqual(self.auth.authenticate(basic("bob", "bobpw")), "bob")
        self.assertEqual(self.auth.authenticate(b"Basic  " + base64.b64encode(b"u:p") + b" "), "u")

    def test_rejects(self):
        for header in (basic("u", "wrong"), basic("x", "p"), basic("alice", "bobpw"),
                       basic("bob", "alicepw"), basic("alice", ""), b"Bearer abc",
                       b"basic " + base64.b64encode(b"u:p"), b"Basic !!!notbase64",
                       b"Basic " + base64.b64encode(b"u"), b"Basic ", b""):
            self.assertIsNone(self.auth.authenticate(header), header)

    def test_every_rpcauth_entry_is_checked_whatever_matches(self):
        # No early exit: the time taken does not depend on which credential matched.
        computed = []
        real = coin.rpc.auth.password_hmac
        self.patch(coin.rpc.auth, "password_hmac",
                   lambda salt, password: computed.append(salt) or real(salt, password))
        for header in (basic("u", "p"), basic("alice", "alicepw"), basic("nobody", "x")):
            computed.clear()
            self.auth.authenticate(header)
            self.assertEqual(len(computed), 2)

    def test_without_userpass_only_rpcauth(self):
        auth = Authenticator(None, [parse_rpcauth(ALICE_RPCAUTH)])
        self.assertEqual(auth.authenticate(basic("alice", "alicepw")), "alice")
        self.assertIsNone(auth.authenticate(basic("", "")))


class CookieTests(SynchronousTestCase):

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.dir)
        self.path = self.dir / ".cookie"

    def test_generate_writes_private_file_atomically(self):
        old = os.umask(0)
        try:
            self.path.write_text("stale")
            os.chmod(self.path, 0o644)
            password = generate_cookie(self.path)
        finally:
            os.umask(old)
        self.assertEqual(self.path.read_text(), f"__cookie__:{password}")
        self.assertRegex(password, "^[0-9a-f]{64}$")
        self.assertEqual(stat.S_IMODE(self.path.stat().st_mode), 0o600)
        self.assertEqual([p.name for p in self.dir.iterdir()], [".cookie"])
        self.assertNotEqual(generate_cookie(self.path), password)

    def test_from_options_uses_cookie_without_rpcpassword(self):
        auth = Authenticator.from_options(rpcuser="u", rpcauth=[ALICE_RPCAUTH],
                                          cookie_path=self.path)
        user, password = self.path.read_text().split(":")
        self.assertEqual((user, auth.cookie_path), (COOKIE_USER, self.path))
        self.assertEqual(auth.authenticate(basic(COOKIE_USER, password)), COOKIE_USER)
        self.assertEqual(auth.authenticate(basic("alice", "alicepw")), "alice")
        self.assertIsNone(auth.authenticate(basic("u", "")))
        delete_cookie(self.path)
        self.assertFalse(self.path.exists())
        delete_cookie(self.path)  # already gone: fine

    def test_from_options_with_rpcpassword_writes_no_cookie(self):
        auth = Authenticator.from_options(rpcuser="u", rpcpassword="p", cookie_path=self.path)
        self.assertEqual(auth.authenticate(basic("u", "p")), "u")
        self.assertIsNone(auth.cookie_path)
        self.assertFalse(self.path.exists())

    def test_malformed_rpcauth_stops_startup(self):
        for entry in ("alice", "alice:salt", "a:b$c$d"):
            self.assertRaises(ConfigError, Authenticator.from_options, rpcpassword="p",
                              rpcauth=[entry], cookie_path=self.path)

    def test_cookie_over_http(self):
        password = generate_cookie(self.path)
        server = Server(authenticator=Authenticator((COOKIE_USER, password)))
        auth = base64.b64encode(f"{COOKIE_USER}:{password}".encode())
        self.assertIn(b" 200 OK", server.exchange(post(b'{"method":"getblockcount"}', auth=auth)))


class WhitelistTests(SynchronousTestCase):
    """Spec, Authentication rule 4."""

    def test_no_entries_no_default(self):
        whitelist = Whitelist()
        self.assertIsNone(whitelist.allowed_methods("anyone"))
        self.assertFalse(whitelist.denies_all("anyone"))

    def test_entries_restrict_listed_users_and_deny_the_rest_by_default(self):
        whitelist = Whitelist(["alice:getblockcount,getblockhash", "bob:help"])
        self.assertEqual(whitelist.allowed_methods("alice"), {"getblockcount", "getblockhash"})
        self.assertTrue(whitelist.allows("bob", "help"))
        self.assertFalse(whitelist.allows("bob", "getblockcount"))
        self.assertTrue(whitelist.denies_all("carol"))
        self.assertFalse(whitelist.allows("carol", "help"))

    def test_default_zero_lets_unlisted_users_call_anything(self):
        whitelist = Whitelist(["alice:getblockcount", "bob:help"], default=False)
        self.assertFalse(whitelist.denies_all("carol"))
        self.assertTrue(whitelist.allows("carol", "stop"))
        self.assertFalse(whitelist.allows("alice", "stop"))

    def test_default_one_without_entries_denies_everyone(self):
        whitelist = Whitelist(default=True)
        self.assertTrue(whitelist.denies_all("u"))
        self.assertEqual(whitelist.allowed_methods("u"), frozenset())

    def test_entries_for_one_user_intersect(self):
        whitelist = Whitelist(["alice:a,b,c", "alice:b c d", "alice"])
        self.assertEqual(whitelist.allowed_methods("alice"), {"b", "c"})

    def test_user_without_methods_is_listed_with_none(self):
        whitelist = Whitelist(["alice"], default=False)
        self.assertFalse(whitelist.denies_all("alice"))
        self.assertFalse(whitelist.allows("alice", "help"))

    def test_forbidden_over_http(self):
        server = Server(whitelist=Whitelist(["u:getblockcount"]))
        self.assertIn(b" 200 OK", server.exchange(post(b'{"method":"getblockcount"}')))
        for body in (b'{"method":"stop"}', b'[{"method":"getblockcount"},{"method":"stop"}]'):
            status, headers, answer = split_response(server.exchange(post(body)))
            self.assertEqual((status, answer), (b"HTTP/1.1 403 Forbidden", b""))
            self.assertIn((b"Content-Type", b"text/html; charset=ISO-8859-1"), headers)
        self.assertEqual(server.node.shutdowns, 0)

    def test_wallet_path_is_whitelisted_too(self):
        server = Server(node=FakeNode(wallets=reference_wallets("", "w2")),
                        whitelist=Whitelist(["u:getblockcount"]))
        raw = server.exchange(post(b'{"method":"getwalletinfo"}', b"/wallet/w2"))
        self.assertTrue(raw.startswith(b"HTTP/1.1 403 Forbidden"))


class DelayedRejectionTests(SynchronousTestCase):

    def test_wrong_credentials_wait_250ms(self):
        server = Server()
        protocol, transport = server.connect()
        protocol.dataReceived(post(b'{"method":"getblockcount"}', auth=b"dTp4"))
        server.clock.advance(0.249)
        self.assertEqual(transport.value(), b"")
        server.clock.advance(0.001)
        status, headers, body = split_response(transport.value())
        self.assertEqual((status, body), (b"HTTP/1.1 401 Unauthorized", b""))
        self.assertEqual(headers[0], (b"WWW-Authenticate", b'Basic realm="jsonrpc"'))

    def test_missing_credentials_answer_at_once(self):
        raw = Server().exchange(post(b'{"method":"getblockcount"}', auth=None))
        self.assertTrue(raw.startswith(b"HTTP/1.1 401 Unauthorized\r\n"
                                       b'WWW-Authenticate: Basic realm="jsonrpc"\r\n'))


class ProvedHeaderTests(SynchronousTestCase):
    """The authenticator remembers header values it found valid (a dictionary lookup instead
    of the constant-time checks), and forgets them all when the credentials change."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.dir)
        self.cookie = self.dir / ".cookie"
        self.cookie.write_text("__cookie__:old")
        self.auth = Authenticator(None, [parse_rpcauth(ALICE_RPCAUTH)])
        self.auth.read_cookie(self.cookie)

    def test_only_valid_headers_are_remembered(self):
        self.assertIsNone(self.auth.proved(basic("__cookie__", "old")))
        self.assertIsNone(self.auth.authenticate(basic("__cookie__", "wrong")))
        self.assertIsNone(self.auth.proved(basic("__cookie__", "wrong")))
        self.assertEqual(self.auth.authenticate(basic("__cookie__", "old")), "__cookie__")
        self.assertEqual(self.auth.proved(basic("__cookie__", "old")), "__cookie__")
        # Another spelling of the same credentials is checked in full, not matched.
        spaced = b"Basic  " + base64.b64encode(b"__cookie__:old")
        self.assertIsNone(self.auth.proved(spaced))
        self.assertEqual(self.auth.authenticate(spaced), "__cookie__")

    def test_a_remembered_header_skips_the_constant_time_checks(self):
        header = basic("alice", "alicepw")
        self.assertEqual(self.auth.authenticate(header), "alice")
        computed = []
        self.patch(coin.rpc.auth, "password_hmac", lambda *args: computed.append(args))
        self.assertEqual(self.auth.authenticate(header), "alice")
        self.assertEqual(computed, [])

    def test_a_changed_cookie_refuses_the_old_one_at_once(self):
        old = basic("__cookie__", "old")
        self.assertEqual(self.auth.authenticate(old), "__cookie__")
        self.cookie.write_text("__cookie__:new")
        self.auth.read_cookie(self.cookie)
        self.assertIsNone(self.auth.proved(old))
        self.assertIsNone(self.auth.authenticate(old))
        self.assertEqual(self.auth.authenticate(basic("__cookie__", "new")), "__cookie__")

    def test_new_credentials_forget_what_was_proved(self):
        for change in (lambda: self.auth.add_credential("worker", "pw"),
                       lambda: self.auth.create_cookie(self.cookie)):
            self.assertEqual(self.auth.authenticate(basic("alice", "alicepw")), "alice")
            change()
            self.assertIsNone(self.auth.proved(basic("alice", "alicepw")))
        self.assertIsNone(self.auth.authenticate(basic("__cookie__", "old")))

    def test_the_memory_is_bounded(self):
        # base64 ignores stray characters: one credential has endless header spellings.
        for n in range(3 * coin.rpc.auth.PROVED_CACHE_SIZE):
            header = basic("alice", "alicepw") + b"!" * n
            self.assertEqual(self.auth.authenticate(header), "alice")
            self.assertLessEqual(len(self.auth._proved), coin.rpc.auth.PROVED_CACHE_SIZE)

    def test_a_kept_alive_connection_is_refused_once_its_cookie_is_replaced(self):
        server = Server(authenticator=self.auth)
        protocol, transport = server.connect()
        old = base64.b64encode(b"__cookie__:old")
        protocol.dataReceived(post(b'{"method":"getblockcount","id":1}', auth=old))
        self.assertIn(b" 200 OK", transport.value())
        transport.clear()
        self.cookie.write_text("__cookie__:new")
        self.auth.read_cookie(self.cookie)  # the writer restarted with a new cookie
        protocol.dataReceived(post(b'{"method":"getblockcount","id":2}', auth=old))
        server.clock.advance(0.25)
        self.assertTrue(transport.value().startswith(b"HTTP/1.1 401 Unauthorized\r\n"))


class AllowListTests(SynchronousTestCase):

    def allows(self, allow, host):
        address = (IPv6Address if ":" in host else IPv4Address)("TCP", host, 1)
        return allow.allows(address)

    def test_loopback_always(self):
        allow = AllowList()
        for host in ("127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"):
            self.assertTrue(self.allows(allow, host), host)
        for host in ("10.0.0.1", "::2", "192.168.1.1", "::ffff:10.0.0.1"):
            self.assertFalse(self.allows(allow, host), host)
        self.assertFalse(allow.allows(UNIXAddress(b"/tmp/sock")))

    def test_forms(self):
        allow = AllowList(["10.1.2.3", "192.168.0.0/16", "172.16.5.0/255.255.255.0",
                           "fd00::/8", "2001:db8::1"])
        for host in ("10.1.2.3", "192.168.77.1", "172.16.5.200", "fd12::5", "2001:db8::1",
                     "fd00::1%eth0", "::ffff:10.1.2.3"):
            self.assertTrue(self.allows(allow, host), host)
        for host in ("10.1.2.4", "172.16.6.1", "2001:db8::2"):
            self.assertFalse(self.allows(allow, host), host)

    def test_invalid_specification_stops_startup(self):
        for spec in ("", "localhost", "1.2.3.4/33", "1.2.3", "*"):
            error = self.assertRaises(ConfigError, AllowList, [spec])
            self.assertEqual(str(error), f"Error: Invalid -rpcallowip subnet specification: {spec}."
                             " Valid are a single IP (e.g. 1.2.3.4), a network/netmask (e.g. "
                             "1.2.3.4/255.255.255.0) or a network/CIDR (e.g. 1.2.3.4/24).")


class BindingTests(SynchronousTestCase):

    def test_split_host_port(self):
        for text, expected in (("1.2.3.4", ("1.2.3.4", 9)), ("1.2.3.4:80", ("1.2.3.4", 80)),
                               ("[::1]:80", ("::1", 80)), ("::1", ("::1", 9)),
                               ("[::1]", ("::1", 9)), ("host:0", ("host:0", 9)),
                               ("host:65536", ("host:65536", 9)), ("host:\u00b2", ("host:\u00b2", 9)),
                               (":80", ("", 80))):
            self.assertEqual(split_host_port(text, 9), expected, text)

    def test_loopback_unless_both_bind_and_allowip(self):
        loopback = [("::1", 31931), ("127.0.0.1", 31931)]
        self.assertEqual(rpc_bind_addresses([], [], 31931), (loopback, []))
        endpoints, warnings = rpc_bind_addresses(["0.0.0.0"], [], 31931)
        self.assertEqual(endpoints, loopback)
        self.assertIn("-rpcbind was ignored", warnings[0])
        endpoints, warnings = rpc_bind_addresses([], ["10.0.0.0/8"], 31931)
        self.assertEqual(endpoints, loopback)
        self.assertIn("-rpcallowip was specified without -rpcbind", warnings[0])
        self.assertEqual(rpc_bind_addresses(["10.0.0.5", "[::]:4000"], ["10.0.0.0/8"], 31931),
                         ([("10.0.0.5", 31931), ("::", 4000)], []))


class ThrottleTests(SynchronousTestCase):
    """F3: wrong credentials are checked in turn per address (and bounded overall), so
    guessing runs at about 4/s whatever the number of connections, while good clients
    are served at once."""

    def setUp(self):
        self.server = Server(allow=AllowList(["fd00::/8"]))
        self.checks = []
        real = self.server.authenticator.authenticate
        self.patch(self.server.authenticator, "authenticate",
                   lambda header: self.checks.append(header) or real(header))

    def guess(self, client="127.0.0.1", n=0):
        """A wrong password on a new connection; returns (protocol, transport)."""
        protocol, transport = self.server.connect(client)
        protocol.dataReceived(post(b'{"method":"getblockcount"}',
                                   auth=base64.b64encode(b"u:wrong%d" % n)))
        return protocol, transport

    def advance(self, seconds, step=0.01):
        for _ in range(round(seconds / step)):
            self.server.clock.advance(step)

    def answered(self, transports, status=b"HTTP/1.1 401 Unauthorized"):
        return sum(t.value().startswith(status) for t in transports)

    def test_one_address_is_checked_at_4_per_second_after_a_burst(self):
        transports = [self.guess(n=n)[1] for n in range(60)]
        self.assertEqual(len(self.checks), coin.rpc.auth.ADDRESS_FAILURE_BURST)
        self.advance(5.01)
        # 8 at once, then one per 250 ms: 28 in 5 s where Core checked all 60 at once.
        self.assertEqual(len(self.checks), 8 + 20)
        self.assertEqual(self.answered(transports), 20)

    def test_a_lone_wrong_password_is_answered_after_250_ms(self):
        _, transport = self.guess()
        self.server.clock.advance(0.249)
        self.assertEqual(transport.value(), b"")
        self.server.clock.advance(0.001)
        self.assertEqual(self.answered([transport]), 1)

    def test_hanging_up_early_does_not_give_the_slot_back(self):
        for n in range(8):
            protocol, _ = self.guess(n=n)
            protocol.connectionLost(Failure(ConnectionDone()))
        self.guess(n=99)
        self.assertEqual(len(self.checks), 8)
        self.advance(0.25)
        self.assertEqual(len(self.checks), 9)

    def test_good_client_beside_a_few_wrong_guesses_is_served_at_once(self):
        for n in range(4):
            self.guess(n=n)
        self.assertIn(b" 200 OK", self.server.exchange(post(b'{"method":"getblockcount"}')))

    def test_good_client_from_another_address_is_served_at_once(self):
        for n in range(60):
            self.guess(n=n)
        self.assertIn(b" 200 OK", self.server.exchange(post(b'{"method":"getblockcount"}'),
                                                       client="127.0.0.2"))

    def test_kept_alive_connection_that_proved_its_credentials_is_not_held_up(self):
        protocol, transport = self.server.connect()
        protocol.dataReceived(post(b'{"method":"getblockcount","id":1}'))
        for n in range(60):
            self.guess(n=n)
        protocol.dataReceived(post(b'{"method":"getblockcount","id":2}'))
        self.assertIn(b'"id":2}', transport.value())
        # A new connection from the guessing address waits its turn, then is served.
        raw = post(b'{"method":"getblockcount"}')
        protocol, late = self.server.connect()
        protocol.dataReceived(raw)
        self.assertEqual(late.value(), b"")
        self.advance(15)
        self.assertIn(b" 200 OK", late.value())

    def test_a_new_connection_with_proved_credentials_is_not_checked_again(self):
        """Credentials proved on one connection serve a new one from an address whose turn
        it is at once, without the check (what a client opening a connection per call, as
        coin-cli does, pays on every call)."""
        self.assertIn(b" 200 OK", self.server.exchange(post(b'{"method":"getblockcount"}')))
        self.assertEqual(len(self.checks), 1)
        protocol, transport = self.server.connect()
        protocol.dataReceived(post(b'{"method":"getblockcount"}'))
        self.assertIn(b" 200 OK", transport.value())
        self.assertEqual(len(self.checks), 1)
        self.assertEqual(protocol.authorized, b"Basic dTpw")

    def test_all_addresses_together_are_bounded(self):
        for n in range(200):
            self.guess(client="127.0.%d.%d" % (n // 100, n % 100 + 1), n=n)
        self.assertEqual(len(self.checks), coin.rpc.auth.GLOBAL_FAILURE_BURST)
        self.advance(1.01)
        self.assertEqual(len(self.checks), 32 + 16)

    def test_ipv6_addresses_of_one_64_count_as_one(self):
        for n in range(20):
            self.guess(client=IPv6Address("TCP", "fd00::%x" % (n + 1), 1), n=n)
        self.assertEqual(len(self.checks), 8)

    def test_no_timer_outlives_the_server(self):
        # The log window and the wake-up of queued guesses stayed behind a node stopped in
        # the test process (trial's janitor showed them): its last port closed, the site
        # stops the throttle.
        self.server.site.doStart()
        for n in range(10):
            protocol, _ = self.guess(n=n)
            protocol.connectionLost(Failure(ConnectionDone()))
        self.assertNotEqual(self.server.clock.getDelayedCalls(), [])
        self.server.site.doStop()
        self.assertEqual(self.server.clock.getDelayedCalls(), [])

    def test_failures_are_logged_at_a_bounded_rate(self):
        with capturedLogs() as events:
            for n in range(60):
                self.guess(n=n)
            self.advance(25, step=0.05)
        lines = [formatEvent(e) for e in events if "incorrect rpc password" in formatEvent(e).lower()]
        self.assertEqual(len(lines), 3, lines)
        self.assertEqual(lines[0], "Incorrect RPC password attempt from 127.0.0.1:40000")
        self.assertRegex(lines[1], r"^\d+ more incorrect RPC password attempts in the last 10 s")
