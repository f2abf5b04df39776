"""Masternodes: message round trips, signatures, the list manager's rules, mncache.dat."""

from __future__ import annotations

import os
from dataclasses import replace

import coincurve
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import COIN, MAIN, REGTEST
from coin.consensus.errors import ValidationError
from coin.consensus.subsidy import block_subsidy
from coin.masternode import signing
from coin.masternode.active import STARTED as ACTIVE_STARTED
from coin.masternode.active import SYNC_IN_PROCESS as ACTIVE_SYNCING
from coin.masternode.active import ActiveMasternode
from coin.masternode.conf import HEADER as CONF_HEADER
from coin.masternode.conf import MasternodeEntry, parse_masternode_conf, read_masternode_conf
from coin.masternode.service import MasternodeConfigError, active_from_config
from coin.masternode.sync import (
    FAILED_RETRY_SECONDS, SYNC_LIST, SYNC_MNW, TIMEOUT_SECONDS, MasternodeSync, SyncError,
)
from coin.masternode.cache import (
    MNCACHE_NAME, MNCACHE_VERSION, CacheError, decode_masternodes, decode_votes, encode_masternodes,
    encode_votes, read_cache, write_cache,
)
from coin.masternode.manager import SPENT_KEEP_DEPTH, MasternodeError, MasternodeManager
from coin.masternode.payments import PaymentVotes, masternode_payment, payee_script
from coin.masternode.params import (
    EXPIRATION_SECONDS, MIN_MNP_SECONDS, NEW_START_REQUIRED_SECONDS, masternode_params,
)
from coin.masternode.record import (
    ENABLED, EXPIRED, NEW_START_REQUIRED, OUTPOINT_SPENT, PRE_ENABLED, UPDATE_REQUIRED,
)
from coin.p2p.messages import (
    DsegMessage, MasternodeBroadcastMessage, MasternodePingMessage, MasternodeVerifyMessage,
    MnGetMessage, PaymentVoteMessage, ProtocolViolation, SyncStatusCountMessage, decode_payload,
)
from coin.p2p.netaddr import bytes_to_ip, ip_to_bytes
from coin.primitives.address import encode_wif
from coin.primitives.coin import Coin
from coin.primitives.hashes import hash160
from coin.primitives.transaction import OutPoint, Transaction, TxOut
from coin.script.standard import p2pkh_script
from coin.testing.chainbuilder import ChainBuilder, open_chain

hashes = st.binary(min_size=32, max_size=32)
outpoints = st.builds(OutPoint, hashes, st.integers(0, 0xFFFFFFFF))
blobs = st.binary(max_size=80)
i32s = st.integers(-(1 << 31), (1 << 31) - 1)
# Addresses as the wire gives them back (an IPv4-mapped IPv6 address reads as IPv4).
ips = st.ip_addresses().map(lambda ip: bytes_to_ip(ip_to_bytes(str(ip))))
pings = st.builds(MasternodePingMessage, outpoints, hashes, st.integers(-(1 << 63), (1 << 63) - 1),
                  blobs, st.booleans(), st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFF))
mn_payloads = st.one_of(
    pings,
    st.builds(MasternodeBroadcastMessage, outpoints, ips, st.integers(0, 0xFFFF), blobs, blobs, blobs,
              st.integers(-(1 << 63), (1 << 63) - 1), i32s, pings),
    st.builds(PaymentVoteMessage, outpoints, i32s, blobs, blobs),
    st.builds(DsegMessage, outpoints),
    st.builds(MnGetMessage, i32s),
    st.builds(SyncStatusCountMessage, i32s, i32s),
    st.builds(MasternodeVerifyMessage, outpoints, outpoints, ips, st.integers(0, 0xFFFF), i32s, i32s,
              blobs, blobs))


