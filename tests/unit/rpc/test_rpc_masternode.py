"""Masternode methods through the real RPC stack (tests/rpcchain.py) over a real
MasternodeService: the recorded replies of an empty list, then a list with entries."""

from __future__ import annotations

import os
from dataclasses import replace

from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks

from coin.consensus.subsidy import block_subsidy
from coin.spork import SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, SPORK_OFF, SporkManager
from coin.masternode.service import MasternodeService
from coin.masternode.sync import SYNC_FINISHED
from coin.p2p.messages import PaymentVoteMessage
from coin.primitives.transaction import OutPoint, Transaction, TxOut
from coin.script.standard import p2pkh_script
from coin.masternode.record import ENABLED
from coin.primitives.address import decode_wif
from coin.rpc.methods.masternode import METHODS, _encode_broadcasts

from tests.rpcchain import TIP_HEIGHT
from tests.unit.masternode.test_masternode import T0, broadcast, collateral_coin, next_ping
from tests.unit.rpc.test_rpc_governance import GovernanceTestCase, NO_WALLET, NoPeers
from tests.unit.spork.test_spork import REGTEST_SPORK_KEY

RPCM_35_MASTERNODE_COUNT = b'{"result":0,"error":null,"id":35}\n'
RPCM_36_MASTERNODE_LIST = b'{"result":{},"error":null,"id":36}\n'
RPCM_37_MASTERNODE_STATUS = (b'{"result":null,"error":{"code":-32603,"message":"This is not a '
                             b'masternode"},"id":37}\n')
RPCM_39_MASTERNODELIST = b'{"result":{},"error":null,"id":39}\n'
# Key order of rpcm_40 (mnsync status).
MNSYNC_KEYS = ["AssetID", "AssetName", "AssetStartTime", "Attempt", "IsBlockchainSynced",
               "IsMasternodeListSynced", "IsWinnersListSynced", "IsSynced", "IsFailed"]


class MasternodeRPCTestCase(GovernanceTestCase):
    methods = METHODS

    def setUp(self):
        d = super().setUp()

        def ready(result):
            self.masternodes = self.node.masternodes
            return result

        return d.addCallback(ready)


