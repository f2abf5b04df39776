"""ZeroMQ publishers: Core 0.17's ``-zmqpub<topic>=<address>`` and Dash 0.12.3's governance topics.

Each message is three frames, as Core sends them: the topic, the body, and the topic's own
sequence number (4 bytes, little-endian, from 0, wrapping at 2**32).  Topics configured on the
same address share one PUB socket (the first topic's high water mark applies), as in Core.

Publishing never blocks validation: callers (the validation worker, the reactor) only put
the event on a queue; one publisher thread owns the sockets, builds the bodies and sends
with ``NOBLOCK``.  A subscriber that falls behind loses messages at the high water mark
(ZeroMQ drops them for that subscriber), and so does a queue that is full.
"""

from __future__ import annotations

import queue
import struct
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple

from twisted.logger import Logger

from coin.config.args import Config
from coin.notify import DEFAULT_HWM, TOPICS

log = Logger()

#: Events waiting for the publisher thread; beyond this they are dropped (and counted).
MAX_QUEUED = 200_000

_STOP = object()

if TYPE_CHECKING:
    import zmq
else:
    #: pyzmq, imported by :func:`_import_zmq` when a publisher starts: a node without
    #: -zmqpub* never loads it (about 10 ms of every start).
    zmq: Any = None

#: Frame flags, set with ``zmq``: every frame but the last says "more"; none ever waits.
_MORE = _LAST = 0
_pack_sequence = struct.Struct("<I").pack


def _import_zmq() -> None:
    global zmq, _MORE, _LAST
    if zmq is None:
        import zmq as module
        _MORE = module.SNDMORE | module.NOBLOCK
        _LAST = module.NOBLOCK
        zmq = module


class Notifier:
    """One ``-zmqpub<topic>=<address>``: what getzmqnotifications lists."""

    __slots__ = ("topic", "address", "hwm", "sequence", "socket", "_topic_frame")

    def __init__(self, topic: str, address: str, hwm: int = DEFAULT_HWM) -> None:
        self.topic = topic
        self.address = address
        self.hwm = hwm
        #: The next message's sequence number (Core's nSequence).
        self.sequence = 0
        self.socket: Optional[zmq.Socket] = None
        self._topic_frame = topic.encode()

    def describe(self) -> Dict[str, object]:
        """getzmqnotifications' entry (``hwm`` as Core 0.18 shows it)."""
        return {"type": "pub" + self.topic, "address": self.address, "hwm": self.hwm}

    def send(self, body: bytes) -> None:
        """One message; only on the publisher thread.  Three plain sends, not
        ``send_multipart`` (a fifth of the Python time per message, measured)."""
        socket = self.socket
        assert socket is not None
        try:
            socket.send(self._topic_frame, _MORE)
            socket.send(body, _MORE)
            socket.send(_pack_sequence(self.sequence), _LAST)
        except zmq.ZMQError as e:
            log.debug("zmq: sending {topic} failed: {error}", topic=self.topic, error=e)
            return
        self.sequence = (self.sequence + 1) & 0xFFFFFFFF


def notifiers_from_config(config: Config) -> List[Notifier]:
    """The notifiers the options ask for, in Core's order; a negative hwm keeps the default
    (Core's SetOutboundMessageHighWaterMark ignores it)."""
    found = []
    for topic in TOPICS:
        address = config.get("zmqpub" + topic)
        if not address or address == "0":
            continue
        hwm = config.get_int("zmqpub%shwm" % topic, DEFAULT_HWM)
        found.append(Notifier(topic, address, hwm if hwm is not None and hwm >= 0 else DEFAULT_HWM))
    return found


class ZmqPublisher:
    """The node's notifiers, their sockets and the thread that sends on them.

    :meth:`start` binds (on the calling thread, so a bad address is known at once) and
    starts the thread; :meth:`publish` may be called from any thread.
    """

    def __init__(self, notifiers: Iterable[Notifier], max_queued: int = MAX_QUEUED) -> None:
        self.notifiers: List[Notifier] = list(notifiers)
        self._by_topic: Dict[str, List[Notifier]] = {}
        for notifier in self.notifiers:
            self._by_topic.setdefault(notifier.topic, []).append(notifier)
        self._queue: "queue.Queue" = queue.Queue(max_queued)
        self._context: Optional[zmq.Context] = None
        self._thread: Optional[threading.Thread] = None
        #: Events dropped because the queue was full.
        self.dropped = 0

    def wants(self, topic: str) -> bool:
        return topic in self._by_topic

    @property
    def active(self) -> bool:
        return self._thread is not None

    def start(self) -> bool:
        """Bind every address; on any failure nothing is published (Core disables ZMQ then,
        the node runs on) and False is returned."""
        if not self.notifiers:
            return False
        _import_zmq()
        self._context = zmq.Context()
        sockets: Dict[str, zmq.Socket] = {}
        try:
            for notifier in self.notifiers:
                socket = sockets.get(notifier.address)
                if socket is None:
                    socket = self._context.socket(zmq.PUB)
                    socket.setsockopt(zmq.SNDHWM, notifier.hwm)
                    socket.setsockopt(zmq.LINGER, 0)
                    sockets[notifier.address] = socket
                    socket.bind(notifier.address)
                    log.info("zmq: Outbound message high water mark for {topic} at {address} "
                             "is {hwm}", topic=notifier.topic, address=notifier.address,
                             hwm=notifier.hwm)
                notifier.socket = socket
        except zmq.ZMQError as e:
            log.error("zmq: Error: Failed to bind address {address}: {error}; ZeroMQ "
                      "notifications are off", address=notifier.address, error=e)
            self._close(sockets.values())
            self.notifiers = []
            self._by_topic = {}
            return False
        self._thread = threading.Thread(target=self._run, args=(list(sockets.values()),),
                                        name="zmq-publisher", daemon=True)
        self._thread.start()
        return True

    def publish(self, topic: str, body: Callable[[], bytes]) -> None:
        """Queue one event of ``topic``; ``body()`` is called on the publisher thread."""
        self.publish_batch([(topic, body)])

    def publish_batch(self, events: Iterable[Tuple[str, Callable[[], bytes]]]) -> None:
        """Queue ``(topic, body)`` events as one item: a block's thousands of transactions
        wake the publisher thread once, not once each (each wake-up costs validation a
        GIL hand-over)."""
        if self._thread is None:
            return
        by_topic = self._by_topic
        batch = [(by_topic[topic], body) for topic, body in events if topic in by_topic]
        if not batch:
            return
        try:
            self._queue.put_nowait(batch)
        except queue.Full:
            self.dropped += len(batch)

    def flush(self) -> None:
        """Wait until everything queued so far has been handed to ZeroMQ (benchmarks)."""
        if self._thread is not None:
            self._queue.join()

    def stop(self, timeout: float = 10.0) -> None:
        """Send what is queued, then close the sockets (what is left after ``timeout`` is
        dropped)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._queue.put(_STOP)
        thread.join(timeout)

    def _run(self, sockets: List[zmq.Socket]) -> None:
        get = self._queue.get
        while True:
            batch = get()
            if batch is _STOP:
                break
            for targets, body in batch:
                try:
                    data = body()
                except Exception:
                    log.failure("zmq: building a {topic} message failed", topic=targets[0].topic)
                    continue
                for notifier in targets:
                    notifier.send(data)
            self._queue.task_done()
        self._close(sockets)

    def _close(self, sockets: Iterable[zmq.Socket]) -> None:
        for socket in sockets:
            socket.close(linger=0)
        if self._context is not None:
            self._context.term()
            self._context = None
