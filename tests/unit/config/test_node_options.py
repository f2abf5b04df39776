"""What Core 0.17 options change inside the node (issue #13): log lines, -debugexclude,
-stopatheight, -spendzeroconfchange, wallet fees, -whitelist parsing, -maxsendbuffer."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace

from typing import Optional

from twisted.internet.abstract import FileDescriptor
from twisted.internet.address import IPv4Address
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import LogLevel
from twisted.trial.unittest import SynchronousTestCase

from coin.chain.stop import StopAtHeight
from coin.chainparams import REGTEST
from coin.p2p.connman import P2PService, P2PSettings
from coin.p2p.messages import PingMessage
from coin.p2p.peer import PeerProtocol
from coin.logs import CATEGORIES, CoreLineObserver, DebugCategories
from coin.mempool.policy import FeeRate
from coin.wallet.spend import FeePolicy, select_coins


class LogLineTests(SynchronousTestCase):
    def line(self, **options) -> str:
        stream = io.StringIO()
        CoreLineObserver(stream, **options)({"log_format": "hello", "log_time": 1700000000.25,
                                             "log_level": LogLevel.info})
        return stream.getvalue()

    def test_timestamps(self):
        self.assertEqual(self.line(), "2023-11-14T22:13:20Z hello\n")
        self.assertEqual(self.line(micros=True), "2023-11-14T22:13:20.250000Z hello\n")
        self.assertEqual(self.line(timestamps=False), "hello\n")
        self.assertRegex(self.line(micros=True, timestamps=True),
                         re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z "))

    def test_debugexclude(self):
        categories = DebugCategories.parse(["1"], ["net", "rpc"])
        self.assertEqual([c for c in CATEGORIES if not categories.is_enabled(c)], ["net", "rpc"])
        self.assertFalse(DebugCategories.parse(["net"], ["net"]).is_enabled("net"))
        with self.assertRaises(ValueError) as caught:
            DebugCategories.parse(["1"], ["nosuch"])
        self.assertEqual(str(caught.exception),
                         "Unsupported logging category -debugexclude=nosuch.")


class StopAtHeightTests(SynchronousTestCase):
    def test_stops_at_the_height_not_before(self):
        stops = []
        subscriber = StopAtHeight(3, lambda: stops.append(True))
        for height in (1, 2):
            subscriber.tip_changed(SimpleNamespace(height=height))
        self.assertEqual(stops, [])
        subscriber.tip_changed(SimpleNamespace(height=3))
        self.assertEqual(stops, [True])


def _coin(value: int, depth: int, from_me: bool):
    wtx = SimpleNamespace(from_me=from_me, txid=bytes([value % 256]) * 32,
                          tx=SimpleNamespace(vout=[SimpleNamespace(value=value)]))
    return SimpleNamespace(wtx=wtx, n=0, depth=depth, spendable=True,
                           txout=wtx.tx.vout[0], outpoint=(wtx.txid, 0))


class SpendZeroConfChangeTests(SynchronousTestCase):
    def test_unconfirmed_change_only_when_allowed(self):
        change = _coin(5_000_000, 0, True)
        coins = [_coin(1_000_000, 3, False), change]
        self.assertEqual(select_coins(coins, 4_000_000), [change])
        self.assertIsNone(select_coins(coins, 4_000_000, zero_conf_change=False))
        self.assertIsNotNone(select_coins(coins, 500_000, zero_conf_change=False))


class WalletFeeOptionTests(SynchronousTestCase):
    """-paytxfee (settxfee's start value), -fallbackfee, -mintxfee as Core's fee rate."""

    def policy(self, **kw) -> FeePolicy:
        base = dict(min_relay=FeeRate(1000), pool_floor=FeeRate(0), estimate=None,
                    max_fee=10**7)
        base.update(kw)
        return FeePolicy(**base)

    def test_fallback_and_minimum(self):
        self.assertEqual(self.policy().rate(0), FeeRate(20_000))  # Core's default fallback
        self.assertEqual(self.policy(fallback=FeeRate(30_000)).rate(0), FeeRate(30_000))
        self.assertEqual(self.policy(estimate=FeeRate(1500), min_tx=FeeRate(5000)).rate(0),
                         FeeRate(5000))
        self.assertEqual(self.policy(min_tx=FeeRate(5000)).rate(2000), FeeRate(5000))
        self.assertEqual(self.policy(fallback=FeeRate(30_000)).rate(7000), FeeRate(7000))


class WhitelistParseTests(SynchronousTestCase):
    def test_networks_and_core_error(self):
        from coin.p2p.connman import P2PStartupError, parse_whitelist

        self.assertEqual([str(n) for n in parse_whitelist(["127.0.0.1", "10.1.2.3/8",
                                                           "192.168.0.0/255.255.0.0", "::1"])],
                         ["127.0.0.1/32", "10.0.0.0/8", "192.168.0.0/16", "::1/128"])
        with self.assertRaises(P2PStartupError) as caught:
            parse_whitelist(["1.2.3.4/99"])
        self.assertEqual(str(caught.exception),
                         "Invalid netmask specified in -whitelist: '1.2.3.4/99'")


class _UnreadTransport(FileDescriptor):
    """A TCP-like transport (Twisted's write buffer and producer calls) whose peer never
    reads: every byte written stays in the buffer."""

    def __init__(self) -> None:
        super().__init__(reactor=MemoryReactorClock())
        self.connected = True

    def writeSomeData(self, data: bytes) -> int:
        return 0

    def abortConnection(self) -> None:
        self.connected = False

    def getPeer(self) -> IPv4Address:
        return IPv4Address("TCP", "8.8.8.8", 5001)

    def getHost(self) -> IPv4Address:
        return IPv4Address("TCP", "10.0.0.1", 31932)


class MaxSendBufferTests(SynchronousTestCase):
    """-maxsendbuffer: past it the peer's messages wait (Core's fPauseSend)."""

    def peer(self, limit: Optional[int]) -> PeerProtocol:
        reactor = MemoryReactorClock()
        connman = P2PService(REGTEST, P2PSettings(port=31932, max_send_buffer=limit), reactor,
                             now=reactor.seconds, start_height=lambda: 7,
                             fee_filter_rate=lambda: 1000)
        connman.startService()
        self.addCleanup(connman.stopService)
        connman.ready = True
        peer = PeerProtocol(connman, True)
        peer.makeConnection(_UnreadTransport())
        return peer

    def test_pause_at_the_limit(self):
        big = PingMessage(1)
        for limit, paused in ((2000, True), (None, False)):
            peer = self.peer(limit)
            for _ in range(100):  # 100 pings: 3,200 bytes unread
                peer.send(big)
            self.assertEqual(peer.send_paused, paused, limit)
