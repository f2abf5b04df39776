"""An ``addr`` flood against a real node and the RPC latency seen meanwhile.

Shared by the integration test (tests/functional/test_p2p_flood.py) and the
benchmark (bench/addrman.py)::

    flooder = Flooder(RawPeer(node.p2p_port), addr_frames(20))
    flooder.start()                          # handshake, then addr messages at full speed
    latencies = rpc_latencies(node, 5.0)     # seconds per getnetworkinfo call
    flooder.stop()
"""

from __future__ import annotations

import json
import threading
import time
from typing import List

from coin.chainparams import REGTEST
from coin.p2p.messages import MAX_ADDR_TO_SEND, NODE_NETWORK, AddrMessage, encode_message
from coin.p2p.netaddr import NetAddress
from tests.nodeharness import NodeProcess
from tests.p2pclient import RawPeer


def addr_frames(count: int, per_message: int = MAX_ADDR_TO_SEND, first: int = 0) -> List[bytes]:
    """``count`` framed addr messages of distinct routable, fresh addresses (11.x.y.z on)."""
    now = int(time.time())
    frames = []
    for m in range(count):
        addresses = []
        for i in range(per_message):
            n = (first + m) * per_message + i
            ip = "%d.%d.%d.%d" % (11 + n // 16_000_000 % 80, n // 62_500 % 256,
                                  n // 250 % 250, n % 250 + 1)
            addresses.append(NetAddress(NODE_NETWORK, ip, 8333, now - 60))
        frames.append(encode_message(REGTEST.message_start, AddrMessage(tuple(addresses))))
    return frames


class Flooder(threading.Thread):
    """Handshakes, then sends ``frames`` round and round as fast as the socket takes them."""

    def __init__(self, peer: RawPeer, frames: List[bytes]) -> None:
        super().__init__(daemon=True)
        self.peer = peer
        self.frames = frames
        self.sent = 0
        #: Monotonic time the node closed the connection, if it did.
        self.closed_at = 0.0
        self._halt = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        self.peer.handshake()
        self.ready.set()
        try:
            while not self._halt.is_set():
                self.peer.send_raw(self.frames[self.sent % len(self.frames)])
                self.sent += 1
        except OSError:
            self.closed_at = time.monotonic()

    def stop(self) -> None:
        self._halt.set()
        self.peer.close()
        self.join(30)


def rpc_latencies(node: NodeProcess, seconds: float, method: str = "getnetworkinfo"
                  ) -> List[float]:
    """Back-to-back calls of ``method`` for ``seconds``: the latency of each, in seconds."""
    body = json.dumps({"method": method, "params": [], "id": 1}).encode()
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.perf_counter()
        status, _, _ = node.post(body)
        latencies.append(time.perf_counter() - start)
        if status != 200:
            raise AssertionError("%s answered HTTP %d" % (method, status))
    return latencies


def percentile(values: List[float], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]
