"""Governance core units: objects, proposal validation, fees, votes and tallies, the store
and its file, superblock maths, and the service's timer (coin.governance)."""

from __future__ import annotations

import base64
import json
import os
from typing import Dict, Optional

from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.defer import succeed
from twisted.internet.task import Clock
from twisted.logger import LogLevel, capturedLogs
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import COIN, MAIN, REGTEST
from coin.governance.collateral import CollateralError, burn_script, check_collateral
from coin.governance.object import (
    NULL_HASH, OBJECT_PROPOSAL, OBJECT_TRIGGER, OBJECT_UNKNOWN, GovernanceObject, data_object_type,
    parse_hex_prefix,
)
from coin.governance.params import (
    DELETION_DELAY, governance_params, is_superblock_height, superblock_budget, superblocks_around,
)
from coin.governance.service import GovernanceService, ObjectError
from coin.governance.store import FILE_NAME, Entry, GovernanceStore
from coin.governance.validator import ProposalError, url_parses, validate_proposal
from coin.governance.vote import (
    OUTCOME_ABSTAIN, OUTCOME_NO, OUTCOME_YES, SIGNAL_DELETE, SIGNAL_FUNDING, SIGNAL_VALID, Flags,
    Vote, VoteBook, VoteError, vote_threshold,
)
from coin.primitives.hashes import hash_to_hex, hex_to_hash
from coin.primitives.message import sign_message
from coin.primitives.serialize import ByteReader, DeserializationError
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut

from tests.govhelpers import NOW, FakeMasternodes, object_hex, proposal_hex, trigger_hex

ADDRESS = "mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn"  # regtest P2PKH
REGTEST_GOV = governance_params(REGTEST)

hashes = st.binary(min_size=32, max_size=32)
int32 = st.integers(-2**31, 2**31 - 1)
int64 = st.integers(-2**63, 2**63 - 1)
outpoints = st.builds(OutPoint, hashes, st.integers(0, 2**32 - 1))


class ObjectTests(SynchronousTestCase):
    def test_hash_matches_the_reference_node(self):
        """Hashes the reference node printed for these objects (its ``gobject prepare`` error)."""
        data = json.dumps([["x", {"type": 7}]]).encode().hex()
        obj = GovernanceObject(NULL_HASH, 1, 1700000000, NULL_HASH, data)
        self.assertEqual(hash_to_hex(obj.hash),
                         "6b3aefa41ffa06b608dff9e66b106d07d2a05fefe46d8d46cc6c2c818459b99b")
        self.assertEqual(obj.object_type, 7)
        other = GovernanceObject(hex_to_hash("ab" + "cd" * 31), 3, 1700000001, NULL_HASH, "7b7d")
        self.assertEqual(hash_to_hex(other.hash),
                         "c1ae6b752a778c6176f8dd1e991a83168f7b0b2ec8eafbeab6a5285084d10f5b")
        self.assertFalse(other.parsable)

    def test_fee_txid_is_not_part_of_the_hash(self):
        data = proposal_hex(ADDRESS)
        self.assertEqual(GovernanceObject(NULL_HASH, 1, 5, NULL_HASH, data).hash,
                         GovernanceObject(NULL_HASH, 1, 5, b"\x01" * 32, data).hash)

    @given(hashes, int32, int64, hashes, st.text(max_size=300), int32, outpoints,
           st.binary(max_size=80))
    def test_serialization_round_trip(self, parent, revision, time, fee, data, kind, mn, sig):
        obj = GovernanceObject(parent, revision, time, fee, data, kind, TxIn(mn), sig)
        reader = ByteReader(obj.serialize())
        again = GovernanceObject.read(reader)
        reader.assert_end()
        self.assertEqual(again, obj)
        self.assertEqual((again.hash, again.data_hex, again.object_type),
                         (obj.hash, data, kind))

    def test_oversized_data_is_refused_on_read(self):
        obj = GovernanceObject(NULL_HASH, 1, 1, NULL_HASH, "0" * 16385, OBJECT_PROPOSAL)
        self.assertRaises(DeserializationError, GovernanceObject.read, ByteReader(obj.serialize()))

    def test_object_type_from_data(self):
        self.assertEqual(data_object_type(proposal_hex(ADDRESS)), OBJECT_PROPOSAL)
        self.assertEqual(data_object_type(trigger_hex()), OBJECT_TRIGGER)
        self.assertEqual(data_object_type(""), OBJECT_UNKNOWN)
        for data in ("zz", "7b7d", "5b5d", object_hex("p", {"type": 1.5}),
                     json.dumps([["p"]]).encode().hex(), object_hex("p", {"type": True})):
            self.assertIsNone(data_object_type(data), data)

    def test_hex_read_as_core_parsehex(self):
        for text, expected in (("7b7d", b"{}"), ("7b 7d ", b"{}"), ("7b7d zz", b"{}"),
                               ("7b7", b"{"), ("7 b", b""), ("zz", b""), ("\t7b\n7d", b"{}")):
            self.assertEqual(parse_hex_prefix(text), expected, text)

    def test_signature_message(self):
        obj = GovernanceObject(NULL_HASH, 1, 5, b"\x02" * 32, "00", OBJECT_TRIGGER,
                               TxIn(OutPoint(b"\x01" * 32, 3)))
        self.assertEqual(obj.signature_message(),
                         "%s|1|5|00|%s-3|%s" % ("0" * 64, "01" * 32, "02" * 32))