class Messages(SynchronousTestCase):

    @given(mn_payloads)
    def test_round_trip(self, msg):
        raw = msg.serialize()
        self.assertEqual(decode_payload(msg.command, raw), msg)

    @given(mn_payloads, st.binary(min_size=1, max_size=3))
    def test_trailing_bytes_are_malformed(self, msg, extra):
        if isinstance(msg, (MasternodePingMessage, MasternodeBroadcastMessage)):
            return  # a ping's tail is optional, so its length is not fixed
        self.assertRaises(ProtocolViolation, decode_payload, msg.command, msg.serialize() + extra)

    def test_ping_without_sentinel_fields(self):
        """Older peers stop after the signature (Dash reads the rest as defaults)."""
        ping = MasternodePingMessage(OutPoint(b"\x01" * 32, 0), b"\x02" * 32, 1000, b"sig")
        self.assertEqual(decode_payload("mnp", ping.serialize()[:-9]), ping)

    def test_outpoint_is_sent_as_a_txin(self):
        """At protocol 70208 Dash writes a CTxIn: outpoint, empty script, final sequence."""
        outpoint = OutPoint(bytes(range(32)), 7)
        self.assertEqual(DsegMessage(outpoint).serialize(),
                         bytes(range(32)) + b"\x07\x00\x00\x00" + b"\x00" + b"\xff" * 4)


KEY_C = coincurve.PrivateKey(b"\x11" * 32)   # collateral (wallet, compressed)
KEY_M = coincurve.PrivateKey(b"\x22" * 32)   # masternode key (genkey, uncompressed)
PARAMS = masternode_params("regtest")
T0 = 1_600_000_000


def block_hash_at(height):
    return None if height < 0 else height.to_bytes(32, "little")


def collateral_coin(key=KEY_C, value=1000 * COIN, height=10):
    return Coin(value, p2pkh_script(hash160(key.public_key.format())), height, False, 2)


def broadcast(n=0, sig_time=T0, ping_time=None, key_c=KEY_C, key_m=KEY_M, **kw):
    outpoint = OutPoint(bytes([n + 1]) * 32, n)
    ping = signing.make_ping(outpoint, block_hash_at(100), ping_time or sig_time, key_m, False)
    return signing.make_broadcast(outpoint, "127.0.0.1", 20000 + n, (key_c, True), (key_m, False),
                                  sig_time, ping, **kw)


def next_ping(mnb, sig_time, key=KEY_M, height=100):
    return signing.make_ping(mnb.outpoint, block_hash_at(height), sig_time, key, False)


class Signatures(SynchronousTestCase):

    def test_broadcast_and_ping_verify(self):
        mnb = broadcast()
        self.assertTrue(signing.verify(mnb.collateral_pubkey, mnb.signature,
                                       signing.broadcast_string(mnb)))
        self.assertTrue(signing.verify(mnb.masternode_pubkey, mnb.last_ping.signature,
                                       signing.ping_string(mnb.last_ping)))

    def test_the_reference_strings(self):
        mnb = broadcast()
        ping = mnb.last_ping
        self.assertEqual(signing.ping_string(ping), "CTxIn(COutPoint(%s, 0), scriptSig=)%s%d" % (
            "01" * 5, block_hash_at(100)[::-1].hex(), T0))
        self.assertTrue(signing.broadcast_string(mnb).startswith("127.0.0.1:20000%d" % T0))
        vote = PaymentVoteMessage(mnb.outpoint, 250, p2pkh_script(b"\x00" * 20))
        self.assertEqual(signing.vote_string(vote), "%s-0250OP_DUP OP_HASH160 %s OP_EQUALVERIFY "
                         "OP_CHECKSIG" % ("01" * 32, "00" * 20))

    def test_tampered_fields_fail(self):
        mnb = broadcast()
        for changed in (replace(mnb, port=1), replace(mnb, sig_time=T0 + 1),
                        replace(mnb, protocol_version=70209),
                        replace(mnb, masternode_pubkey=KEY_C.public_key.format())):
            self.assertFalse(signing.verify(changed.collateral_pubkey, changed.signature,
                                            signing.broadcast_string(changed)))

    def test_wrong_key_fails(self):
        mnb = broadcast()
        self.assertFalse(signing.verify(KEY_M.public_key.format(False), mnb.signature,
                                        signing.broadcast_string(mnb)))
        self.assertFalse(signing.verify(mnb.collateral_pubkey, b"\x00" * 65,
                                        signing.broadcast_string(mnb)))


