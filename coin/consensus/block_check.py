"""Context-free block checks (Core's CheckBlockHeader / CheckBlock).

Rules that need the parent block (difficulty, timestamps, versions, finality,
BIP34) live in :mod:`coin.consensus.softforks`; rules that need the UTXO set
are applied by the connect loop with :mod:`coin.consensus.tx_check`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List

from coin.chainparams import MAX_BLOCK_SIGOPS, MAX_BLOCK_SIZE
from coin.consensus.errors import ValidationError
from coin.consensus.pow import check_proof_of_work
from coin.consensus.tx_check import check_transaction, legacy_sigops
from coin.primitives.hashes import hash_to_hex

if TYPE_CHECKING:
    from coin.chainparams import ChainParams
    from coin.primitives.block import Block, BlockHeader


def check_block_header(header: BlockHeader, params: ChainParams, check_pow: bool = True) -> None:
    """The header's hash meets the target its bits claim ("high-hash")."""
    if check_pow and not check_proof_of_work(header.hash, header.bits, params):
        raise ValidationError("high-hash", "proof of work failed", dos=50)


def check_block(block: Block, params: ChainParams, check_pow: bool = True,
                check_merkle: bool = True) -> List[int]:
    """Core's CheckBlock, in Core's order; raises ValidationError.

    Returns each transaction's legacy sigop count, so block connect need not count
    them again.

    A wrong merkle root and a mutated transaction list (CVE-2012-2459) set
    ``corruption_possible``: the same header hash may still belong to a valid
    block.  A failing transaction keeps its own reason and ban score, with the
    txid in the debug text (Core 0.14+).  ``bad-blk-sigops`` is not marked as
    possible corruption (0.13+; the merkle root already commits to the
    scripts counted).
    """
    check_block_header(block.header, params, check_pow)

    txs = block.txs
    if check_merkle:
        root, mutated = block.compute_merkle_root()
        if root != block.header.merkle_root:
            raise ValidationError("bad-txnmrklroot", "hashMerkleRoot mismatch", dos=100,
                                  corruption_possible=True)
        if mutated:
            raise ValidationError("bad-txns-duplicate", "duplicate transaction", dos=100,
                                  corruption_possible=True)

    if not txs or len(txs) > MAX_BLOCK_SIZE or block.size > MAX_BLOCK_SIZE:
        raise ValidationError("bad-blk-length", "size limits failed", dos=100)

    if not txs[0].is_coinbase():
        raise ValidationError("bad-cb-missing", "first tx is not coinbase", dos=100)
    for i in range(1, len(txs)):
        if txs[i].is_coinbase():
            raise ValidationError("bad-cb-multiple", "more than one coinbase", dos=100)

    for tx in txs:
        try:
            check_transaction(tx)
        except ValidationError as err:
            raise ValidationError(
                err.reason,
                "Transaction check failed (tx hash %s) %s" % (hash_to_hex(tx.txid), err.debug),
                dos=err.dos, code=err.code,
                corruption_possible=err.corruption_possible) from err

    legacy = [legacy_sigops(tx) for tx in txs]
    if sum(legacy) > MAX_BLOCK_SIGOPS:
        raise ValidationError("bad-blk-sigops", "out-of-bounds SigOpCount", dos=100)
    return legacy
