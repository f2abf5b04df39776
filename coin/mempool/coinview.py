"""The UTXO set as seen through the pool (Core's CCoinsViewMemPool).

Outputs of pool transactions are coins at :data:`MEMPOOL_HEIGHT`; with
``hide_spent`` an output some pool transaction spends is treated as spent
(gettxout with include_mempool, REST getutxos/checkmempool).  Call on the
validation worker thread so the UTXO set and the pool are one view.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from coin.chain.chainstate import ChainState
from coin.chain.index import BlockIndexEntry
from coin.mempool.pool import Mempool
from coin.primitives.coin import Coin
from coin.views.utxo import MEMPOOL_HEIGHT

Key = Tuple[bytes, int]
#: ``key -> (scriptPubKey, amount)`` of a spent output a signer knows of, or None.
PrevoutLookup = Callable[[Key], Optional[Tuple[bytes, int]]]


def pool_coin(pool: Mempool, key: Key) -> Optional[Coin]:
    """Output ``key`` of a pool transaction as a coin, if there is one."""
    found = pool.get_output(*key)
    if found is None:
        return None
    txout, version = found
    return Coin(txout.value, txout.script_pubkey, MEMPOOL_HEIGHT, False, version)


def coins_with_pool(chainstate: ChainState, pool: Optional[Mempool], keys: Sequence[Key],
                    hide_spent: bool = False) -> List[Optional[Coin]]:
    """The coin for each key (None: missing or spent), pool outputs included."""
    if pool is None:
        return list(chainstate.store.coins.fetch(list(keys)))
    with pool.lock:
        chain_keys = [k for k in keys if k[0] not in pool.entries]
        from_chain = dict(zip(chain_keys, chainstate.store.coins.fetch(chain_keys)))
        coins: List[Optional[Coin]] = []
        for key in keys:
            if hide_spent and key in pool.spenders:
                coins.append(None)
            elif key in from_chain:
                coins.append(from_chain[key])
            else:
                coins.append(pool_coin(pool, key))
        return coins


def coin_at_tip(chainstate: ChainState, pool: Optional[Mempool], key: Key
                ) -> Tuple[BlockIndexEntry, Optional[Coin]]:
    """An unspent coin and the tip it is unspent at, read together on the validation worker.

    With a pool, its outputs count and its spends hide coins (gettxout with include_mempool).
    """
    return chainstate.tip, coins_with_pool(chainstate, pool, [key], hide_spent=True)[0]


def spent_outputs(chainstate: ChainState, pool: Optional[Mempool], keys: List[Key],
                  known: Optional[PrevoutLookup]) -> Dict[Key, Tuple[bytes, int]]:
    """``(scriptPubKey, amount)`` of the outputs ``keys`` spend that are found: from the UTXO
    set and the pool, then ``known`` (signing; on the validation worker, where a wallet's lock
    may be waited for)."""
    coins = coins_with_pool(chainstate, pool, keys)
    view = {key: (coin.script_pubkey, coin.value) for key, coin in zip(keys, coins)
            if coin is not None}
    if known is not None:
        for key in keys:
            found = None if key in view else known(key)
            if found is not None:
                view[key] = found
    return view