class ManagerTest(SynchronousTestCase):

    def setUp(self):
        self.manager = MasternodeManager(PARAMS, REGTEST.p2p_port)

    def add(self, mnb, coin=None, now=T0, tip=100):
        return self.manager.add_broadcast(mnb, coin or collateral_coin(), tip, block_hash_at, now)

    def refused(self, mnb, coin=None, now=T0, tip=100):
        with self.assertRaises(MasternodeError) as cm:
            self.add(mnb, coin, now, tip)
        self.assertIsNone(self.manager.get(mnb.outpoint))
        return cm.exception

    def test_accepts_a_good_broadcast_once(self):
        mnb = broadcast()
        self.assertTrue(self.add(mnb))
        self.assertEqual(self.manager.get(mnb.outpoint).state, PRE_ENABLED)
        self.assertFalse(self.add(mnb))  # seen
        self.assertEqual(len(self.manager), 1)

    def test_newer_broadcast_replaces_older_is_ignored(self):
        self.add(broadcast(sig_time=T0))
        self.assertTrue(self.add(broadcast(sig_time=T0 + 5), now=T0 + 5))
        self.assertFalse(self.add(broadcast(sig_time=T0 + 1), now=T0 + 5))
        self.assertEqual(self.manager.get(broadcast().outpoint).broadcast.sig_time, T0 + 5)

    def test_bad_signature_scores_100(self):
        mnb = broadcast()
        self.assertEqual(self.refused(replace(mnb, port=1)).ban_score, 100)

    def test_bad_ping_inside_broadcast_scores_33(self):
        mnb = broadcast()
        bad_ping = replace(mnb.last_ping, signature=b"\x00" * 65)
        unsigned = replace(mnb, last_ping=bad_ping)
        self.assertEqual(self.refused(unsigned).ban_score, 33)

    def test_future_signature_time(self):
        error = self.refused(broadcast(sig_time=T0 + 3601))
        self.assertEqual(error.ban_score, 1)

    def test_outdated_protocol_ignored(self):
        self.assertEqual(self.refused(broadcast(protocol_version=70207)).ban_score, 0)

    def test_collateral_rules(self):
        mnb = broadcast()
        self.assertIn("failed to find", self._missing(mnb))
        wrong_amount = self.refused(mnb, collateral_coin(value=999 * COIN))
        self.assertEqual(wrong_amount.ban_score, 100)
        wrong_key = self.refused(mnb, collateral_coin(key=KEY_M))
        self.assertEqual(wrong_key.ban_score, 33)
        strict = MasternodeManager(masternode_params("main"), REGTEST.p2p_port)
        with self.assertRaises(MasternodeError) as cm:
            strict.check_collateral(mnb, collateral_coin(height=90), 100, block_hash_at)
        self.assertIn("at least 15 confirmations", cm.exception.reason)
        self.assertEqual(strict.check_collateral(mnb, collateral_coin(height=86), 100, block_hash_at),
                         block_hash_at(100))

    def _missing(self, mnb):
        with self.assertRaises(MasternodeError) as cm:
            self.manager.add_broadcast(mnb, None, 100, block_hash_at, T0)
        return cm.exception.reason

    def test_state_machine_on_the_clock(self):
        mnb = broadcast()
        self.add(mnb)
        mn = self.manager.get(mnb.outpoint)
        self.manager.check_all(T0 + 60)
        self.assertEqual(mn.state, PRE_ENABLED)
        self.assertTrue(self.manager.process_ping(next_ping(mnb, T0 + MIN_MNP_SECONDS),
                                                  T0 + MIN_MNP_SECONDS, 100, 100))
        self.assertEqual(mn.state, ENABLED)
        last = T0 + MIN_MNP_SECONDS
        self.manager.check_all(last + EXPIRATION_SECONDS)
        self.assertEqual(mn.state, ENABLED)
        changes = self.manager.check_all(last + EXPIRATION_SECONDS + 1)
        self.assertEqual((mn.state, changes), (EXPIRED, [(mn, ENABLED)]))
        # An expired masternode comes back with a ping ...
        self.manager.process_ping(next_ping(mnb, last + EXPIRATION_SECONDS + 2),
                                  last + EXPIRATION_SECONDS + 2, 100, 100)
        self.assertEqual(mn.state, ENABLED)
        last += EXPIRATION_SECONDS + 2
        self.manager.check_all(last + NEW_START_REQUIRED_SECONDS + 1)
        self.assertEqual(mn.state, NEW_START_REQUIRED)
        # ... one needing a new start does not: only a new broadcast revives it.
        with self.assertRaises(MasternodeError):
            self.manager.process_ping(next_ping(mnb, last + NEW_START_REQUIRED_SECONDS + 2),
                                      last + NEW_START_REQUIRED_SECONDS + 2, 100, 100)
        now = last + NEW_START_REQUIRED_SECONDS + 10
        self.assertTrue(self.add(broadcast(sig_time=now), now=now))
        self.assertEqual(self.manager.get(mnb.outpoint).state, PRE_ENABLED)

    def test_update_required(self):
        self.add(broadcast())
        mn = self.manager.get(broadcast().outpoint)
        mn.broadcast = replace(mn.broadcast, protocol_version=70100)
        self.manager.check_all(T0)
        self.assertEqual(mn.state, UPDATE_REQUIRED)

    def test_ping_rules(self):
        mnb = broadcast()
        self.add(mnb)
        later = T0 + MIN_MNP_SECONDS
        good = next_ping(mnb, later)
        with self.assertRaises(MasternodeError) as cm:   # too early
            self.manager.process_ping(next_ping(mnb, T0 + 60), later, 100, 100)
        self.assertEqual(cm.exception.ban_score, 0)
        with self.assertRaises(MasternodeError) as cm:   # unknown block
            self.manager.process_ping(good, later, None, 100)
        with self.assertRaises(MasternodeError) as cm:   # stale block
            self.manager.process_ping(good, later, 75, 100)
        with self.assertRaises(MasternodeError) as cm:   # masternode key is not the signer
            self.manager.process_ping(next_ping(mnb, later, key=KEY_C), later, 100, 100)
        self.assertEqual(cm.exception.ban_score, 33)
        with self.assertRaises(MasternodeError) as cm:   # unknown masternode
            self.manager.process_ping(next_ping(broadcast(n=5), later), later, 100, 100)
        self.assertTrue(self.manager.process_ping(good, later, 100, 100))
        self.assertFalse(self.manager.process_ping(good, later, 100, 100))  # replayed

    def test_spent_collateral_and_reorg(self):
        mnb = broadcast()
        self.add(mnb)
        self.manager.process_ping(next_ping(mnb, T0 + MIN_MNP_SECONDS), T0 + MIN_MNP_SECONDS, 100, 100)
        mn = self.manager.get(mnb.outpoint)
        self.assertEqual(self.manager.block_connected(101, [OutPoint(b"\x09" * 32, 0)]), [])
        self.assertEqual(self.manager.block_connected(102, [mnb.outpoint]), [mn])
        self.assertEqual(mn.state, OUTPOINT_SPENT)
        self.manager.check_all(T0 + MIN_MNP_SECONDS)
        self.assertEqual(mn.state, OUTPOINT_SPENT)  # the clock does not revive it
        self.assertEqual(self.manager.block_disconnected(102), [mn])
        self.assertEqual(mn.state, ENABLED)
        self.manager.block_connected(102, [mnb.outpoint])
        self.manager.block_connected(102 + SPENT_KEEP_DEPTH - 1, [])
        self.assertIs(self.manager.get(mnb.outpoint), mn)
        self.manager.block_connected(102 + SPENT_KEEP_DEPTH, [])
        self.assertIsNone(self.manager.get(mnb.outpoint))

    def test_ranks_follow_the_block_hash_101_below(self):
        for n in range(5):
            self.add(broadcast(n=n))
        self.assertEqual(self.manager.ranked(100, block_hash_at), [])  # no block at -1
        ranked = self.manager.ranked(250, block_hash_at)
        seed = block_hash_at(149)
        scores = [mn.score(seed) for mn in ranked]
        self.assertEqual(scores, sorted(scores, reverse=True))
        self.assertEqual(len(ranked), 5)
        self.assertEqual(self.manager.rank(ranked[2].outpoint, 250, block_hash_at), 3)
        self.assertNotEqual([mn.outpoint for mn in self.manager.ranked(251, block_hash_at)],
                            [mn.outpoint for mn in ranked])  # 5! orders: a tie is ~1%; fixed seeds
        self.assertIsNone(self.manager.rank(OutPoint(b"\x07" * 32, 1), 250, block_hash_at))


