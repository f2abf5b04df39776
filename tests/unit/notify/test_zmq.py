"""The ZeroMQ publisher on loopback sockets: framing, per-topic sequences, shared sockets,
options, and a publisher that never waits for a subscriber that does not read."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import List, Tuple

import zmq
from twisted.trial.unittest import TestCase

from coin.config.args import Config
from coin.config.node import node_options
from coin.governance.vote import Vote
from coin.notify.service import NotifyService
from coin.notify.zmq import DEFAULT_HWM, Notifier, ZmqPublisher, notifiers_from_config
from coin.primitives.transaction import OutPoint
from tests.nodeharness import ROOT, _env, free_port


def address() -> str:
    return "tcp://127.0.0.1:%d" % free_port()


class PublisherCase(TestCase):
    def setUp(self) -> None:
        self.context = zmq.Context()
        self.addCleanup(self.context.destroy, 0)

    def start(self, publisher: ZmqPublisher) -> ZmqPublisher:
        self.assertTrue(publisher.start())
        self.addCleanup(publisher.stop)
        return publisher

    def subscriber(self, where: str) -> zmq.Socket:
        """A SUB socket that has heard ``where``'s publisher (slow joiner handled by probing)."""
        socket = self.context.socket(zmq.SUB)
        socket.setsockopt(zmq.SUBSCRIBE, b"")
        socket.connect(where)
        return socket

    def wait_joined(self, publisher: ZmqPublisher, topic: str, socket: zmq.Socket) -> None:
        while True:
            publisher.publish(topic, lambda: b"probe")
            if socket.poll(200):
                break
        while socket.poll(200):
            socket.recv_multipart()

    def receive(self, socket: zmq.Socket, count: int) -> List[Tuple[bytes, bytes, int]]:
        found = []
        for _ in range(count):
            self.assertTrue(socket.poll(5000), "a message")
            topic, body, sequence = socket.recv_multipart()
            found.append((topic, body, int.from_bytes(sequence, "little")))
        return found


class PublisherTests(PublisherCase):
    def test_topics_on_one_address_share_a_socket_and_count_apart(self) -> None:
        where = address()
        publisher = self.start(ZmqPublisher([Notifier("hashblock", where), Notifier("hashtx", where)]))
        self.assertIs(publisher.notifiers[0].socket, publisher.notifiers[1].socket)
        socket = self.subscriber(where)
        self.wait_joined(publisher, "hashblock", socket)
        before = publisher.notifiers[0].sequence
        publisher.publish("hashtx", lambda: b"t1")
        publisher.publish("hashblock", lambda: b"b1")
        publisher.publish("hashtx", lambda: b"t2")
        publisher.publish("rawtx", lambda: b"nobody asked")
        self.assertEqual(self.receive(socket, 3), [
            (b"hashtx", b"t1", 0), (b"hashblock", b"b1", before), (b"hashtx", b"t2", 1)])
        self.assertFalse(socket.poll(200))

    def test_sequence_wraps_at_32_bits(self) -> None:
        where = address()
        publisher = self.start(ZmqPublisher([Notifier("rawtx", where)]))
        socket = self.subscriber(where)
        self.wait_joined(publisher, "rawtx", socket)
        publisher.notifiers[0].sequence = 2 ** 32 - 1
        publisher.publish("rawtx", lambda: b"a")
        publisher.publish("rawtx", lambda: b"b")
        self.assertEqual([s for _, _, s in self.receive(socket, 2)], [2 ** 32 - 1, 0])

    def test_a_subscriber_that_does_not_read_loses_messages_not_the_node_time(self) -> None:
        where = address()
        publisher = self.start(ZmqPublisher([Notifier("rawtx", where, hwm=10)]))
        socket = self.subscriber(where)
        socket.setsockopt(zmq.RCVHWM, 10)
        self.wait_joined(publisher, "rawtx", socket)
        body = b"x" * 1000
        # The caller's CPU time stays small (bodies are built on the publisher thread), and
        # it never waits for the subscriber: wall time has a bound a loaded machine keeps too.
        started, cpu = time.monotonic(), time.thread_time()
        for _ in range(20_000):
            publisher.publish("rawtx", lambda: body)
        self.assertLess(time.thread_time() - cpu, 2.0)
        self.assertLess(time.monotonic() - started, 30.0)
        publisher.stop()  # everything queued has been handed to ZeroMQ
        received = 0
        while socket.poll(300):
            socket.recv_multipart()
            received += 1
        self.assertGreater(received, 0)
        self.assertLess(received, 20_000)

    def test_an_address_that_cannot_bind_disables_every_notifier(self) -> None:
        publisher = ZmqPublisher([Notifier("hashblock", address()), Notifier("hashtx", "bad")])
        self.assertFalse(publisher.start())
        self.assertEqual(publisher.notifiers, [])
        publisher.publish("hashblock", lambda: b"ignored")
        self.assertFalse(publisher.active)