class ValidatorTests(SynchronousTestCase):
    """The reference node's answers to ``gobject check`` (recorded from its regtest)."""

    def refused(self, data: str) -> str:
        with self.assertRaises(ProposalError) as caught:
            validate_proposal(data, REGTEST)
        return str(caught.exception)

    def test_valid_proposal(self):
        validate_proposal(proposal_hex(ADDRESS), REGTEST)
        validate_proposal(proposal_hex(ADDRESS, name="A_b-9", url="x://[::1]/p"), REGTEST)

    def test_each_rule_with_the_reference_message(self):
        for overrides, expected in (
                ({"name": None}, "JSON value is not a string as expected;name field not found;"
                                 "Invalid name;"),
                ({"name": "  "}, "name is empty;Invalid name;"),
                ({"name": "a" * 41}, "name exceeds 40 characters;Invalid name;"),
                ({"name": "a b"}, "name contains invalid characters;Invalid name;"),
                ({"start_epoch": 1.5}, "JSON integer out of range;start_epoch field not found;"
                                       "Invalid start:end range;"),
                ({"end_epoch": "2"}, "end_epoch field not found;Invalid start:end range;"),
                ({"end_epoch": 2**63}, "JSON integer out of range;end_epoch field not found;"
                                       "Invalid start:end range;"),
                ({"end_epoch": 1700000000}, "end_epoch <= start_epoch;Invalid start:end range;"),
                ({"payment_amount": "x"}, "payment_amount field not found;Invalid payment amount;"),
                ({"payment_amount": -1}, "payment_amount is negative;Invalid payment amount;"),
                ({"payment_address": "m" * 25}, "incorrect payment_address length;"
                                                "Invalid payment address;"),
                ({"payment_address": "0OIl" * 7}, "payment_address contains invalid characters;"
                                                  "Invalid payment address;"),
                ({"payment_address": "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2"},
                 "payment_address is invalid;Invalid payment address;"),
                ({"url": " ab "}, "url too short;Invalid URL;"),
                ({"url": "http://[::1/x"}, "url invalid;Invalid URL;"),
                ({"url": 5}, "JSON value is not a string as expected;url field not found;"
                             "Invalid URL;")):
            self.assertEqual(self.refused(proposal_hex(ADDRESS, **overrides)), expected, overrides)

    def test_json_as_univalue_reads_it(self):
        """The first of repeated keys counts; NaN is not JSON; a null object has no fields."""
        repeated = ('[["proposal", {"name": "a b", "name": "ok", "start_epoch": 1, "end_epoch": 2, '
                    '"payment_amount": 1, "payment_address": "%s", "url": "http://x"}]]' % ADDRESS)
        self.assertEqual(self.refused(repeated.encode().hex()),
                         "name contains invalid characters;Invalid name;")
        self.assertEqual(self.refused(b'[["proposal", NaN]]'.hex()),
                         "JSON value is not an object or array as expected;JSON parsing error;")
        self.assertEqual(self.refused(b'[["proposal", null]]'.hex()),
                         "JSON value is not a string as expected;name field not found;Invalid name;")

    def test_data_that_is_not_a_proposal_shape(self):
        self.assertEqual(self.refused("7a7a"), "JSON value is not an object or array as expected;"
                                               "JSON parsing error;")
        self.assertEqual(self.refused("5b5d"), "vector::_M_range_check: __n (which is 0) >= "
                                               "this->size() (which is 0);JSON parsing error;")

    def test_url_parses_as_urlparse(self):
        self.assertTrue(url_parses("https://[::1]:80/x"))
        self.assertTrue(url_parses("no scheme at all"))
        self.assertFalse(url_parses("http://host]/"))
        self.assertFalse(url_parses("//[host/"))