class Cache(SynchronousTestCase):

    def setUp(self):
        self.path = self.mktemp()

    def filled(self):
        manager = MasternodeManager(PARAMS, REGTEST.p2p_port)
        for n in range(3):
            manager.add_broadcast(broadcast(n=n), collateral_coin(), 100, block_hash_at, T0)
        manager.block_connected(105, [broadcast(n=1).outpoint])
        return manager

    def test_round_trip(self):
        manager = self.filled()
        write_cache(self.path, MNCACHE_NAME, MNCACHE_VERSION, REGTEST.message_start,
                    encode_masternodes(*manager.snapshot()))
        copy = MasternodeManager(PARAMS, REGTEST.p2p_port)
        copy.load(*decode_masternodes(read_cache(self.path, MNCACHE_NAME, MNCACHE_VERSION,
                                                 REGTEST.message_start)))
        self.assertEqual([(mn.broadcast, mn.last_ping, mn.state, mn.collateral_hash) for mn in copy],
                         [(mn.broadcast, mn.last_ping, mn.state, mn.collateral_hash)
                          for mn in manager])
        self.assertEqual(copy.snapshot()[1], manager.snapshot()[1])
        # The restored spend record still undoes on a reorg.
        self.assertEqual(len(copy.block_disconnected(105)), 1)

    def test_corrupt_foreign_and_old_files(self):
        payload = encode_masternodes(*self.filled().snapshot())
        write_cache(self.path, MNCACHE_NAME, MNCACHE_VERSION, REGTEST.message_start, payload)
        with open(self.path, "rb") as f:
            good = f.read()
        cases = {"checksum": good[:40] + bytes([good[40] ^ 1]) + good[41:], "truncated": good[:10]}
        for name, data in cases.items():
            with open(self.path, "wb") as f:
                f.write(data)
            self.assertRaises(CacheError, read_cache, self.path, MNCACHE_NAME, MNCACHE_VERSION,
                              REGTEST.message_start)
        for args in ((b"Other", MNCACHE_VERSION, REGTEST.message_start),
                     (MNCACHE_NAME, MNCACHE_VERSION + 1, REGTEST.message_start),
                     (MNCACHE_NAME, MNCACHE_VERSION, b"\x00" * 4)):
            write_cache(self.path, *args, payload)
            self.assertRaises(CacheError, read_cache, self.path, MNCACHE_NAME, MNCACHE_VERSION,
                              REGTEST.message_start)
        self.assertRaises(CacheError, decode_masternodes, payload[:-1])
        self.assertFalse(os.path.exists(self.path + ".new"))