class LazyImportTests(TestCase):
    def test_a_node_without_zmqpub_never_imports_pyzmq(self) -> None:
        """pyzmq costs every ``coind`` start about 10 ms: only a -zmqpub* publisher loads it."""
        script = ("import sys\n"
                  "from coin.config.args import Config\n"
                  "from coin.config.node import node_options\n"
                  "import coin.service\n"
                  "from coin.notify.service import NotifyService\n"
                  "notify = NotifyService(Config(node_options(), {}), reactor=None)\n"
                  "assert not notify.zmq.start()\n"
                  "print('zmq' in sys.modules)\n")
        found = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=_env(),
                               capture_output=True, text=True, check=True)
        self.assertEqual(found.stdout, "False\n")


class OptionTests(TestCase):
    def config(self, *argv: str) -> Config:
        config = Config(node_options(), {})
        config.parse_command_line(list(argv))
        return config

    def test_notifiers_in_core_order_with_their_hwm(self) -> None:
        found = notifiers_from_config(self.config(
            "-zmqpubrawtx=tcp://127.0.0.1:1", "-zmqpubhashgovernancevote=tcp://127.0.0.1:2",
            "-zmqpubhashblock=tcp://127.0.0.1:1", "-zmqpubrawtxhwm=0",
            "-zmqpubhashblockhwm=-5", "-nozmqpubhashtx"))
        self.assertEqual([n.describe() for n in found], [
            {"type": "pubhashblock", "address": "tcp://127.0.0.1:1", "hwm": DEFAULT_HWM},
            {"type": "pubhashgovernancevote", "address": "tcp://127.0.0.1:2", "hwm": DEFAULT_HWM},
            {"type": "pubrawtx", "address": "tcp://127.0.0.1:1", "hwm": 0},
        ])

    def test_instantsend_topics_are_refused(self) -> None:
        option = node_options()["zmqpubhashtxlock"]
        self.assertEqual(option.refused, "it has no InstantSend")


class GovernanceVoteTests(PublisherCase):
    def test_hash_and_raw_vote(self) -> None:
        where = address()
        config = Config(node_options(), {})
        config.parse_command_line(["-zmqpubhashgovernancevote=" + where,
                                   "-zmqpubrawgovernancevote=" + where])
        notify = NotifyService(config, reactor=None)
        self.start(notify.zmq)
        socket = self.subscriber(where)
        self.wait_joined(notify.zmq, "hashgovernancevote", socket)
        vote = Vote(OutPoint(b"\x01" * 32, 0), b"\x02" * 32, 1, 1, 1700000000, b"\x03" * 65)
        notify.governance_vote(vote)
        (topic, body, _), (raw_topic, raw, _) = self.receive(socket, 2)
        self.assertEqual((topic, body), (b"hashgovernancevote", vote.hash[::-1]))
        self.assertEqual((raw_topic, raw), (b"rawgovernancevote", vote.serialize()))