class EmptyListTests(MasternodeRPCTestCase):
    @inlineCallbacks
    def test_help_and_unknown_sub_commands_as_recorded(self):
        yield self.replay("rpcm_34_masternode")
        yield self.replay("rpcm_38_masternode_nosuchsub")

    @inlineCallbacks
    def test_recorded_replies(self):
        self.assertEqual((yield self.body(35, "masternode", "count")), RPCM_35_MASTERNODE_COUNT)
        self.assertEqual((yield self.body(36, "masternode", "list")), RPCM_36_MASTERNODE_LIST)
        self.assertEqual((yield self.body(37, "masternode", "status")), RPCM_37_MASTERNODE_STATUS)
        self.assertEqual((yield self.body(39, "masternodelist")), RPCM_39_MASTERNODELIST)

    @inlineCallbacks
    def test_counts(self):
        for mode in ("enabled", "qualify"):
            self.assertEqual((yield self.result("masternode", "count", mode)), 0)
        self.assertEqual((yield self.result("masternode", "count", "all")),
                         "Total: 0 (Enabled: 0 / Qualify: 0)")
        for mode in ("ps", "other"):  # the reference falls through and answers null
            self.assertIsNone((yield self.result("masternode", "count", mode)))
        self.assertEqual((yield self.error("masternode", "count", "ps", "x")),
                         (500, -8, "Too many parameters"))

    @inlineCallbacks
    def test_lists_and_winners(self):
        for mode in ("status", "addr", "rank", "full", "info", "pubkey"):
            self.assertEqual((yield self.result("masternodelist", mode, "1.2.3")), {})
            self.assertEqual((yield self.result("masternode", "list", mode)), {})
        help_text = yield self.result("help", "masternodelist")
        self.assertIn("defaults = status", help_text)
        for bogus in ("bogus", "json"):  # json is not one of the reference's 12 modes
            self.assertEqual((yield self.error("masternodelist", bogus)), (500, -1, help_text))
        self.assertEqual((yield self.error("masternode", "list", "bogus")), (500, -1, help_text))
        self.assertEqual((yield self.result("masternode", "list-conf")), [])
        for sub in ("current", "winner"):
            self.assertEqual((yield self.result("masternode", sub)), "unknown")
        winners = yield self.result("masternode", "winners")
        self.assertEqual(winners, {str(h): "Unknown"
                                   for h in range(TIP_HEIGHT - 10, TIP_HEIGHT + 20)})
        self.assertEqual(len((yield self.result("masternode", "winners", "2", "nkno"))), 22)
        self.assertEqual((yield self.result("masternode", "winners", "2", "payee")), {})
        self.assertEqual(len((yield self.result("masternode", "winners", "junk"))), 20)
        # glibc's atoi: 5,000 digits clamp to LONG_MAX, which as an int is -1; no 500.
        self.assertEqual(len((yield self.result("masternode", "winners", "9" * 5000))), 19)
        self.assertEqual(len((yield self.result("masternode", "winners", "999999999"))),
                         TIP_HEIGHT + 20)
        self.assertEqual((yield self.error("masternode", "winners", "1", "x", "y")),
                         (500, -8, "Correct usage is 'masternode winners ( \"count\" "
                                   "\"filter\" )'"))

    @inlineCallbacks
    def test_genkey_wallet_and_unlisted_commands(self):
        key = yield self.result("masternode", "genkey")
        secret, compressed = decode_wif(key, self.params)
        self.assertEqual((len(secret), compressed), (32, False))
        for sub in ("outputs", "start-alias", "start-all", "start-missing", "start-disabled"):
            self.assertEqual((yield self.error("masternode", sub)), NO_WALLET, sub)
        self.assertEqual((yield self.error("masternode", "start-many")),
                         (500, -8, "DEPRECATED, please use start-all instead"))
        self.assertIsNone((yield self.result("masternode", "debug")))
        self.assertEqual((yield self.error("masternode", "connect")),
                         (500, -8, "Masternode address required"))
        self.assertEqual((yield self.error("masternode", "connect", "127.0.0.1:1")),
                         (500, -32603, "Couldn't connect to masternode 127.0.0.1:1"))
        self.assertIs((yield self.result("sentinelping", "1.0.2")), True)

    @inlineCallbacks
    def test_broadcast_decode_errors(self):
        for text in ("zz", "0", "01"):
            self.assertEqual((yield self.error("masternodebroadcast", "decode", text)),
                             (500, -22, "Masternode broadcast message decode failed"))
        self.assertEqual((yield self.result("masternodebroadcast", "decode", "00")),
                         {"overall": "Successfully decoded broadcast messages for 0 masternodes, "
                                     "failed to decode 0, total 0"})
        self.assertEqual((yield self.error("masternodebroadcast", "decode")),
                         (500, -8, "Correct usage is 'masternodebroadcast decode \"hexstring\"'"))

    @inlineCallbacks
    def test_mnsync(self):
        status = yield self.result("mnsync", "status")
        self.assertEqual(list(status), MNSYNC_KEYS)
        self.assertEqual((status["AssetID"], status["AssetName"], status["IsSynced"]),
                         (0, "MASTERNODE_SYNC_INITIAL", False))
        self.assertEqual((yield self.result("mnsync", "next")),
                         "sync updated to MASTERNODE_SYNC_WAITING")
        for asset in ("LIST", "MNW", "FINISHED", "FINISHED"):
            self.assertEqual((yield self.result("mnsync", "next")),
                             "sync updated to MASTERNODE_SYNC_" + asset)
        status = yield self.result("mnsync", "status")
        self.assertEqual((status["AssetID"], status["IsMasternodeListSynced"],
                          status["IsWinnersListSynced"], status["IsSynced"]), (999, True, True, True))
        self.assertEqual((yield self.result("mnsync", "reset")), "success")
        self.assertEqual((yield self.result("mnsync", "status"))["AssetName"],
                         "MASTERNODE_SYNC_WAITING")
        self.assertEqual((yield self.result("mnsync", "other")), "failure")
        help_text = ("mnsync [status|next|reset]\nReturns the sync status, updates to the next "
                     "step or resets it entirely.\n")
        self.assertEqual((yield self.error("mnsync")), (500, -1, help_text))


