"""gettxoutproof / verifytxoutproof against a node in this process, with and without -txindex:
proofs in Core's merkle-block format, which block is used, and Core 0.17's errors; and the
wallet's importprunedfunds / removeprunedfunds, which take such a proof."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any, Dict, Tuple

from coin.primitives.merkleblock import MerkleBlock
from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import MINER_ADDRESS, NodeClient, RPCFailure

UNKNOWN = "11" * 32


def build(node: InProcessNode) -> Dict[str, Any]:
    """A wallet with mature coins; block A holds two sends, block B a transaction whose only
    output block C spends (found by neither the UTXO set nor the mempool), the pool one send."""
    own = node.rpc("getnewaddress")
    node.rpc("generatetoaddress", 101, own)
    sends = [node.rpc("sendtoaddress", node.rpc("getnewaddress"), 1) for _ in range(2)]
    block_a = node.rpc("generatetoaddress", 1, MINER_ADDRESS)[0]
    spent = _spend_whole(node, node.rpc("listunspent", 1, 9999, [], True,
                                        {"minimumAmount": 10})[0])
    block_b = node.rpc("generatetoaddress", 1, MINER_ADDRESS)[0]
    _spend_whole(node, {"txid": spent, "vout": 0,
                        "amount": node.rpc("gettxout", spent, 0)["value"]})
    node.rpc("generatetoaddress", 1, MINER_ADDRESS)
    pooled = node.rpc("sendtoaddress", own, 1)
    return {"sends": sends, "block_a": block_a, "spent": spent, "block_b": block_b,
            "pooled": pooled}


def _spend_whole(node: NodeClient, unspent: Dict[str, Any]) -> str:
    """Send all of one output (less a fee) to one new wallet output, and return the txid."""
    amount = Decimal(str(unspent["amount"])) - Decimal("0.001")
    raw = node.rpc("createrawtransaction", [{"txid": unspent["txid"], "vout": unspent["vout"]}],
                   {node.rpc("getnewaddress"): str(amount)})
    return node.rpc("sendrawtransaction", node.rpc("signrawtransactionwithwallet", raw)["hex"])


class TxOutProofTests(NodeTestCase):
    def rpc_error(self, node: NodeClient, method: str, *params: Any, path: str = "/"):
        try:
            node.rpc(method, *params, path=path)
        except RPCFailure as e:
            return e.code, e.message
        self.fail("%s succeeded" % method)

    def test_proofs_without_txindex(self) -> None:
        node = self.start_node(chain=build)
        state = node.state
        first, second = state["sends"]
        # Found through an unspent output: the block is named in the proof's header.
        proof = node.rpc("gettxoutproof", [first])
        self.assertEqual(MerkleBlock.deserialize(bytes.fromhex(proof)).header.hash_hex,
                         state["block_a"])
        self.assertEqual(node.rpc("verifytxoutproof", proof), [first])
        self.assertEqual(node.rpc("gettxoutproof", [first], state["block_a"]), proof)
        # Several txids: the result is in block order.
        block_txs = node.rpc("getblock", state["block_a"])["tx"]
        both = node.rpc("verifytxoutproof", node.rpc("gettxoutproof", [second, first]))
        self.assertEqual(both, [tx for tx in block_txs if tx in (first, second)])
        coinbase = block_txs[0]
        self.assertEqual(node.rpc("verifytxoutproof", node.rpc("gettxoutproof", [coinbase])),
                         [coinbase])
        # All outputs spent: only with the block's hash.
        self.assertEqual(self.rpc_error(node, "gettxoutproof", [state["spent"]]),
                         (-5, "Transaction not yet in block"))
        proof = node.rpc("gettxoutproof", [state["spent"]], state["block_b"])
        self.assertEqual(node.rpc("verifytxoutproof", proof), [state["spent"]])
        self.assertEqual(self.rpc_error(node, "gettxoutproof", [state["pooled"]]),
                         (-5, "Transaction not yet in block"))
        self.assertEqual(self.rpc_error(node, "gettxoutproof", []),
                         (-5, "Transaction not yet in block"))

    def test_gettxoutproof_errors(self) -> None:
        node = self.start_node(chain=build)
        state = node.state
        first = state["sends"][0]
        self.assertEqual(self.rpc_error(node, "gettxoutproof", ["xyz"]), (-8, "Invalid txid xyz"))
        self.assertEqual(self.rpc_error(node, "gettxoutproof", ["g" * 64]),
                         (-8, "Invalid txid " + "g" * 64))
        self.assertEqual(self.rpc_error(node, "gettxoutproof", [first, first]),
                         (-8, "Invalid parameter, duplicated txid: " + first))
        self.assertEqual(self.rpc_error(node, "gettxoutproof", [first], UNKNOWN),
                         (-5, "Block not found"))
        self.assertEqual(self.rpc_error(node, "gettxoutproof", [first], state["block_b"]),
                         (-5, "Not all transactions found in specified or retrieved block"))
        self.assertEqual(self.rpc_error(node, "gettxoutproof", [first, state["spent"]]),
                         (-5, "Not all transactions found in specified or retrieved block"))
        self.assertEqual(self.rpc_error(node, "gettxoutproof", first),
                         (-1, "JSON value is not an array as expected"))

    def test_verifytxoutproof_errors(self) -> None:
        node = self.start_node(chain=build)
        state = node.state
        first = state["sends"][0]
        proof = bytes.fromhex(node.rpc("gettxoutproof", [first]))
        self.assertEqual(self.rpc_error(node, "verifytxoutproof", "zz"),
                         (-8, "proof must be hexadecimal string (not 'zz')"))
        self.assertEqual(self.rpc_error(node, "verifytxoutproof", proof[:-1].hex()),
                         (-1, "CDataStream::read(): end of data: iostream error"))
        # A hash changed: the tree no longer gives the header's root.
        tampered = bytearray(proof)
        tampered[90] ^= 1
        self.assertEqual(node.rpc("verifytxoutproof", tampered.hex()), [])
        # A transaction count the block does not have: no txids.
        merkle_block = MerkleBlock.deserialize(proof)
        merkle_block.tree.tx_count += 1
        self.assertEqual(node.rpc("verifytxoutproof", merkle_block.serialize().hex()), [])
        node.rpc("invalidateblock", state["block_a"])
        self.assertEqual(self.rpc_error(node, "verifytxoutproof", proof.hex()),
                         (-5, "Block not found in chain"))

    def test_proofs_with_txindex(self) -> None:
        node = self.start_node("-txindex=1", chain=build)
        deadline = time.monotonic() + 30
        while not node.rpc("getindexinfo")["txindex"]["synced"]:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        state = node.state
        proof = node.rpc("gettxoutproof", [state["spent"]])
        self.assertEqual(MerkleBlock.deserialize(bytes.fromhex(proof)).header.hash_hex,
                         state["block_b"])
        self.assertEqual(node.rpc("verifytxoutproof", proof), [state["spent"]])
        self.assertEqual(self.rpc_error(node, "gettxoutproof", [state["pooled"]]),
                         (-5, "Transaction not yet in block"))
        self.assertEqual(self.rpc_error(node, "gettxoutproof", [UNKNOWN]),
                         (-5, "Transaction not yet in block"))


def paid_to_other(node: InProcessNode) -> Dict[str, Any]:
    """``build``'s chain, and a second wallet "other" watching the address of the first send
    (imported without rescan: it does not know the payment)."""
    state = build(node)
    node.rpc("createwallet", "other")
    send = node.rpc("gettransaction", state["sends"][0], path="/wallet/")
    address = next(d["address"] for d in send["details"] if d["category"] == "receive")
    node.rpc("importaddress", address, "", False, path="/wallet/other")
    state["address"] = address
    return state


OTHER = "/wallet/other"


class PrunedFundsTests(NodeTestCase):
    rpc_error = TxOutProofTests.rpc_error

    def first_send(self) -> Tuple[InProcessNode, Dict[str, Any], str, str]:
        """A node on ``paid_to_other``'s chain with "other" loaded, its state, and the first
        send's raw transaction and proof."""
        node = self.start_node(chain=paid_to_other)
        node.rpc("loadwallet", "other")
        state = node.state
        first = state["sends"][0]
        raw = node.rpc("getrawtransaction", first, False, state["block_a"])
        return node, state, raw, node.rpc("gettxoutproof", [first])

    def test_import_and_remove(self) -> None:
        node, state, raw, proof = self.first_send()
        first = state["sends"][0]
        other = OTHER
        self.assertEqual(node.rpc("getbalance", "*", 1, True, path=other), 0)
        self.assertIsNone(node.rpc("importprunedfunds", raw, proof, path=other))
        imported = node.rpc("gettransaction", first, True, path=other)
        self.assertEqual((imported["blockhash"], imported["confirmations"]), (state["block_a"], 3))
        self.assertEqual(node.rpc("getbalance", "*", 1, True, path=other), 1)
        # Again: nothing changes.
        self.assertIsNone(node.rpc("importprunedfunds", raw, proof, path=other))
        self.assertEqual(len(node.rpc("listtransactions", "*", 10, 0, True, path=other)), 1)
        self.assertIsNone(node.rpc("removeprunedfunds", first, path=other))
        self.assertEqual(self.rpc_error(node, "gettransaction", first, True, path=other),
                         (-5, "Invalid or non-wallet transaction id"))
        self.assertEqual(node.rpc("getbalance", "*", 1, True, path=other), 0)
        self.assertEqual(self.rpc_error(node, "removeprunedfunds", first, path=other),
                         (-8, "Transaction does not exist in wallet."))
        # SetHex, as the reference node: a malformed txid is one the wallet does not have.
        self.assertEqual(self.rpc_error(node, "removeprunedfunds", "zz", path=other),
                         (-8, "Transaction does not exist in wallet."))

    def test_import_errors(self) -> None:
        node, state, raw, proof = self.first_send()
        first, second = state["sends"]
        other = OTHER
        self.assertEqual(self.rpc_error(node, "importprunedfunds", "zz", proof, path=other),
                         (-22, "TX decode failed"))
        self.assertEqual(self.rpc_error(node, "importprunedfunds", raw, "zz", path=other),
                         (-8, "proof must be hexadecimal string (not 'zz')"))
        self.assertEqual(self.rpc_error(node, "importprunedfunds", raw, proof[:-2], path=other),
                         (-1, "CDataStream::read(): end of data: iostream error"))
        tampered = bytearray.fromhex(proof)
        tampered[90] ^= 1
        self.assertEqual(self.rpc_error(node, "importprunedfunds", raw, tampered.hex(), path=other),
                         (-5, "Something wrong with merkleblock"))
        self.assertEqual(self.rpc_error(node, "importprunedfunds", raw,
                                        node.rpc("gettxoutproof", [second]), path=other),
                         (-5, "Transaction given doesn't exist in proof"))
        raw_second = node.rpc("getrawtransaction", second, False, state["block_a"])
        self.assertEqual(self.rpc_error(node, "importprunedfunds", raw_second,
                                        node.rpc("gettxoutproof", [second]), path=other),
                         (-5, "No addresses in wallet correspond to included transaction"))
        node.rpc("invalidateblock", state["block_a"])
        self.assertEqual(self.rpc_error(node, "importprunedfunds", raw, proof, path=other),
                         (-5, "Block not found in chain"))
