"""nSequence and the anti-fee-sniping lock time of wallet-built transactions on real nodes, as
the reference node (Core 0.17's CWallet::CreateTransaction, FundTransaction, feebumper and
ConstructTransaction) makes them; and that the pool and the next block take them at once."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Dict, List, Tuple

from tests.functional.test_wallet_rbf import FINAL_SEQUENCE, RBF_SEQUENCE, decoded
from tests.functional.test_wallet_tx import EXTERNAL, FundedCase, call
from tests.nodeharness import NodeClient

#: Core's SEQUENCE_FINAL: createrawtransaction's default without a lock time.
SEQUENCE_FINAL = 0xFFFFFFFF
#: Core's anti-fee-sniping: the lock time is at most this many blocks behind the tip.
MAX_AGE = 99
#: An input's own sequence: no BIP68 relative lock (its disable flag), not replaceable.
OWN_SEQUENCE = 0x80000000 | 1000
#: A transaction id no wallet has (createrawtransaction does not look inputs up).
SOME_TXID = "11" * 32


def shape(tx: Dict[str, Any]) -> Tuple[int, List[int]]:
    return tx["locktime"], [txin["sequence"] for txin in tx["vin"]]


def funded_shape(node: NodeClient, hexstring: str) -> Tuple[int, List[int]]:
    return shape(call(node, "decoderawtransaction", hexstring))


class WalletLockTimeTests(FundedCase):

    def assertAntiSniping(self, node: NodeClient, txid: str, sequence: int) -> None:
        """Lock time at the tip's height or up to 99 blocks before; every input ``sequence``."""
        height = call(node, "getblockcount")
        locktime, sequences = shape(decoded(node, txid))
        self.assertTrue(height - MAX_AGE <= locktime <= height, (locktime, height))
        self.assertEqual(set(sequences), {sequence})

    def assertMinedAtOnce(self, node: NodeClient, txids: List[str]) -> None:
        self.assertEqual(sorted(call(node, "getrawmempool")), sorted(txids))
        call(node, "generatetoaddress", 1, call(node, "getnewaddress"))
        self.assertEqual(call(node, "getrawmempool"), [])
        for txid in txids:
            self.assertEqual(call(node, "gettransaction", txid)["confirmations"], 1)

    def test_sends(self) -> None:
        node = self.shared.node
        plain = call(node, "sendtoaddress", EXTERNAL, 1)
        self.assertAntiSniping(node, plain, FINAL_SEQUENCE)
        opted = call(node, "sendtoaddress", EXTERNAL, 1, "", "", False, True)
        self.assertAntiSniping(node, opted, RBF_SEQUENCE)
        many = call(node, "sendmany", "", {EXTERNAL: 1, call(node, "getnewaddress"): 2})
        self.assertAntiSniping(node, many, FINAL_SEQUENCE)
        many_opted = call(node, "sendmany", "", {EXTERNAL: 1}, 1, "", [], True)
        self.assertAntiSniping(node, many_opted, RBF_SEQUENCE)
        self.assertMinedAtOnce(node, [plain, opted, many, many_opted])

    def test_fundrawtransaction_keeps_the_lock_time_and_given_sequences(self) -> None:
        node = self.shared.node
        raw = call(node, "createrawtransaction", [], {EXTERNAL: 1})
        self.assertEqual(funded_shape(node, call(node, "fundrawtransaction", raw)["hex"]),
                         (0, [FINAL_SEQUENCE]))
        self.assertEqual(funded_shape(node, call(node, "fundrawtransaction", raw,
                                                 {"replaceable": True})["hex"]),
                         (0, [RBF_SEQUENCE]))
        # A wallet coin of 50 with its own sequence and a lock time: both kept, one more
        # input added with the wallet's sequence.
        coin = next(u for u in call(node, "listunspent") if u["amount"] == 50)
        raw = call(node, "createrawtransaction",
                   [{"txid": coin["txid"], "vout": coin["vout"], "sequence": OWN_SEQUENCE}],
                   {EXTERNAL: 60}, 50)
        funded = call(node, "fundrawtransaction", raw)["hex"]
        self.assertEqual(funded_shape(node, funded), (50, [OWN_SEQUENCE, FINAL_SEQUENCE]))
        signed = call(node, "signrawtransactionwithwallet", funded)
        self.assertTrue(signed["complete"])
        txid = call(node, "sendrawtransaction", signed["hex"])
        self.assertMinedAtOnce(node, [txid])

    def test_walletcreatefundedpsbt(self) -> None:
        node = self.shared.node

        def created(*args: Any) -> Tuple[int, List[int]]:
            psbt = call(node, "walletcreatefundedpsbt", *args)["psbt"]
            return shape(call(node, "decodepsbt", psbt)["tx"])

        self.assertEqual(created([], {EXTERNAL: 1}), (0, [FINAL_SEQUENCE]))
        self.assertEqual(created([], {EXTERNAL: 1}, 0, {"replaceable": True}),
                         (0, [RBF_SEQUENCE]))
        # The given input follows createrawtransaction's rule, the added one the wallet's.
        coin = next(u for u in call(node, "listunspent") if u["amount"] == 50)
        given = [{"txid": coin["txid"], "vout": coin["vout"]}]
        self.assertEqual(created(given, {EXTERNAL: 60}), (0, [SEQUENCE_FINAL, FINAL_SEQUENCE]))
        self.assertEqual(created(given, {EXTERNAL: 60}, 7), (7, [FINAL_SEQUENCE] * 2))
        self.assertEqual(created(given, {EXTERNAL: 60}, 7, {"replaceable": True}),
                         (7, [RBF_SEQUENCE] * 2))

    def test_bumpfee_keeps_the_lock_time_and_sequences(self) -> None:
        node = self.shared.node
        original = call(node, "sendtoaddress", EXTERNAL, 1, "", "", False, True)
        locktime, sequences = shape(decoded(node, original))
        bumped = call(node, "bumpfee", original)["txid"]
        self.assertEqual(shape(decoded(node, bumped)), (locktime, sequences))
        again = call(node, "bumpfee", bumped, {"replaceable": False})["txid"]
        self.assertEqual(shape(decoded(node, again)), (locktime, [FINAL_SEQUENCE]))
        self.assertMinedAtOnce(node, [again])

    def test_createrawtransaction_and_createpsbt_default_sequence(self) -> None:
        """Core 0.17's ConstructTransaction: replaceable, else a lock time, else final (the
        reference node answers the same for each case)."""
        node = self.shared.node
        inputs = [{"txid": SOME_TXID, "vout": 0}]
        cases = [((), (0, [SEQUENCE_FINAL])), ((0,), (0, [SEQUENCE_FINAL])),
                 ((7,), (7, [FINAL_SEQUENCE])), ((0, True), (0, [RBF_SEQUENCE])),
                 ((7, True), (7, [RBF_SEQUENCE])), ((0, False), (0, [SEQUENCE_FINAL])),
                 ((7, False), (7, [FINAL_SEQUENCE]))]
        for args, expected in cases:
            raw = call(node, "createrawtransaction", inputs, {EXTERNAL: Decimal("0.1")}, *args)
            self.assertEqual(funded_shape(node, raw), expected, args)
            psbt = call(node, "createpsbt", inputs, [{EXTERNAL: Decimal("0.1")}], *args)
            self.assertEqual(shape(call(node, "decodepsbt", psbt)["tx"]), expected, args)
