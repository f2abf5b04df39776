"""Build block templates on the active tip and grind their nonce.

Used by regtest mining (``generatetoaddress``) and by the test-chain factory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Tuple

from coin.chain.chainstate import ChainState
from coin.chainparams import MAX_BLOCK_SIGOPS, MAX_BLOCK_SIZE
from coin.chain.index import BlockIndexEntry
from coin.consensus.pow import check_proof_of_work, get_next_work_required
from coin.consensus.subsidy import block_subsidy
from coin.consensus.versionbits import compute_block_version
from coin.mining.selection import Selection, select_transactions
from coin.primitives.block import Block, BlockHeader
from coin.primitives.merkle import merkle_root
from coin.primitives.script import push_int
from coin.primitives.transaction import CURRENT_TX_VERSION, OutPoint, Transaction, TxIn, TxOut

if TYPE_CHECKING:
    from coin.mempool.pool import Mempool


class MiningError(Exception):
    """The template cannot be built (unknown inputs, nonce space exhausted)."""


def coinbase_script_sig(height: int, extra_nonce: int) -> bytes:
    """BIP34 height push followed by the extra nonce, as Core's miner writes it."""
    return push_int(height) + push_int(extra_nonce)


def create_coinbase(height: int, script_pubkey: bytes, value: int,
                    extra_nonce: int = 0, payee: Optional[Tuple[bytes, int]] = None,
                    superblock: Sequence[Tuple[bytes, int]] = ()) -> Transaction:
    """The miner's output 0; with a masternode ``payee`` (script, amount) as output 1,
    paid out of ``value``; then a superblock's payments, paid on top of ``value``."""
    outputs = [TxOut(value, script_pubkey)]
    if payee is not None:
        outputs = [TxOut(value - payee[1], script_pubkey), TxOut(payee[1], payee[0])]
    outputs += [TxOut(amount, script) for script, amount in superblock]
    return Transaction([TxIn(OutPoint(), coinbase_script_sig(height, extra_nonce))], outputs,
                       version=CURRENT_TX_VERSION)


def template_fees(chainstate: ChainState, txs: Sequence[Transaction]) -> int:
    """Fees of ``txs`` spending the UTXO set and each other (in order)."""
    created: Dict[Tuple[bytes, int], int] = {}
    fees = 0
    coins = chainstate.store.coins
    for tx in txs:
        value_in = 0
        for txin in tx.vin:
            key = (txin.prevout.txid, txin.prevout.n)
            value = created.pop(key, None)
            if value is None:
                coin = coins.get(key)
                if coin is None:
                    raise MiningError("input %s:%d not found" % (txin.prevout.txid[::-1].hex(),
                                                                 txin.prevout.n))
                value = coin.value
            value_in += value
        fees += value_in - tx.total_out()
        for n, out in enumerate(tx.vout):
            created[(tx.txid, n)] = out.value
    return fees


def create_block(chainstate: ChainState, script_pubkey: bytes,
                 txs: Iterable[Transaction] = (), parent: Optional[BlockIndexEntry] = None,
                 time: Optional[int] = None, extra_nonce: int = 0,
                 fees: Optional[int] = None, version: Optional[int] = None) -> Block:
    """An unsolved block on ``parent`` (default: the tip) paying subsidy + fees."""
    params = chainstate.params
    prev = parent if parent is not None else chainstate.tip
    assert prev is not None
    txs = list(txs)
    height = prev.height + 1
    if fees is None:
        fees = template_fees(chainstate, txs)
    if time is None:
        time = max(prev.median_time_past() + 1, chainstate.adjusted_time())
    if version is None:
        version = compute_block_version(prev, params, chainstate.versionbits)
    payee = chainstate.block_payee(height) if chainstate.block_payee is not None else None
    superblock = (chainstate.superblock_payments(height)
                  if chainstate.superblock_payments is not None else ())
    coinbase = create_coinbase(height, script_pubkey, block_subsidy(height, params) + fees,
                               extra_nonce, payee, superblock)
    all_txs: List[Transaction] = [coinbase] + txs
    root, _ = merkle_root([tx.txid for tx in all_txs])
    bits = get_next_work_required(prev, time, params)
    header = BlockHeader(version, prev.hash, root, time, bits, 0)
    return Block(header, all_txs)


def create_block_from_pool(chainstate: ChainState, pool: Optional["Mempool"],
                           script_pubkey: bytes, extra_nonce: int = 0,
                           print_priority: bool = False) -> Tuple[Block, Optional[Selection]]:
    """Core's CreateNewBlock: the tip's successor filled from the pool by ancestor fee rate."""
    if pool is None:
        return create_block(chainstate, script_pubkey, extra_nonce=extra_nonce), None
    selection = select_transactions(pool, MAX_BLOCK_SIZE, MAX_BLOCK_SIGOPS,
                                    print_priority=print_priority)
    block = create_block(chainstate, script_pubkey, selection.txs, extra_nonce=extra_nonce,
                         fees=sum(selection.fees))
    return block, selection


def solve(block: Block, params, max_tries: int = 1 << 32) -> Block:
    """Grind the nonce until the header meets its target."""
    header = block.header
    for nonce in range(min(max_tries, 1 << 32)):
        candidate = header.with_nonce(nonce)
        if check_proof_of_work(candidate.hash, candidate.bits, params):
            return Block(candidate, block.txs)
    raise MiningError("nonce space exhausted")
