"""The UTXO cache and table: semantics, flush/reopen, budget, and property tests."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)
from twisted.trial.unittest import SynchronousTestCase

from coin.primitives.coin import Coin, deserialize_block_undo, serialize_block_undo
from coin.primitives.serialize import ByteReader
from coin.storage.coins import CoinsCache, Key
from coin.storage.utxodb import MAX_FETCH_BATCH
from tests.pgserver import OnPostgreSQL
from tests.unit.storage.test_storage_blockfiles import fake_block, open_store
from tests.unit.storage.test_storage_db import coin_key, coin_value, utxo_rows

BEST = b"\x01" * 32

coins_strategy = st.builds(
    Coin,
    value=st.integers(-2**63, 2**63 - 1),
    script_pubkey=st.binary(max_size=600),
    height=st.integers(0, 2**31 - 1),
    coinbase=st.booleans(),
    tx_version=st.integers(-2**31, 2**31 - 1),
)


class CoinsCacheTests(SynchronousTestCase):

    def setUp(self) -> None:
        self.path = self.mktemp()
        self.store = open_store(self, self.path)
        self.coins = self.store.coins

    def reopen(self) -> None:
        self.store.close()
        self.store = open_store(self, self.path)
        self.coins = self.store.coins

    def test_add_get_spend(self) -> None:
        key = coin_key(1)
        self.assertIsNone(self.coins.get(key))
        self.coins.add(key, coin_value(1))
        self.assertEqual(self.coins.get(key), coin_value(1))
        self.assertRaises(ValueError, self.coins.add, key, coin_value(2))
        self.assertEqual(self.coins.spend(key), coin_value(1))
        self.assertIsNone(self.coins.spend(key))
        self.assertIsNone(self.coins.get(key))
        self.assertEqual(self.coins.fetch([key, coin_key(2)]), [None, None])

    def test_fresh_coin_spent_before_flush_never_reaches_the_database(self) -> None:
        self.coins.add(coin_key(1), coin_value(1))
        self.coins.add(coin_key(2), coin_value(2))
        self.coins.spend(coin_key(1))
        self.assertEqual(self.coins.dirty_count(), 1)
        changes = self.coins.changes()
        self.assertEqual((len(changes.inserts), changes.upserts, changes.deletes), (1, [], []))
        self.store.flush([], BEST)
        self.assertEqual(list(utxo_rows(self.store)), [coin_key(2)])

    def test_flush_then_reopen_sees_the_same_set(self) -> None:
        for i in range(1200):
            self.coins.add(coin_key(i), coin_value(i))
        self.store.flush([], BEST)
        for i in range(0, 1200, 3):
            self.coins.spend(coin_key(i))
        for i in range(1200, 1300):
            self.coins.add(coin_key(i), coin_value(i))
        self.store.flush([], BEST)
        self.assertEqual(self.coins.dirty_count(), 0)
        self.reopen()
        self.assertEqual(len(self.coins), 0)
        expected = [None if i % 3 == 0 and i < 1200 else coin_value(i) for i in range(1300)]
        self.assertEqual(self.coins.fetch([coin_key(i) for i in range(1300)]), expected)
        self.assertEqual(len(utxo_rows(self.store)), 1300 - 400)

    def test_misses_are_loaded_in_batches(self) -> None:
        for i in range(1100):
            self.coins.add(coin_key(i), coin_value(i))
        self.store.flush([], BEST)
        self.reopen()
        calls: List[int] = []
        table = self.store._utxos

        def counting_loader(keys: Sequence[Key]) -> Dict[Key, Coin]:
            calls.append(len(keys))
            return table.fetch(keys)
        cache = CoinsCache(counting_loader, 1 << 30, MAX_FETCH_BATCH)
        keys = [coin_key(i) for i in range(1100)] + [coin_key(5000), coin_key(3)]
        result = cache.fetch(keys)
        self.assertEqual(calls, [500, 500, 101])
        self.assertEqual(result[:1100], [coin_value(i) for i in range(1100)])
        self.assertEqual(result[1100:], [None, coin_value(3)])
        cache.fetch(keys)
        self.assertEqual(calls[3:], [1])           # only the absent key is asked for again

    def test_spent_then_restored_coin_is_rewritten(self) -> None:
        key = coin_key(4)
        self.coins.add(key, coin_value(4))
        self.store.flush([], BEST)
        self.coins.spend(key)                      # disconnect / reconnect before a flush
        self.coins.add(key, coin_value(4, round_=7))
        self.store.flush([], BEST)
        self.assertEqual(utxo_rows(self.store), {key: 4007})

    def test_restoring_a_coin_whose_spend_was_flushed(self) -> None:
        key = coin_key(4)
        self.coins.add(key, coin_value(4))
        self.store.flush([], BEST)
        self.coins.spend(key)
        self.store.flush([], BEST)
        self.assertEqual(utxo_rows(self.store), {})
        self.coins.add(key, coin_value(4))
        self.store.flush([], BEST)
        self.assertEqual(utxo_rows(self.store), {key: 4000})

    def test_overwrite_of_an_unseen_stored_coin(self) -> None:
        key = coin_key(4)
        self.coins.add(key, coin_value(4))
        self.store.flush([], BEST)
        self.reopen()
        self.coins.add(key, coin_value(4, round_=9), overwrite=True)
        self.store.flush([], BEST)
        self.assertEqual(utxo_rows(self.store), {key: 4009})

    def test_snapshot_overlays_unflushed_changes(self) -> None:
        for i in range(10):
            self.coins.add(coin_key(i), coin_value(i))
        self.store.flush([], BEST)
        self.coins.spend(coin_key(3))
        self.coins.add(coin_key(10), coin_value(10))
        self.coins.spend(coin_key(4))
        self.coins.add(coin_key(4), coin_value(4, round_=1))
        expected = {coin_key(i): coin_value(i) for i in range(11) if i not in (3, 4)}
        expected[coin_key(4)] = coin_value(4, round_=1)
        self.assertEqual(self.store.utxo_snapshot(), sorted(expected.items()))
        self.assertEqual(len(utxo_rows(self.store)), 10)

    def test_abandon_loses_what_a_crash_loses(self) -> None:
        synced = self.store.write_block(fake_block(1), 1, 1001)
        self.coins.add(coin_key(1), coin_value(1))
        self.store.flush([], BEST)
        unsynced = self.store.write_block(fake_block(2), 2, 1002)   # in the file's buffer
        self.coins.add(coin_key(2), coin_value(2))
        self.store.abandon()
        self.store = open_store(self, self.path)
        # A record in a table is committed as it is written: the crash cannot lose it.
        kept = [synced] if self.store.db_url is None else [synced, unsynced]
        self.assertEqual([(f, p) for f, p, _ in self.store.scan_blocks()], kept)
        self.assertEqual(self.store.utxo_snapshot(), [(coin_key(1), coin_value(1))])

    def test_budget_and_eviction(self) -> None:
        store = open_store(self, self.mktemp(), dbcache_mib=1)
        added = 0
        while not store.needs_flush():
            store.coins.add(coin_key(added), coin_value(added))
            added += 1
        self.assertGreater(added, 1000)
        self.assertLess(added, 10000)
        self.assertGreater(store.coins.usage_bytes(), 1 << 20)
        store.flush([], BEST)
        self.assertFalse(store.needs_flush())
        self.assertEqual(store.coins.dirty_count(), 0)
        self.assertLessEqual(store.coins.usage_bytes(), 1 << 19)
        self.assertLess(len(store.coins), added)
        self.assertEqual(store.coins.get(coin_key(0)), coin_value(0))   # evicted, reloaded

    def test_usage_tracks_entries(self) -> None:
        self.coins.add(coin_key(1), coin_value(1))
        one = self.coins.usage_bytes()
        self.assertGreater(one, len(coin_value(1).script_pubkey))
        self.coins.add(coin_key(2), coin_value(2))
        self.assertEqual(self.coins.usage_bytes(), 2 * one)
        self.coins.spend(coin_key(2))
        self.assertEqual(self.coins.usage_bytes(), one)

    @settings(max_examples=40, deadline=None,
              # The engine twins run this one function: fresh fixtures each, so no leak.
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.differing_executors])
    @given(coin=coins_strategy, n=st.integers(0, 2**32 - 1))
    def test_any_coin_survives_the_database(self, coin: Coin, n: int) -> None:
        self.store.wipe_chainstate()
        key = (bytes(range(32)), n)
        self.coins.add(key, coin)
        self.store.flush([], BEST)
        self.coins.clear()
        self.assertEqual(self.coins.get(key), coin)


class SerializationProperties(SynchronousTestCase):

    @given(coins_strategy)
    def test_coin_round_trip(self, coin: Coin) -> None:
        reader = ByteReader(coin.serialize())
        self.assertEqual(Coin.read(reader), coin)
        reader.assert_end()

    @given(st.lists(st.lists(coins_strategy, max_size=4), max_size=6))
    def test_block_undo_round_trip(self, spent: List[List[Coin]]) -> None:
        self.assertEqual(deserialize_block_undo(serialize_block_undo(spent)), spent)


class CacheMatchesModel(RuleBasedStateMachine):
    """Any sequence of adds, spends, flushes and reopens leaves cache + table == a dict."""

    case: SynchronousTestCase
    path: Optional[str] = None

    def __init__(self) -> None:
        super().__init__()
        self.store = open_store(self.case, self.path)
        self.store.wipe_chainstate()
        self.model: Dict[Key, Coin] = {}
        self.flushed: Dict[Key, Coin] = {}
        self.round = 0

    keys = st.integers(0, 12).map(coin_key)

    @rule(key=keys)
    def add(self, key: Key) -> None:
        self.round += 1
        coin = coin_value(key[1], self.round)
        if key in self.model:
            self.store.coins.add(key, coin, overwrite=True)
        else:
            self.store.coins.add(key, coin)
        self.model[key] = coin

    @rule(key=keys)
    def spend(self, key: Key) -> None:
        self.case.assertEqual(self.store.coins.spend(key), self.model.pop(key, None))

    @rule()
    def flush(self) -> None:
        self.store.flush([], BEST)
        self.flushed = dict(self.model)

    @rule()
    def crash_and_reopen(self) -> None:
        self.store.close()
        self.store = open_store(self.case, self.path)
        self.model = dict(self.flushed)

    @invariant()
    def cache_agrees(self) -> None:
        keys = [coin_key(i) for i in range(13)]
        self.case.assertEqual(self.store.coins.fetch(keys), [self.model.get(k) for k in keys])

    def teardown(self) -> None:
        self.store.close()


class StatefulCacheTests(SynchronousTestCase):

    def test_cache_matches_model(self) -> None:
        CacheMatchesModel.case = self
        CacheMatchesModel.path = self.mktemp()
        run_state_machine_as_test(CacheMatchesModel, settings=settings(
            max_examples=20, stateful_step_count=20, deadline=None))


class CoinsCacheTestsOnPostgreSQL(OnPostgreSQL, CoinsCacheTests):
    pass


class StatefulCacheTestsOnPostgreSQL(OnPostgreSQL, StatefulCacheTests):
    pass
