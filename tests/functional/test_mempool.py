"""The memory pool of whole nodes, driven as a user drives it: JSON-RPC over HTTP, REST and
``coin-cli``.

The node has no wallet yet, so every transaction is built and signed here
(``ChainBuilder(None)`` signs with the key behind ``MINER_ADDRESS``, which the
nodes mine to) and submitted with ``sendrawtransaction``.  JSON is parsed with
``Decimal`` so amounts and priorities are compared exactly.

Nodes run in the test process (tests/inprocess.py), each test with its own:

- ``self.shared()``: a default node on a copy of the shared chain (200 blocks, then
  block 201 confirming a spend), built once per test process.
- ``self.strict()``: ``-acceptnonstdtxn=0 -limitancestorcount=3 -limitancestorsize=1`` on
  another copy of the same chain, so one transaction can be tried on both.
- Tests that mine, reorganise or need other options start a private node.
- PersistenceTests read debug.log, so they keep a real ``coind`` process.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from decimal import Decimal
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from coin.chainparams import REGTEST
from coin.consensus.subsidy import block_subsidy
from coin.mempool.persist import parse_pool
from coin.mining.assembler import create_coinbase, solve
from coin.primitives.block import Block, BlockHeader
from coin.primitives.merkle import merkle_root
from coin.primitives.script import OP_NOP, OP_RETURN, push_data
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.testing.chainbuilder import ChainBuilder, Spendable, deterministic_key

from tests.inprocess import InProcessNode, NodeTestCase, mine_chain, prepared
from tests.nodeharness import MINER_ADDRESS, SHARED_BLOCKS, NodeClient, NodeProcess, RPCFailure

COIN = 100_000_000
#: Height getutxos and gettxout give an output of a pool transaction (Core's MEMPOOL_HEIGHT).
MEMPOOL_HEIGHT = 0x7FFFFFFF
FEE = 10_000
#: Signs for MINER_ADDRESS: every coinbase the nodes mine is ours to spend.
SIGNER = ChainBuilder(None)
SCRIPT = SIGNER.script_pubkey
INSUFFICIENT = ["Insufficient data or no feerate found"]
#: Every node here: no P2P listening.
NODE_ARGS = ["-listen=0"]
#: getmempoolentry's fields, in order.
ENTRY_FIELDS = ["fees", "size", "vsize", "fee", "modifiedfee", "time", "height", "startingpriority",
                "currentpriority", "descendantcount", "descendantsize", "descendantfees", "ancestorcount",
                "ancestorsize", "ancestorfees", "wtxid", "depends", "spentby"]

# ---------------------------------------------------------------------------------------- helpers


def rpc(node: NodeClient, method: str, *params: Any) -> Any:
    """``node.rpc`` with JSON numbers read as Decimal (exact amounts and priorities)."""
    payload = {"method": method, "params": list(params), "id": 1}
    status, _, body = node.post(json.dumps(payload).encode())
    reply = json.loads(body, parse_float=Decimal)
    if reply.get("error"):
        raise RPCFailure(status, reply["error"]["code"], reply["error"]["message"])
    return reply["result"]


def rest(node: NodeClient, path: str) -> Tuple[int, Any]:
    """GET ``/rest/<path>``: status and the body as JSON (Decimal numbers) or raw bytes."""
    status, _, body = node.post(b"", path="/rest/" + path, method="GET", auth=False)
    if status == 200 and path.endswith(".json"):
        return status, json.loads(body, parse_float=Decimal)
    return status, body


def amount(satoshis: int) -> Decimal:
    return Decimal(satoshis).scaleb(-8)


def priority(value: float) -> Decimal:
    """A priority as the node prints doubles (``%.16g``)."""
    return Decimal("%.16g" % value)


def hexof(tx: Transaction) -> str:
    return tx.serialize().hex()


def send(node: NodeClient, tx: Transaction, *options: Any) -> str:
    return rpc(node, "sendrawtransaction", hexof(tx), *options)


def spend(coins: Sequence[Spendable] | Spendable, fee: int = FEE, **options: Any) -> Transaction:
    return SIGNER.spend(coins, fee=fee, **options)


def split(coin: Spendable, count: int, fee: int = FEE) -> Transaction:
    """``coin`` into ``count`` outputs paying us (the first takes the rounding)."""
    share = (coin.value - fee) // count
    first = coin.value - fee - share * (count - 1)
    return spend(coin, outputs=[(SCRIPT, first)] + [(SCRIPT, share)] * (count - 1))


def out(tx: Transaction, n: int = 0) -> Spendable:
    return ChainBuilder.outputs_of(tx)[n]


def chain_of(coin: Spendable, fees: Sequence[int]) -> List[Transaction]:
    """Transactions each spending the previous one's only output."""
    txs = []
    for fee in fees:
        tx = spend(coin, fee=fee)
        txs.append(tx)
        coin = out(tx)
    return txs


def size_of(tx: Transaction) -> int:
    return len(tx.serialize())


def modified_size(tx: Transaction) -> int:
    """Core's CalculateModifiedSize, by hand: what priority is divided by."""
    size = size_of(tx)
    for txin in tx.vin:
        size -= 41 + min(110, len(txin.script_sig))
    return size


def fee_rate(fee: int, size: int) -> int:
    """Satoshis per 1000 bytes, truncated (Core's CFeeRate(fee, size))."""
    return fee * 1000 // size


def with_script_sig(tx: Transaction, script_sig: bytes) -> Transaction:
    """``tx`` with its first input's scriptSig replaced (the signature does not cover it)."""
    first = tx.vin[0]
    return Transaction([TxIn(first.prevout, script_sig, first.sequence)] + list(tx.vin[1:]),
                       tx.vout, tx.locktime, tx.version)


#: The order of secp256k1's group.
SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def high_s(tx: Transaction) -> Transaction:
    """``tx`` with its first signature's S replaced by N - S: still valid, but not low-S."""
    script = tx.vin[0].script_sig
    sig, pubkey_push = script[1:1 + script[0]], script[1 + script[0]:]
    der, hashtype = sig[:-1], sig[-1:]
    r = der[4:4 + der[3]]
    s = SECP256K1_N - int.from_bytes(der[6 + len(r):], "big")
    s_bytes = s.to_bytes(33, "big").lstrip(b"\0")
    if s_bytes[0] & 0x80:
        s_bytes = b"\0" + s_bytes
    body = bytes([2, len(r)]) + r + bytes([2, len(s_bytes)]) + s_bytes
    return with_script_sig(tx, push_data(bytes([0x30, len(body)]) + body + hashtype) + pubkey_push)


def block_at(node: NodeClient, height: int) -> Block:
    return Block.deserialize(bytes.fromhex(rpc(node, "getblock", rpc(node, "getblockhash", height), 0)))


def tip_block(node: NodeClient) -> Block:
    return Block.deserialize(bytes.fromhex(rpc(node, "getblock", rpc(node, "getbestblockhash"), 0)))


def coinbase_at(node: NodeClient, height: int) -> Spendable:
    """The coinbase output of the block at ``height`` (it pays MINER_ADDRESS)."""
    coinbase = block_at(node, height).txs[0]
    return Spendable(OutPoint(coinbase.txid, 0), coinbase.vout[0].value, coinbase.vout[0].script_pubkey)


def mine(node: NodeClient, count: int = 1) -> List[str]:
    return rpc(node, "generatetoaddress", count, MINER_ADDRESS)


def pool(node: NodeClient) -> List[str]:
    return sorted(rpc(node, "getrawmempool"))


def txids(*txs: Transaction) -> List[str]:
    return sorted(tx.txid_hex for tx in txs)