def vote(mnb, height, payee, key=KEY_M):
    unsigned = PaymentVoteMessage(mnb.outpoint, height, payee)
    return replace(unsigned, signature=signing.sign(key, signing.vote_string(unsigned), False))


class Payments(SynchronousTestCase):
    """Votes, election, the payee rule and the queue, over 12 masternodes."""

    def setUp(self):
        self.manager = MasternodeManager(PARAMS, REGTEST.p2p_port)
        self.mnbs = [broadcast(n=n) for n in range(12)]
        for mnb in self.mnbs:
            self.manager.add_broadcast(mnb, collateral_coin(), 100, block_hash_at, T0)
            self.manager.process_ping(next_ping(mnb, T0 + MIN_MNP_SECONDS), T0 + MIN_MNP_SECONDS,
                                      100, 100)
        # The reference's six votes (main and test); regtest elects with two.
        self.votes = PaymentVotes(self.manager, PARAMS._replace(votes_required=6))
        self.height = 250
        self.ranked = self.manager.ranked(self.height, block_hash_at)
        self.subsidy = 50 * COIN

    def add(self, v, tip=240):
        return self.votes.add_vote(v, tip, block_hash_at)

    def test_top_ten_vote_once_and_six_elect(self):
        payee_a, payee_b = p2pkh_script(b"\xaa" * 20), p2pkh_script(b"\xbb" * 20)
        for mnb in [self.manager.get(mn.outpoint).broadcast for mn in self.ranked[:5]]:
            self.assertTrue(self.add(vote(mnb, self.height, payee_a)))
        self.assertEqual(self.votes.best_payee(self.height), payee_a)
        coinbase_b = Transaction([], [TxOut(1, b""), TxOut(masternode_payment(self.subsidy), payee_b)])
        # Five votes: not yet elected, any payee (or none) is valid.
        self.assertTrue(self.votes.is_coinbase_valid(coinbase_b, self.height, self.subsidy))
        sixth = self.manager.get(self.ranked[5].outpoint).broadcast
        self.assertTrue(self.add(vote(sixth, self.height, payee_a)))
        self.assertFalse(self.votes.is_coinbase_valid(coinbase_b, self.height, self.subsidy))
        coinbase_a = Transaction([], [TxOut(1, b""), TxOut(masternode_payment(self.subsidy), payee_a)])
        self.assertTrue(self.votes.is_coinbase_valid(coinbase_a, self.height, self.subsidy))
        short = Transaction([], [TxOut(1, b""), TxOut(masternode_payment(self.subsidy) - 1, payee_a)])
        self.assertFalse(self.votes.is_coinbase_valid(short, self.height, self.subsidy))
        self.assertEqual(self.votes.block_payee(self.height, self.subsidy),
                         (payee_a, 2250000000))
        # A second vote of the same masternode for the same height is refused.
        with self.assertRaises(MasternodeError):
            self.add(vote(sixth, self.height, payee_b))
        self.assertFalse(self.add(vote(sixth, self.height, payee_a)))  # the same vote: seen
        self.assertEqual(self.votes.payments_string(self.height, lambda s: s[3:5].hex()),
                         "aaaa:6")
        self.assertEqual(self.votes.payments_string(self.height + 1, str), "Unknown")

    def test_vote_refusals(self):
        payee = p2pkh_script(b"\xaa" * 20)
        eleventh = self.manager.get(self.ranked[10].outpoint).broadcast
        with self.assertRaises(MasternodeError) as cm:
            self.add(vote(eleventh, self.height, payee))
        self.assertEqual(cm.exception.ban_score, 0)  # 11th: refused, not scored
        first = self.manager.get(self.ranked[0].outpoint).broadcast
        with self.assertRaises(MasternodeError) as cm:
            self.add(vote(first, self.height, payee, key=KEY_C))
        self.assertEqual(cm.exception.ban_score, 20)
        with self.assertRaises(MasternodeError):
            self.add(vote(first, 240 + 21, payee))  # too far ahead
        with self.assertRaises(MasternodeError):
            self.add(vote(broadcast(n=40), self.height, payee))  # unknown voter
        self.assertEqual(len(self.votes), 0)

    def test_regtest_elects_with_two_votes(self):
        votes = PaymentVotes(self.manager, PARAMS)
        payee = p2pkh_script(b"\xaa" * 20)
        wrong = Transaction([], [TxOut(1, b""), TxOut(masternode_payment(self.subsidy), b"")])
        for mn in self.ranked[:2]:
            self.assertTrue(votes.is_coinbase_valid(wrong, self.height, self.subsidy))
            votes.add_vote(vote(mn.broadcast, self.height, payee), 240, block_hash_at)
        self.assertFalse(votes.is_coinbase_valid(wrong, self.height, self.subsidy))

    def test_before_the_start_height(self):
        self.assertIsNone(self.votes.block_payee(199, self.subsidy))
        self.assertTrue(self.votes.is_coinbase_valid(Transaction([], []), 199, self.subsidy))

    def test_queue_prefers_the_longest_unpaid(self):
        now = T0 + MIN_MNP_SECONDS
        _, count = self.votes.next_in_queue(self.height, 240, now + 3600, block_hash_at)
        self.assertEqual(count, 12)
        # Everyone but one was paid recently: the one never paid is next.
        for index, mn in enumerate(self.manager):
            mn.last_paid_height = 0 if index == 7 else 230 + index
        winner, _ = self.votes.next_in_queue(self.height, 240, now + 3600, block_hash_at)
        self.assertEqual(winner.outpoint, self.mnbs[7].outpoint)
        # The paid payee is recorded from the block's coinbase.
        coinbase = Transaction([], [TxOut(1, b""),
                                    TxOut(masternode_payment(self.subsidy), payee_script(winner))])
        self.votes.block_connected(245, 1234, coinbase, self.subsidy)
        self.assertEqual((winner.last_paid_height, winner.last_paid_time), (245, 1234))
        self.votes.block_disconnected(245)
        self.assertEqual(winner.last_paid_height, 0)

    def test_votes_persist(self):
        payee = p2pkh_script(b"\xaa" * 20)
        for mn in self.ranked[:3]:
            self.add(vote(mn.broadcast, self.height, payee))
        copy = PaymentVotes(self.manager, PARAMS)
        copy.load(decode_votes(encode_votes(self.votes.votes())))
        self.assertEqual(copy.payees(self.height), [(payee, 3)])
        self.assertRaises(CacheError, decode_votes, encode_votes(self.votes.votes())[:-2])
        copy.prune(self.height + 5001)
        self.assertEqual(copy.payees(self.height), [])


