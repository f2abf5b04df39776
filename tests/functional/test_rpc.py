"""The JSON-RPC server of ``coind``, over TCP, as a user meets it.

Raw HTTP on a socket (the recorded requests byte for byte), ``http.client``
keep-alive connections, and ``coin-cli`` run as a program. Each test starts the
node it asks for inside the test process (tests.inprocess), on a copy of a
datadir prepared once per process:

- ``self.main_node()``: 111 blocks prepared with ``ChainBuilder`` (the reference
  node's height, so ``getblockcount`` recordings match byte for byte), the
  reference's ``-rpcauth`` entry for alice (password ``alicepw``),
  ``-rpcallowip=10.0.0.0/8`` without ``-rpcbind``, ``-debug=http``;
- ``self.whitelist_node()``: two ``-rpcwhitelist`` entries for ``u`` (intersected),
  a second user ``bob`` with no entry, ``-rpcbind=0.0.0.0`` without
  ``-rpcallowip`` (ignored);
- ``self.open_node()``: ``-rpcwhitelistdefault=0``, alice from
  ``share/rpcuser/rpcuser.py`` restricted by ``-rpcwhitelist``, no bind options.

Real ``coind`` processes remain for what reads a process's debug.log or stderr:
binding, ``-debug=http`` lines, a bad ``-rpcallowip``.

Recordings not replayed here: ``warmup_*`` (start-up timing), ``rpc_40``/``rpc_41``
(not in tests/data; ``rpc_41`` is a quirk not to copy), ``wallet_01``/``wallet_02``,
``mwallet_*`` other than 05 and ``rpcauth_04`` (they need loaded wallets), and
``rpcm_*`` of chain-specific or varying results other than those below.
"""

from __future__ import annotations

import base64
import functools
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from coin.config.rpcauth import make_rpcauth
from coin.testing.chainbuilder import ChainBuilder, open_chain

from tests.inprocess import InProcessNode, NodeTestCase, prepared
from tests.nodeharness import PASSWORD, ROOT, USER, NodeClient, NodeProcess, _env, free_port
from tests.rpchelpers import ALICE_RPCAUTH, reference_state, split_response, transcript

#: Height of the reference node's chain when the recordings were made.
HEIGHT = 111

MAIN_ARGS = ("-rpcauth=" + ALICE_RPCAUTH, "-rpcallowip=10.0.0.0/8", "-debug=http")

#: bob's rpcauth entry on the whitelist node (no whitelist entry of his own).
BOB = ("bob", "bobpw")

WHITELIST_ARGS = ("-rpcwhitelist=u:getblockcount,help,uptime,echo",
                  "-rpcwhitelist=u:getblockcount,help,uptime,stop",
                  "-rpcauth=" + make_rpcauth(*BOB), "-rpcbind=0.0.0.0")


def reference_chain(node: InProcessNode) -> None:
    """The main node's chain: ``HEIGHT`` blocks written by ChainBuilder while the node is
    stopped, then a start so that its wallet has scanned them once for every copy."""
    node.stop()
    chain = open_chain(node.net_datadir)
    ChainBuilder(chain).mine(HEIGHT)
    chain.close()
    node.start()


def wallet_only(node: InProcessNode) -> None:
    """No chain: tests start on a copy of a datadir whose wallet exists, which is quicker
    than each node creating its own."""


