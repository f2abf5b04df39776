"""Regtest soft forks at Core 0.17's heights, as a Core-era test tool meets them.

Blocks are built here the way Core's functional-test framework builds them (its own
coinbase and header, any version) and handed to ``submitblock``: BIP34 is never
enforced on regtest, BIP66 (strict DER) from height 1,251 and BIP65 (CHECKLOCKTIMEVERIFY)
from 1,351 (design.md §3). Mining the 1,351 blocks takes about a second (doc/chain.md).
"""

from __future__ import annotations

import json
from typing import Any, List

from coin.chainparams import REGTEST
from coin.consensus.subsidy import block_subsidy
from coin.primitives.block import Block
from coin.primitives.script import OP_1NEGATE, OP_CHECKLOCKTIMEVERIFY, OP_DROP, push_data
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut

from tests.inprocess import NodeTestCase
from tests.nodeharness import NodeClient
from tests.functional.test_mempool import (
    FEE, SCRIPT, build_block, coinbase_at, mine, rpc, spend, with_script_sig,
)


def non_der(tx: Transaction) -> Transaction:
    """``tx`` with its signature's R padded by a zero byte: lax DER reads it, BIP66 does not."""
    script = tx.vin[0].script_sig
    sig, pubkey_push = script[1:1 + script[0]], script[1 + script[0]:]
    body = bytes([2, sig[3] + 1, 0]) + sig[4:-1]
    return with_script_sig(tx, push_data(bytes([0x30, len(body)]) + body + sig[-1:]) + pubkey_push)


def negative_cltv(tx: Transaction) -> Transaction:
    """``tx`` with ``-1 CHECKLOCKTIMEVERIFY DROP`` before its signature: a NOP until BIP65."""
    prefix = bytes([OP_1NEGATE, OP_CHECKLOCKTIMEVERIFY, OP_DROP])
    return with_script_sig(tx, prefix + tx.vin[0].script_sig)


def submit(node: NodeClient, block: Block) -> Any:
    return rpc(node, "submitblock", block.serialize().hex())


def statuses(node: NodeClient) -> List[tuple]:
    """``(id, version, enforce status, reject status)`` of each chaininfo soft fork."""
    return [(f["id"], f["version"], f["enforce"]["status"], f["reject"]["status"])
            for f in rpc(node, "getblockchaininfo")["softforks"]]


def mine_to(node: NodeClient, height: int) -> None:
    mine(node, height - rpc(node, "getblockcount"))


class RegtestHeightsTests(NodeTestCase):
    def setUp(self) -> None:
        self.node = self.start_node("-listen=0", "-rest=1")

    def assertChaininfo(self, expected: List[tuple]) -> None:
        self.assertEqual(statuses(self.node), expected)
        status, _, body = self.node.post(b"", path="/rest/chaininfo.json", method="GET")
        self.assertEqual((status, json.loads(body)["softforks"]),
                         (200, rpc(self.node, "getblockchaininfo")["softforks"]))

    def test_core_era_blocks_and_the_rule_heights(self) -> None:
        node = self.node
        mine(node, 110)
        # A version-1 block at 111, as Core's test framework builds it: accepted.
        old = build_block(node, [], 0, version=1)
        self.assertIsNone(submit(node, old))
        self.assertEqual(rpc(node, "getblockheader", old.hash_hex)["version"], 1)
        # A version-2 block whose coinbase lacks the height: BIP34 never applies here.
        bare = Transaction([TxIn(OutPoint(), b"\x02\xff\xff")],
                           [TxOut(block_subsidy(112, REGTEST), SCRIPT)])
        self.assertIsNone(submit(node, build_block(node, [], 0, version=2, coinbase=bare)))
        self.assertEqual(rpc(node, "getbestblockhash"), rpc(node, "getblockhash", 112))
        none_yet = [("bip34", 2, False, False), ("bip66", 3, False, False),
                    ("bip65", 4, False, False)]
        self.assertChaininfo(none_yet)

        # BIP66: a non-DER signature is fine in block 1,250, refused from 1,251 on.
        mine_to(node, 1249)
        self.assertIsNone(submit(node, build_block(node, [non_der(spend(coinbase_at(node, 1)))],
                                                   FEE)))
        self.assertChaininfo(none_yet)
        late = build_block(node, [non_der(spend(coinbase_at(node, 2)))], FEE)
        self.assertEqual(submit(node, late),
                         "mandatory-script-verify-flag-failed (Non-canonical DER signature)")
        self.assertEqual(submit(node, build_block(node, [], 0, version=2)),
                         "bad-version(0x00000002)")
        self.assertIsNone(submit(node, build_block(node, [], 0, version=3)))
        self.assertEqual(rpc(node, "getblockcount"), 1251)
        self.assertChaininfo([("bip34", 2, False, False), ("bip66", 3, True, True),
                              ("bip65", 4, False, False)])

        # BIP65: CHECKLOCKTIMEVERIFY is a NOP in block 1,350 and checked from 1,351 on.
        mine_to(node, 1349)
        self.assertIsNone(submit(node, build_block(
            node, [negative_cltv(spend(coinbase_at(node, 3)))], FEE)))
        late = build_block(node, [negative_cltv(spend(coinbase_at(node, 4)))], FEE)
        self.assertEqual(submit(node, late),
                         "mandatory-script-verify-flag-failed (Negative locktime)")
        self.assertEqual(submit(node, build_block(node, [], 0, version=3)),
                         "bad-version(0x00000003)")
        mine(node, 1)
        self.assertChaininfo([("bip34", 2, False, False), ("bip66", 3, True, True),
                              ("bip65", 4, True, True)])
        node.stop()