class ChainHooks(SynchronousTestCase):
    """The coinbase hooks the masternode service sets on the chain state."""

    def setUp(self):
        self.chain = open_chain(self.mktemp())
        self.addCleanup(self.chain.store.close)
        self.builder = ChainBuilder(self.chain)
        self.payee = p2pkh_script(b"\xaa" * 20)

    def test_miner_pays_the_payee_in_output_1(self):
        self.chain.block_payee = lambda height: (self.payee, 7 * COIN)
        block = self.builder.build()
        self.assertEqual([(o.value, o.script_pubkey) for o in block.txs[0].vout],
                         [(block_subsidy(1, REGTEST) - 7 * COIN, self.builder.script_pubkey),
                          (7 * COIN, self.payee)])
        self.chain.process_block(block)
        self.assertEqual(self.chain.height, 1)

    def test_bad_cb_payee(self):
        """A block the payee rule refuses is invalid (it would connect without the hook)."""
        checked = []

        def check(height, coinbase):
            checked.append(height)
            return any(out.script_pubkey == self.payee for out in coinbase.vout)

        self.chain.payee_check = check
        err = self.assertRaises(ValidationError, self.chain.process_block, self.builder.build())
        self.assertEqual((err.reason, checked, self.chain.height), ("bad-cb-payee", [1], 0))
        self.chain.block_payee = lambda height: (self.payee, COIN)
        self.chain.process_block(self.builder.build())
        self.assertEqual(self.chain.height, 1)