class ListedTests(MasternodeRPCTestCase):
    """Two masternodes put straight into the service's list."""

    def setUp(self):
        d = super().setUp()

        def fill(result):
            manager = self.masternodes.manager
            self.mnbs = [broadcast(n=n) for n in range(2)]
            for mnb in self.mnbs:
                manager.add_broadcast(mnb, collateral_coin(), 100, self.masternodes.block_hash_at, T0)
            manager.process_ping(next_ping(self.mnbs[0], T0 + 600), T0 + 600, 100, 100)
            self.clock.set_mock_time(T0 + 600)
            return result

        return d.addCallback(fill)

    def key(self, n):
        return "COutPoint(%s, %d)" % (self.mnbs[n].outpoint.txid[::-1].hex(), n)

    @inlineCallbacks
    def test_modes(self):
        status = yield self.result("masternodelist")
        self.assertEqual(status, {self.key(0): "ENABLED", self.key(1): "PRE_ENABLED"})
        self.assertEqual(self.masternodes.manager.get(self.mnbs[0].outpoint).state, ENABLED)
        self.assertEqual((yield self.result("masternodelist", "status", "PRE")),
                         {self.key(1): "PRE_ENABLED"})
        self.assertEqual((yield self.result("masternodelist", "addr")),
                         {self.key(0): "127.0.0.1:20000", self.key(1): "127.0.0.1:20001"})
        self.assertEqual((yield self.result("masternodelist", "activeseconds")),
                         {self.key(0): 600, self.key(1): 0})
        self.assertEqual((yield self.result("masternodelist", "lastseen"))[self.key(0)], T0 + 600)
        self.assertEqual((yield self.result("masternodelist", "protocol", "70208")),
                         {self.key(0): 70208, self.key(1): 70208})
        self.assertEqual((yield self.result("masternodelist", "pubkey"))[self.key(1)],
                         self.mnbs[1].masternode_pubkey.hex())
        full = (yield self.result("masternodelist", "full"))[self.key(0)]
        payee = (yield self.result("masternodelist", "payee"))[self.key(0)]
        self.assertEqual(full, "           ENABLED 70208 %s %d      600          0      0 "
                               "127.0.0.1:20000" % (payee, T0 + 600))
        info = (yield self.result("masternodelist", "info"))[self.key(1)]
        self.assertTrue(info.endswith(" expired 127.0.0.1:20001"), info)
        self.assertEqual((yield self.result("masternode", "count")), 2)
        self.assertEqual((yield self.result("masternode", "count", "enabled")), 1)
        self.assertEqual((yield self.result("masternodelist", "lastpaidblock")),
                         {self.key(0): 0, self.key(1): 0})

    @inlineCallbacks
    def test_broadcast_round_trip(self):
        text = _encode_broadcasts(self.mnbs)
        decoded = yield self.result("masternodebroadcast", "decode", text)
        self.assertEqual(decoded["overall"], "Successfully decoded broadcast messages for 2 "
                                             "masternodes, failed to decode 0, total 2")
        entry = decoded[self.mnbs[0].hash[::-1].hex()]
        self.assertEqual((entry["outpoint"], entry["addr"], entry["sigTime"]),
                         (self.key(0), "127.0.0.1:20000", T0))
        tampered = _encode_broadcasts([self.mnbs[0], replace(self.mnbs[1], port=1)])
        self.assertIn("failed to decode 1",
                      (yield self.result("masternodebroadcast", "decode", tampered))["overall"])


class PayeeRuleTests(MasternodeRPCTestCase):
    """bad-cb-payee only while SPORK_8 is active and the list is synced."""

    def test_enforcement_needs_spork_8_and_a_synced_list(self):
        payee, other = p2pkh_script(b"\xaa" * 20), p2pkh_script(b"\xbb" * 20)
        height = 250
        amount = block_subsidy(height, self.params) * 45 // 100
        self.masternodes.payments.load([PaymentVoteMessage(OutPoint(bytes([n]) * 32, 0), height,
                                                           payee) for n in range(6)])
        wrong = Transaction([], [TxOut(1, b""), TxOut(amount, other)])
        right = Transaction([], [TxOut(1, b""), TxOut(amount, payee)])
        check = self.state.payee_check
        self.assertTrue(check(height, wrong))            # no spork manager: not enforced
        sporks = self.masternodes.sporks = SporkManager(self.params, self.clock.now)
        self.assertTrue(check(height, wrong))            # SPORK_8 off by default
        sporks.set_private_key(REGTEST_SPORK_KEY)
        sporks.update(SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, int(self.clock.now()) - 1)
        self.assertTrue(check(height, wrong))            # list not synced: not enforced
        self.masternodes.sync.asset = SYNC_FINISHED
        self.assertFalse(check(height, wrong))
        self.assertTrue(check(height, right))
        sporks.update(SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, SPORK_OFF)
        self.assertTrue(check(height, wrong))
        self.assertEqual(self.state.block_payee(height), (payee, amount))


class CacheFileTests(MasternodeRPCTestCase):
    """mncache.dat / mnpayments.dat through the service's start and stop."""

    def masternode_service(self, datadir: str) -> MasternodeService:
        return MasternodeService(self.params, self.access, NoPeers(), lambda: False,
                                 self.service.subscribe, self.clock.now, reactor, datadir,
                                 "masternode.conf")

    def test_restart_keeps_the_list_and_a_corrupt_file_is_ignored(self):
        datadir = self.masternodes.datadir
        os.makedirs(datadir)
        first = self.masternode_service(datadir)
        first.manager.add_broadcast(broadcast(), collateral_coin(), 100, first.block_hash_at, T0)
        first.payments.load([PaymentVoteMessage(broadcast().outpoint, 250, b"\x51")])
        first.startService()
        first.stopService()
        second = self.masternode_service(datadir)
        second.startService()
        self.addCleanup(second.stopService)
        self.assertEqual([mn.outpoint for mn in second.manager], [broadcast().outpoint])
        self.assertEqual(second.payments.payees(250), [(b"\x51", 1)])
        with open(os.path.join(datadir, "mncache.dat"), "r+b") as f:
            f.seek(40)
            f.write(b"\xff\xff")
        third = self.masternode_service(datadir)
        third.startService()
        self.addCleanup(third.stopService)
        self.assertEqual(len(third.manager), 0)  # logged and ignored, rebuilt from peers
        self.assertEqual(third.payments.payees(250), [(b"\x51", 1)])
