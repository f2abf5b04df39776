"""ZeroMQ notifications of a real node, received by pyzmq SUB sockets as a Core user's
program receives them: topics, bodies and per-topic sequence numbers across a reorg, the
governance topics, getzmqnotifications and bad option values."""

from __future__ import annotations

import os
from typing import Dict, List, Sequence, Tuple

import zmq

from coin.governance.object import GovernanceObject
from coin.primitives.serialize import ByteReader
from tests.functional.test_governance import TIME, funded_wallet
from tests.govhelpers import proposal_hex
from tests.functional.test_daemon import run_coind
from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import MINER_ADDRESS, NodeProcess, free_port

#: How long a test waits for one message.
RECEIVE_MS = 10_000

Message = Tuple[str, bytes, int]


def start_with_conf(case: NodeTestCase, lines: Sequence[str], chain=funded_wallet) -> InProcessNode:
    """A node on a copy of the funded-wallet chain with ``lines`` in its coin.conf (the
    command line stays the one the chain was prepared with)."""
    datadir = os.path.abspath(case.mktemp())
    os.makedirs(datadir)
    with open(os.path.join(datadir, "coin.conf"), "w") as f:
        f.write("".join(line + "\n" for line in lines))
    return case.start_node("-connect=0", "-listen=0", chain=chain, datadir=datadir)


class Subscriber:
    """A SUB socket on every topic of one address."""

    def __init__(self, context: zmq.Context, address: str) -> None:
        self.socket = context.socket(zmq.SUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.SUBSCRIBE, b"")
        self.socket.connect(address)

    def receive(self) -> Message:
        if not self.socket.poll(RECEIVE_MS):
            raise AssertionError("no ZeroMQ message within %d ms" % RECEIVE_MS)
        topic, body, sequence = self.socket.recv_multipart()
        assert len(sequence) == 4
        return topic.decode(), body, int.from_bytes(sequence, "little")

    def receive_n(self, count: int) -> List[Message]:
        return [self.receive() for _ in range(count)]

    def quiet(self) -> bool:
        return not self.socket.poll(300)


class ZmqTestCase(NodeTestCase):
    def setUp(self) -> None:
        self.context = zmq.Context()

    def tearDown(self) -> None:
        self.context.destroy(linger=0)

    def subscribe(self, node: InProcessNode, *subscribers: Subscriber) -> None:
        """Mine until every subscriber hears a block (ZeroMQ's slow joiner: what is sent
        before the connection is up is lost), then drain what is pending."""
        for subscriber in subscribers:
            while True:
                node.rpc("generatetoaddress", 1, node.state)
                if subscriber.socket.poll(300):
                    break
        for subscriber in subscribers:
            while not subscriber.quiet():
                subscriber.receive()


class ReorgTests(ZmqTestCase):
    def test_every_topic_across_a_reorg(self) -> None:
        hashes, raws = "tcp://127.0.0.1:%d" % free_port(), "tcp://127.0.0.1:%d" % free_port()
        node = start_with_conf(self, ["zmqpubhashblock=" + hashes, "zmqpubhashtx=" + hashes,
                                      "zmqpubrawblock=" + raws, "zmqpubrawtx=" + raws])
        hash_sub, raw_sub = Subscriber(self.context, hashes), Subscriber(self.context, raws)
        self.subscribe(node, hash_sub, raw_sub)
        seen: List[Message] = []
        raw_seen: List[Message] = []

        def expect(events: List[Tuple[str, str]]) -> None:
            """``events``: (kind, hash hex) in order; kind "tx" or "block"."""
            got = hash_sub.receive_n(len(events))
            raw = raw_sub.receive_n(len(events))
            self.assertEqual([(topic, body.hex()) for topic, body, _ in got],
                             [("hash" + kind, ident) for kind, ident in events])
            bodies = [raw_txs.get(ident) or node.rpc("getrawtransaction", ident) if kind == "tx"
                      else node.rpc("getblock", ident, 0) for kind, ident in events]
            self.assertEqual([(topic, body.hex()) for topic, body, _ in raw],
                             [("raw" + kind, body) for (kind, _), body in zip(events, bodies)])
            seen.extend(got)
            raw_seen.extend(raw)

        raw_txs: Dict[str, str] = {}

        def txs(block_hash: str) -> List[Tuple[str, str]]:
            """The block's transactions (their raw forms kept for after a disconnect)."""
            found = node.rpc("getblock", block_hash, 2)["tx"]
            raw_txs.update((tx["txid"], tx["hex"]) for tx in found)
            return [("tx", tx["txid"]) for tx in found]

        def block(block_hash: str) -> List[Tuple[str, str]]:
            """A connected block: each of its transactions, then the block."""
            return txs(block_hash) + [("block", block_hash)]

        txid = node.rpc("sendtoaddress", node.rpc("getnewaddress"), 1)
        expect([("tx", txid)])                                    # pool entry
        (first,) = node.rpc("generatetoaddress", 1, node.state)
        self.assertIn(txid, node.rpc("getblock", first)["tx"])
        expect(block(first))
        # invalidateblock: the block's transactions are announced (Core's BlockDisconnected),
        # then the one the pool takes back; no block (no new tip was connected).
        node.rpc("invalidateblock", first)
        expect(txs(first) + [("tx", txid)])
        # A longer branch: each block and its transactions, the pool's again included.
        # (Paid elsewhere: the same template in the same second would be the invalid block.)
        branch = node.rpc("generatetoaddress", 2, node.rpc("getnewaddress"))
        self.assertIn(txid, node.rpc("getblock", branch[0])["tx"])
        expect(block(branch[0]) + block(branch[1]))
        self.assertTrue(hash_sub.quiet() and raw_sub.quiet())

        # Each topic counts its own messages, with no gap, on either socket.
        for messages in (seen, raw_seen):
            by_topic: Dict[str, List[int]] = {}
            for topic, _, sequence in messages:
                by_topic.setdefault(topic, []).append(sequence)
            for topic, sequences in by_topic.items():
                self.assertEqual(sequences, list(range(sequences[0], sequences[0] + len(sequences))),
                                 topic)