class Conf(SynchronousTestCase):
    KEY = "93HaYBVUCYjEMeeH1Y4sBGLALQZE1Yc1K64xiqgX37tGBDQL8Xg"

    def test_lines(self):
        text = ("# Masternode config file\n\n  # indented comment\n"
                "mn1 127.0.0.1:20001 %s %s 0 trailing words\n"
                "short line\n"
                "mn2 127.0.0.1:%d %s %s 1\n"
                "mn3 127.0.0.1 %s %s 2\n" % (self.KEY, "ab" * 32, MAIN.p2p_port, self.KEY,
                                             "cd" * 32, self.KEY, "ef" * 32))
        entries, errors = parse_masternode_conf(text, MAIN.p2p_port, is_main=False)
        self.assertEqual(entries, [MasternodeEntry("mn1", "127.0.0.1:20001", self.KEY, "ab" * 32,
                                                   "0")])
        self.assertEqual(errors, [
            'Could not parse masternode.conf\nLine: 5\n"short line"',
            "Invalid port detected in masternode.conf\nLine: 6\n\"%s\"" % text.split("\n")[5],
            "Failed to parse host:port string\nLine: 7\n\"%s\"" % text.split("\n")[6]])
        # On main the port must be the main one.
        entries, errors = parse_masternode_conf(text, MAIN.p2p_port, is_main=True)
        self.assertEqual([e.alias for e in entries], ["mn2"])
        self.assertIn("Invalid port detected in masternode.conf\nPort: 20001\nLine: 4", errors[0])

    def test_missing_file_is_created_with_the_header(self):
        path = self.mktemp()
        self.assertEqual(read_masternode_conf(path, MAIN.p2p_port, False), ([], []))
        with open(path) as f:
            self.assertEqual(f.read(), CONF_HEADER)
        self.assertEqual(read_masternode_conf(path, MAIN.p2p_port, False), ([], []))

    def test_masternode_options(self):
        self.assertIsNone(active_from_config(False, None, REGTEST))
        for key, message in ((None, "You must specify a masternodeprivkey"),
                             ("junk", "Invalid masternodeprivkey")):
            with self.assertRaises(MasternodeConfigError) as cm:
                active_from_config(True, key, REGTEST)
            self.assertTrue(str(cm.exception).startswith(message))
        wif = encode_wif(KEY_M.secret, REGTEST, compressed=False)
        active = active_from_config(True, wif, REGTEST)
        self.assertEqual(active.pubkey, KEY_M.public_key.format(compressed=False))


