"""A test-chain factory: chains of any shape in a few lines.

    store = ChainStore(datadir, REGTEST); chain = ChainState(REGTEST, store); chain.load()
    b = ChainBuilder(chain)
    b.mine(101)                                 # mature coinbase
    tx = b.spend(b.coinbase_outputs[0])         # signed P2PKH spend
    b.mine(1, txs=[tx])
    fork = b.mine(3, parent=chain.at_height(50))  # a competing branch
    bad = b.build(txs=[tx])                      # a block not submitted

Used by the tests and the benchmarks; it goes through the real validation
pipeline (``ChainState.process_block``) like any other block source.
"""

from __future__ import annotations

import hashlib
from typing import Callable, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import coincurve

from coin.chain.chainstate import ChainState
from coin.chain.index import BlockIndexEntry
from coin.chainparams import REGTEST, ChainParams
from coin.mining.assembler import create_block, solve
from coin.primitives.block import Block
from coin.primitives.hashes import hash160
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.sign import sign_p2pkh_input
from coin.script.standard import p2pkh_script
from coin.storage.chainstore import ChainStore


class Spendable(NamedTuple):
    """An output the builder holds the key for."""

    outpoint: OutPoint
    value: int
    script_pubkey: bytes


def deterministic_key(label: str) -> coincurve.PrivateKey:
    """A private key derived from a label, so test chains are reproducible."""
    return coincurve.PrivateKey(hashlib.sha256(label.encode()).digest())


class ChainBuilder:
    """Mines blocks paying one key, and builds signed spends of them."""

    def __init__(self, chainstate: ChainState, key: Optional[coincurve.PrivateKey] = None,
                 start_time: Optional[int] = None) -> None:
        self.chainstate = chainstate
        self.key = key or deterministic_key("coin test chain")
        self.pubkey = self.key.public_key.format(compressed=True)
        self.script_pubkey = p2pkh_script(hash160(self.pubkey))
        #: Coinbase outputs of blocks this builder mined, oldest first.
        self.coinbase_outputs: List[Spendable] = []
        self._extra_nonce = 0
        self._start_time = start_time

    def _next_time(self, parent: BlockIndexEntry) -> int:
        floor = parent.median_time_past() + 1
        if self._start_time is None:
            return max(floor, parent.time + 1)
        return max(floor, self._start_time + parent.height + 1)

    def build(self, txs: Iterable[Transaction] = (), parent: Optional[BlockIndexEntry] = None,
              time: Optional[int] = None, fees: Optional[int] = None,
              mutate: Optional[Callable[[Block], Block]] = None,
              version: Optional[int] = None) -> Block:
        """A solved block on ``parent`` (default: tip), not submitted.

        ``mutate`` may rewrite the block before the nonce is ground (to make
        an invalid block that still has valid proof of work).
        """
        parent = parent if parent is not None else self.chainstate.tip
        assert parent is not None
        self._extra_nonce += 1
        block = create_block(self.chainstate, self.script_pubkey, txs, parent=parent,
                             time=time if time is not None else self._next_time(parent),
                             extra_nonce=self._extra_nonce, fees=fees, version=version)
        if mutate is not None:
            block = mutate(block)
        return solve(block, self.chainstate.params)

    def mine(self, count: int = 1, txs: Sequence[Transaction] = (),
             parent: Optional[BlockIndexEntry] = None) -> List[Block]:
        """Mine ``count`` blocks (``txs`` go in the first) and submit each."""
        blocks = []
        for i in range(count):
            block = self.build(txs if i == 0 else (), parent=parent)
            entry = self.chainstate.process_block(block)
            self._remember_coinbase(block)
            blocks.append(block)
            parent = entry if parent is not None else None
        return blocks

    def _remember_coinbase(self, block: Block) -> None:
        cb = block.txs[0]
        out = cb.vout[0]
        self.coinbase_outputs.append(Spendable(OutPoint(cb.txid, 0), out.value, out.script_pubkey))

    def spend(self, inputs: Sequence[Spendable] | Spendable,
              outputs: Optional[Sequence[Tuple[bytes, int]]] = None, fee: int = 10_000,
              locktime: int = 0, sequence: int = 0xFFFFFFFF, version: int = 1) -> Transaction:
        """A signed transaction spending builder-owned outputs.

        Without ``outputs`` it pays everything less ``fee`` back to the
        builder's key in one output.
        """
        if isinstance(inputs, Spendable):
            inputs = [inputs]
        if outputs is None:
            outputs = [(self.script_pubkey, sum(s.value for s in inputs) - fee)]
        unsigned = Transaction([TxIn(s.outpoint, b"", sequence) for s in inputs],
                               [TxOut(value, script) for script, value in outputs],
                               locktime, version)
        script_sigs = [sign_p2pkh_input(unsigned, i, self.key, s.script_pubkey)
                       for i, s in enumerate(inputs)]
        return Transaction([TxIn(s.outpoint, sig, sequence)
                            for s, sig in zip(inputs, script_sigs)],
                           unsigned.vout, locktime, version)

    @staticmethod
    def outputs_of(tx: Transaction) -> List[Spendable]:
        """The outputs of ``tx`` as spendables (for chaining spends)."""
        return [Spendable(OutPoint(tx.txid, n), out.value, out.script_pubkey)
                for n, out in enumerate(tx.vout)]


def open_chain(datadir: str, params: Optional[ChainParams] = None, reindex: bool = False,
               reindex_chainstate: bool = False, **store_options) -> ChainState:
    """A loaded regtest (default) chain state on a fresh or existing datadir."""
    params = params or REGTEST
    store = ChainStore(datadir, params, **store_options)
    store.open()
    chainstate = ChainState(params, store)
    chainstate.load(reindex=reindex, reindex_chainstate=reindex_chainstate)
    return chainstate