class CollateralTests(SynchronousTestCase):
    obj = GovernanceObject(NULL_HASH, 1, 5, NULL_HASH, proposal_hex(ADDRESS))

    def fee_tx(self, value: int = 5 * COIN, commits_to: Optional[bytes] = None) -> Transaction:
        script = burn_script(commits_to or self.obj.hash)
        return Transaction([TxIn(OutPoint(b"\x07" * 32, 0))], [TxOut(value, script)])

    def refusal(self, tx: Optional[Transaction], confirmations: int, params=REGTEST_GOV):
        with self.assertRaises(CollateralError) as caught:
            check_collateral(self.obj, tx, confirmations, params)
        return caught.exception

    def test_good_fee(self):
        check_collateral(self.obj, self.fee_tx(), 1, REGTEST_GOV)
        check_collateral(self.obj, self.fee_tx(6 * COIN), 6, governance_params(MAIN))

    def test_missing_small_uncommitted_and_young(self):
        self.assertIn("Can't find collateral tx", str(self.refusal(None, 0)))
        self.assertIn("Couldn't find opReturn", str(self.refusal(self.fee_tx(5 * COIN - 1), 9)))
        self.assertIn("Couldn't find opReturn", str(self.refusal(self.fee_tx(commits_to=b"\1" * 32),
                                                                 9)))
        young = self.refusal(self.fee_tx(), 0)
        self.assertTrue(str(young).endswith("(it has only 0), rejected -- try again later"))
        self.assertFalse(young.missing_confirmations)
        waiting = self.refusal(self.fee_tx(), 3, governance_params(MAIN))
        self.assertEqual(str(waiting), "Collateral requires at least 6 confirmations to be relayed "
                                       "throughout the network (it has only 3), pre-accepted -- "
                                       "waiting for required confirmations")
        self.assertTrue(waiting.missing_confirmations)


