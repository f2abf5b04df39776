"""Front-end pieces without processes: request routing, the writer URL, the internal and
cookie credentials, noticing commits, and SO_REUSEPORT listeners."""

from __future__ import annotations

import base64
import json
import os
import tempfile
from typing import List, Tuple

from twisted.internet import reactor
from twisted.internet.defer import fail, succeed
from twisted.internet.protocol import Factory
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from coin.frontend.forward import Answer, WriterUnavailable, parse_writer_url
from coin.frontend.rpc import FrontendCore, called_methods, local_method_table
from coin.listeners import ListenerGroup
from coin.rpc.auth import Authenticator, Whitelist
from coin.rpc.errors import RPC_INVALID_ADDRESS_OR_KEY, RPCError
from coin.rpc.jsonrpc import JSONRPCCore, Warmup
from coin.rpc.registry import MethodTable, rpc_method
from coin.storage.database import open_database

from tests.rpchelpers import FakeNode, getblockcount, getblockhash


@rpc_method("getrawtransaction", category="rawtransactions")
def getrawtransaction(ctx):
    raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "No such mempool or blockchain transaction")


class FakeWriter:
    """Records forwarded requests; answers ``answer`` (or fails as unreachable)."""

    def __init__(self, answer: Answer | None = Answer(200, b"application/json", b"W\n")) -> None:
        self.answer = answer
        self.requests: List[Tuple[bytes, bytes, bytes]] = []

    def request(self, method: bytes, path: bytes, body: bytes = b"", authenticate: bool = True,
                content_type: bytes | None = None):
        self.requests.append((method, path, body))
        if self.answer is None:
            return fail(WriterUnavailable("writer http://127.0.0.1:1/ unreachable: refused"))
        return succeed(self.answer)


def frontend_core(writer: FakeWriter, whitelist: Whitelist = Whitelist()) -> FrontendCore:
    methods = MethodTable([getblockcount, getblockhash, getrawtransaction])
    local = JSONRPCCore(local_method_table(methods, ["getblockcount", "getblockhash",
                                                     "getrawtransaction", "absent"]),
                        FakeNode(), whitelist=whitelist, warmup=Warmup(None), clock=Clock())
    return FrontendCore(local, writer, whitelist)


class RoutingTests(SynchronousTestCase):
    def answer(self, core: FrontendCore, body: bytes, user: str = "u", wallet=None):
        return self.successResultOf(core.handle(body, user, wallet))

    def test_called_methods(self) -> None:
        self.assertEqual(called_methods(b'{"method":"a"}'), ["a"])
        self.assertEqual(called_methods(b'[{"method":"a"},{"method":"b"}]'), ["a", "b"])
        self.assertEqual(called_methods(b"[]"), [])
        for body in (b"{", b'"x"', b'{"method":1}', b'[1,{"method":"a"}]', b"[" * 100000):
            self.assertIsNone(called_methods(body), body[:10])

    def test_local_calls_and_malformed_bodies_stay_here(self) -> None:
        writer = FakeWriter()
        core = frontend_core(writer)
        self.assertEqual(json.loads(self.answer(core, b'{"method":"getblockcount"}').body)
                         ["result"], 111)
        self.assertEqual(len(json.loads(self.answer(
            core, b'[{"method":"getblockcount"},{"method":"getblockhash","params":[0]}]').body)),
            2)
        for body in (b"[]", b"{", b'{"method":7}'):
            self.answer(core, body)
        self.assertEqual(writer.requests, [])

    def test_any_other_call_forwards_the_whole_body(self) -> None:
        writer = FakeWriter()
        core = frontend_core(writer)
        batch = b'[{"method":"getblockcount"},{"method":"getmempoolinfo"}]'
        reply = self.answer(core, batch)
        self.assertEqual((reply.status, reply.body, reply.content_type),
                         (200, b"W\n", b"application/json"))
        self.answer(core, b'{"method":"getblockcount"}', wallet="w 1/é")
        self.assertEqual(writer.requests, [(b"POST", b"/", batch),
                                           (b"POST", b"/wallet/w%201%2F%C3%A9",
                                            b'{"method":"getblockcount"}')])

    def test_a_transaction_not_found_here_is_asked_of_the_writer(self) -> None:
        writer = FakeWriter()
        body = b'{"method":"getrawtransaction","id":1}'
        self.assertEqual(self.answer(frontend_core(writer), body).body, b"W\n")
        self.assertEqual(writer.requests, [(b"POST", b"/", body)])

    def test_the_whitelist_is_checked_before_forwarding(self) -> None:
        writer = FakeWriter()
        core = frontend_core(writer, Whitelist(["u:getblockcount"]))
        self.assertEqual(self.answer(core, b'{"method":"getmempoolinfo"}').status, 403)
        self.assertEqual(self.answer(core, b'[{"method":"getblockcount"},'
                                           b'{"method":"getmempoolinfo"}]').status, 403)
        self.assertEqual(writer.requests, [])

    def test_writer_unreachable_is_minus_28(self) -> None:
        reply = self.answer(frontend_core(FakeWriter(None)), b'{"method":"getmempoolinfo"}')
        error = json.loads(reply.body)["error"]
        self.assertEqual((reply.status, error["code"]), (500, -28))
        self.assertIn("unreachable", error["message"])

    def test_local_table_keeps_the_known_names(self) -> None:
        table = local_method_table(MethodTable([getblockcount]), ["getblockcount", "nosuch"])
        self.assertEqual([m.name for m in table], ["getblockcount"])


