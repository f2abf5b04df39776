"""gettxoutsetinfo's figures computed by the chain package (no RPC)."""

from __future__ import annotations

import tracemalloc

from twisted.internet import reactor
from twisted.internet.defer import ensureDeferred, inlineCallbacks
from twisted.trial.unittest import SynchronousTestCase, TestCase

from coin.chain.access import ChainAccess
from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.service import ValidationService
from coin.chain.utxostats import UTXOSetInfo, database_size, utxo_set_info, utxo_set_stats
from coin.chainparams import COIN, REGTEST
from coin.primitives.coin import Coin
from coin.primitives.hashes import sha256d
from coin.storage.chainstore import ChainStore
from coin.testing.chainbuilder import ChainBuilder, open_chain
from coin.threads import ThreadRunner
from tests.unit.storage.test_storage_blockfiles import open_store
from tests.unit.storage.test_storage_db import coin_key, coin_value

BEST = b"\x01" * 32


class UTXOHashTests(SynchronousTestCase):
    """hash_serialized_2's serialization, spelled out byte by byte."""

    def test_serialization(self) -> None:
        best = bytes(range(32))
        a, b = b"\x01" * 32, b"\x02" * 32
        coins = [((a, 0), Coin(200, b"\x51", 5, True)),
                 ((a, 2), Coin(1, b"", 5, True)),
                 ((b, 1), Coin(300, b"\x52\x53", 0, False))]
        serialized = (best
                      + a + b"\x01"                          # height*2+coinbase != 0 -> 1
                      + b"\x01" + b"\x01\x51" + b"\x80\x48"  # n+1, script, VARINT(200)
                      + b"\x03" + b"\x00" + b"\x01"
                      + b"\x00"
                      + b + b"\x00"                          # height 0, not coinbase -> 0
                      + b"\x02" + b"\x02\x52\x53" + b"\x81\x2c"
                      + b"\x00")
        stats = utxo_set_stats(best, coins)
        self.assertEqual(stats, (2, 3, 3 * 50 + 3, sha256d(serialized), 501))
        self.assertEqual(utxo_set_stats(best, []), (0, 0, 0, sha256d(best), 0))


class RecordingRunner(ThreadRunner):
    """The reactor's pool, noting the name of each function sent to it."""

    def __init__(self) -> None:
        super().__init__(reactor)
        self.ran: list = []

    def __call__(self, f, *args, **kwargs):
        self.ran.append(f.__name__)
        return super().__call__(f, *args, **kwargs)


class UTXOSetInfoTests(TestCase):
    """The whole of gettxoutsetinfo's work on a running validation service."""

    BLOCKS = 12

    def setUp(self):
        datadir = self.mktemp()
        built = open_chain(datadir)
        ChainBuilder(built).mine(self.BLOCKS)
        built.close()
        store = ChainStore(datadir, REGTEST)
        store.open()
        state = ChainState(REGTEST, store)  # the service loads it on its worker
        self.service = ValidationService(state, reactor)
        self.service.startService()
        self.addCleanup(self.service.stopService)
        self.runner = RecordingRunner()
        self.access = ChainAccess(self.service, NodeClock(), reactor, in_thread=self.runner)
        self.state = state
        return self.service.ready

    @inlineCallbacks
    def test_info_of_a_mined_chain(self):
        info = yield ensureDeferred(utxo_set_info(self.access))
        self.assertIsInstance(info, UTXOSetInfo)
        self.assertIs(info.tip, self.state.tip)
        coins = self.state.store.utxo_snapshot()
        # One coinbase output per block; the genesis coinbase is not in the set.
        self.assertEqual(info.stats.transactions, self.BLOCKS)
        self.assertEqual(info.stats.txouts, self.BLOCKS)
        self.assertEqual(info.stats.total_amount, self.BLOCKS * 50 * COIN)
        self.assertEqual(info.stats.bogosize, sum(50 + len(c.script_pubkey) for _, c in coins))
        self.assertEqual(info.stats, utxo_set_stats(self.state.tip.hash, coins))
        self.assertEqual(info.disk_size, database_size(self.state))
        self.assertGreater(info.disk_size, 0)
        # The hash runs on the node's pool, not on the validation worker.
        self.assertEqual(self.runner.ran, ["utxo_set_stats"])


class StreamedWalkTests(SynchronousTestCase):
    """The gettxoutsetinfo walk streams the stored set through a cursor."""

    COINS = 12_000

    def setUp(self) -> None:
        self.store = open_store(self, self.mktemp())
        for i in range(self.COINS):
            self.store.coins.add(coin_key(i), coin_value(i))
        self.store.flush([], BEST)

    def test_memory_does_not_grow_with_the_set(self) -> None:
        tracemalloc.start()
        self.addCleanup(tracemalloc.stop)
        streamed = utxo_set_stats(BEST, self.store.utxo_cursor())
        streamed_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        listed = utxo_set_stats(BEST, self.store.utxo_snapshot())
        listed_peak = tracemalloc.get_traced_memory()[1]
        self.assertEqual(streamed, listed)
        self.assertEqual(streamed.txouts, self.COINS)
        # The list of the whole set (what the walk did before) takes several times more; the
        # cursor holds one fetch batch (2,000 rows) at a time.
        self.assertLess(streamed_peak * 4, listed_peak, (streamed_peak, listed_peak))

    def test_the_cursor_reads_one_snapshot_while_the_writer_goes_on(self) -> None:
        cursor = self.store.utxo_cursor()
        first = next(cursor)
        self.store.coins.spend(first[0])
        self.store.coins.add(coin_key(self.COINS), coin_value(self.COINS))
        self.store.flush([], BEST)
        seen = [first] + list(cursor)
        self.assertEqual(len(seen), self.COINS)
        self.assertEqual(seen, sorted((coin_key(i), coin_value(i)) for i in range(self.COINS)))