class GovernanceTopicTests(ZmqTestCase):
    def test_object_topics_on_submission(self) -> None:
        address = "tcp://127.0.0.1:%d" % free_port()
        node = start_with_conf(self, ["zmqpubhashblock=" + address,
                                      "zmqpubhashgovernanceobject=" + address,
                                      "zmqpubrawgovernanceobject=" + address])
        subscriber = Subscriber(self.context, address)
        self.subscribe(node, subscriber)
        data = proposal_hex(node.state)
        fee_txid = node.rpc("gobject", "prepare", "0", "1", TIME, data)
        node.rpc("generatetoaddress", 1, node.state)
        self.assertEqual(subscriber.receive()[0], "hashblock")
        object_hash = node.rpc("gobject", "submit", "0", "1", TIME, data, fee_txid)
        (topic, body, _), (raw_topic, raw, _) = subscriber.receive_n(2)
        self.assertEqual((topic, body.hex()), ("hashgovernanceobject", object_hash))
        self.assertEqual(raw_topic, "rawgovernanceobject")
        obj = GovernanceObject.read(ByteReader(raw))
        self.assertEqual((obj.hash[::-1].hex(), obj.collateral_hash[::-1].hex(), obj.data_hex),
                         (object_hash, fee_txid, data))


class OptionTests(ZmqTestCase):
    def test_getzmqnotifications_shares_an_address(self) -> None:
        one, two = "tcp://127.0.0.1:%d" % free_port(), "tcp://127.0.0.1:%d" % free_port()
        node = start_with_conf(self, ["zmqpubrawtx=" + one, "zmqpubhashblock=" + one,
                                      "zmqpubhashblockhwm=5", "zmqpubrawblock=" + two,
                                      "zmqpubrawblockhwm=-1"])
        self.assertEqual(node.rpc("getzmqnotifications"), [
            {"type": "pubhashblock", "address": one, "hwm": 5},
            {"type": "pubrawblock", "address": two, "hwm": 1000},   # negative: the default
            {"type": "pubrawtx", "address": one, "hwm": 1000},
        ])
        self.assertEqual(node.cli("getzmqnotifications").returncode, 0)

    def test_an_address_that_cannot_bind_turns_zmq_off(self) -> None:
        """Core logs the bind failure and runs on without ZeroMQ."""
        node = start_with_conf(self, ["zmqpubhashblock=tcp://127.0.0.1:%d" % free_port(),
                                      "zmqpubhashtx=nonsense"])
        self.assertEqual(node.rpc("getzmqnotifications"), [])
        node.rpc("generatetoaddress", 1, node.state)
        with open(os.path.join(node.net_datadir, "debug.log")) as f:
            self.assertIn("zmq: Error: Failed to bind address nonsense", f.read())

    def test_no_zmq_no_notifications(self) -> None:
        node = start_with_conf(self, [])
        self.assertEqual(node.rpc("getzmqnotifications"), [])


class ProcessTests(ZmqTestCase):
    """``coind`` as a user starts it: the publisher lives in the process that serves."""

    def test_coind_publishes_and_refuses_instantsend_topics(self) -> None:
        address = "tcp://127.0.0.1:%d" % free_port()
        node = NodeProcess.start(self.mktemp(), ["-connect=0", "-listen=0",
                                                 "-zmqpubhashblock=" + address,
                                                 "-zmqpubrawblock=" + address])
        self.addCleanup(node.kill)
        subscriber = Subscriber(self.context, address)
        while not subscriber.socket.poll(300):
            node.rpc("generatetoaddress", 1, MINER_ADDRESS)
        while not subscriber.quiet():
            subscriber.receive()
        (mined,) = node.rpc("generatetoaddress", 1, MINER_ADDRESS)
        (topic, body, sequence), (raw_topic, raw, raw_sequence) = subscriber.receive_n(2)
        self.assertEqual((topic, body.hex(), raw_topic, raw.hex()),
                         ("hashblock", mined, "rawblock", node.rpc("getblock", mined, 0)))
        self.assertEqual(sequence, raw_sequence)  # as many blocks announced on each topic
        self.assertEqual(node.stop(), 0)

        result = run_coind("-regtest", "-datadir=" + node.datadir,
                           "-zmqpubhashtxlock=" + address)
        self.assertEqual((result.returncode, result.stderr),
                         (1, "Error: -zmqpubhashtxlock is not supported by this node: it has no "
                          "InstantSend\n"))
