"""What the mempool package decides for its callers (sendrawtransaction's submission,
estimatesmartfee's floor, gettxout's and the signers' coin reads), on a real chain state
and pool, without RPC."""

from __future__ import annotations

from twisted.internet import reactor

from coin.chain.service import ValidationService
from coin.consensus.errors import ValidationError
from coin.mempool.accept import AlreadyInChain, MissingInputs, PoolPolicy
from coin.mempool.coinview import coin_at_tip, spent_outputs
from coin.mempool.policy import FeeRate
from coin.mempool.service import MempoolService
from coin.views.utxo import MEMPOOL_HEIGHT
from tests.unit.mempool.test_fee_estimator import HIGH, LOW, History
from tests.unit.mempool.test_mempool import PoolTestCase

#: The relay floor of these tests: above LOW, below HIGH.
MIN_RELAY = 5000


class ServiceTestCase(PoolTestCase):

    policy = PoolPolicy(min_relay_fee=FeeRate(MIN_RELAY))

    def setUp(self) -> None:
        super().setUp()
        self.service = MempoolService(ValidationService(self.chainstate, reactor), self.pool,
                                      self.policy, now=lambda: self.now)


class SubmitTests(ServiceTestCase):

    def submit(self, tx, max_fee: int = 0) -> None:
        self.service.submit_on_worker(self.chainstate, tx, max_fee)

    def test_new_and_already_pooled(self) -> None:
        tx = self.builder.spend(self.coinbase(1), fee=20_000)
        self.submit(tx)
        self.assertIn(tx.txid, self.pool)
        before = self.pool.total_usage
        self.submit(tx)  # already pooled: answered as a success, nothing changes
        self.assertEqual((len(self.pool), self.pool.total_usage), (1, before))

    def test_already_in_chain(self) -> None:
        tx = self.builder.spend(self.coinbase(1), fee=20_000)
        self.builder.mine(1, txs=[tx])
        for mined in (tx, self.chainstate.read_block(self.chainstate.at_height(50)).txs[0]):
            error = self.assertRaises(AlreadyInChain, self.submit, mined)
            self.assertEqual((error.rpc_code, error.message),
                             (-27, "transaction already in block chain"))
        self.assertEqual(len(self.pool), 0)

    def test_refusals_of_the_pool_pass_through(self) -> None:
        never_sent = self.builder.spend(self.coinbase(2))
        orphan = self.builder.spend(self.builder.outputs_of(never_sent)[0])
        self.assertRaises(MissingInputs, self.submit, orphan)
        costly = self.builder.spend(self.coinbase(3), fee=20_000_000)
        error = self.assertRaises(ValidationError, self.submit, costly, 10_000_000)
        self.assertEqual(error.reason, "absurdly-high-fee")
        self.assertEqual(len(self.pool), 0)


class SmartFeeTests(ServiceTestCase):

    def test_no_data(self) -> None:
        rate, _ = self.service.estimate_smart_fee(6, True)
        self.assertIsNone(rate)

    def test_estimates_never_below_the_relay_floor(self) -> None:
        History(self.service.estimator).run(40, [(HIGH, 1, 10), (LOW, 5, 10)])
        self.assertEqual(self.service.estimator.estimate_smart_fee(12, True), (LOW, 12))
        self.assertEqual(self.service.estimate_smart_fee(12, True), (MIN_RELAY, 12))
        self.assertEqual(self.service.estimate_smart_fee(2, False), (HIGH, 2))


class CoinViewTests(ServiceTestCase):
    """gettxout's and the signers' reads of the UTXO set through the pool."""

    def test_coin_at_tip(self) -> None:
        source = self.coinbase(1)
        key = (source.outpoint.txid, source.outpoint.n)
        tip, coin = coin_at_tip(self.chainstate, None, key)
        self.assertIs(tip, self.chainstate.tip)
        self.assertEqual((coin.value, coin.height, coin.coinbase), (source.value, 1, True))
        tx = self.builder.spend(source)
        self.service.submit_on_worker(self.chainstate, tx)
        # A pool spend hides the coin; a pool output is a coin at MEMPOOL_HEIGHT.
        self.assertIsNone(coin_at_tip(self.chainstate, self.pool, key)[1])
        self.assertEqual(coin_at_tip(self.chainstate, None, key)[1], coin)
        pooled = coin_at_tip(self.chainstate, self.pool, (tx.txid, 0))[1]
        self.assertEqual((pooled.value, pooled.height), (tx.vout[0].value, MEMPOOL_HEIGHT))

    def test_spent_outputs(self) -> None:
        source = self.coinbase(1)
        tx = self.builder.spend(source)
        self.service.submit_on_worker(self.chainstate, tx)
        chain_key = (source.outpoint.txid, source.outpoint.n)
        pool_key, known_key, unknown_key = (tx.txid, 0), (b"\x07" * 32, 1), (b"\x08" * 32, 0)
        keys = [chain_key, pool_key, known_key, unknown_key]
        known = {known_key: (b"\x51", 5)}
        self.assertEqual(spent_outputs(self.chainstate, self.pool, keys, known.get), {
            chain_key: (source.script_pubkey, source.value),
            pool_key: (tx.vout[0].script_pubkey, tx.vout[0].value),
            known_key: (b"\x51", 5)})
        self.assertEqual(spent_outputs(self.chainstate, None, keys, None),
                         {chain_key: (source.script_pubkey, source.value)})