class VoteTests(SynchronousTestCase):
    parent = b"\x05" * 32

    def setUp(self):
        self.mns = FakeMasternodes(3)
        self.book = VoteBook()

    @given(outpoints, hashes, st.integers(0, 35), st.integers(0, 3), int64, st.binary(max_size=70))
    def test_serialization_round_trip(self, mn, parent, signal, outcome, time, sig):
        vote = Vote(mn, parent, signal, outcome, time, sig)
        again = Vote.read(ByteReader(vote.serialize()))
        self.assertEqual(again, vote)
        self.assertEqual(again.hash, vote.hash)

    def test_hash_leaves_out_the_signature(self):
        vote = self.mns.vote(0, self.parent, SIGNAL_FUNDING, OUTCOME_YES)
        unsigned = Vote(vote.masternode, self.parent, SIGNAL_FUNDING, OUTCOME_YES, NOW)
        self.assertEqual(vote.hash, unsigned.hash)
        self.assertEqual(vote.signature_message(), "%s-0|%s|1|1|%d" % (
            hash_to_hex(vote.masternode.txid), hash_to_hex(self.parent), NOW))
        self.assertEqual(vote.text(), "CTxIn(COutPoint(%s, 0), scriptSig=):%d:YES:FUNDING"
                         % (hash_to_hex(vote.masternode.txid), NOW))

    def test_newer_vote_wins_and_older_is_obsolete(self):
        self.book.add(self.mns.vote(0, self.parent, SIGNAL_FUNDING, OUTCOME_YES, NOW), self.mns, NOW)
        later = NOW + 3600
        self.book.add(self.mns.vote(0, self.parent, SIGNAL_FUNDING, OUTCOME_NO, later), self.mns,
                      later)
        self.assertEqual(self.book.tally(SIGNAL_FUNDING), (0, 1, 0))
        with self.assertRaises(VoteError) as caught:
            self.book.add(self.mns.vote(0, self.parent, SIGNAL_FUNDING, OUTCOME_YES, NOW + 1),
                          self.mns, later + 7200)
        self.assertEqual(str(caught.exception), "CGovernanceObject::ProcessVote -- Obsolete vote")
        self.assertEqual(len(self.book.votes), 2)
        self.assertEqual([v.outcome for v in self.book.current_votes()], [OUTCOME_NO])

    def test_rate_limit_per_masternode_and_signal(self):
        self.book.add(self.mns.vote(0, self.parent, SIGNAL_FUNDING, OUTCOME_YES), self.mns, NOW)
        self.book.add(self.mns.vote(0, self.parent, SIGNAL_VALID, OUTCOME_YES), self.mns, NOW)
        too_soon = self.mns.vote(0, self.parent, SIGNAL_FUNDING, OUTCOME_NO, NOW + 10)
        self.assertRaises(VoteError, self.book.add, too_soon, self.mns, NOW + 10)
        self.book.add(too_soon, self.mns, NOW + 10, rate_checks=False)
        self.assertEqual(self.book.tally(SIGNAL_FUNDING), (0, 1, 0))

    def test_refused_votes(self):
        stranger = Vote(OutPoint(b"\x09" * 32, 0), self.parent, SIGNAL_FUNDING, OUTCOME_YES, NOW)
        for vote, score, orphan in (
                (stranger, 0, True),
                (self.mns.vote(0, self.parent, 0, OUTCOME_YES), 0, False),
                (self.mns.vote(0, self.parent, 7, OUTCOME_YES), 20, False),
                (self.mns.vote(0, self.parent, SIGNAL_FUNDING, 4), 20, False),
                (self.mns.vote(0, self.parent, SIGNAL_FUNDING, OUTCOME_YES, NOW + 3601), 20, False)):
            with self.assertRaises(VoteError) as caught:
                self.book.add(vote, self.mns, NOW)
            self.assertEqual((caught.exception.score, caught.exception.orphan), (score, orphan))
        forged = self.mns.vote(1, self.parent, SIGNAL_FUNDING, OUTCOME_YES)
        forged.masternode = list(self.mns.keys)[0]
        self.assertRaises(VoteError, self.book.add, forged, self.mns, NOW)
        self.assertEqual((self.book.votes, self.book.current), ({}, {}))

    def test_tallies_and_flags_against_the_quorum(self):
        for n, outcome in enumerate((OUTCOME_YES, OUTCOME_YES, OUTCOME_ABSTAIN)):
            self.book.add(self.mns.vote(n, self.parent, SIGNAL_FUNDING, outcome), self.mns, NOW)
        self.assertEqual(self.book.tally(SIGNAL_FUNDING), (2, 0, 1))
        self.assertEqual(self.book.tally(SIGNAL_FUNDING).absolute_yes, 2)
        self.assertTrue(self.book.flags(2, 3, Flags()).funding)
        self.assertFalse(self.book.flags(3, 3, Flags()).funding)
        self.assertEqual(self.book.flags(1, 0, Flags(funding=False)), Flags())
        self.assertEqual(vote_threshold(10, 250), 25)
        self.assertEqual(vote_threshold(1, 5), 1)

    def test_valid_and_delete_flags(self):
        for n in range(3):
            self.book.add(self.mns.vote(n, self.parent, SIGNAL_VALID, OUTCOME_NO), self.mns, NOW)
            self.book.add(self.mns.vote(n, self.parent, SIGNAL_DELETE, OUTCOME_YES), self.mns, NOW)
        flags = self.book.flags(1, 3, Flags())
        self.assertEqual((flags.valid, flags.delete), (False, True))
        self.assertTrue(VoteBook().flags(1, 3, flags).delete, "the delete flag stays")


