"""The connect path's data handling: undo records, batched UTXO lookups, -reindex from memory."""

from __future__ import annotations

import hashlib
from typing import List, Tuple

from twisted.trial.unittest import SynchronousTestCase

from coin.chain import workers
from coin.chain.chainstate import ChainState
from coin.primitives.block import Block
from coin.primitives.coin import Coin, deserialize_block_undo
from coin.primitives.serialize import compact_size
from coin.primitives.transaction import Transaction
from coin.storage.utxodb import MAX_FETCH_BATCH
from coin.testing.chainbuilder import ChainBuilder, open_chain

#: sha256 of the undo record of :func:`many_spends_chain`'s last block as the connect path
#: wrote it before it built undo records in one pass (commit 3c6b58d).
UNDO_DIGEST_BEFORE = "3caecbc8aeabfb68792fb21bcbe0c8823423f5ebfc5a46686d7e251179b685cf"
#: Outputs of the fan-out spent in the last block, one per transaction, and the coinbases
#: spent two at a time, version 2.
FANOUT = 1_200
COINBASE_PAIRS = 5


def many_spends_chain(datadir: str) -> Tuple[ChainState, Block, List[Tuple[bytes, int]]]:
    """A deterministic chain whose tip spends 1,200 fan-out outputs and 10 coinbases.

    Returns the chain, the tip block and the outpoints it spends, in block order.
    """
    chain = open_chain(datadir)
    builder = ChainBuilder(chain, start_time=1_700_000_000)
    builder.mine(101 + 2 * COINBASE_PAIRS)
    source = builder.coinbase_outputs[2 * COINBASE_PAIRS]
    each = (source.value - 100_000) // FANOUT
    fanout = builder.spend(source, outputs=[(builder.script_pubkey, each)] * FANOUT,
                           fee=source.value - each * FANOUT)
    builder.mine(1, txs=[fanout])
    txs: List[Transaction] = [builder.spend(s, fee=1_000)
                              for s in ChainBuilder.outputs_of(fanout)]
    coinbases = builder.coinbase_outputs[:2 * COINBASE_PAIRS]
    txs += [builder.spend(coinbases[i:i + 2], version=2)
            for i in range(0, len(coinbases), 2)]
    (block,) = builder.mine(1, txs=txs)
    spent = [(i.prevout.txid, i.prevout.n) for tx in block.txs[1:] for i in tx.vin]
    return chain, block, spent


class UndoRecordTests(SynchronousTestCase):
    """Undo records are built in one pass and read as they always were."""

    def setUp(self) -> None:
        self.datadir = self.mktemp()
        self.chain, self.block, self.spent = many_spends_chain(self.datadir)
        self.addCleanup(lambda: self.chain.close())

    def _undo_bytes(self) -> bytes:
        entry = self.chain.tip
        return self.chain.store.read_undo(entry.undo_file, entry.undo_pos, entry.hash)

    def test_undo_bytes_identical_to_before(self) -> None:
        raw = self._undo_bytes()
        self.assertEqual(hashlib.sha256(raw).hexdigest(), UNDO_DIGEST_BEFORE)

    def test_undo_bytes_follow_the_format(self) -> None:
        """Per spending transaction, its input count and each spent coin (Core's CTxUndo)."""
        undo = deserialize_block_undo(self._undo_bytes())
        self.assertEqual([len(u) for u in undo], [len(tx.vin) for tx in self.block.txs[1:]])
        expected = [compact_size(len(self.block.txs) - 1)]
        for tx_undo in undo:
            expected.append(compact_size(len(tx_undo)))
            expected.extend(coin.serialize() for coin in tx_undo)
        self.assertEqual(b"".join(expected), self._undo_bytes())
        coinbase_heights = [c.height for u in undo[FANOUT:] for c in u]
        self.assertEqual(coinbase_heights, list(range(1, 2 * COINBASE_PAIRS + 1)))
        self.assertTrue(all(c.coinbase for u in undo[FANOUT:] for c in u))

    def test_disconnect_after_restart_restores_the_exact_coins(self) -> None:
        chain = self.chain
        tip = chain.tip
        chain.invalidate_block(tip.hash)
        chain.flush()
        before = chain.store.utxo_snapshot()
        chain.reconsider_block(tip.hash)
        self.assertIs(chain.tip, tip)
        chain.close()
        self.chain = chain = open_chain(self.datadir)
        self.assertEqual(chain.tip.hash, tip.hash)
        chain.invalidate_block(tip.hash)
        after = chain.store.utxo_snapshot()
        self.assertEqual(after, before)
        restored = dict(after)
        self.assertEqual(len([k for k in self.spent if k in restored]), len(self.spent))
        self.assertIsInstance(restored[self.spent[0]], Coin)
