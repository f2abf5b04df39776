"""Masternodes between real coind processes on regtest, as users run them (issue #14).

A controller with a wallet funds three 1,000-coin collaterals; three masternode processes
(-masternode=1 -masternodeprivkey) are started from its masternode.conf with start-alias
and start-all; setmocktime drives pings and expiry; mined blocks pay the elected
masternode; a spent collateral drops its masternode; a new node syncs the list; a
restarted node keeps it.  Every node listens on loopback only and dials only what
-connect names.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Dict, List, NamedTuple, Tuple

from coin.chainparams import COIN, REGTEST
from coin.consensus.subsidy import block_subsidy
from coin.mining.assembler import create_coinbase, solve
from coin.p2p.messages import DsegMessage
from coin.primitives.block import Block, BlockHeader
from coin.primitives.merkle import merkle_root
from tests.nodeharness import NodeProcess, free_port
from tests.prepared import copy_datadir, prepared_datadir
from tests.functional.test_p2p_base import P2PTestCase, wait_until
from tests.unit.spork.test_spork import REGTEST_SPORK_KEY

COLLATERAL = 1000
#: Collaterals of the prepared controller: as many as a test's masternodes at most.
COLLATERALS = 3
#: An anyone-can-spend output script for the hand-made blocks' miner output (OP_TRUE).
OP_TRUE = b"\x51"
MIN_MNP_SECONDS = 600


def status_list(node: NodeProcess) -> Dict[str, str]:
    return node.rpc("masternodelist", "status")


def set_time(nodes: List[NodeProcess], now: int) -> None:
    for node in nodes:
        node.rpc("setmocktime", now)


class Controller(NamedTuple):
    node: NodeProcess
    datadir: str
    funding: List[Tuple[str, int]]
    keys: List[str]
    ports: List[int]
    now: int


class FundedController(NamedTuple):
    funding: List[Tuple[str, int]]
    #: ``masternode outputs`` once the collaterals were confirmed.
    outputs: Dict[str, str]
    keys: List[str]


def funded_controller(datadir: str) -> FundedController:
    """A wallet node's datadir with ``COLLATERALS`` 1,000-coin outputs of its own, confirmed,
    and a masternode key for each: built once per test process (a chain of 166 blocks and a
    node's start and stop), then copied by each test."""
    control = NodeProcess.start(datadir, ["-port=%d" % free_port(), "-listen=1", "-connect=0"])
    try:
        control.rpc("setmocktime", int(time.time()))
        control.rpc("generate", 165)  # 65 mature coinbases: the collaterals and fees
        funding = []
        for _ in range(COLLATERALS):
            txid = control.rpc("sendtoaddress", control.rpc("getnewaddress"), COLLATERAL)
            vout = next(o["n"] for o in control.rpc("getrawtransaction", txid, True)["vout"]
                        if o["value"] == COLLATERAL)
            funding.append((txid, vout))
        control.rpc("generate", 1)
        outputs = control.rpc("masternode", "outputs")
        keys = [control.rpc("masternode", "genkey") for _ in range(COLLATERALS)]
    finally:
        control.stop()
    return FundedController(funding, outputs, keys)


class MasternodeNetworkCase(P2PTestCase):
    """A controller with a wallet and its masternodes (also used by the governance tests)."""

    def wait_states(self, nodes: List[NodeProcess], expected: Dict[str, str], what: str,
                    timeout: float = 30.0) -> None:
        wait_until(lambda: all(status_list(n) == expected for n in nodes), what, timeout)

    def wait_tip(self, nodes: List[NodeProcess], timeout: float = 30.0) -> None:
        wait_until(lambda: len({n.rpc("getbestblockhash") for n in nodes}) == 1,
                   "the nodes to agree on the tip", timeout)

    def controller(self, count: int, *args: str) -> Controller:
        """A wallet node that funded ``count`` collaterals, started with a masternode.conf
        naming them (and one bad line, which must not stop it).

        It starts on a copy of the funded chain (:func:`funded_controller`), with fresh ports
        for its masternodes."""
        template, funded = prepared_datadir("masternode controller", funded_controller)
        self.assertLessEqual(count, len(funded.funding))
        control_dir = os.path.abspath(self.mktemp())
        copy_datadir(template, control_dir)
        funding, keys = funded.funding[:count], funded.keys[:count]
        ports = [free_port() for _ in range(count)]
        lines = ["# comment"] + ["mn%d 127.0.0.1:%d %s %s %d" % (n + 1, ports[n], keys[n], *funding[n])
                                 for n in range(count)]
        lines.insert(2, "broken line")
        with open(os.path.join(control_dir, "regtest", "masternode.conf"), "w") as f:
            f.write("\n".join(lines) + "\n")
        # The test's clock starts now, as the chain was mined at most minutes ago: a node
        # started later reads its real clock until setmocktime, and must not see it go far back.
        now = int(time.time())
        control = self.start("-listen=1", "-connect=0", *args, datadir=control_dir)
        control.rpc("setmocktime", now)
        self.assertEqual(funded.outputs, {txid: str(vout) for txid, vout in funded.funding})
        return Controller(control, control_dir, funding, keys, ports, now)

    def masternodes(self, c: Controller) -> List[NodeProcess]:
        """One -masternode=1 process per masternode.conf line, connected to the controller."""
        masternodes = [self.start("-listen=1", "-connect=" + self.target(c.node), "-masternode=1",
                                  "-masternodeprivkey=" + key, port=port)
                       for key, port in zip(c.keys, c.ports)]
        set_time(masternodes, c.now)
        self.wait_tip([c.node] + masternodes)
        return masternodes


class MasternodeNetworkTests(MasternodeNetworkCase):

    def test_masternode_network(self) -> None:
        c = self.controller(3)
        control, control_dir, funding, now = c.node, c.datadir, c.funding, c.now
        with open(os.path.join(control.net_datadir, "debug.log")) as f:
            self.assertIn('Could not parse masternode.conf\nLine: 3\n"broken line"', f.read())
        self.assertEqual([e["alias"] for e in control.rpc("masternode", "list-conf")],
                         ["mn1", "mn2", "mn3"])
        self.assertEqual({e["status"] for e in control.rpc("masternode", "list-conf")},
                         {"MISSING"})
        self.assertEqual(control.rpc("masternode", "start-alias", "nosuch"),
                         {"alias": "nosuch", "result": "failed",
                          "errorMessage": "Could not find alias in config. Verify with list-conf."})
        masternodes = self.masternodes(c)
        ports = c.ports
        nodes = [control] + masternodes
        self.assertEqual(masternodes[0].rpc("masternode", "status")["status"],
                         "Not capable masternode: Masternode not in masternode list")

        # start-alias, then start-all: every node lists the three, PRE_ENABLED.
        started = control.rpc("masternode", "start-alias", "mn1")
        self.assertEqual(started, {"alias": "mn1", "result": "successful"})
        overall = control.rpc("masternode", "start-all")["overall"]
        self.assertEqual(overall, "Successfully started 3 masternodes, failed to start 0, total 3")
        keys_of = {"COutPoint(%s, %d)" % f: n for n, f in enumerate(funding)}
        self.wait_states(nodes, dict.fromkeys(keys_of, "PRE_ENABLED"), "three PRE_ENABLED")
        # Ten minutes later the masternodes have pinged: ENABLED everywhere.
        now += MIN_MNP_SECONDS + 60
        set_time(nodes, now)
        self.wait_states(nodes, dict.fromkeys(keys_of, "ENABLED"), "three ENABLED")
        status = masternodes[1].rpc("masternode", "status")
        self.assertEqual((status["outpoint"], status["service"], status["status"]),
                         ("COutPoint(%s, %d)" % funding[1], "127.0.0.1:%d" % ports[1],
                          "Masternode successfully started"))

        # Payments start at 200: each block pays the most-voted masternode 45% of the subsidy.
        paid = {}
        while control.rpc("getblockcount") < 215:
            self.wait_tip(nodes)
            control.rpc("generate", 1)
            height = control.rpc("getblockcount")
            block = control.rpc("getblock", control.rpc("getbestblockhash"), 2)
            coinbase = block["tx"][0]["vout"]
            if height >= 200 and len(coinbase) == 2:
                # 45% of the subsidy (regtest halves every 150 blocks: 25 coins here).
                self.assertEqual(coinbase[1]["value"] * COIN,
                                 block_subsidy(height, REGTEST) * 45 // 100)
                paid[height] = coinbase[1]["scriptPubKey"]["addresses"][0]
        self.wait_tip(nodes)
        self.assertTrue(paid, "no block paid a masternode")
        winners = [n.rpc("masternode", "winners", "20") for n in nodes]
        for height, address in paid.items():
            self.assertIn(address, winners[0][str(height)])
        wait_until(lambda: len({str(n.rpc("masternode", "winners", "20")) for n in nodes}) == 1,
                   "every node to agree on the winners")
        payees = control.rpc("masternodelist", "payee")
        self.assertTrue(set(paid.values()) <= set(payees.values()))
        template = control.rpc("getblocktemplate")
        self.assertTrue(template["masternode_payments_started"])
        self.assertFalse(template["masternode_payments_enforced"])  # SPORK_8 is off

        # A new node syncs the list: INITIAL -> WAITING -> LIST -> MNW -> FINISHED.
        newcomer = self.start("-listen=1", "-connect=" + self.target(control))
        newcomer.rpc("setmocktime", now)
        seen: List[str] = []

        def finished() -> bool:
            name = newcomer.rpc("mnsync", "status")["AssetName"]
            if not seen or seen[-1] != name:
                seen.append(name)
            return name == "MASTERNODE_SYNC_FINISHED"

        wait_until(finished, "the new node's masternode sync", timeout=60)
        order = ["MASTERNODE_SYNC_INITIAL", "MASTERNODE_SYNC_WAITING", "MASTERNODE_SYNC_LIST",
                 "MASTERNODE_SYNC_MNW", "MASTERNODE_SYNC_FINISHED"]
        self.assertEqual(seen, [name for name in order if name in seen])
        self.assertEqual(status_list(newcomer), dict.fromkeys(keys_of, "ENABLED"))
        self.assertEqual(newcomer.rpc("masternode", "winners", "20"),
                         control.rpc("masternode", "winners", "20"))
        nodes.append(newcomer)

        # Spending a collateral drops its masternode: OUTPOINT_SPENT on every node.
        txid, vout = funding[1]
        raw = control.rpc("createrawtransaction", [{"txid": txid, "vout": vout}],
                          {control.rpc("getnewaddress"): 999.99})
        control.rpc("sendrawtransaction",
                    control.rpc("signrawtransactionwithwallet", raw)["hex"])
        control.rpc("generate", 1)
        spent_key = "COutPoint(%s, %d)" % funding[1]
        wait_until(lambda: all(status_list(n).get(spent_key) == "OUTPOINT_SPENT" for n in nodes),
                   "OUTPOINT_SPENT everywhere")

        # The third masternode stops: 65 minutes on it is EXPIRED, 180 NEW_START_REQUIRED.
        masternodes[2].stop()
        alive = nodes[:3] + nodes[4:]
        third = "COutPoint(%s, %d)" % funding[2]
        for minutes, state in ((66, "EXPIRED"), (121, "EXPIRED"), (182, "NEW_START_REQUIRED")):
            set_time(alive, now + minutes * 60)
            wait_until(lambda: all(status_list(n).get(third) == state for n in alive),
                       "the stopped masternode %s" % state)
        now += 182 * 60
        first = "COutPoint(%s, %d)" % funding[0]
        wait_until(lambda: all(status_list(n).get(first) == "ENABLED" for n in alive),
                   "the live masternode still ENABLED (it pinged through the jumps)")

        # Restarted, the controller keeps its list (mncache.dat) and votes (mnpayments.dat).
        before = status_list(control)
        winners_before = control.rpc("masternode", "winners", "20")
        control.stop()
        control = self.start("-listen=1", "-connect=0", datadir=control_dir,
                             port=control.p2p_port)
        self.assertEqual(set(status_list(control)), set(before))
        self.assertEqual(control.rpc("masternode", "winners", "20"), winners_before)

        # Over P2P: dseg gets the listed broadcasts (not the spent one) and an ssc count; a
        # newer broadcast whose signature does not match costs the sender 100: banned, dropped.
        peer = self.raw(control)
        peer.handshake()
        peer.send(DsegMessage())
        announced = peer.wait_for("mnb")
        ssc = peer.wait_for("ssc")
        self.assertEqual((ssc.item_id, ssc.count), (2, 2))
        peer.send(replace(announced, port=announced.port + 1))  # same hash: seen, ignored
        peer.send(replace(announced, sig_time=announced.sig_time + 1))
        self.assertTrue(peer.wait_closed(10))
        wait_until(lambda: control.rpc("listbanned"), "the sender of the forged mnb banned")

    def mine_to_an_elected_height(self, nodes: List[NodeProcess], first: int) -> int:
        """Mine in lockstep until the next height (``first`` or above) has a payee elected by
        two votes on every node; returns that height.

        Votes for a height are cast ten blocks ahead, and with two masternodes the
        reference's queue (a payee scheduled within the next eight heights is skipped)
        leaves most heights without any vote, so which heights get one depends on when
        voting began: look for one rather than assume it.  A vote late to arrive only
        means a later height is used."""
        miner = nodes[0]
        while True:
            self.wait_tip(nodes)
            height = miner.rpc("getblockcount") + 1
            if height >= first and all(":2" in n.rpc("masternode", "winners", "0")[str(height)]
                                       for n in nodes):
                return height
            self.assertLess(height, first + 30, "no height elected a payee")
            miner.rpc("generate", 1)

    def test_spork_8_rejects_a_wrong_payee(self) -> None:
        """With SPORK_8 set through `spork` (signed with the published regtest key), a
        block paying another payee than the elected one is refused by every node:
        bad-cb-payee; the block paying the elected one is accepted by all."""
        c = self.controller(2, "-sporkkey=" + REGTEST_SPORK_KEY)
        masternodes = self.masternodes(c)
        nodes = [c.node] + masternodes
        c.node.rpc("masternode", "start-all")
        now = c.now + MIN_MNP_SECONDS + 60
        set_time(nodes, now)
        wait_until(lambda: all(set(status_list(n).values()) == {"ENABLED"} and
                               len(status_list(n)) == 2 for n in nodes), "two ENABLED")
        c.node.rpc("spork", "SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT", now - 1)
        wait_until(lambda: all(n.rpc("spork", "active")["SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT"]
                               for n in nodes), "SPORK_8 active everywhere")
        # Up to 189 at once: the votes cast meanwhile are for heights below the payments'
        # start (200); from there on every node must hold both votes of each height.
        c.node.rpc("generate", 189 - c.node.rpc("getblockcount"))
        height = self.mine_to_an_elected_height(nodes, 200)
        # The rule holds only on a node whose masternode sync is done (as the reference).
        wait_until(lambda: all(n.rpc("mnsync", "status")["IsSynced"] for n in nodes),
                   "every node's masternode sync", timeout=60)
        target = masternodes[0]
        template = target.rpc("getblocktemplate")
        self.assertEqual(template["height"], height)
        self.assertTrue(template["masternode_payments_enforced"])
        (payment,) = template["masternode"]
        self.assertIn(payment["payee"] + ":2", target.rpc("masternode", "winners", "0")[str(height)])

        def block_paying(payee: bytes) -> Block:
            coinbase = create_coinbase(height, OP_TRUE, template["coinbasevalue"],
                                       payee=(payee, payment["amount"]))
            root, _ = merkle_root([coinbase.txid])
            header = BlockHeader(template["version"],
                                 bytes.fromhex(template["previousblockhash"])[::-1], root,
                                 template["curtime"], int(template["bits"], 16), 0)
            return solve(Block(header, [coinbase]), REGTEST)

        wrong = block_paying(bytes.fromhex(payment["script"][:6]) + b"\x01" * 20
                             + bytes.fromhex("88ac"))
        for node in nodes:
            self.assertEqual(node.rpc("submitblock", wrong.serialize().hex()), "bad-cb-payee")
        right = block_paying(bytes.fromhex(payment["script"]))
        self.assertIsNone(target.rpc("submitblock", right.serialize().hex()))
        wait_until(lambda: all(n.rpc("getbestblockhash") == right.hash_hex for n in nodes),
                   "every node on the block paying the elected masternode")
