"""Chain persistence: block/undo files, block index, UTXO set and chain state.

Nothing outside this package touches SQL or the block files; use
:class:`coin.storage.chainstore.ChainStore` (and ``dbpool.DBPool`` for reads
from the reactor side).
"""