class SuperblockTests(SynchronousTestCase):
    def test_heights(self):
        self.assertEqual([h for h in range(0, 41) if is_superblock_height(h, REGTEST_GOV)],
                         [10, 20, 30, 40])
        self.assertFalse(is_superblock_height(0, REGTEST_GOV))
        self.assertTrue(is_superblock_height(16616, governance_params(MAIN)))
        self.assertEqual(superblocks_around(9, REGTEST_GOV), (0, 10))
        self.assertEqual(superblocks_around(10, REGTEST_GOV), (10, 20))
        self.assertEqual(superblocks_around(25, REGTEST_GOV), (20, 30))

    def test_budget_is_a_tenth_of_the_subsidy_per_block_of_the_cycle(self):
        self.assertEqual(superblock_budget(10, REGTEST), 50 * COIN)
        self.assertEqual(superblock_budget(150, REGTEST), 25 * COIN)
        self.assertEqual(superblock_budget(11, REGTEST), 0)
        self.assertEqual(superblock_budget(16616, MAIN), 5 * COIN * 16616)


class StoreTests(SynchronousTestCase):
    def setUp(self):
        self.mns = FakeMasternodes(3)
        self.store = GovernanceStore()
        self.obj = GovernanceObject(NULL_HASH, 1, NOW, b"\x03" * 32, proposal_hex(ADDRESS))
        self.datadir = self.mktemp()
        os.makedirs(self.datadir)

    def test_orphan_votes_wait_for_their_object(self):
        vote = self.mns.vote(0, self.obj.hash, SIGNAL_FUNDING, OUTCOME_YES)
        with self.assertRaises(VoteError) as caught:
            self.store.add_vote(vote, self.mns, NOW)
        self.assertIn("Unknown parent object", str(caught.exception))
        entry = self.store.add(self.obj, self.mns, NOW)
        self.assertEqual(entry.book.tally(SIGNAL_FUNDING), (1, 0, 0))
        self.assertEqual(self.store.orphans, {})

    def test_orphan_votes_expire(self):
        vote = self.mns.vote(0, self.obj.hash, SIGNAL_FUNDING, OUTCOME_YES)
        self.assertRaises(VoteError, self.store.add_vote, vote, self.mns, NOW)
        self.store.update(self.mns, REGTEST_GOV, "regtest", NOW + 601, 100, 150)
        self.assertEqual(self.store.orphans, {})

    def test_file_round_trip_keeps_objects_votes_and_flags(self):
        entry = self.store.add(self.obj, self.mns, NOW)
        for n in range(2):
            self.store.add_vote(self.mns.vote(n, self.obj.hash, SIGNAL_FUNDING, OUTCOME_YES),
                                self.mns, NOW)
        entry.flags = entry.book.flags(1, 3, entry.flags)
        self.store.erased[b"\x08" * 32] = NOW
        self.store.save(self.datadir)
        loaded = GovernanceStore.load(self.datadir)
        again = loaded.get(self.obj.hash)
        self.assertEqual(again.obj, self.obj)
        self.assertEqual(again.flags, Flags(funding=True))
        self.assertEqual(again.book.tally(SIGNAL_FUNDING), (2, 0, 0))
        self.assertEqual(set(again.book.votes), set(entry.book.votes))
        self.assertEqual(loaded.erased, {b"\x08" * 32: NOW})
        late = self.mns.vote(0, self.obj.hash, SIGNAL_FUNDING, OUTCOME_NO, NOW + 5)
        self.assertRaises(VoteError, loaded.add_vote, late, self.mns, NOW + 5)  # rate limit kept

    @given(st.lists(st.tuples(st.builds(GovernanceObject, hashes, int32, int64, hashes,
                                        st.text(max_size=50), int32, st.builds(TxIn, outpoints)),
                              st.lists(st.builds(Vote, outpoints, hashes, st.integers(1, 4),
                                                 st.integers(1, 3), int64), max_size=4),
                              st.booleans(), int64), max_size=5),
           st.dictionaries(hashes, int64, max_size=3))
    def test_file_format_round_trip(self, entries, erased):
        store = GovernanceStore()
        for obj, votes, expired, deletion_time in entries:
            entry = store.entries[obj.hash] = Entry(obj, expired=expired, deletion_time=deletion_time)
            for vote in votes:
                entry.book.votes[vote.hash] = vote
                entry.book.restore(vote, NOW)
        store.erased = erased
        data = store.serialize()
        self.assertEqual(GovernanceStore.deserialize(data).serialize(), data)

    def test_corrupt_or_foreign_file_is_ignored(self):
        self.store.add(self.obj, self.mns, NOW)
        good = self.store.serialize()
        other_version = good.replace(b"\x01\x00\x00\x00", b"\x02\x00\x00\x00", 1)
        for data in (good[:-3], good + b"\0", b"garbage", other_version):
            with open(os.path.join(self.datadir, FILE_NAME), "wb") as f:
                f.write(data)
            with capturedLogs() as events:
                self.assertEqual(len(GovernanceStore.load(self.datadir).entries), 0)
            self.assertEqual([e["log_level"] for e in events], [LogLevel.warn])

    def test_no_file_is_an_empty_store(self):
        self.assertEqual(GovernanceStore.load(self.datadir).entries, {})

    def test_deleted_objects_are_erased_after_the_delay(self):
        entry = self.store.add(self.obj, self.mns, NOW)
        for n in range(3):
            self.store.add_vote(self.mns.vote(n, self.obj.hash, SIGNAL_DELETE, OUTCOME_YES),
                                self.mns, NOW)
        self.assertEqual(self.store.update(self.mns, REGTEST_GOV, "regtest", NOW, 100, 150), [])
        self.assertEqual(entry.deletion_time, NOW)
        vote = self.mns.vote(0, self.obj.hash, SIGNAL_FUNDING, OUTCOME_YES)
        self.assertRaises(VoteError, self.store.add_vote, vote, self.mns, NOW)
        erased = self.store.update(self.mns, REGTEST_GOV, "regtest", NOW + DELETION_DELAY, 100, 150)
        self.assertEqual(erased, [self.obj.hash])
        self.assertNotIn(self.obj.hash, self.store)
        self.assertIn(self.obj.hash, self.store.erased)

    def test_triggers_expire_after_their_superblock(self):
        trigger = GovernanceObject(NULL_HASH, 1, NOW, NULL_HASH, trigger_hex(120))
        self.store.add(trigger, self.mns, NOW)
        self.store.update(self.mns, REGTEST_GOV, "regtest", NOW, 144, 150)
        self.assertFalse(self.store.get(trigger.hash).expired)
        self.store.update(self.mns, REGTEST_GOV, "regtest", NOW, 145, 150)
        self.assertTrue(self.store.get(trigger.hash).expired)
        self.store.update(self.mns, REGTEST_GOV, "regtest", NOW + DELETION_DELAY, 145, 150)
        self.assertNotIn(trigger.hash, self.store)


