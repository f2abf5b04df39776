"""Child process for the kill -9 recovery test: mines forever, reporting each block.

Arguments: the data directory and optionally a ``-dbengine`` value.

A line ``connected <height> <hash>`` is printed only after ``process_block``
returned, i.e. after the node published the block as connected.
"""

import sys

from coin.testing.chainbuilder import ChainBuilder, Spendable, open_chain
from coin.primitives.transaction import OutPoint


def main(datadir: str, dbengine: str) -> None:
    chain = open_chain(datadir, dbcache_mib=1, dbengine=dbengine)
    builder = ChainBuilder(chain)
    print("ready %d %s" % (chain.height, chain.tip.hash[::-1].hex()), flush=True)
    while True:
        height = chain.height + 1
        txs = []
        if height > 101:
            old = chain.read_block(chain.at_height(height - 100)).txs[0]
            txs.append(builder.spend(Spendable(OutPoint(old.txid, 0), old.vout[0].value,
                                               old.vout[0].script_pubkey)))
        [block] = builder.mine(1, txs=txs)
        if height % 7 == 0:
            chain.flush()
        print("connected %d %s" % (height, block.hash[::-1].hex()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "sqlite")
