"""Core's VerifyDB: re-check the last blocks of the active chain against their stored data.

The RPC ``verifychain`` only parses its arguments and runs :func:`verify_chain` on the
validation worker (``ChainAccess.call``); a GUI or a plugin runs the same function the
same way.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence

from twisted.logger import Logger

from coin.chain.chainstate import ChainState
from coin.chain.index import BLOCK_HAVE_UNDO, BlockIndexEntry
from coin.consensus.block_check import check_block
from coin.consensus.errors import ValidationError
from coin.primitives.block import Block
from coin.primitives.coin import Coin
from coin.primitives.hashes import hash_to_hex
from coin.primitives.script import is_unspendable
from coin.primitives.serialize import DeserializationError
from coin.storage.coins import Key
from coin.storage.errors import StorageError

log = Logger()

#: Core's DEFAULT_CHECKLEVEL and DEFAULT_CHECKBLOCKS.
DEFAULT_CHECKLEVEL = 3
DEFAULT_CHECKBLOCKS = 6


class _UndoneCoins:
    """The UTXO set as it was before the blocks disconnected so far (check level 3).

    Changes stay in this overlay; the chain state's own coins are only read.
    """

    def __init__(self, chainstate: ChainState) -> None:
        self._fetch = chainstate.store.coins.fetch
        self._coins: Dict[Key, Optional[Coin]] = {}

    def disconnect(self, entry: BlockIndexEntry, block: Block,
                   undo: Sequence[Sequence[Coin]]) -> Optional[str]:
        """Undo ``block``; what is inconsistent (Core's "unclean" disconnect), or None."""
        txs = block.txs
        wanted = [(tx.txid, n) for tx in txs for n in range(len(tx.vout))]
        wanted += [(i.prevout.txid, i.prevout.n) for tx in txs[1:] for i in tx.vin]
        missing = list(dict.fromkeys(k for k in wanted if k not in self._coins))
        self._coins.update(zip(missing, self._fetch(missing)))
        for index in range(len(txs) - 1, -1, -1):
            tx = txs[index]
            for n, out in enumerate(tx.vout):
                if is_unspendable(out.script_pubkey):
                    continue
                key = (tx.txid, n)
                created = Coin(out.value, out.script_pubkey, entry.height, tx.is_coinbase(),
                               tx.version)
                if self._coins.get(key) != created:
                    return "output %s:%d is not unspent as the block created it" % (tx.txid_hex, n)
                self._coins[key] = None
            if index:
                for txin, coin in zip(tx.vin, undo[index - 1], strict=True):
                    key = (txin.prevout.txid, txin.prevout.n)
                    if self._coins.get(key) is not None:
                        return "restoring %s:%d would overwrite an unspent output" % (
                            hash_to_hex(key[0]), key[1])
                    self._coins[key] = coin
        return None


def _check_block(chainstate: ChainState, entry: BlockIndexEntry, level: int,
                 undone: Optional[_UndoneCoins]) -> Optional[str]:
    """One block of verifychain at ``level``: what is wrong with it, or None."""
    block = chainstate.read_block(entry)
    if block.hash != entry.hash:
        return "block data does not match its header"
    if level < 1:
        return None
    try:
        check_block(block, chainstate.params)
    except ValidationError as e:
        return "bad block: %s" % e
    if level < 2:
        return None
    if not entry.status & BLOCK_HAVE_UNDO:
        return "no undo data" if undone is not None else None
    undo = chainstate.read_undo(entry)
    if len(undo) != len(block.txs) - 1 or any(
            len(spent) != len(tx.vin) for spent, tx in zip(undo, block.txs[1:])):
        return "undo data does not match the block"
    return undone.disconnect(entry, block, undo) if undone is not None else None


def verify_chain(chainstate: ChainState, level: int = DEFAULT_CHECKLEVEL,
                 depth: int = DEFAULT_CHECKBLOCKS) -> bool:
    """Core's VerifyDB over the last ``depth`` blocks (0: all) of the active chain.

    Levels: 0 reads each block, 1 also runs the context-free block checks,
    2 also reads the undo data (checksum) and checks it has one spent coin per
    input, 3 also disconnects the blocks from the tip down in memory and checks
    that the UTXO set holds exactly what each block created and that the undo
    data restores only spent outputs. Level 4 (reconnecting) is not
    implemented: it checks as level 3 does. Genesis is never checked (as Core).
    Run it on the writer thread (``ChainAccess.call``), so the chain holds still
    (Core holds cs_main).
    """
    tip = chainstate.tip
    if tip is None or tip.prev is None:
        return True
    level = max(0, min(level, 4))
    if depth <= 0 or depth > chainstate.height:
        depth = chainstate.height
    log.info("Verifying last {depth} blocks at level {checklevel}", depth=depth, checklevel=level)
    undone = _UndoneCoins(chainstate) if level >= 3 else None
    entry = tip
    checked_txs = 0
    while entry.prev is not None and entry.height > chainstate.height - depth:
        if chainstate.prune_mode and not (entry.have_data()
                                          and entry.status & BLOCK_HAVE_UNDO):
            # Core: when pruning, only go back as far as there is data.
            log.info("verifychain: stopping at height {height} (pruning, no data)",
                     height=entry.height)
            break
        try:
            problem = _check_block(chainstate, entry, level, undone)
        except (StorageError, DeserializationError) as e:
            problem = str(e)
        if problem:
            log.error("verifychain: block {hash} at height {height}: {problem}",
                      hash=hash_to_hex(entry.hash), height=entry.height, problem=problem)
            return False
        checked_txs += entry.tx_count
        entry = entry.prev
    log.info("No coin database inconsistencies in last {depth} blocks ({txs} transactions)",
             depth=depth, txs=checked_txs)
    return True