class FakeChain:
    """The chain as governance reads it: transactions with their depth."""

    params = REGTEST

    def __init__(self) -> None:
        self.txs: Dict[bytes, tuple] = {}
        self.height = 100

    def snapshot(self):
        return self

    def contains(self, entry) -> bool:
        return True

    def get_transaction(self, txid: bytes):
        return succeed(self.txs.get(txid))


class BlockEntry:
    def __init__(self, height: int) -> None:
        self.height = height


class ServiceTests(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.clock.advance(NOW)
        self.chain = FakeChain()
        self.datadir = self.mktemp()
        os.makedirs(self.datadir)
        self.mns = FakeMasternodes(3)
        self.service = GovernanceService(self.chain, self.datadir, lambda: int(self.clock.seconds()),
                                         self.clock, self.mns)
        self.obj = GovernanceObject(NULL_HASH, 1, NOW, b"\x03" * 32, proposal_hex(ADDRESS))
        self.chain.txs[b"\x03" * 32] = (Transaction([], [TxOut(5 * COIN, burn_script(self.obj.hash))]),
                                        BlockEntry(100))

    def test_submit_keeps_and_stop_saves(self):
        self.service.startService()
        self.successResultOf(self.service.submit(self.obj))
        self.assertIn(self.obj.hash, self.service.store)
        self.service.stopService()
        restarted = GovernanceService(self.chain, self.datadir, lambda: NOW, self.clock, self.mns)
        restarted.startService()
        self.addCleanup(restarted.stopService)
        self.assertIn(self.obj.hash, restarted.store)

    def test_bad_objects_are_not_kept(self):
        for data, why in (("7a7a", "Object data unparseable"),
                          (object_hex("x", {"type": 9}), "Invalid object type 9"),
                          ("", "Invalid object type 0")):
            obj = GovernanceObject(NULL_HASH, 1, NOW, b"\x03" * 32, data)
            self.assertEqual(str(self.failureResultOf(self.service.submit(obj), ObjectError).value),
                             why)
        trigger = GovernanceObject(NULL_HASH, 1, NOW, NULL_HASH, trigger_hex())
        self.failureResultOf(self.service.submit(trigger), ObjectError)
        self.assertEqual(list(self.service.store), [])

    def test_masternode_signed_trigger(self):
        outpoint = list(self.mns.keys)[1]
        trigger = GovernanceObject(NULL_HASH, 1, NOW, NULL_HASH, trigger_hex(), masternode=TxIn(outpoint))
        trigger.signature = base64.b64decode(sign_message(self.mns.keys[outpoint],
                                                          trigger.signature_message()))
        self.successResultOf(self.service.submit(trigger))
        self.assertIn(trigger.hash, self.service.store)

    def test_timer_refreshes_flags_and_erases(self):
        self.service.startService()
        self.addCleanup(self.service.stopService)
        self.successResultOf(self.service.submit(self.obj))
        for n in range(2):  # max(quorum 1, 2/3 of 3 masternodes)
            self.service.add_vote(self.mns.vote(n, self.obj.hash, SIGNAL_DELETE, OUTCOME_YES))
        self.assertTrue(self.service.store.get(self.obj.hash).flags.delete)
        self.clock.advance(300)
        self.assertIn(self.obj.hash, self.service.store)
        self.clock.advance(600)
        self.assertNotIn(self.obj.hash, self.service.store)

    def test_postponed_until_the_fee_is_deep_enough(self):
        self.chain.params = MAIN
        self.chain.txs[b"\x03" * 32] = (self.chain.txs[b"\x03" * 32][0], BlockEntry(98))
        self.service.startService()
        self.addCleanup(self.service.stopService)
        self.assertIsNone(self.successResultOf(self.service.submit(self.obj)))
        self.assertNotIn(self.obj.hash, self.service.store)
        self.chain.height = 103
        self.clock.advance(300)
        self.assertIn(self.obj.hash, self.service.store)
        self.assertEqual(self.service.postponed, {})

    def test_a_failed_update_does_not_stop_the_timer(self):
        self.service.startService()
        self.addCleanup(self.service.stopService)
        self.successResultOf(self.service.submit(self.obj))
        broken = self.chain.snapshot
        self.chain.snapshot = lambda: 1 / 0
        self.clock.advance(300)
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)
        self.chain.snapshot = broken
        for n in range(2):
            self.service.add_vote(self.mns.vote(n, self.obj.hash, SIGNAL_DELETE, OUTCOME_YES))
        self.clock.advance(300)
        self.clock.advance(600)
        self.assertNotIn(self.obj.hash, self.service.store)
