"""Build (once) the benchmark chain: regtest blocks full of 1-input-1-output P2PKH spends.

The blocks are written, length-prefixed, to ``<workdir>/blocks.bin`` so that the
benchmarks can feed the same chain to a fresh node in a separate process.
"""

from __future__ import annotations

import os
import struct
import tempfile
from typing import Iterator, List, Sequence

from coin.primitives.block import Block
from coin.testing.chainbuilder import ChainBuilder, Spendable, open_chain

FANOUT_TXS = 20          # coinbases split into...
FANOUT_OUTPUTS = 1_000   # ...this many outputs each: 20,000 spendable coins
SPENDS_PER_BLOCK = 2_000


def fan_out(builder: ChainBuilder, sources: Sequence[Spendable], outputs: int) -> List[Spendable]:
    """Split each source into ``outputs`` P2PKH coins (to the builder's key), confirmed in
    one new block; return the new coins."""
    fanouts = []
    for source in sources:
        each = (source.value - 100_000) // outputs
        fanouts.append(builder.spend(source, outputs=[(builder.script_pubkey, each)] * outputs,
                                     fee=source.value - each * outputs))
    builder.mine(1, txs=fanouts)
    return [s for tx in fanouts for s in ChainBuilder.outputs_of(tx)]


def build(workdir: str) -> str:
    """Create the chain in a scratch node; return the path of the blocks file."""
    path = os.path.join(workdir, "blocks.bin")
    if os.path.exists(path):
        return path
    chain = open_chain(tempfile.mkdtemp(dir=workdir))
    builder = ChainBuilder(chain, start_time=1_700_000_000)
    builder.mine(100 + FANOUT_TXS)
    coins = fan_out(builder, builder.coinbase_outputs[:FANOUT_TXS], FANOUT_OUTPUTS)
    for i in range(0, len(coins), SPENDS_PER_BLOCK):
        txs = [builder.spend(s, fee=1_000) for s in coins[i:i + SPENDS_PER_BLOCK]]
        builder.mine(1, txs=txs)
    with open(path + ".tmp", "wb") as out:
        for height in range(1, chain.height + 1):
            raw = chain.read_block(chain.at_height(height)).serialize()
            out.write(struct.pack("<I", len(raw)) + raw)
    os.replace(path + ".tmp", path)
    chain.close()
    return path


def read_blocks(path: str) -> Iterator[Block]:
    with open(path, "rb") as f:
        while True:
            head = f.read(4)
            if not head:
                return
            (size,) = struct.unpack("<I", head)
            yield Block.deserialize(f.read(size))


def load(path: str) -> List[Block]:
    return list(read_blocks(path))