def build_block(node: NodeClient, txs: Sequence[Transaction], fees: int,
                version: Optional[int] = None, coinbase: Optional[Transaction] = None) -> Block:
    """A solved block on the tip confirming ``txs`` (paying ``fees``), not submitted.

    ``version`` defaults to the tip's, ``coinbase`` to one with the height (BIP34).
    """
    tip = tip_block(node)
    height = rpc(node, "getblockcount") + 1
    if coinbase is None:
        coinbase = create_coinbase(height, SCRIPT, block_subsidy(height, REGTEST) + fees, extra_nonce=height)
    root, _ = merkle_root([coinbase.txid] + [tx.txid for tx in txs])
    header = BlockHeader(tip.header.version if version is None else version, tip.hash, root,
                         tip.header.time + 1, tip.header.bits, 0)
    return solve(Block(header, [coinbase] + list(txs)), REGTEST)


def wait_until(condition: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll ``condition`` until it is true (returned) or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(0.05)


def debug_log(node: NodeProcess) -> str:
    path = os.path.join(node.net_datadir, "debug.log")
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


class Coins:
    """Mature coinbase outputs of one node's chain, each handed out once."""

    def __init__(self, node: NodeClient, heights: Iterable[int]) -> None:
        self.node = node
        self.free = list(heights)

    def take(self) -> Spendable:
        return coinbase_at(self.node, self.free.pop(0))


# ---------------------------------------------------------------------------------------- nodes

#: The shared chain: tip height, and the coinbase heights set aside.
SHARED_HEIGHT = 201
BOTH_NODES_HEIGHT = 2  # a coinbase unspent on the shared and the strict node
STRICT_ARGS = ["-acceptnonstdtxn=0", "-limitancestorcount=3", "-limitancestorsize=1"]


def shared_chain(node: InProcessNode) -> Transaction:
    """200 blocks, then block 201 confirming a spend of coinbase 1 (returned)."""
    mine(node, 200)
    mined = spend(coinbase_at(node, 1))
    send(node, mined)
    mine(node)
    assert rpc(node, "getrawmempool") == [], "the spend was not mined"
    return mined


class MempoolTestCase(NodeTestCase):
    def shared(self) -> Dict[str, Any]:
        """This test's default node on the shared chain (started on first use).

        Coinbases up to height 101 are mature for the next block (202); 3..11 go to strict.
        """
        return self._on_shared_chain("shared", [], range(12, 101))

    def strict(self) -> Dict[str, Any]:
        """This test's ``STRICT_ARGS`` node, on the same chain as the shared one."""
        return self._on_shared_chain("strict", STRICT_ARGS, range(3, 12))

    def _on_shared_chain(self, name: str, extra_args: Sequence[str],
                         heights: Iterable[int]) -> Dict[str, Any]:
        """``node``, ``mined`` (the spend block 201 confirms) and ``coins`` to take from.

        Both nodes start on copies of one build (made with NODE_ARGS), so their chains are
        the same block for block.
        """
        started = vars(self).setdefault("_on_shared", {})
        if name not in started:
            datadir, mined = self.copy_of(shared_chain)
            node = self.start_node(*NODE_ARGS, *extra_args, datadir=datadir)
            started[name] = {"node": node, "mined": mined, "coins": Coins(node, heights)}
        return started[name]

    def copy_of(self, build: Callable[[InProcessNode], Any]) -> Tuple[str, Any]:
        """A datadir of this test's own with a copy of the chain ``build`` made on a node
        started with NODE_ARGS (once per process), and what ``build`` returned.

        The builds leave the pool empty: their mempool.dat stays behind, as their debug.log.
        """
        source, state = prepared(build, NODE_ARGS)
        datadir = os.path.abspath(self.mktemp())
        shutil.copytree(source, datadir, ignore=shutil.ignore_patterns("debug.log", "mempool.dat"))
        return datadir, state

    def private_node(self, extra_args: Sequence[str] = (), blocks: int = 0) -> InProcessNode:
        """A node of this test's own with ``blocks`` mined (from a copy of the test chain
        when it has that many)."""
        node = self.start_node(*NODE_ARGS, *extra_args, chain=blocks >= SHARED_BLOCKS)
        height = rpc(node, "getblockcount")
        if blocks > height:
            mine(node, blocks - height)
        return node

    def assertRejected(self, node: NodeClient, tx: Transaction, code: int, message: str,
                       *options: Any) -> None:
        """sendrawtransaction fails with ``code``/``message`` and leaves the pool as it was."""
        before = rpc(node, "getmempoolinfo")
        with self.assertRaises(RPCFailure) as caught:
            send(node, tx, *options)
        self.assertEqual((caught.exception.code, caught.exception.message), (code, message))
        self.assertEqual(rpc(node, "getmempoolinfo"), before)

    def assertTestAccept(self, node: NodeClient, tx: Transaction, reason: Optional[str],
                         *options: Any) -> None:
        """testmempoolaccept's answer: allowed, or refused with ``reason``; the pool unchanged."""
        before = rpc(node, "getmempoolinfo")
        expected: Dict[str, Any] = {"txid": tx.txid_hex, "allowed": reason is None}
        if reason is not None:
            expected["reject-reason"] = reason
        self.assertEqual(rpc(node, "testmempoolaccept", [hexof(tx)], *options), [expected])
        self.assertEqual(rpc(node, "getmempoolinfo"), before)


# ---------------------------------------------------------------------------------------- 1


class AcceptanceTests(MempoolTestCase):
    """sendrawtransaction and testmempoolaccept: Core's answers, codes and reasons."""

    def setUp(self) -> None:
        state = self.shared()
        self.node, self.coins, self.mined = state["node"], state["coins"], state["mined"]

    def test_valid_spend_is_accepted_once(self):
        tx = spend(self.coins.take())
        self.assertTestAccept(self.node, tx, None)
        self.assertNotIn(tx.txid_hex, pool(self.node))
        before = rpc(self.node, "getmempoolinfo")
        sent_at = int(time.time())
        self.assertEqual(send(self.node, tx), tx.txid_hex)
        after = rpc(self.node, "getmempoolinfo")
        self.assertIn(tx.txid_hex, pool(self.node))
        self.assertEqual((after["size"], after["bytes"]),
                         (before["size"] + 1, before["bytes"] + size_of(tx)))
        # Sent again: the txid, nothing added; testmempoolaccept says it is already there.
        self.assertEqual(send(self.node, tx), tx.txid_hex)
        self.assertEqual(rpc(self.node, "getmempoolinfo"), after)
        self.assertTestAccept(self.node, tx, "18: txn-already-in-mempool")
        entry = rpc(self.node, "getmempoolentry", tx.txid_hex)
        self.assertEqual(list(entry), ENTRY_FIELDS)
        self.assertEqual((entry["size"], entry["fee"], entry["modifiedfee"], entry["height"],
                          entry["depends"], entry["spentby"]),
                         (size_of(tx), amount(FEE), amount(FEE), SHARED_HEIGHT, [], []))
        self.assertTrue(sent_at <= entry["time"] <= int(time.time()), (sent_at, entry["time"]))

    def test_already_in_chain(self):
        self.assertRejected(self.node, self.mined, -27, "transaction already in block chain")
        self.assertTestAccept(self.node, self.mined, "18: txn-already-known")

    def test_undecodable(self):
        good = hexof(spend(self.coins.take()))
        for text in ("deadbeef", "zz", good[:-2], good[:40], good + "00"):
            before = rpc(self.node, "getmempoolinfo")
            for method, params in (("sendrawtransaction", [text]), ("testmempoolaccept", [[text]])):
                with self.assertRaises(RPCFailure) as caught:
                    rpc(self.node, method, *params)
                self.assertEqual((caught.exception.code, caught.exception.message),
                                 (-22, "TX decode failed"), (method, text))
            self.assertEqual(rpc(self.node, "getmempoolinfo"), before)

    def test_missing_inputs(self):
        never_sent = spend(self.coins.take())
        orphan = spend(out(never_sent))
        self.assertRejected(self.node, orphan, -25, "Missing inputs")
        self.assertTestAccept(self.node, orphan, "missing-inputs")

    def test_double_spend_of_a_pool_input(self):
        coin = self.coins.take()
        first = spend(coin)
        send(self.node, first)
        second = spend(coin, fee=2 * FEE)  # pays more: still no replacement
        self.assertRejected(self.node, second, -26, "txn-mempool-conflict (code 18)")
        self.assertTestAccept(self.node, second, "18: txn-mempool-conflict")
        self.assertIn(first.txid_hex, pool(self.node))
        self.assertNotIn(second.txid_hex, pool(self.node))

    def test_fee_below_min_relay_fee(self):
        tx = spend(self.coins.take(), fee=100)
        floor = size_of(tx)  # 0.00001 COIN/kB: one satoshi a byte
        self.assertRejected(self.node, tx, -26, "min relay fee not met, 100 < %d (code 66)" % floor)
        self.assertTestAccept(self.node, tx, "66: min relay fee not met")
        # Exactly the floor is enough (the fee changes the signature, so the size may move).
        coin = self.coins.take()
        exact = [tx for tx in (spend(coin, fee=floor, locktime=n) for n in range(100))
                 if size_of(tx) == floor]
        self.assertTestAccept(self.node, exact[0], None)

    def test_absurd_fee(self):
        tx = spend(self.coins.take(), fee=20_000_000)  # -maxtxfee is 0.1 COIN
        self.assertRejected(self.node, tx, -26,
                            "absurdly-high-fee, 20000000 > 10000000 (code 256)")
        self.assertTestAccept(self.node, tx, "256: absurdly-high-fee")
        self.assertTestAccept(self.node, tx, None, True)
        self.assertEqual(send(self.node, tx, True), tx.txid_hex)
        self.assertEqual(rpc(self.node, "getmempoolentry", tx.txid_hex)["fee"], amount(20_000_000))

    def test_non_final(self):
        tx = spend(self.coins.take(), locktime=SHARED_HEIGHT + 2, sequence=0)
        self.assertRejected(self.node, tx, -26, "non-final (code 64)")
        self.assertTestAccept(self.node, tx, "64: non-final")
        # Final at the next block's height: accepted.
        self.assertTestAccept(self.node, spend(self.coins.take(), locktime=SHARED_HEIGHT, sequence=0),
                              None)

    def test_immature_coinbase(self):
        tx = spend(coinbase_at(self.node, SHARED_HEIGHT - 5))
        self.assertRejected(self.node, tx, -26, "bad-txns-premature-spend-of-coinbase, "
                            "tried to spend coinbase at depth 6 (code 16)")
        self.assertTestAccept(self.node, tx, "16: bad-txns-premature-spend-of-coinbase")

    def test_bip68_sequence_lock(self):
        parent = spend(self.coins.take())
        send(self.node, parent)
        # Version 2, one block of relative lock on a parent that is not even mined.
        child = spend(out(parent), sequence=1, version=2)
        self.assertRejected(self.node, child, -26, "non-BIP68-final (code 64)")
        self.assertTestAccept(self.node, child, "64: non-BIP68-final")

    def test_context_free_and_value_rejections(self):
        coin = self.coins.take()
        for tx, message in (
                (create_coinbase(SHARED_HEIGHT + 1, SCRIPT, 50 * COIN), "coinbase (code 16)"),
                (Transaction([TxIn(coin.outpoint)], []), "bad-txns-vout-empty (code 16)"),
                (spend([coin, coin]), "bad-txns-inputs-duplicate (code 16)"),
                (spend(coin, outputs=[(SCRIPT, 21_000_001 * COIN)]), "bad-txns-vout-toolarge (code 16)"),
                (spend(coin, outputs=[(SCRIPT, coin.value + 1)]),
                 "bad-txns-in-belowout, value in (50.00) < value out (50.00000001) (code 16)")):
            self.assertRejected(self.node, tx, -26, message)
        self.assertEqual(coin.value, 50 * COIN)
        self.assertTestAccept(self.node, spend(coin), None)

    def test_sigop_limit(self):
        coin = self.coins.take()

        def sigops(n: int) -> Transaction:
            """Bare OP_CHECKSIG outputs, one legacy sigop each (non-standard, but regtest takes
            them), and a P2PKH change output: one more."""
            return spend(coin, outputs=[(bytes([0xAC]), 1)] * (n - 1) + [(SCRIPT, coin.value - n - 100_000)])

        self.assertTestAccept(self.node, sigops(4000), None)
        self.assertRejected(self.node, sigops(4001), -26, "bad-txns-too-many-sigops, 4001 (code 64)")

    def test_script_failures(self):
        coin = self.coins.take()
        signed = spend(coin)
        script = signed.vin[0].script_sig
        other_key = deterministic_key("someone else").public_key.format()
        stranger = with_script_sig(signed, script[:1 + script[0]] + push_data(other_key))
        self.assertRejected(self.node, stranger, -26, "mandatory-script-verify-flag-failed "
                            "(Script failed an OP_EQUALVERIFY operation) (code 16)")
        self.assertTestAccept(self.node, stranger, "16: mandatory-script-verify-flag-failed "
                              "(Script failed an OP_EQUALVERIFY operation)")
        # A high-S signature is valid by consensus, refused by policy.
        malleated = high_s(spend(coin))
        self.assertRejected(self.node, malleated, -26, "non-mandatory-script-verify-flag "
                            "(Non-canonical signature: S value is unnecessarily high) (code 64)")
        self.assertTestAccept(self.node, spend(coin), None)


# ---------------------------------------------------------------------------------------- 2


class StandardnessTests(MempoolTestCase):
    """-acceptnonstdtxn=0 refuses what regtest accepts by default."""

    def setUp(self) -> None:
        state = self.strict()
        self.node, self.coins = state["node"], state["coins"]

    def assertNonStandard(self, tx: Transaction, reason: str) -> None:
        self.assertRejected(self.node, tx, -26, "%s (code 64)" % reason)
        self.assertTestAccept(self.node, tx, "64: %s" % reason)

    def test_dust_refused_here_accepted_by_default(self):
        coin = coinbase_at(self.node, BOTH_NODES_HEIGHT)
        dusty = spend(coin, outputs=[(SCRIPT, 545), (SCRIPT, coin.value - 545 - FEE)])
        self.assertNonStandard(dusty, "dust")
        # 546 satoshis is not dust for a P2PKH output at the default relay fee.
        least = spend(coin, outputs=[(SCRIPT, 546), (SCRIPT, coin.value - 546 - FEE)])
        self.assertTestAccept(self.node, least, None)
        default = self.shared()["node"]
        self.assertEqual(coinbase_at(default, BOTH_NODES_HEIGHT), coin)
        self.assertEqual(send(default, dusty), dusty.txid_hex)
        self.assertIn(dusty.txid_hex, pool(default))

    def test_op_return(self):
        coin = self.coins.take()
        rest_value = coin.value - FEE

        def data(n: int) -> bytes:
            return bytes([OP_RETURN]) + push_data(b"\x42" * n)

        self.assertEqual(len(data(81)), 84)
        self.assertNonStandard(spend(coin, outputs=[(data(81), 0), (SCRIPT, rest_value)]), "scriptpubkey")
        self.assertNonStandard(spend(coin, outputs=[(data(1), 0), (data(2), 0), (SCRIPT, rest_value)]),
                               "multi-op-return")
        largest = spend(coin, outputs=[(data(80), 0), (SCRIPT, rest_value)])
        self.assertEqual(send(self.node, largest), largest.txid_hex)

    def test_version(self):
        coin = self.coins.take()
        self.assertNonStandard(spend(coin, version=4), "version")
        self.assertNonStandard(spend(coin, version=0), "version")
        self.assertTestAccept(self.node, spend(coin, version=3), None)

    def test_sizes(self):
        tx = spend(self.coins.take())
        big = with_script_sig(tx, tx.vin[0].script_sig + push_data(b"\0" * 1600))
        self.assertGreater(len(big.vin[0].script_sig), 1650)
        self.assertNonStandard(big, "scriptsig-size")
        # 100,000 bytes or more (checks run before the inputs are even looked up).
        outputs = [TxOut(1000, SCRIPT)] * 2935
        filler = 100_000 - size_of(Transaction(tx.vin, outputs)) - 9  # value and script length
        huge = Transaction(tx.vin, outputs + [TxOut(1000, b"\x51" * filler)])
        self.assertEqual(size_of(huge), 100_000)
        self.assertNonStandard(huge, "tx-size")

    def test_scriptsig_not_push_only(self):
        tx = spend(self.coins.take())
        txin = tx.vin[0]
        padded = Transaction([TxIn(txin.prevout, txin.script_sig + bytes([OP_NOP]), txin.sequence)],
                             tx.vout, tx.locktime, tx.version)
        self.assertNonStandard(padded, "scriptsig-not-pushonly")
        self.assertTestAccept(self.node, tx, None)


# ---------------------------------------------------------------------------------------- 3


class AncestorTests(MempoolTestCase):
    def test_chain_of_25_and_family_statistics(self):
        node = self.shared()["node"]
        fees = [1000 + 100 * i for i in range(26)]
        chain = chain_of(self.shared()["coins"].take(), fees)
        for tx in chain[:25]:
            self.assertEqual(send(node, tx), tx.txid_hex)
        self.assertRejected(node, chain[25], -26, "too-long-mempool-chain, too many unconfirmed "
                            "ancestors [limit: 25] (code 64)")
        self.assertTestAccept(node, chain[25], "64: too-long-mempool-chain")
        sizes = [size_of(tx) for tx in chain[:25]]
        ids = [tx.txid_hex for tx in chain[:25]]

        last = rpc(node, "getmempoolentry", ids[24])
        self.assertEqual((last["ancestorcount"], last["ancestorsize"], last["ancestorfees"]),
                         (25, sum(sizes), sum(fees[:25])))
        self.assertEqual((last["descendantcount"], last["descendantsize"], last["descendantfees"]),
                         (1, sizes[24], fees[24]))
        self.assertEqual((last["depends"], last["spentby"]), ([ids[23]], []))
        first = rpc(node, "getmempoolentry", ids[0])
        self.assertEqual((first["descendantcount"], first["descendantsize"], first["descendantfees"]),
                         (25, sum(sizes), sum(fees[:25])))
        self.assertEqual((first["ancestorcount"], first["ancestorsize"], first["ancestorfees"]),
                         (1, sizes[0], fees[0]))
        self.assertEqual((first["depends"], first["spentby"]), ([], [ids[1]]))
        self.assertIsInstance(first["descendantfees"], int)
        middle = rpc(node, "getmempoolentry", ids[10])
        self.assertEqual((middle["ancestorcount"], middle["ancestorsize"], middle["ancestorfees"],
                          middle["descendantcount"], middle["descendantsize"], middle["descendantfees"],
                          middle["depends"], middle["spentby"]),
                         (11, sum(sizes[:11]), sum(fees[:11]), 15, sum(sizes[10:]), sum(fees[10:25]),
                          [ids[9]], [ids[11]]))

        self.assertEqual(sorted(rpc(node, "getmempoolancestors", ids[24])), sorted(ids[:24]))
        self.assertEqual(sorted(rpc(node, "getmempoolancestors", ids[10])), sorted(ids[:10]))
        self.assertEqual(rpc(node, "getmempoolancestors", ids[0]), [])
        self.assertEqual(sorted(rpc(node, "getmempooldescendants", ids[0])), sorted(ids[1:]))
        self.assertEqual(sorted(rpc(node, "getmempooldescendants", ids[10])), sorted(ids[11:]))
        self.assertEqual(rpc(node, "getmempooldescendants", ids[24]), [])
        verbose = rpc(node, "getmempoolancestors", ids[3], True)
        self.assertEqual(verbose, {txid: rpc(node, "getmempoolentry", txid) for txid in ids[:3]})
        verbose = rpc(node, "getmempooldescendants", ids[21], True)
        self.assertEqual(verbose, {txid: rpc(node, "getmempoolentry", txid) for txid in ids[22:]})
        for method in ("getmempoolentry", "getmempoolancestors", "getmempooldescendants"):
            with self.assertRaises(RPCFailure) as caught:
                rpc(node, method, chain[25].txid_hex)
            self.assertEqual((caught.exception.code, caught.exception.message),
                             (-5, "Transaction not in mempool"))

    def test_descendant_count_limit(self):
        node = self.shared()["node"]
        parent = split(self.shared()["coins"].take(), 25)
        send(node, parent)
        children = [spend(out(parent, n)) for n in range(25)]
        for child in children[:24]:
            send(node, child)
        self.assertRejected(node, children[24], -26, "too-long-mempool-chain, too many descendants for "
                            "tx %s [limit: 25] (code 64)" % parent.txid_hex)
        entry = rpc(node, "getmempoolentry", parent.txid_hex)
        self.assertEqual((entry["descendantcount"], sorted(entry["spentby"])),
                         (25, txids(*children[:24])))

    def test_configured_ancestor_limit(self):
        node = self.strict()["node"]
        chain = chain_of(self.strict()["coins"].take(), [FEE] * 4)
        for tx in chain[:3]:
            send(node, tx)
        self.assertRejected(node, chain[3], -26, "too-long-mempool-chain, too many unconfirmed "
                            "ancestors [limit: 3] (code 64)")
        self.assertEqual(rpc(node, "getmempoolentry", chain[2].txid_hex)["ancestorcount"], 3)
        # -limitancestorsize=1 (kB): a lone transaction may be larger, not a family.
        parent = split(self.strict()["coins"].take(), 30)
        self.assertGreater(size_of(parent), 1000)
        send(node, parent)
        self.assertRejected(node, spend(out(parent)), -26, "too-long-mempool-chain, exceeds ancestor "
                            "size limit [limit: 1000] (code 64)")


# ---------------------------------------------------------------------------------------- 4


class PriorityTests(MempoolTestCase):
    def test_starting_and_current_priority(self):
        """Core 0.12's priority, by hand.

        The entries are kept out of the next blocks with a large negative
        prioritisetransaction delta (block assembly skips packages below
        -blockmintxfee), so they age in the pool while blocks arrive.
        """
        node = self.private_node(blocks=110)
        tip = rpc(node, "getblockcount")
        first, second = coinbase_at(node, 3), coinbase_at(node, 7)
        parent = spend(first)
        # A second input spending the pool parent adds no priority (no age yet) and no value in chain.
        child = spend([second, out(parent)], fee=2 * FEE)
        for tx in (parent, child):
            send(node, tx)
        parent_mod, child_mod = modified_size(parent), modified_size(child)
        self.assertEqual(parent_mod, size_of(parent) - 41 - len(parent.vin[0].script_sig))
        parent_start = first.value * (tip - 3) / parent_mod
        child_start = second.value * (tip - 7) / child_mod
        for tx, start in ((parent, parent_start), (child, child_start)):
            entry = rpc(node, "getmempoolentry", tx.txid_hex)
            self.assertEqual((entry["height"], entry["startingpriority"], entry["currentpriority"]),
                             (tip, priority(start), priority(start)))

        for tx in (parent, child):
            self.assertIs(rpc(node, "prioritisetransaction", tx.txid_hex, 0, -COIN), True)
        mine(node, 2)
        self.assertEqual(pool(node), txids(parent, child))
        for tx, start, value, mod in ((parent, parent_start, first.value, parent_mod),
                                      (child, child_start, second.value, child_mod)):
            entry = rpc(node, "getmempoolentry", tx.txid_hex)
            self.assertEqual((entry["height"], entry["startingpriority"], entry["currentpriority"]),
                             (tip, priority(start), priority(start + 2 * value / mod)))
        # getrawmempool true says the same.
        verbose = rpc(node, "getrawmempool", True)
        self.assertEqual(verbose[child.txid_hex], rpc(node, "getmempoolentry", child.txid_hex))


# ---------------------------------------------------------------------------------------- 5


class PrioritiseTests(MempoolTestCase):
    def test_fee_deltas(self):
        node = self.private_node(blocks=110)
        coins = Coins(node, range(1, 11))
        low = spend(coins.take(), fee=500)
        mid = spend(coins.take(), fee=FEE)
        child = spend(out(mid), fee=5000)
        high = spend(coins.take(), fee=50_000)
        later = spend(coins.take(), fee=3000)
        for tx in (low, mid, child, high):
            send(node, tx)

        self.assertIs(rpc(node, "prioritisetransaction", mid.txid_hex, 0, 30_000), True)
        entry = rpc(node, "getmempoolentry", mid.txid_hex)
        self.assertEqual((entry["fee"], entry["modifiedfee"], entry["descendantfees"], entry["ancestorfees"]),
                         (amount(FEE), amount(40_000), 45_000, 40_000))
        self.assertEqual(rpc(node, "getmempoolentry", child.txid_hex)["ancestorfees"], 45_000)
        rpc(node, "prioritisetransaction", child.txid_hex, None, -2000)
        entry = rpc(node, "getmempoolentry", child.txid_hex)
        self.assertEqual((entry["fee"], entry["modifiedfee"], entry["ancestorfees"], entry["descendantfees"]),
                         (amount(5000), amount(3000), 43_000, 3000))
        self.assertEqual(rpc(node, "getmempoolentry", mid.txid_hex)["descendantfees"], 43_000)

        # A delta for a transaction not seen yet applies when it arrives.
        rpc(node, "prioritisetransaction", later.txid_hex, 0, 7000)
        send(node, later)
        self.assertEqual(rpc(node, "getmempoolentry", later.txid_hex)["modifiedfee"], amount(10_000))

        # A positive delta puts the cheapest transaction first in the template.
        order = [t["txid"] for t in rpc(node, "getblocktemplate")["transactions"]]
        self.assertEqual(order[0], high.txid_hex)
        self.assertEqual(order[-1], low.txid_hex)
        rpc(node, "prioritisetransaction", low.txid_hex, 0, 1_000_000)
        template = rpc(node, "getblocktemplate")["transactions"]
        self.assertEqual(template[0]["txid"], low.txid_hex)
        self.assertEqual(template[0]["fee"], 500)  # the fee paid, not the modified one

        # A huge negative delta keeps a transaction out of the block; the rest is mined.
        rpc(node, "prioritisetransaction", high.txid_hex, 0, -COIN)
        block = rpc(node, "getblock", mine(node)[0])
        self.assertEqual(sorted(block["tx"][1:]), txids(low, mid, child, later))
        self.assertEqual(rpc(node, "getrawmempool"), [high.txid_hex])

        with self.assertRaises(RPCFailure) as caught:
            rpc(node, "prioritisetransaction", high.txid_hex, 1, 100)
        self.assertEqual((caught.exception.code, caught.exception.message),
                         (-8, "Priority is no longer supported, dummy argument to "
                              "prioritisetransaction must be 0."))
        self.assertEqual(rpc(node, "getmempoolentry", high.txid_hex)["modifiedfee"],
                         amount(50_000 - COIN))


# ---------------------------------------------------------------------------------------- 6


class BlockLifeCycleTests(MempoolTestCase):
    def test_confirm_conflict_reorg(self):
        node = self.private_node(blocks=110)
        coins = Coins(node, range(1, 11))
        a = split(coins.take(), 2)
        b = spend(out(a, 0), fee=2000)
        for tx in (a, b):
            send(node, tx)
        x_hash = mine(node)[0]
        self.assertEqual(rpc(node, "getblock", x_hash)["tx"][1:], [a.txid_hex, b.txid_hex])
        self.assertEqual(pool(node), [])

        # A block confirming a double spend of a pool transaction removes it and its child.
        coin = coins.take()
        c = spend(coin)
        d = spend(out(c))
        for tx in (c, d):
            send(node, tx)
        c_mined = spend(coin, fee=20_000)
        y = build_block(node, [c_mined], 20_000)
        self.assertIsNone(rpc(node, "submitblock", y.serialize().hex()))
        self.assertEqual(rpc(node, "getbestblockhash"), y.hash_hex)
        self.assertEqual(pool(node), [])

        f = spend(out(b), fee=3000)
        send(node, f)
        self.assertEqual(rpc(node, "getmempoolentry", f.txid_hex)["ancestorcount"], 1)
        # Mature for the block after Y (depth 100), not after X's parent: leaves with the reorg.
        g = spend(coinbase_at(node, 13))
        send(node, g)

        # Disconnecting X (and Y above it) returns their transactions; F gains ancestors.
        self.assertIsNone(rpc(node, "invalidateblock", x_hash))
        self.assertEqual(rpc(node, "getblockcount"), 110)
        self.assertEqual(pool(node), txids(a, b, c_mined, f))
        entry = rpc(node, "getmempoolentry", a.txid_hex)
        sizes = {tx.txid_hex: size_of(tx) for tx in (a, b, f)}
        self.assertEqual((entry["descendantcount"], entry["descendantsize"], entry["descendantfees"],
                          entry["ancestorcount"], entry["spentby"]),
                         (3, sum(sizes.values()), FEE + 2000 + 3000, 1, [b.txid_hex]))
        entry = rpc(node, "getmempoolentry", b.txid_hex)
        self.assertEqual((entry["ancestorcount"], entry["descendantcount"], entry["depends"],
                          entry["spentby"]), (2, 2, [a.txid_hex], [f.txid_hex]))
        entry = rpc(node, "getmempoolentry", f.txid_hex)
        self.assertEqual((entry["ancestorcount"], entry["ancestorsize"], entry["ancestorfees"],
                          entry["descendantcount"], entry["depends"]),
                         (3, sum(sizes.values()), FEE + 2000 + 3000, 1, [b.txid_hex]))
        entry = rpc(node, "getmempoolentry", c_mined.txid_hex)
        self.assertEqual((entry["ancestorcount"], entry["descendantcount"], entry["fee"]),
                         (1, 1, amount(20_000)))

        # Reconnecting removes them again.
        self.assertIsNone(rpc(node, "reconsiderblock", x_hash))
        self.assertEqual(rpc(node, "getbestblockhash"), y.hash_hex)
        self.assertEqual(pool(node), [f.txid_hex])
        self.assertEqual(rpc(node, "getmempoolinfo")["bytes"], size_of(f))
        entry = rpc(node, "getmempoolentry", f.txid_hex)
        self.assertEqual((entry["ancestorcount"], entry["ancestorsize"], entry["descendantcount"],
                          entry["depends"]), (1, sizes[f.txid_hex], 1, []))


# ---------------------------------------------------------------------------------------- 7


class TemplateTests(MempoolTestCase):
    def test_template_and_generated_block(self):
        node = self.private_node(blocks=110)
        coins = Coins(node, range(1, 11))
        parent = split(coins.take(), 2, fee=1000)
        child = spend(out(parent, 0), fee=100_000)  # pays for its parent
        lone = spend(coins.take(), fee=20_000)
        both = spend([out(parent, 1), out(lone)], fee=30_000)
        for tx in (parent, child, lone, both):
            send(node, tx)
        template = rpc(node, "getblocktemplate")
        got = [(t["txid"], t["depends"], t["fee"], t["sigops"], t["data"])
               for t in template["transactions"]]
        self.assertEqual(got, [(parent.txid_hex, [], 1000, 2, hexof(parent)),
                               (child.txid_hex, [1], 100_000, 1, hexof(child)),
                               (lone.txid_hex, [], 20_000, 1, hexof(lone)),
                               (both.txid_hex, [1, 3], 30_000, 1, hexof(both))])
        height = template["height"]
        self.assertEqual(height, 111)
        fees = 1000 + 100_000 + 20_000 + 30_000
        self.assertEqual(template["coinbasevalue"], block_subsidy(height, REGTEST) + fees)

        block_hash = mine(node)[0]
        block = Block.deserialize(bytes.fromhex(rpc(node, "getblock", block_hash, 0)))
        self.assertEqual([tx.txid_hex for tx in block.txs[1:]], [t[0] for t in got])
        self.assertEqual(block.txs[0].vout[0].value, block_subsidy(height, REGTEST) + fees)
        info = rpc(node, "getmempoolinfo")
        self.assertEqual((info["size"], info["bytes"], info["usage"]), (0, 0, 0))
        self.assertEqual(rpc(node, "getblocktemplate")["transactions"], [])


# ---------------------------------------------------------------------------------------- 8


class EvictionTests(MempoolTestCase):
    @staticmethod
    def big(coin: Spendable, rate: int) -> Tuple[Transaction, int]:
        """About 17 kB (500 outputs) paying about ``rate`` sat/kB; and its exact rate."""
        estimate = size_of(split(coin, 500, fee=0))
        tx = split(coin, 500, fee=rate * estimate // 1000)
        return tx, fee_rate(coin.value - tx.total_out(), size_of(tx))

    def test_full_pool_evicts_lowest_fee_rate(self):
        node = self.private_node(["-limitdescendantsize=10", "-maxmempool=1"], blocks=118)
        info = rpc(node, "getmempoolinfo")
        self.assertEqual((info["maxmempool"], info["minrelaytxfee"]), (1_000_000, amount(1000)))
        coins = Coins(node, range(1, 19))
        sent: List[Tuple[str, int]] = []  # (txid, fee rate), rates increasing
        for i in range(14):
            tx, rate = self.big(coins.take(), 2000 * (i + 1))
            self.assertEqual(send(node, tx), tx.txid_hex)
            sent.append((tx.txid_hex, rate))
            richest = tx
            self.assertLessEqual(rpc(node, "getmempoolinfo")["usage"], 1_000_000)
        rates = [rate for _, rate in sent]
        self.assertEqual(rates, sorted(rates))
        kept = set(rpc(node, "getrawmempool"))
        evicted = [txid for txid, _ in sent if txid not in kept]
        self.assertGreater(len(evicted), 1)
        # The cheapest went first, and only they.
        self.assertEqual(evicted, [txid for txid, _ in sent[:len(evicted)]])
        self.assertEqual(len(kept), len(sent) - len(evicted))

        # The floor: the last evicted package's rate plus the incremental relay fee.
        last = len(evicted) - 1
        floor = rates[last] + 1000
        info = rpc(node, "getmempoolinfo")
        self.assertEqual(info["mempoolminfee"], amount(floor))
        self.assertGreater(info["mempoolminfee"], info["minrelaytxfee"])
        self.assertEqual(rest(node, "mempool/info.json"), (200, info))

        cheap = spend(coins.take(), fee=400)
        self.assertLess(fee_rate(400, size_of(cheap)), floor)
        self.assertRejected(node, cheap, -26, "mempool min fee not met, 400 < %d (code 66)"
                            % (floor * size_of(cheap) // 1000))
        self.assertTestAccept(node, cheap, "66: mempool min fee not met")

        # Above the floor but the cheapest in a full pool: in, then straight out again.
        tx, rate = self.big(coins.take(), rates[last] + 1500)
        self.assertLess(floor, rate)
        self.assertLess(rate, rates[last + 1])
        with self.assertRaises(RPCFailure) as caught:
            send(node, tx)
        self.assertEqual((caught.exception.code, caught.exception.message), (-26, "mempool full (code 66)"))
        self.assertEqual(set(rpc(node, "getrawmempool")), kept)
        self.assertEqual(rpc(node, "getmempoolinfo")["mempoolminfee"], amount(rate + 1000))

        # -limitdescendantsize=10 (kB): no child for a 17 kB parent, whatever it pays.
        self.assertRejected(node, spend(out(richest), fee=100_000), -26, "too-long-mempool-chain, exceeds "
                            "descendant size limit for tx %s [limit: 10000] (code 64)" % richest.txid_hex)

        # Once a block has come, the floor decays (halving every 12 hours, faster in an emptier
        # pool) until it is gone: a week on, the relay fee is the floor again.
        mine(node)
        self.assertEqual(pool(node), [])
        rpc(node, "setmocktime", int(time.time()) + 7 * 24 * 3600)
        self.assertEqual(rpc(node, "getmempoolinfo")["mempoolminfee"], amount(1000))
        self.assertEqual(send(node, cheap), cheap.txid_hex)


# ---------------------------------------------------------------------------------------- 9


class PersistenceTests(MempoolTestCase):
    """What mempool.dat's import reports is read from debug.log: real ``coind`` processes."""

    def coind_on_test_chain(self) -> NodeProcess:
        """A process (stopped at cleanup) on a copy of the 110-block test chain."""
        datadir, _ = self.copy_of(mine_chain)
        node = NodeProcess.start(datadir, NODE_ARGS)
        self.addCleanup(node.stop)
        return node

    def restart(self, node: NodeProcess, extra_args: Sequence[str] = ()) -> NodeProcess:
        self.assertEqual(node.stop(), 0)
        again = NodeProcess.start(node.datadir, NODE_ARGS + list(extra_args))
        self.addCleanup(again.stop)
        return again

    def wait_for_import(self, node: NodeProcess, line: str) -> None:
        """Until debug.log says ``line`` (mempool.dat is loaded in the background)."""
        wait_until(lambda: line in debug_log(node), "'%s' in debug.log" % line)

    def test_restart_expire_disable_corrupt(self):
        node = self.coind_on_test_chain()
        coins = [coinbase_at(node, height) for height in range(1, 11)]
        parent = split(coins.pop(), 2)
        child = spend(out(parent, 1), fee=2000)
        other = spend(coins.pop(), fee=3000)
        unseen = spend(coins.pop(), fee=4000)
        old = spend(coins.pop())
        for tx in (parent, child, other):
            send(node, tx)
        rpc(node, "prioritisetransaction", other.txid_hex, 0, 12_345)
        rpc(node, "prioritisetransaction", unseen.txid_hex, 0, 5000)
        contents = rpc(node, "getrawmempool", True)
        # An entry from two hours ago: the next start's -mempoolexpiry=1 drops it.
        now = int(time.time())
        rpc(node, "setmocktime", now - 2 * 3600)
        send(node, old)
        rpc(node, "setmocktime", 0)
        self.assertEqual(rpc(node, "getmempoolentry", old.txid_hex)["time"], now - 2 * 3600)

        path = os.path.join(node.net_datadir, "mempool.dat")
        self.assertFalse(os.path.exists(path))
        self.assertIsNone(rpc(node, "savemempool"))
        with open(path, "rb") as f:
            saved = parse_pool(f.read())
        # Parents first (fewer in-pool ancestors), then arrival order.
        self.assertEqual([(e.tx.txid_hex, e.fee_delta) for e in saved.entries],
                         [(parent.txid_hex, 0), (other.txid_hex, 12_345), (old.txid_hex, 0),
                          (child.txid_hex, 0)])
        self.assertEqual(saved.deltas, {unseen.txid: 5000})

        # Across a restart: the same entries (time, height, fees, deltas, family), less the expired.
        node = self.restart(node, ["-mempoolexpiry=1"])
        self.wait_for_import(node, "Imported mempool transactions from disk: 3 succeeded, 0 failed, "
                             "1 expired, 0 already there")
        self.assertEqual(rpc(node, "getrawmempool", True), contents)
        self.assertEqual(rpc(node, "getmempoolentry", other.txid_hex)["modifiedfee"], amount(3000 + 12_345))
        send(node, unseen)
        self.assertEqual(rpc(node, "getmempoolentry", unseen.txid_hex)["modifiedfee"], amount(9000))
        # While running: two hours on, the next acceptance expires everything older than an hour.
        rpc(node, "setmocktime", int(time.time()) + 2 * 3600)
        newest = spend(coins.pop())
        send(node, newest)
        self.assertEqual(pool(node), [newest.txid_hex])

        # -persistmempool=0: nothing loaded, and nothing written at shutdown.
        node = self.restart(node, ["-persistmempool=0"])
        with open(path, "rb") as f:
            written = f.read()
        self.assertEqual([e.tx.txid_hex for e in parse_pool(written).entries], [newest.txid_hex])
        imports = debug_log(node).count("Imported mempool transactions")
        self.assertEqual(rpc(node, "getmempoolinfo")["size"], 0)
        send(node, spend(coins.pop()))
        self.assertEqual(node.stop(), 0)
        self.assertEqual(debug_log(node).count("Imported mempool transactions"), imports)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), written)

        # A damaged file is reported and ignored.
        with open(path, "wb") as f:
            f.write(b"\x01\x00\x00\x00\x00\x00\x00\x00garbage" + os.urandom(64))
        node = self.restart(node)
        wait_until(lambda: "Failed to deserialize mempool data on disk" in debug_log(node),
                   "the corrupt mempool.dat reported")
        self.assertEqual(rpc(node, "getmempoolinfo")["size"], 0)
        self.assertEqual(rpc(node, "getblockcount"), 110)


# ---------------------------------------------------------------------------------------- 10


class RESTAgreesTests(MempoolTestCase):
    def setUp(self) -> None:
        state = self.shared()
        self.node = state["node"]
        self.coin = state["coins"].take()
        self.parent = split(self.coin, 2)
        self.child = spend(out(self.parent, 0))
        for tx in (self.parent, self.child):
            send(self.node, tx)

    def test_mempool_info_and_contents(self):
        self.assertGreaterEqual(rpc(self.node, "getmempoolinfo")["size"], 2)
        self.assertEqual(rest(self.node, "mempool/info.json"), (200, rpc(self.node, "getmempoolinfo")))
        self.assertEqual(rest(self.node, "mempool/contents.json"),
                         (200, rpc(self.node, "getrawmempool", True)))

    def test_pool_transaction(self):
        status, got = rest(self.node, "tx/%s.json" % self.parent.txid_hex)
        self.assertEqual(status, 200)
        self.assertNotIn("blockhash", got)
        self.assertNotIn("confirmations", got)
        self.assertEqual((got["txid"], got["hex"]), (self.parent.txid_hex, hexof(self.parent)))
        vin = got["vin"][0]
        self.assertEqual((vin["valueSat"], vin["value"], vin["addresses"]),
                         (self.coin.value, amount(self.coin.value), [MINER_ADDRESS]))
        self.assertEqual(rest(self.node, "tx/%s.bin" % self.parent.txid_hex),
                         (200, self.parent.serialize()))
        self.assertEqual(rpc(self.node, "getrawtransaction", self.parent.txid_hex), hexof(self.parent))

    def test_getutxos_checkmempool(self):
        chain_out = "%s-0" % self.coin.outpoint.txid[::-1].hex()
        spent_in_pool = "%s-0" % self.parent.txid_hex
        pool_out = "%s-1" % self.parent.txid_hex
        tip = rpc(self.node, "getbestblockhash")
        status, plain = rest(self.node, "getutxos/%s/%s/%s.json" % (chain_out, spent_in_pool, pool_out))
        self.assertEqual((status, plain["chainHeight"], plain["chaintipHash"], plain["bitmap"]),
                         (200, SHARED_HEIGHT, tip, "100"))
        self.assertEqual(plain["utxos"][0]["value"], amount(self.coin.value))
        status, checked = rest(self.node, "getutxos/checkmempool/%s/%s/%s.json"
                               % (chain_out, spent_in_pool, pool_out))
        self.assertEqual((status, checked["bitmap"]), (200, "001"))
        [utxo] = checked["utxos"]
        self.assertEqual((utxo["height"], utxo["value"], utxo["scriptPubKey"]["addresses"]),
                         (MEMPOOL_HEIGHT, amount(self.parent.vout[1].value), [MINER_ADDRESS]))

    def test_gettxout_include_mempool(self):
        coin_txid, pool_txid = self.coin.outpoint.txid[::-1].hex(), self.parent.txid_hex
        self.assertIsNone(rpc(self.node, "gettxout", coin_txid, 0, True))
        self.assertIsNone(rpc(self.node, "gettxout", coin_txid, 0))
        confirmed = rpc(self.node, "gettxout", coin_txid, 0, False)
        self.assertEqual((confirmed["value"], confirmed["coinbase"]), (amount(self.coin.value), True))
        unconfirmed = rpc(self.node, "gettxout", pool_txid, 1, True)
        self.assertEqual((unconfirmed["confirmations"], unconfirmed["value"], unconfirmed["coinbase"]),
                         (0, amount(self.parent.vout[1].value), False))
        self.assertIsNone(rpc(self.node, "gettxout", pool_txid, 1, False))
        self.assertIsNone(rpc(self.node, "gettxout", pool_txid, 0, True))  # the child spends it


# ---------------------------------------------------------------------------------------- 11


class CliTests(MempoolTestCase):
    def test_getmempoolinfo_and_getrawmempool(self):
        state = self.shared()
        node = state["node"]
        send(node, spend(state["coins"].take()))
        info = rpc(node, "getmempoolinfo")
        result = node.cli("getmempoolinfo")
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        self.assertEqual(result.stdout,
                         '{\n  "size": %d,\n  "bytes": %d,\n  "usage": %d,\n  "maxmempool": 300000000,\n'
                         '  "mempoolminfee": 0.00001000,\n  "minrelaytxfee": 0.00001000\n}\n'
                         % (info["size"], info["bytes"], info["usage"]))
        ids = rpc(node, "getrawmempool")
        result = node.cli("getrawmempool")
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        self.assertEqual(result.stdout, "[\n%s\n]\n" % ",\n".join('  "%s"' % txid for txid in ids))
        result = node.cli("getrawmempool", "true")
        self.assertEqual(result.returncode, 0)
        self.assertEqual(json.loads(result.stdout, parse_float=Decimal), rpc(node, "getrawmempool", True))
        self.assertTrue(result.stdout.startswith('{\n  "') and '\n    "size": ' in result.stdout,
                        result.stdout[:120])
        result = node.cli("getmempoolentry", ids[0])
        self.assertEqual(json.loads(result.stdout, parse_float=Decimal), rpc(node, "getmempoolentry", ids[0]))


# ---------------------------------------------------------------------------------------- 12


class FeeEstimateTests(MempoolTestCase):
    def test_parameter_errors(self):
        node = self.shared()["node"]
        for params, message in (((0,), "Invalid conf_target, must be between 1 - 1008"),
                                ((1009,), "Invalid conf_target, must be between 1 - 1008"),
                                ((2, "SOMETIMES"), "Invalid estimate_mode parameter")):
            with self.assertRaises(RPCFailure) as caught:
                rpc(node, "estimatesmartfee", *params)
            self.assertEqual((caught.exception.code, caught.exception.message), (-8, message))

    def test_estimaterawfee_errors(self):
        node = self.shared()["node"]
        for params, code, message in (
                ((0,), -8, "Invalid conf_target, must be between 1 - 1008"),
                ((1009,), -8, "Invalid conf_target, must be between 1 - 1008"),
                ((2, 1.5), -8, "Invalid threshold"),
                ((2, -0.1), -8, "Invalid threshold"),
                ((2, "0.9"), -3, "Expected type number, got string"),
                (("2",), -3, "Expected type number, got string")):
            with self.assertRaises(RPCFailure) as caught:
                rpc(node, "estimaterawfee", *params)
            self.assertEqual((caught.exception.code, caught.exception.message), (code, message))

    def test_estimate_from_confirmed_history(self):
        node = self.private_node(blocks=101)
        self.assertEqual(rpc(node, "estimatesmartfee", 2), {"errors": INSUFFICIENT, "blocks": 0})
        # No history: each horizon tracking the target reports the whole range as failing.
        empty = {"startrange": 0, "endrange": Decimal("1e+99"), "withintarget": 0,
                 "totalconfirmed": 0, "inmempool": 0, "leftmempool": 0}
        raw_errors = ["Insufficient data or no feerate found which meets threshold"]
        self.assertEqual(rpc(node, "estimaterawfee", 13), {
            "medium": {"decay": Decimal("0.9952"), "scale": 2, "fail": empty, "errors": raw_errors},
            "long": {"decay": Decimal("0.99931"), "scale": 24, "fail": empty, "errors": raw_errors}})
        self.assertEqual(sorted(rpc(node, "estimaterawfee", 12)), ["long", "medium", "short"])
        self.assertEqual(sorted(rpc(node, "estimaterawfee", 49)), ["long"])
        fan = split(coinbase_at(node, 1), 200, fee=50_000)
        send(node, fan)
        mine(node)
        outputs = ChainBuilder.outputs_of(fan)
        rates = []
        for block in range(20):
            for k in range(10):
                tx = spend(outputs[block * 10 + k], fee=(10_000 + 1000 * k) * 192 // 1000)
                send(node, tx)
                rates.append(fee_rate(outputs[block * 10 + k].value - tx.total_out(), size_of(tx)))
            mine(node)
        self.assertEqual(pool(node), [])
        for mode in ("CONSERVATIVE", "ECONOMICAL"):
            estimate = rpc(node, "estimatesmartfee", 2, mode)
            self.assertEqual(sorted(estimate), ["blocks", "feerate"])
            self.assertGreaterEqual(estimate["blocks"], 2)
            self.assertTrue(amount(min(rates)) <= estimate["feerate"] <= amount(max(rates)),
                            (estimate, min(rates), max(rates)))
        # estimaterawfee: the short horizon has seen enough at 2 blocks; what passed spans the
        # rates paid, and nothing failed above it.
        raw = rpc(node, "estimaterawfee", 2, 0.85)["short"]
        self.assertEqual(sorted(raw), ["decay", "fail", "feerate", "pass", "scale"])
        self.assertTrue(amount(min(rates)) <= raw["feerate"] <= amount(max(rates)), raw)
        self.assertTrue(raw["pass"]["startrange"] < raw["feerate"] * COIN <= raw["pass"]["endrange"], raw)
        self.assertGreater(raw["pass"]["totalconfirmed"], 0)
        self.assertGreaterEqual(raw["pass"]["totalconfirmed"], raw["pass"]["withintarget"])


# ---------------------------------------------------------------------------------------- BIP125

#: nSequence values that opt in to replacement (BIP125), and the lowest that does not.
RBF_SEQUENCE = 0xFFFFFFFD
FINAL_SEQUENCE = 0xFFFFFFFE


class ReplacementTests(MempoolTestCase):
    """BIP125 replace-by-fee through sendrawtransaction, and its relay to a peer."""

    def test_replacement_accepted_and_relayed(self):
        datadir, _ = self.copy_of(shared_chain)
        peer = self.start_node("-listen=0", "-connect=127.0.0.1:%d" % self.relay_hub().p2p_port,
                               datadir=datadir)
        hub = self.relay_hub()
        wait_until(lambda: rpc(hub, "getpeerinfo"), "the peer to connect")
        coin = coinbase_at(hub, 20)
        original = spend(coin, sequence=RBF_SEQUENCE)
        send(hub, original)
        wait_until(lambda: pool(peer) == txids(original), "the original relayed")
        replacement = spend(coin, fee=3 * FEE, sequence=FINAL_SEQUENCE)
        self.assertTestAccept(hub, replacement, None)
        self.assertEqual(send(hub, replacement), replacement.txid_hex)
        self.assertEqual(pool(hub), txids(replacement))
        wait_until(lambda: pool(peer) == txids(replacement), "the replacement relayed")
        # The replacement does not signal: it cannot be replaced in turn.
        self.assertRejected(hub, spend(coin, fee=10 * FEE), -26, "txn-mempool-conflict (code 18)")

    def relay_hub(self) -> InProcessNode:
        """A listening node on its own copy of the shared chain (started on first use)."""
        if not hasattr(self, "_hub"):
            datadir, _ = self.copy_of(shared_chain)
            self._hub = self.start_node("-listen=1", "-connect=0", datadir=datadir)
        return self._hub

    def test_rules_refused_with_core_reasons(self):
        state = self.shared()
        self.node, coin, other = state["node"], state["coins"].take(), state["coins"].take()
        original = spend(coin, sequence=RBF_SEQUENCE)
        child = spend(out(original), fee=5 * FEE, sequence=RBF_SEQUENCE)
        unrelated = spend(other, sequence=RBF_SEQUENCE)
        for tx in (original, child, unrelated):
            send(self.node, tx)
        # Rule 3: at least the fees of everything evicted (original and its child).
        cheap = spend(coin, fee=3 * FEE)
        message = ("insufficient fee, rejecting replacement %s, less fees than conflicting "
                   "txs; 0.0003 < 0.0006 (code 66)" % cheap.txid_hex)
        self.assertRejected(self.node, cheap, -26, message)
        self.assertTestAccept(self.node, cheap, "66: insufficient fee")
        # Rule 4: pays for its own bandwidth at -incrementalrelayfee.
        thin = spend(coin, fee=6 * FEE + 10)
        self.assertRejected(self.node, thin, -26, "insufficient fee, rejecting replacement %s, "
                            "not enough additional fees to relay; 0.0000001 < 0.00000%d (code 66)"
                            % (thin.txid_hex, size_of(thin)))
        # Rule 2: no new unconfirmed input.
        adds = spend([coin, out(unrelated)], fee=20 * FEE)
        self.assertRejected(self.node, adds, -26, "replacement-adds-unconfirmed, replacement %s "
                            "adds unconfirmed input, idx 1 (code 64)" % adds.txid_hex)
        # Rule 6 (fee rate over each direct conflict): a bigger replacement paying less per kB.
        rest = coin.value - 39 * FEE - 7 * FEE
        wide = spend(coin, outputs=[(SCRIPT, FEE)] * 39 + [(SCRIPT, rest)])
        self.assertRejected(self.node, wide, -26, "insufficient fee, rejecting replacement %s; "
                            "new feerate 0.%08d COIN/kB <= old feerate 0.%08d COIN/kB "
                            "(code 66)" % (wide.txid_hex, fee_rate(7 * FEE, size_of(wide)),
                                           fee_rate(FEE, size_of(original))))
        self.assertEqual(sorted(pool(self.node)), sorted(txids(original, child, unrelated)))
        good = spend(coin, fee=7 * FEE)
        send(self.node, good)
        self.assertEqual(sorted(pool(self.node)), sorted(txids(good, unrelated)))

    def test_too_many_potential_replacements(self):
        node = self.private_node(["-limitancestorcount=200", "-limitdescendantcount=200"],
                                 blocks=SHARED_BLOCKS)
        coin = coinbase_at(node, 1)
        root = spend(coin, sequence=RBF_SEQUENCE)
        for tx in [root] + chain_of(out(root), [FEE] * 100):
            send(node, tx)
        replacement = spend(coin, fee=200 * FEE)
        self.assertRejected(node, replacement, -26, "too many potential replacements, "
                            "rejecting replacement %s; too many potential replacements "
                            "(101 > 100)\n (code 64)" % replacement.txid_hex)

    def test_mempoolreplacement_off(self):
        node = self.private_node(["-mempoolreplacement=0"], blocks=SHARED_BLOCKS)
        coin = coinbase_at(node, 1)
        send(node, spend(coin, sequence=RBF_SEQUENCE))
        self.assertRejected(node, spend(coin, fee=5 * FEE), -26, "txn-mempool-conflict (code 18)")