class Active(SynchronousTestCase):
    def test_finds_itself_and_pings_every_ten_minutes(self):
        manager = MasternodeManager(PARAMS, REGTEST.p2p_port)
        active = ActiveMasternode(KEY_M, False)
        self.assertIsNone(active.manage(manager, False, T0, block_hash_at, 100))
        self.assertEqual(active.state, ACTIVE_SYNCING)
        self.assertIsNone(active.manage(manager, True, T0, block_hash_at, 100))
        self.assertEqual(active.status(1), "Not capable masternode: Masternode not in masternode list")
        mnb = broadcast()
        manager.add_broadcast(mnb, collateral_coin(), 100, block_hash_at, T0)
        self.assertIsNone(active.manage(manager, True, T0 + 60, block_hash_at, 100))
        self.assertEqual((active.state, active.outpoint, active.service),
                         (ACTIVE_STARTED, mnb.outpoint, "127.0.0.1:20000"))
        self.assertEqual(active.status(1), "Masternode successfully started")
        ping = active.manage(manager, True, T0 + MIN_MNP_SECONDS, block_hash_at, 100)
        self.assertEqual((ping.sig_time, ping.block_hash), (T0 + MIN_MNP_SECONDS, block_hash_at(88)))
        self.assertTrue(manager.process_ping(ping, T0 + MIN_MNP_SECONDS, 88, 100))
        self.assertIsNone(active.manage(manager, True, T0 + MIN_MNP_SECONDS + 60, block_hash_at, 100))
        manager.block_connected(101, [mnb.outpoint])
        active.manage(manager, True, T0 + 2 * MIN_MNP_SECONDS, block_hash_at, 101)
        self.assertEqual(active.status(1), "Not capable masternode: Masternode in OUTPOINT_SPENT state")


class Sync(SynchronousTestCase):
    """mnsync on a fake clock."""

    def setUp(self):
        self.clock = Clock()
        self.synced = False
        self.sync = MasternodeSync(self.clock.seconds, lambda: self.synced)

    def test_walks_to_finished_on_answers(self):
        self.assertEqual(self.sync.tick(["a", "b"]), [])
        self.assertEqual(self.sync.name, "MASTERNODE_SYNC_INITIAL")  # blocks not synced yet
        self.synced = True
        self.sync.tick(["a"])
        self.assertEqual(self.sync.name, "MASTERNODE_SYNC_WAITING")
        self.sync.tick(["a"])
        self.assertEqual(self.sync.asset, SYNC_LIST)
        self.assertEqual(self.sync.tick(["a", "b"]), [("a", SYNC_LIST), ("b", SYNC_LIST)])
        self.assertEqual(self.sync.tick(["a", "b"]), [])  # each peer asked once
        self.sync.status_count("a", SYNC_LIST)
        self.sync.status_count("c", SYNC_LIST)  # never asked: ignored
        self.assertEqual(self.sync.asset, SYNC_LIST)
        self.sync.status_count("b", SYNC_LIST)
        self.assertEqual(self.sync.asset, SYNC_MNW)
        self.assertEqual(self.sync.tick(["a"]), [("a", SYNC_MNW)])
        self.sync.peer_gone("a")  # the only peer asked left: nothing to wait for
        self.sync.tick([])
        self.clock.advance(TIMEOUT_SECONDS + 1)
        self.sync.tick([])
        self.assertTrue(self.sync.is_synced())

    def test_timeout_moves_on_and_no_peer_fails(self):
        self.synced = True
        self.sync.tick([])
        self.sync.tick([])
        self.assertEqual(self.sync.tick(["a"]), [("a", SYNC_LIST)])
        self.clock.advance(TIMEOUT_SECONDS + 1)
        self.sync.tick(["a"])
        self.assertEqual(self.sync.asset, SYNC_MNW)  # a peer was asked: move on
        self.clock.advance(TIMEOUT_SECONDS + 1)
        self.sync.tick([])
        self.assertTrue(self.sync.is_failed())  # nobody to ask within the timeout
        self.assertRaises(SyncError, self.sync.next)
        self.clock.advance(FAILED_RETRY_SECONDS + 1)
        self.sync.tick([])
        self.assertEqual(self.sync.name, "MASTERNODE_SYNC_INITIAL")
