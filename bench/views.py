"""Time to render the JSON of a 2,000-transaction block, in process (no HTTP, no node).

Usage: ``python bench/views.py [--runs N] [--workdir DIR] [--repo DIR]``

Builds a regtest chain whose last block holds 2,000 P2PKH spends, then times (median of
``--runs``) the first render of that block as REST ``block/<h>.json`` and RPC ``getblock``
verbosity 2 do it (block read from its file, view objects, then bytes), the view objects
alone, the encoding alone, the block with txids only, one transaction's JSON (REST
``tx/<txid>.json``), and through the JSON-RPC protocol core a batch of 1,000
``getblockhash`` and a single ``getbestblockhash``. Prints one JSON object (milliseconds).

``--repo DIR`` times the code of another checkout (``git archive main | tar -x -C DIR``):
run it and this one alternately to compare old and new on a noisy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from typing import Any, Dict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.timing import median_seconds  # noqa: E402

SPENDS = 2_000
FANOUTS = 2


def build_chain(datadir: str) -> Any:
    """A chain whose tip block holds ``SPENDS`` one-in-one-out P2PKH spends."""
    from bench.chaindata import fan_out
    from coin.testing.chainbuilder import ChainBuilder, open_chain

    chain = open_chain(datadir)
    builder = ChainBuilder(chain, start_time=1_700_000_000)
    builder.mine(100 + FANOUTS)
    coins = fan_out(builder, builder.coinbase_outputs[:FANOUTS], SPENDS // FANOUTS)
    builder.mine(1, txs=[builder.spend(s, fee=1_000) for s in coins])
    return chain


def measure(chain: Any, runs: int) -> Dict[str, Any]:
    from coin.rest import formats
    from coin.rest.formats import json_body
    from coin.rpc.jsonrpc import encode_json
    from coin.views.block import block_json
    from coin.views.transaction import tx_block_fields, tx_json

    # What REST made of a block object: older checkouts encoded it transaction by transaction.
    block_body = getattr(formats, "block_json_body", json_body)
    view = chain.published
    entry = view.tip
    block = chain.read_block(entry)
    params = chain.params
    tx = block.txs[1]
    fields = tx_block_fields(entry, view)

    def views() -> Any:
        return block_json(block, entry, view, params, tx_detail=True)

    def first_render(txs: bool) -> Any:
        return block_json(chain.read_block(entry), entry, view, params, tx_detail=txs)

    obj = views()
    ms: Dict[str, float] = {
        "read_block": median_seconds(lambda: chain.read_block(entry), runs),
        "block_json_first_render": median_seconds(lambda: block_body(first_render(True)), runs),
        "getblock2_first_render": median_seconds(lambda: encode_json(first_render(True)), runs),
        "block_views_only": median_seconds(lambda: first_render(True), runs),
        "block_views_warm_block": median_seconds(views, runs),
        "block_encode_rest": median_seconds(lambda: block_body(obj), runs),
        "block_encode_rpc": median_seconds(lambda: encode_json(obj), runs),
        "block_txids_first_render": median_seconds(lambda: block_body(first_render(False)),
                                                   runs),
        "tx_json": median_seconds(lambda: json_body(tx_json(tx, params, **fields)), runs * 50),
    }
    ms.update(_rpc_batch(chain, runs))
    return {"txs": len(block.txs), "runs": runs,
            "ms": {key: round(value * 1000, 3) for key, value in ms.items()}}


def _rpc_batch(chain: Any, runs: int) -> Dict[str, float]:
    """A batch of 1,000 getblockhash through JSONRPCCore, as the HTTP layer calls it."""
    from twisted.internet.task import Clock

    from coin.rpc.auth import Whitelist
    from coin.rpc.jsonrpc import JSONRPCCore, Warmup
    from coin.rpc.methods.blockchain import METHODS
    from coin.rpc.registry import MethodTable

    class Node:
        pass

    node = Node()
    node.chain = _Access(chain)  # type: ignore[attr-defined]
    warmup = Warmup(None)
    core = JSONRPCCore(MethodTable(METHODS), node, whitelist=Whitelist(),  # type: ignore
                       warmup=warmup, clock=Clock())
    height = chain.published.tip.height
    body = json.dumps([{"method": "getblockhash", "params": [i % height], "id": i}
                       for i in range(1000)]).encode()
    single = b'{"method":"getbestblockhash","params":[],"id":1}'
    replies = []

    def batch() -> None:
        core.handle(body, "user").addCallback(replies.append)

    def one() -> None:
        core.handle(single, "user").addCallback(replies.append)

    result = {"rpc_batch_1000_getblockhash": median_seconds(batch, runs),
              "rpc_getbestblockhash": median_seconds(one, runs * 100)}
    assert all(reply.status == 200 for reply in replies), replies[:1]
    return result


class _Access:
    """The few ChainAccess members getblockhash and getbestblockhash use."""

    def __init__(self, chain: Any) -> None:
        self.state = chain
        self.params = chain.params

    def snapshot(self) -> Any:
        return self.state.published


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--workdir", default=None, help="keep the chain here (default: temporary)")
    parser.add_argument("--repo", default=None, help="time this checkout's code instead")
    args = parser.parse_args()
    if args.repo is not None:
        sys.path.insert(0, os.path.abspath(args.repo))
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench-views-")
    try:
        chain = build_chain(os.path.join(workdir, "chain"))
        print(json.dumps(measure(chain, args.runs)))
        chain.close()
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