@functools.lru_cache(maxsize=None)
def rpcuser_script(user: str) -> Tuple[str, str]:
    """``share/rpcuser/rpcuser.py <user>`` as a user runs it: (rpcauth value, password).

    Run once per process: the open node's arguments, hence its prepared datadir, depend on it.
    """
    result = subprocess.run([sys.executable, os.path.join(ROOT, "share", "rpcuser", "rpcuser.py"),
                             user], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "String to be appended to coin.conf:", lines
    assert lines[1].startswith("rpcauth="), lines
    assert lines[2] == "Your password:", lines
    return lines[1][len("rpcauth="):], lines[3]


def open_args() -> Tuple[str, ...]:
    return ("-rpcauth=" + rpcuser_script("alice")[0], "-rpcwhitelistdefault=0",
            "-rpcwhitelist=alice:getblockcount,uptime")


# ------------------------------------------------------------------ raw HTTP


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


class RawReply:
    def __init__(self, status_line: bytes, headers: List[Tuple[bytes, bytes]], body: bytes,
                 elapsed: float) -> None:
        self.status_line = status_line
        self.headers = headers
        self.body = body
        self.elapsed = elapsed

    @property
    def status(self) -> int:
        return int(self.status_line.split()[1])

    def header(self, name: bytes) -> Optional[bytes]:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def json(self):
        return json.loads(self.body)


def exchange(port: int, request: bytes, host: str = "127.0.0.1",
             timeout: float = 30.0) -> RawReply:
    """Send ``request`` as it is on a fresh connection and read one reply.

    The body is read by Content-Length, or to the end of the connection when there
    is none (HTTP/1.0); replies to HEAD have no body.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect((host, port))
        started = time.monotonic()
        s.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                raise AssertionError("connection closed before the headers: %r" % data)
            data += chunk
        elapsed = time.monotonic() - started
        head, _, body = data.partition(b"\r\n\r\n")
        status_line, headers, _ = split_response(head + b"\r\n\r\n")
        length = None
        for name, value in headers:
            if name.lower() == b"content-length":
                length = int(value)
        if request.startswith(b"HEAD "):
            length = 0
        if length is None:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
        else:
            while len(body) < length:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
        return RawReply(status_line, headers, body, elapsed)


def raw_post(body: bytes, path: bytes = b"/", authorization: Optional[str] = basic(USER, PASSWORD),
             extra: bytes = b"") -> bytes:
    request = b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    if authorization is not None:
        request += b"Authorization: " + authorization.encode() + b"\r\n"
    return request + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body


def alive(node: InProcessNode) -> bool:
    return node.running and node.rpc("uptime") >= 0


def debug_log(node: NodeClient) -> str:
    with open(os.path.join(node.net_datadir, "debug.log")) as f:
        return f.read()


def has_method(node: NodeClient, name: str) -> bool:
    return not node.rpc("help", name).startswith("help: unknown command:")


# ------------------------------------------------------------------ recordings


def _normalized(status_line: bytes, headers: List[Tuple[bytes, bytes]], body: bytes):
    """Date values differ per run; Content-Length is the body's own length (some
    recordings' values are stale: the brand was replaced in the body only)."""
    fixed = []
    for name, value in headers:
        if name == b"Date":
            value = b"<date>"
        elif name == b"Content-Length":
            value = b"%d" % len(body)
        fixed.append((name, value))
    return status_line, fixed, body


class Replayer:
    """Replays recordings on a node; chain-specific hashes map to the node's own."""

    def __init__(self, node: NodeClient) -> None:
        self.node = node
        state = reference_state()
        self.substitutions = [(state[key].encode(), node.rpc("getblockhash", height).encode())
                              for key, height in (("best", HEIGHT), ("h5", 5), ("genesis", 0))]

    def expected(self, name: str):
        recorded = transcript(name)
        body = recorded.body
        for old, new in self.substitutions:
            body = body.replace(old, new)
        return recorded, body

    def replay(self, test: SynchronousTestCase, name: str,
               normalize: Callable[[bytes], bytes] = lambda body: body) -> RawReply:
        recorded, body = self.expected(name)
        reply = exchange(self.node.rpcport, recorded.request)
        length = reply.header(b"Content-Length")
        if length is not None:
            test.assertEqual(int(length), len(reply.body), name)
        test.assertEqual(
            _normalized(reply.status_line, reply.headers, normalize(reply.body)),
            _normalized(recorded.status_line, recorded.headers, normalize(body)), name)
        return reply


class RPCTestCase(NodeTestCase):
    """Tests that get, on first use, the in-process node of the configuration they name."""

    def setUp(self) -> None:
        self._nodes: Dict[str, InProcessNode] = {}
        self._replayer: Optional[Replayer] = None

    def _node(self, name: str, args: Sequence[str],
              chain: Callable[[InProcessNode], None]) -> InProcessNode:
        if name not in self._nodes:
            self._nodes[name] = self.start_node(*args, chain=chain)
        return self._nodes[name]

    def main_node(self) -> InProcessNode:
        return self._node("main", MAIN_ARGS, reference_chain)

    def whitelist_node(self) -> InProcessNode:
        return self._node("whitelist", WHITELIST_ARGS, wallet_only)

    def open_node(self) -> InProcessNode:
        return self._node("open", open_args(), wallet_only)

    def replayer(self) -> Replayer:
        if self._replayer is None:
            self._replayer = Replayer(self.main_node())
        return self._replayer

    def post_json(self, body: bytes, path: bytes = b"/") -> RawReply:
        return exchange(self.main_node().rpcport, raw_post(body, path))


def process_node(test: SynchronousTestCase, args: Sequence[str],
                 build: Optional[Callable[[InProcessNode], None]] = None) -> NodeProcess:
    """A ``coind`` process with ``args``, on a copy of ``build``'s prepared datadir if given;
    killed after the test."""
    datadir = os.path.abspath(test.mktemp())
    if build is not None:
        shutil.copytree(prepared(build, args)[0], datadir,
                        ignore=shutil.ignore_patterns(".lock", "debug.log"))
    node = NodeProcess.start(datadir, args)
    test.addCleanup(node.kill)
    return node


ENVELOPE = (
    "rpc_01_single_v1_id_number", "rpc_02_single_v1_id_string", "rpc_03_single_no_id",
    "rpc_04_single_v2_id_number", "rpc_05_single_no_jsonrpc_field_no_params", "rpc_06_id_null",
    "rpc_07_id_object", "rpc_08_id_float", "rpc_30_extra_unknown_top_level_field",
    "rpc_31_with_content_type_header", "rpc_32_http10_request", "rpc_33_connection_close")
PARAMS = (
    "rpc_09_named_params_getblockhash", "rpc_10_named_params_unknown_name",
    "rpc_11_named_params_empty_object", "rpc_12_positional_params_getblockhash",
    "rpc_23_params_not_array_or_object", "rpc_24_getblockhash_wrong_type_string",
    "rpc_25_getblockhash_minus_1", "rpc_26_getblockhash_too_large",
    "rpc_27_getblockhash_too_many_params", "rpc_28_getblockhash_no_params",
    "rpc_29_getblockhash_float")
BATCHES = ("rpc_13_batch_3_one_failing", "rpc_14_batch_empty",
           "rpc_15_batch_with_non_object_and_unknown_method")
ERRORS = ("rpc_16_invalid_json", "rpc_17_body_json_string", "rpc_18_body_json_number",
          "rpc_19_empty_body", "rpc_20_unknown_method", "rpc_21_missing_method",
          "rpc_22_method_not_string")
HTTP = ("http_01_get_root_with_auth", "http_02_get_root_no_auth", "http_03_put_root",
        "http_04_post_unknown_path", "http_05_post_unknown_path_no_auth",
        "http_06_post_root_with_query")
WRONG_CREDENTIALS = ("auth_02_wrong_password", "auth_03_wrong_user", "auth_04_non_basic_scheme",
                     "auth_05_garbage_base64", "rpcauth_02_alice_wrong_password")
#: Recordings of methods other engineers add; replayed once the method is registered.
FAMILY_METHODS = (("rpcm_30_gobject", "gobject"), ("rpcm_33_gobject_nosuchsub", "gobject"),
                  ("rpcm_34_masternode", "masternode"),
                  ("rpcm_38_masternode_nosuchsub", "masternode"), ("rpcm_43_getinfo", "getinfo"))


class RecordingReplayTests(RPCTestCase):
    """Recorded requests, sent byte for byte over TCP, get the recorded replies back:
    status line, headers (Date value aside, in order) and body bytes."""

    def test_envelope(self) -> None:
        for name in ENVELOPE:
            self.replayer().replay(self, name)

    def test_params(self) -> None:
        for name in PARAMS:
            self.replayer().replay(self, name)

    def test_batches(self) -> None:
        for name in BATCHES:
            self.replayer().replay(self, name)

    def test_errors(self) -> None:
        for name in ERRORS:
            self.replayer().replay(self, name)

    def test_http_methods_and_paths(self) -> None:
        for name in HTTP:
            self.replayer().replay(self, name)

    def test_head_is_405_without_a_body(self) -> None:
        # doc/rpc.md: libevent sends the 405 text after a HEAD reply's headers (and then
        # stalls 2 s); this server sends status and headers only.
        recorded = transcript("http_07_head_root")
        reply = exchange(self.main_node().rpcport, recorded.request)
        self.assertLess(reply.elapsed, 1.0)
        self.assertEqual(_normalized(reply.status_line, reply.headers, reply.body),
                         _normalized(recorded.status_line, recorded.headers, b""))

    def test_authentication(self) -> None:
        reply = self.replayer().replay(self, "auth_01_missing_auth")
        self.assertLess(reply.elapsed, 0.2)
        for name in WRONG_CREDENTIALS:
            reply = self.replayer().replay(self, name)
            self.assertGreaterEqual(reply.elapsed, 0.25, name)
        for name in ("rpcauth_01_alice_correct_password", "rpcauth_03_rpcuser_still_works"):
            self.replayer().replay(self, name)

    def test_wallet_paths_without_wallets(self) -> None:
        # Non-wallet methods ignore the wallet named in the path; /wallet needs the slash.
        for name in ("wallet_03_post_wallet_unknown_nonwallet_method",
                     "wallet_04_post_wallet_no_slash", "mwallet_05_wallet_w2_getblockcount"):
            self.replayer().replay(self, name)

    def test_help_and_uptime(self) -> None:
        for name in ("rpcm_28_help_getblockhash", "rpcm_29_help_nosuchcmd"):
            self.replayer().replay(self, name)
        self.replayer().replay(self, "rpcm_50_uptime",
                          normalize=lambda body: re.sub(rb'"result":\d+,', b'"result":N,', body))

    def test_getmemoryinfo_shape(self) -> None:
        recorded = json.loads(transcript("rpcm_51_getmemoryinfo").body)["result"]
        reply = exchange(self.main_node().rpcport, transcript("rpcm_51_getmemoryinfo").request)
        self.assertEqual(reply.status, 200)
        result = reply.json()["result"]
        self.assertEqual(list(result), list(recorded))
        self.assertEqual(list(result["locked"]), list(recorded["locked"]))
        self.assertTrue(all(isinstance(v, int) for v in result["locked"].values()))

    def test_method_families_and_removed_methods(self) -> None:
        node = self.main_node()
        missing = sorted({method for _, method in FAMILY_METHODS if not has_method(node, method)})
        for name, method in FAMILY_METHODS:
            if method not in missing:
                self.replayer().replay(self, name)
        if missing:
            raise SkipTest("needs %s; added by the governance/masternode and Dash RPC work"
                           % ", ".join(missing))


# ------------------------------------------------------------------ authentication


class AuthenticationTests(RPCTestCase):
    def assert_401(self, reply: RawReply) -> None:
        self.assertEqual(reply.status, 401)
        self.assertEqual(reply.header(b"WWW-Authenticate"), b'Basic realm="jsonrpc"')
        self.assertEqual(reply.body, b"")

    def test_missing_credentials_answer_at_once(self) -> None:
        port = self.main_node().rpcport
        for _ in range(3):
            reply = exchange(port, raw_post(b'{"method":"uptime"}', authorization=None))
            self.assert_401(reply)
            self.assertLess(reply.elapsed, 0.2)

    def test_wrong_credentials_answer_after_250_ms(self) -> None:
        port = self.main_node().rpcport
        for authorization in (basic(USER, "wrong"), basic("nobody", PASSWORD), "Bearer x",
                              "Basic !!!", basic("alice", "wrong")):
            reply = exchange(port, raw_post(b'{"method":"uptime"}', authorization=authorization))
            self.assert_401(reply)
            self.assertGreaterEqual(reply.elapsed, 0.25, authorization)
            self.assertLess(reply.elapsed, 2.0, authorization)

    def test_wrong_credentials_do_not_block_others(self) -> None:
        # The 250 ms delay is per request, not a server-wide sleep: four wrong guesses
        # in flight do not hold up a good request.
        node = self.main_node()
        slow = [threading.Thread(target=exchange, args=(
            node.rpcport, raw_post(b'{"method":"uptime"}', authorization=basic(USER, "x%d" % n))))
            for n in range(8)]
        for thread in slow:
            thread.start()
        time.sleep(0.05)
        started = time.monotonic()
        self.assertEqual(node.rpc("getblockcount"), HEIGHT)
        # Eight refusals one after the other would hold it up 2 s; a loaded machine's
        # scheduling stays far below 1 s.
        self.assertLess(time.monotonic() - started, 1.0)
        for thread in slow:
            thread.join()

    def test_rpcauth_entry_from_the_script(self) -> None:
        node = self.open_node()
        password = rpcuser_script("alice")[1]
        reply = exchange(node.rpcport, raw_post(b'{"method":"getblockcount","id":1}',
                                                authorization=basic("alice", password)))
        self.assertEqual((reply.status, reply.body), (200, b'{"result":0,"error":null,"id":1}\n'))
        reply = exchange(node.rpcport, raw_post(b'{"method":"getblockcount","id":1}',
                                                authorization=basic("alice", password + "x")))
        self.assert_401(reply)
        self.assertGreaterEqual(reply.elapsed, 0.25)
        # -rpcuser/-rpcpassword still work alongside (rpcauth_03).
        self.assertEqual(node.rpc("getblockcount"), 0)
        # coin-cli with alice's credentials (cli_30, cli_31).
        result = node.cli("-rpcuser=alice", "-rpcpassword=" + password, "getblockcount",
                          auth=False)
        self.assertEqual((result.returncode, result.stdout, result.stderr), (0, "0\n", ""))
        result = node.cli("-rpcuser=alice", "-rpcpassword=wrong", "getblockcount", auth=False)
        self.assertEqual((result.returncode, result.stdout, result.stderr),
                         (1, "", "error: Authorization failed: Incorrect rpcuser or rpcpassword\n"))


# ------------------------------------------------------------------ whitelist


def call_as(node: NodeClient, credentials: Tuple[str, str], body: bytes,
            path: bytes = b"/") -> RawReply:
    return exchange(node.rpcport, raw_post(body, path, authorization=basic(*credentials)))


class WhitelistTests(RPCTestCase):
    def assert_403(self, reply: RawReply) -> None:
        self.assertEqual((reply.status_line, reply.body), (b"HTTP/1.1 403 Forbidden", b""))

    def test_listed_methods_work(self) -> None:
        node = self.whitelist_node()
        self.assertEqual(node.rpc("getblockcount"), 0)
        self.assertIn("uptime", node.rpc("help").splitlines())
        self.assertGreaterEqual(node.rpc("uptime"), 0)

    def test_entries_for_one_user_intersect(self) -> None:
        node = self.whitelist_node()
        # echo is in the first entry only, stop in the second only.
        self.assert_403(call_as(node, (USER, PASSWORD), b'{"method":"echo","params":[1]}'))
        self.assert_403(call_as(node, (USER, PASSWORD), b'{"method":"getblockhash","params":[0]}'))
        self.assert_403(call_as(node, (USER, PASSWORD), b'{"method":"nosuchmethod"}'))

    def test_unlisted_stop_is_not_run(self) -> None:
        node = self.whitelist_node()
        self.assert_403(call_as(node, (USER, PASSWORD), b'{"method":"stop","id":1}'))
        self.assert_403(call_as(node, (USER, PASSWORD),
                                b'[{"method":"getblockcount","id":1},{"method":"stop","id":2}]'))
        time.sleep(0.3)  # stop would end the process 50 ms after answering
        self.assertTrue(alive(node))

    def test_batches(self) -> None:
        node = self.whitelist_node()
        reply = call_as(node, (USER, PASSWORD),
                        b'[{"method":"getblockcount","id":1},{"method":"uptime","id":2}]')
        self.assertEqual(reply.status, 200)
        self.assertEqual([r["id"] for r in reply.json()], [1, 2])
        self.assert_403(call_as(node, (USER, PASSWORD),
                                b'[{"method":"getblockcount","id":1},{"method":"echo","id":2}]'))

    def test_user_without_entry_is_refused_everything(self) -> None:
        node = self.whitelist_node()
        for body in (b'{"method":"getblockcount"}', b'{"method":"help"}', b'[]',
                     b'{"method":"nosuchmethod"}'):
            self.assert_403(call_as(node, BOB, body))
        # A wrong password is still 401 (authentication comes first).
        reply = call_as(node, (BOB[0], "wrong"), b'{"method":"help"}')
        self.assertEqual(reply.status, 401)

    def test_cli_reports_403(self) -> None:
        result = self.whitelist_node().cli("echo", "x")
        self.assertEqual((result.returncode, result.stdout, result.stderr),
                         (1, "", "error: server returned HTTP error 403\n"))

    def test_whitelistdefault_0_lets_unlisted_users_call_anything(self) -> None:
        node = self.open_node()
        self.assertEqual(node.rpc("echo", "a", 1), ["a", 1])
        self.assertIn("uptime", node.rpc("help").splitlines())
        self.assertEqual(len(node.rpc("getblockhash", 0)), 64)
        alice = ("alice", rpcuser_script("alice")[1])
        self.assertEqual(call_as(node, alice, b'{"method":"uptime"}').status, 200)
        self.assertEqual(call_as(node, alice, b'{"method":"help"}').status, 403)


# ------------------------------------------------------------------ binding


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def _outside_address() -> Optional[str]:
    """This machine's address on its default route, if it has one besides loopback."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


class BindTests(SynchronousTestCase):
    def assert_loopback_only(self, node: NodeProcess) -> None:
        self.assertEqual(exchange(node.rpcport, raw_post(b'{"method":"uptime"}')).status, 200)
        log = debug_log(node)
        self.assertIn("Binding RPC on address 127.0.0.1 port %d" % node.rpcport, log)
        if _ipv6_loopback():
            self.assertIn("Binding RPC on address ::1 port %d" % node.rpcport, log)
            self.assertEqual(exchange(node.rpcport, raw_post(b'{"method":"uptime"}'),
                                      host="::1").status, 200)
        outside = _outside_address()
        if outside is not None:
            with self.assertRaises(ConnectionRefusedError):
                exchange(node.rpcport, raw_post(b'{"method":"uptime"}'), host=outside)
        self.assertEqual(len(re.findall("Binding RPC on address", log)),
                         2 if _ipv6_loopback() else 1)

    def test_default_binds_loopback(self) -> None:
        node = process_node(self, open_args())
        self.assert_loopback_only(node)
        self.assertNotIn("WARNING", debug_log(node))

    def test_rpcallowip_without_rpcbind_warns_and_binds_loopback(self) -> None:
        node = process_node(self, MAIN_ARGS)
        self.assertIn("WARNING: option -rpcallowip was specified without -rpcbind; this doesn't "
                      "usually make sense", debug_log(node))
        self.assert_loopback_only(node)

    def test_rpcbind_without_rpcallowip_is_ignored(self) -> None:
        node = process_node(self, WHITELIST_ARGS)
        self.assertIn("WARNING: option -rpcbind was ignored because -rpcallowip was not "
                      "specified, refusing to allow everyone to connect", debug_log(node))
        self.assert_loopback_only(node)

    def test_invalid_rpcallowip_stops_start_up(self) -> None:
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        result = subprocess.run(
            [sys.executable, "-m", "coin.tap", "-regtest", "-datadir=" + datadir,
             "-rpcport=%d" % free_port(), "-rpcuser=u", "-rpcpassword=p", "-printtoconsole=0",
             "-rpcallowip=1.2.3.4/99"],
            capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr,
                         "Error: Invalid -rpcallowip subnet specification: 1.2.3.4/99. Valid are "
                         "a single IP (e.g. 1.2.3.4), a network/netmask (e.g. "
                         "1.2.3.4/255.255.255.0) or a network/CIDR (e.g. 1.2.3.4/24).\n")


# ------------------------------------------------------------------ envelope


class EnvelopeTests(RPCTestCase):
    def test_batch_answers_each_request_in_order(self) -> None:
        reply = self.post_json(
            b'[{"method":"echo","params":["a"],"id":"s"},'
            b'{"method":"getblockhash","params":[-1],"id":2},'
            b'{"method":"nosuchmethod","id":null},'
            b'7,'
            b'{"method":"getblockcount","id":{"o":[1]}},'
            b'{"params":[],"id":5}]')
        self.assertEqual(reply.status, 200)
        self.assertEqual(reply.body, (
            b'[{"result":["a"],"error":null,"id":"s"},'
            b'{"result":null,"error":{"code":-8,"message":"Block height out of range"},"id":2},'
            b'{"result":null,"error":{"code":-32601,"message":"Method not found"},"id":null},'
            b'{"result":null,"error":{"code":-32600,"message":"Invalid Request object"},'
            b'"id":null},'
            b'{"result":111,"error":null,"id":{"o":[1]}},'
            b'{"result":null,"error":{"code":-32600,"message":"Missing method"},"id":5}]\n'))

    def test_id_comes_back_unchanged(self) -> None:
        for id_text in (b'"x y"', b'""', b'0', b'-3', b'1.50', b'1e-8', b'12345678901234567890',
                        b'null', b'true', b'{"a":[1,{"b":null}]}', b'[]'):
            reply = self.post_json(b'{"method":"uptime","id":' + id_text + b"}")
            self.assertEqual(reply.status, 200)
            self.assertTrue(reply.body.endswith(b',"error":null,"id":' + id_text + b"}\n"),
                            reply.body)
        reply = self.post_json(b'{"method":"uptime"}')
        self.assertTrue(reply.body.endswith(b',"id":null}\n'))

    def test_jsonrpc_field_is_ignored(self) -> None:
        for version in (b'"1.0"', b'"2.0"', b'2', b'null', b'"x"'):
            reply = self.post_json(b'{"jsonrpc":' + version + b',"method":"getblockcount","id":1}')
            self.assertEqual((reply.status, reply.body),
                             (200, b'{"result":111,"error":null,"id":1}\n'))
        reply = self.post_json(b'{"jsonrpc":"2.0","method":"nosuchmethod","id":1}')
        self.assertEqual(reply.json(), {"result": None, "error": {
            "code": -32601, "message": "Method not found"}, "id": 1})

    def test_named_params(self) -> None:
        node = self.main_node()
        self.assertEqual(node.rpc("getblockhash", height=5), node.rpc("getblockhash", 5))
        self.assertEqual(node.rpc("help", command="uptime"), node.rpc("help", "uptime"))
        reply = self.post_json(b'{"method":"getblockhash","params":{"x":1},"id":1}')
        self.assertEqual((reply.status, reply.json()["error"]),
                         (500, {"code": -8, "message": "Unknown named parameter x"}))

    def test_params_of_the_wrong_shape(self) -> None:
        for params in (b'"x"', b'5', b'true'):
            reply = self.post_json(b'{"method":"uptime","params":' + params + b',"id":1}')
            self.assertEqual((reply.status, reply.json()["error"]), (400, {
                "code": -32600, "message": "Params must be an array or object"}))
        reply = self.post_json(b'{"method":"uptime","params":null,"id":1}')
        self.assertEqual(reply.status, 200)
        reply = self.post_json(b'{"method":"getblockhash","params":["5"],"id":1}')
        self.assertEqual((reply.status, reply.json()["error"]), (500, {
            "code": -1, "message": "JSON value is not an integer as expected"}))

    def test_bodies_that_are_not_requests(self) -> None:
        for body in (b'{"method":', b"", b"{}x", b"\xff", b'{"method":"uptime"', b"NaN"):
            reply = self.post_json(body)
            self.assertEqual((reply.status, reply.body), (
                500, b'{"result":null,"error":{"code":-32700,"message":"Parse error"},'
                     b'"id":null}\n'), body)
        for body in (b'"uptime"', b"42", b"null", b"true"):
            reply = self.post_json(body)
            self.assertEqual((reply.status, reply.body), (
                500, b'{"result":null,"error":{"code":-32700,"message":"Top-level object parse '
                     b'error"},"id":null}\n'), body)

    def test_method_errors_and_statuses(self) -> None:
        reply = self.post_json(b'{"id":1}')
        self.assertEqual((reply.status, reply.json()["error"]),
                         (400, {"code": -32600, "message": "Missing method"}))
        reply = self.post_json(b'{"method":"nosuchmethod","id":1}')
        self.assertEqual((reply.status, reply.json()["error"]),
                         (404, {"code": -32601, "message": "Method not found"}))
        self.assertEqual(reply.header(b"Content-Type"), b"application/json")

    def test_only_post_on_rpc_paths(self) -> None:
        port = self.main_node().rpcport
        auth = b"Authorization: " + basic(USER, PASSWORD).encode() + b"\r\n"
        for method in (b"GET", b"PUT", b"HEAD"):
            for path in (b"/", b"/wallet/x", b"/wallet/"):
                reply = exchange(port, method + b" " + path + b" HTTP/1.1\r\nHost: x\r\n" + auth
                                 + b"Content-Length: 0\r\n\r\n")
                self.assertEqual(reply.status_line, b"HTTP/1.1 405 Method Not Allowed")
                self.assertEqual(reply.body, b"" if method == b"HEAD"
                                 else b"JSONRPC server handles only POST requests")

    def test_unknown_paths(self) -> None:
        for path in (b"/foo", b"/wallet", b"/?x=1", b"//", b"/walletx/"):
            reply = self.post_json(b'{"method":"uptime"}', path=path)
            self.assertEqual((reply.status, reply.body), (404, b""), path)

    def test_output_is_compact_and_ends_with_newline(self) -> None:
        reply = self.post_json(b'{ "method" : "echo" , "params" : [ {"a" : [1, 2], "b": "c d"} ] ,'
                          b' "id" : 1 }')
        self.assertEqual(reply.body,
                         b'{"result":[{"a":[1,2],"b":"c d"}],"error":null,"id":1}\n')
        reply = self.post_json(b'{"method":"getmemoryinfo","id":1}')
        self.assertTrue(reply.body.endswith(b"}\n"))
        self.assertNotIn(b": ", reply.body)
        self.assertNotIn(b", ", reply.body)

    def test_non_ascii_text_is_utf8(self) -> None:
        reply = self.post_json('{"method":"echo","params":["\u00e9\u20ac"],"id":1}'.encode())
        self.assertEqual(reply.body,
                         '{"result":["\u00e9\u20ac"],"error":null,"id":1}\n'.encode())


class AmountTests(RPCTestCase):
    def test_amounts_come_back_byte_identical(self) -> None:
        for number in (b"21000000.00000000", b"0.00000001", b"0.1", b"50.00000000", b"1e-8",
                       b"-0.0", b"123456789.12345678"):
            reply = self.post_json(b'{"method":"echojson","params":[' + number + b'],"id":1}')
            self.assertEqual(reply.body,
                             b'{"result":[' + number + b'],"error":null,"id":1}\n')


# ------------------------------------------------------------------ limits


class LimitTests(RPCTestCase):
    def test_body_over_32_mib_by_content_length(self) -> None:
        node = self.main_node()
        request = (b"POST / HTTP/1.1\r\nHost: x\r\nAuthorization: "
                   + basic(USER, PASSWORD).encode()
                   + b"\r\nContent-Length: %d\r\n\r\n{" % (32 * 1024 * 1024 + 1))
        reply = exchange(node.rpcport, request)
        self.assertEqual(reply.status, 413)
        self.assertEqual(reply.header(b"Connection"), b"close")
        self.assertLess(reply.elapsed, 1.0)
        self.assertTrue(alive(node))

    def test_batch_size(self) -> None:
        call = b'{"method":"uptime"}'
        reply = self.post_json(b"[" + b",".join([call] * 10_001) + b"]")
        self.assertEqual((reply.status, reply.json()["error"]), (400, {
            "code": -32600, "message": "Batch too large: at most 10000 requests"}))
        reply = self.post_json(b"[" + b",".join([call] * 10_000) + b"]")
        self.assertEqual(reply.status, 200)
        self.assertEqual(len(reply.json()), 10_000)

    def test_nesting(self) -> None:
        def nested(levels: int) -> bytes:
            # The object is level 1, params level 2.
            inner = b"[" * (levels - 2) + b"]" * (levels - 2)
            return b'{"method":"echo","params":[' + inner + b'],"id":1}'

        reply = self.post_json(nested(512))
        self.assertEqual(reply.status, 200)
        reply = self.post_json(nested(513))
        self.assertEqual((reply.status, reply.json()["error"]),
                         (500, {"code": -32700, "message": "Parse error"}))
        for body in (b"[" * 100_000, b"[" * 100_000 + b"]" * 100_000):
            reply = self.post_json(body)
            self.assertEqual((reply.status, reply.json()["error"]),
                             (500, {"code": -32700, "message": "Parse error"}))
        self.assertTrue(alive(self.main_node()))


# ------------------------------------------------------------------ wallet paths


class WalletPathTests(RPCTestCase):
    def test_non_wallet_methods_on_wallet_paths(self) -> None:
        for path in (b"/wallet/", b"/wallet/x", b"/wallet/w%32", b"/wallet/a/b"):
            reply = self.post_json(b'{"method":"getblockcount","id":1}', path=path)
            self.assertEqual((reply.status, reply.body),
                             (200, b'{"result":111,"error":null,"id":1}\n'), path)
        reply = self.post_json(b'[{"method":"getblockcount","id":1},{"method":"uptime","id":2}]',
                          path=b"/wallet/x")
        self.assertEqual([r["id"] for r in reply.json()], [1, 2])


# ------------------------------------------------------------------ coin-cli

#: cli_09/cli_26: getblockhash without its argument.
GETBLOCKHASH_HELP = json.loads(transcript("rpcm_28_help_getblockhash").body)["result"]
CONNECT_HINT = ("\n\nMake sure the coind server is running and that you are connecting to the "
                "correct RPC port.\n")


class CliTests(RPCTestCase):
    def cli(self, *args: str, stdin: Optional[str] = None,
            node: Optional[NodeClient] = None) -> Tuple[int, str, str]:
        result = (node or self.main_node()).cli(*args, stdin=stdin)
        return result.returncode, result.stdout, result.stderr

    def test_output_formatting(self) -> None:
        node = self.main_node()
        self.assertEqual(self.cli("getblockcount"), (0, "111\n", ""))
        self.assertEqual(self.cli("getbestblockhash"),
                         (0, node.rpc("getblockhash", HEIGHT) + "\n", ""))
        self.assertEqual(self.cli("help", "getblockhash"), (0, GETBLOCKHASH_HELP + "\n", ""))
        self.assertEqual(self.cli("echo", "a b", "1"), (0, '[\n  "a b",\n  "1"\n]\n', ""))
        self.assertEqual(self.cli("echojson", '{"a":[1,{"b":null}],"c":"x"}', "true"), (0, (
            '[\n  {\n    "a": [\n      1,\n      {\n        "b": null\n      }\n    ],\n'
            '    "c": "x"\n  },\n  true\n]\n'), ""))
        self.assertEqual(self.cli("verifychain", "1", "1"), (0, "true\n", ""))  # cli_27
        # A null result prints nothing at all (cli_21).
        self.assertEqual(self.cli("preciousblock", node.rpc("getbestblockhash")), (0, "", ""))

    def test_numbers_as_sent(self) -> None:
        self.assertEqual(self.cli("echojson", "0.1"), (0, "[\n  0.1\n]\n", ""))
        self.assertEqual(self.cli("echojson", "21000000.00000000", "0.00000001", "1e-8"),
                         (0, "[\n  21000000.00000000,\n  0.00000001,\n  1e-8\n]\n", ""))

    def test_named(self) -> None:
        node = self.main_node()
        self.assertEqual(self.cli("-named", "getblockhash", "height=5"),
                         (0, node.rpc("getblockhash", 5) + "\n", ""))
        self.assertEqual(self.cli("-named", "getblockhash", "foo=5"),  # cli_11
                         (8, "", "error code: -8\nerror message:\nUnknown named parameter foo\n"))

    def test_stdin(self) -> None:
        node = self.main_node()
        self.assertEqual(self.cli("-stdin", "getblockhash", stdin="5\n"),
                         (0, node.rpc("getblockhash", 5) + "\n", ""))
        self.assertEqual(self.cli("-stdin", "echo", stdin="a\nb c\n"),
                         (0, '[\n  "a",\n  "b c"\n]\n', ""))
        self.assertEqual(self.cli("-stdin", "getblockhash", stdin=""),  # cli_26
                         (1, "", "error code: -1\nerror message:\n" + GETBLOCKHASH_HELP + "\n"))

    def test_rpc_errors(self) -> None:
        self.assertEqual(self.cli("getblockhash", "-1"),  # cli_06
                         (8, "", "error code: -8\nerror message:\nBlock height out of range\n"))
        self.assertEqual(self.cli("nosuchmethod"),  # cli_07
                         (89, "", "error code: -32601\nerror message:\nMethod not found\n"))
        self.assertEqual(self.cli("getblockhash", "abc"),  # cli_08
                         (1, "", "error: Error parsing JSON:abc\n"))
        self.assertEqual(self.cli("getblockhash"),  # cli_09
                         (1, "", "error code: -1\nerror message:\n" + GETBLOCKHASH_HELP + "\n"))

    def test_rpcwallet(self) -> None:
        # -rpcwallet= posts to /wallet/, -rpcwallet=w 2 to /wallet/w%202; non-wallet
        # methods answer there as on /. A process: the -debug=http lines are its debug.log's.
        node = process_node(self, MAIN_ARGS, reference_chain)
        self.assertEqual(self.cli("-rpcwallet=", "getblockcount", node=node), (0, "111\n", ""))
        self.assertEqual(self.cli("-rpcwallet=w 2", "getblockcount", node=node), (0, "111\n", ""))
        deadline = time.monotonic() + 5
        while True:
            log = debug_log(node)
            if "request for /wallet/w%202 from" in log or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertIn("Received a POST request for /wallet/ from 127.0.0.1:", log)
        self.assertIn("Received a POST request for /wallet/w%202 from 127.0.0.1:", log)

    def test_wrong_password(self) -> None:  # cli_16
        result = self.main_node().cli("-rpcuser=u", "-rpcpassword=wrong", "getblockcount", auth=False)
        self.assertEqual((result.returncode, result.stdout, result.stderr),
                         (1, "", "error: Authorization failed: Incorrect rpcuser or rpcpassword\n"))

    def test_no_credentials_and_no_cookie(self) -> None:  # cli_17
        node = self.main_node()
        result = node.cli("getblockcount", auth=False)
        self.assertEqual((result.returncode, result.stdout), (1, ""))
        self.assertEqual(result.stderr, (
            "error: Could not locate RPC credentials. No authentication cookie could be found, "
            "and RPC password is not set.  See -rpcpassword and -stdinrpcpass.  Configuration "
            "file: (%s/coin.conf)\n" % node.datadir))

    def test_connection_refused(self) -> None:  # cli_18
        port = free_port()
        node = NodeProcess(self.mktemp(), port, [], (USER, PASSWORD))
        os.makedirs(node.datadir)
        result = node.cli("getblockcount")
        self.assertEqual((result.returncode, result.stdout, result.stderr), (
            1, "", "error: Could not connect to the server 127.0.0.1:%d%s" % (port, CONNECT_HINT)))

    def test_rpcclienttimeout(self) -> None:
        node = self.main_node()
        started = time.monotonic()
        result = node.cli("-rpcclienttimeout=1", "waitfornewblock")
        self.assertEqual((result.returncode, result.stdout, result.stderr), (
            1, "", 'error: Could not connect to the server 127.0.0.1:%d (error code 0 - "timeout '
                   'reached")%s' % (node.rpcport, CONNECT_HINT)))
        self.assertLess(time.monotonic() - started, 10)
        result = node.cli("-rpcclienttimeout=30", "waitfornewblock", "100")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout),
                         {"hash": node.rpc("getbestblockhash"), "height": HEIGHT})
        self.assertTrue(alive(node))

    def test_getinfo(self) -> None:
        node = self.main_node()
        if not has_method(node, "getnetworkinfo"):
            raise SkipTest("needs getnetworkinfo; added by the network RPC work")
        code, out, err = self.cli("-getinfo")
        self.assertEqual((code, err), (0, ""))
        info = json.loads(out)
        network = node.rpc("getnetworkinfo")
        # The default wallet is loaded: its fields come from getwalletinfo (cli_15).
        wallet = node.rpc("getwalletinfo")
        self.assertEqual(list(info)[:5],
                         ["version", "protocolversion", "walletversion", "balance", "blocks"])
        self.assertEqual((info["version"], info["blocks"], info["testnet"], info["walletversion"],
                          info["keypoolsize"], info["paytxfee"]),
                         (network["version"], HEIGHT, False, wallet["walletversion"],
                          wallet["keypoolsize"], wallet["paytxfee"]))
        self.assertTrue(out.startswith('{\n  "version": %d,\n' % network["version"]), out)

    def test_rpcwait_before_the_node_starts(self) -> None:
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        port = free_port()
        cli = subprocess.Popen(
            [sys.executable, "-m", "coincli", "-regtest", "-datadir=" + datadir,
             "-rpcport=%d" % port, "-rpcuser=u", "-rpcpassword=p", "-rpcwait", "getblockcount"],
            cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: cli.poll() is None and cli.kill())
        time.sleep(1.2)
        self.assertIsNone(cli.poll(), "coin-cli -rpcwait gave up before the node started")
        node = self.start_node("-rpcport=%d" % port, datadir=datadir)
        out, err = cli.communicate(timeout=60)
        self.assertEqual((cli.returncode, out, err), (0, "0\n", ""))
        node.stop()

    def test_rpcwait_waits_for_the_cookie(self) -> None:
        # No credentials: the cookie appears only when the starting node opens RPC.
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        port = free_port()
        cli = subprocess.Popen(
            [sys.executable, "-m", "coincli", "-regtest", "-datadir=" + datadir,
             "-rpcport=%d" % port, "-rpcwait", "getblockcount"],
            cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: cli.poll() is None and cli.kill())
        time.sleep(1.2)
        self.assertIsNone(cli.poll(), "coin-cli -rpcwait gave up before the cookie existed")
        node = self.start_node("-rpcport=%d" % port, credentials=None, datadir=datadir)
        out, err = cli.communicate(timeout=60)
        self.assertEqual((cli.returncode, out, err), (0, "0\n", ""))
        node.stop()
        # Without -rpcwait the missing cookie is still an immediate error (Core's text).
        result = subprocess.run(
            [sys.executable, "-m", "coincli", "-regtest", "-datadir=" + datadir,
             "-rpcport=%d" % port, "getblockcount"],
            cwd=ROOT, env=_env(), capture_output=True, text=True)
        self.assertEqual(result.returncode, 1)
        self.assertTrue(result.stderr.startswith("error: Could not locate RPC credentials."),
                        result.stderr)


# ------------------------------------------------------------------ concurrency


class ConcurrencyTests(RPCTestCase):
    def test_64_keepalive_connections(self) -> None:
        node = self.main_node()
        authorization = basic(USER, PASSWORD)
        statuses: List[int] = []
        problems: List[str] = []
        lock = threading.Lock()
        start = threading.Barrier(64)

        def client(n: int) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", node.rpcport, timeout=60)
            seen = []
            sockets = set()
            try:
                start.wait()
                for i in range(50):
                    method = "uptime" if i % 2 else "getblockcount"
                    conn.request("POST", "/", body=b'{"method":"%s","id":%d}' % (
                        method.encode(), i), headers={"Authorization": authorization})
                    sockets.add(id(conn.sock))
                    response = conn.getresponse()
                    body = response.read()
                    seen.append(response.status)
                    reply = json.loads(body)
                    if reply["id"] != i or reply["error"] is not None or (
                            method == "getblockcount" and reply["result"] != HEIGHT):
                        with lock:
                            problems.append("client %d call %d: %r" % (n, i, body))
                if len(sockets) != 1:
                    with lock:
                        problems.append("client %d reconnected %d times" % (n, len(sockets) - 1))
            except Exception as e:  # reported, not lost in the thread
                with lock:
                    problems.append("client %d: %r" % (n, e))
            finally:
                conn.close()
                with lock:
                    statuses.extend(seen)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(64)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        self.assertEqual(problems, [])
        self.assertEqual(len(statuses), 64 * 50)
        self.assertEqual([s for s in statuses if s != 200], [])
        self.assertTrue(alive(node))