class WriterURLTests(SynchronousTestCase):
    def test_parse(self) -> None:
        self.assertEqual(parse_writer_url("http://u:p%40ss@127.0.0.1:8332/"),
                         (b"http://127.0.0.1:8332", ("u", "p@ss")))
        self.assertEqual(parse_writer_url("http://[::1]:8332"), (b"http://[::1]:8332", None))
        for bad in ("https://h:1/", "http://h/", "127.0.0.1:8332", "http://:1/"):
            self.assertRaises(ValueError, parse_writer_url, bad)


class CredentialTests(SynchronousTestCase):
    def test_internal_credential_and_the_writers_cookie(self) -> None:
        auth = Authenticator(("u", "p"))
        auth.add_credential("__worker__", "secret")
        header = b"Basic " + base64.b64encode(b"__worker__:secret")
        self.assertEqual(auth.authenticate(header), "__worker__")
        self.assertIsNone(auth.authenticate(b"Basic " + base64.b64encode(b"__worker__:x")))
        path = os.path.join(tempfile.mkdtemp(), ".cookie")
        with open(path, "w") as f:
            f.write("__cookie__:abc")
        reader = Authenticator(None)
        reader.read_cookie(path)
        self.assertEqual(reader.authenticate(b"Basic " + base64.b64encode(b"__cookie__:abc")),
                         "__cookie__")
        self.assertIsNone(reader.cookie_path)  # not this process's to delete


class CommitWatchTests(SynchronousTestCase):
    def test_changed_exactly_after_another_connections_commit(self) -> None:
        from coin.storage.commits import CommitWatch
        from coin.storage import chainmeta

        engine = open_database(os.path.join(tempfile.mkdtemp(), "c.sqlite"))
        self.addCleanup(engine.dispose)
        watch = CommitWatch(engine)
        self.addCleanup(watch.close)
        self.assertTrue(watch.changed())
        self.assertFalse(watch.changed())
        with engine.begin() as conn:
            chainmeta.set_best_block_txn(conn, b"\x01" * 32)
        self.assertTrue(watch.changed())
        self.assertFalse(watch.changed())
        with engine.connect() as conn:
            chainmeta.get_best_block_txn(conn)  # reads are no commits
        self.assertFalse(watch.changed())


class ReusePortTests(SynchronousTestCase):
    def test_two_groups_share_a_port_only_with_reuse_port(self) -> None:
        first = ListenerGroup(reactor, Factory(), [("127.0.0.1", 0)], reuse_port=True)
        first.privilegedStartService()
        self.addCleanup(first.close)
        port = first.addresses[0][1]
        second = ListenerGroup(reactor, Factory(), [("127.0.0.1", port)], reuse_port=True)
        second.privilegedStartService()
        self.addCleanup(second.close)
        self.assertEqual(second.addresses, [("127.0.0.1", port)])
        plain = ListenerGroup(reactor, Factory(), [("127.0.0.1", port)])
        plain.privilegedStartService()
        self.assertEqual(plain.addresses, [])
