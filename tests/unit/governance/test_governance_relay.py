"""Governance over P2P (coin.governance.relay) against fake peers, and the bloom filter
``govsync`` carries (Core's test vectors)."""

from __future__ import annotations

import base64
import os
from typing import Any, Dict, List

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from coin.governance.object import NULL_HASH, GovernanceObject
from coin.governance.params import MAX_OBJECT_DATA_SIZE
from coin.governance.relay import (
    MASTERNODE_ORPHAN_SECONDS, SYNC_GOVOBJ, SYNC_GOVOBJ_VOTE, GovernanceRelay,
)
from coin.governance.service import GovernanceService
from coin.governance.vote import OUTCOME_YES, SIGNAL_FUNDING, SIGNAL_VALID
from coin.p2p.bloom import BloomFilter, murmur3
from coin.p2p.messages import (
    MSG_GOVERNANCE_OBJECT, MSG_GOVERNANCE_OBJECT_VOTE, GovernanceObjectMessage,
    GovernanceSyncMessage, GovernanceVoteMessage, InvItem, decode_payload,
)
from coin.primitives.message import sign_message
from coin.primitives.serialize import compact_size
from coin.primitives.transaction import OutPoint, TxIn

from tests.govhelpers import NOW, FakeMasternodes, trigger_hex
from tests.unit.governance.test_governance import FakeChain


class BloomTests(SynchronousTestCase):
    def test_murmur3_vectors(self):
        for expected, seed, data in ((0x00000000, 0, ""), (0x6A396F08, 0xFBA4C795, ""),
                                     (0x81F16F39, 0xFFFFFFFF, ""), (0x514E28B7, 0, "00"),
                                     (0x16C6B7AB, 0, "0011"), (0x8EB51C3D, 0, "001122"),
                                     (0xB4471BF8, 0, "00112233"), (0xB4698DEF, 0, "001122334455667788")):
            self.assertEqual(murmur3(seed, bytes.fromhex(data)), expected)

    def test_core_filter_serialization(self):
        """Core's bloom_create_insert_serialize."""
        bloom = BloomFilter.sized(3, 0.01, 0, 1)
        for item in ("99108ad8ed9bb6274d3980bab5a85c048f0950c8",
                     "b5a2c786d9ef4658287ced5914b37a1b4aa32eee",
                     "b9300670b4c5366e95b2699e8b18bc75e5f729c5"):
            bloom.insert(bytes.fromhex(item))
        self.assertEqual(bloom.serialize().hex(), "03614e9b050000000000000001")
        self.assertIn(bytes.fromhex("99108ad8ed9bb6274d3980bab5a85c048f0950c8"), bloom)
        self.assertNotIn(bytes.fromhex("19108ad8ed9bb6274d3980bab5a85c048f0950c8"), bloom)
        message = GovernanceSyncMessage(b"\x07" * 32, bloom)
        self.assertEqual(decode_payload("govsync", message.serialize()), message)
        self.assertNotIn(b"anything", BloomFilter())


class FakePeer:
    def __init__(self, peer_id: int) -> None:
        self.id, self.ip, self.is_open = peer_id, "127.0.0.%d" % peer_id, True
        self.sent: List[Any] = []
        self.known_inventory: set = set()
        self.scores: List[tuple] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)

    def misbehaving(self, score: int, reason: str = "") -> None:
        if score > 0:
            self.scores.append((score, reason))

    def of(self, command: str) -> List[Any]:
        return [m for m in self.sent if m.command == command]


class FakeP2P:
    def __init__(self, clock: Clock, peers: List[FakePeer]) -> None:
        self.clock, self.peers = clock, peers
        self.handlers: Dict[str, Any] = {}
        self.inventory: Dict[int, Any] = {}
        self.on_tick: List[Any] = []
        self.on_disconnect: List[Any] = []

    def register_handler(self, command, handler):
        self.handlers[command] = handler

    def register_inventory(self, inv_type, source):
        self.inventory[inv_type] = source

    def handshaked_peers(self):
        return self.peers

    def now(self):
        return self.clock.seconds()


class Synced:
    def is_list_synced(self) -> bool:
        return True

    def is_synced(self) -> bool:
        return True


class GovernanceCase(SynchronousTestCase):
    """A governance service on a fake clock, chain and masternode list."""

    masternodes = 3

    def setUp(self):
        self.clock = Clock()
        self.clock.advance(NOW)
        datadir = self.mktemp()
        os.makedirs(datadir)
        self.mns = FakeMasternodes(self.masternodes)
        self.chain = FakeChain()
        self.governance = GovernanceService(self.chain, datadir, lambda: int(self.clock.seconds()),
                                            self.clock, self.mns)


class RelayTests(GovernanceCase):
    def setUp(self):
        super().setUp()
        self.peer, self.other = FakePeer(1), FakePeer(2)
        self.p2p = FakeP2P(self.clock, [self.peer, self.other])
        self.relay = GovernanceRelay(self.p2p, self.governance, Synced(), "regtest")

    def trigger(self, n: int = 0, revision: int = 1) -> GovernanceObject:
        outpoint = list(self.mns.keys)[n]
        unsigned = GovernanceObject(NULL_HASH, revision, NOW, NULL_HASH, trigger_hex(),
                                    masternode=TxIn(outpoint))
        return GovernanceObject(NULL_HASH, revision, NOW, NULL_HASH, trigger_hex(), 2, TxIn(outpoint),
                                base64.b64decode(sign_message(self.mns.keys[outpoint],
                                                              unsigned.signature_message())))

    def receive(self, command: str, message: Any, peer: FakePeer = None) -> Any:
        return self.p2p.handlers[command](peer or self.peer, message)

    def test_object_kept_relayed_and_its_votes_asked_for(self):
        obj = self.trigger()
        self.receive("govobj", GovernanceObjectMessage(obj.serialize()))
        self.assertIn(obj.hash, self.governance.store)
        # Announced to the other peer only (the sender has it), its votes asked of the sender.
        self.assertEqual(self.other.of("inv")[0].items, (InvItem(MSG_GOVERNANCE_OBJECT, obj.hash),))
        self.assertEqual(self.peer.of("inv"), [])
        self.assertEqual(self.peer.of("govsync")[0].object_hash, obj.hash)
        self.assertEqual(self.p2p.inventory[MSG_GOVERNANCE_OBJECT].lookup(obj.hash).body,
                         obj.serialize())

    def test_bad_objects_are_refused_and_the_peer_scored(self):
        forged = self.trigger()
        forged = GovernanceObject(NULL_HASH, 2, NOW, NULL_HASH, forged.data_hex, 2, forged.masternode,
                                  forged.signature)
        oversized = (bytes(32) + bytes(4) + bytes(8) + bytes(32) + compact_size(MAX_OBJECT_DATA_SIZE + 1)
                     + b"7b" * ((MAX_OBJECT_DATA_SIZE + 1) // 2) + b"7")
        self.receive("govobj", GovernanceObjectMessage(forged.serialize()))
        self.receive("govobj", GovernanceObjectMessage(oversized))
        self.receive("govobj", GovernanceObjectMessage(b"\x01\x02"))
        self.assertEqual([score for score, _ in self.peer.scores], [20, 20, 20])
        self.assertIn("Invalid masternode signature", self.peer.scores[0][1])
        self.assertIn("String length limit exceeded", self.peer.scores[1][1])
        self.assertEqual(list(self.governance.store), [])

    def test_trigger_of_an_unknown_masternode_waits_for_it(self):
        obj = self.trigger(2)
        key = self.mns.keys.pop(obj.masternode.prevout)
        self.receive("govobj", GovernanceObjectMessage(obj.serialize()))
        self.assertNotIn(obj.hash, self.governance.store)
        self.assertIn(obj.hash, self.relay.orphan_objects)
        self.mns.keys[obj.masternode.prevout] = key
        self.p2p.on_tick[0](self.clock.seconds())
        self.assertIn(obj.hash, self.governance.store)
        self.assertEqual((self.relay.orphan_objects, self.peer.scores), ({}, []))

    def test_a_masternode_that_never_appears_costs_the_sender(self):
        obj = self.trigger(2)
        del self.mns.keys[obj.masternode.prevout]
        self.receive("govobj", GovernanceObjectMessage(obj.serialize()))
        self.clock.advance(MASTERNODE_ORPHAN_SECONDS - 1)
        self.p2p.on_tick[0](self.clock.seconds())
        self.assertEqual((list(self.relay.orphan_objects), self.peer.scores), ([obj.hash], []))
        self.clock.advance(2)
        self.p2p.on_tick[0](self.clock.seconds())
        self.assertEqual(self.relay.orphan_objects, {})
        self.assertEqual(self.peer.scores,
                         [(20, "governance object of an unknown masternode")])
        self.assertNotIn(obj.hash, self.governance.store)

    def test_votes_orphaned_until_object_and_masternode_arrive(self):
        obj = self.trigger()
        early = self.mns.vote(1, obj.hash, SIGNAL_FUNDING, OUTCOME_YES, NOW)
        self.receive("govobjvote", GovernanceVoteMessage(early.serialize()))
        # Unknown object: kept as an orphan, and the sender asked for the object.
        self.assertEqual(self.peer.of("govsync")[0].object_hash, obj.hash)
        self.receive("govobj", GovernanceObjectMessage(obj.serialize()))
        self.assertEqual(self.governance.store.get(obj.hash).book.tally(SIGNAL_FUNDING).yes, 1)
        # A vote of a masternode not listed yet waits for it, then counts.
        hidden = self.mns.keys.pop(list(self.mns.keys)[2])
        stranger = FakeMasternodes(0)
        outpoint = OutPoint(b"\x09" * 32, 2)
        stranger.keys[outpoint] = hidden
        vote = stranger.vote(0, obj.hash, SIGNAL_VALID, OUTCOME_YES, NOW)
        self.receive("govobjvote", GovernanceVoteMessage(vote.serialize()))
        self.assertIn(vote.hash, self.relay.orphan_votes)
        self.mns.keys[outpoint] = hidden
        self.p2p.on_tick[0](self.clock.seconds())
        self.assertEqual(self.governance.store.get(obj.hash).book.tally(SIGNAL_VALID).yes, 1)
        self.assertEqual(self.peer.scores, [])
        # A forged vote costs its sender 20.
        forged = self.mns.vote(0, obj.hash, SIGNAL_FUNDING, OUTCOME_YES, NOW)
        forged.signature = vote.signature
        self.receive("govobjvote", GovernanceVoteMessage(forged.serialize()))
        self.assertEqual([score for score, _ in self.peer.scores], [20])

    def test_govsync_answers_objects_then_votes_outside_the_filter(self):
        obj = self.trigger()
        self.successResultOf(self.governance.submit(obj))
        votes = [self.mns.vote(n, obj.hash, SIGNAL_FUNDING, OUTCOME_YES, NOW) for n in range(3)]
        for vote in votes:
            self.governance.add_vote(vote)
        asker = FakePeer(3)
        self.receive("govsync", GovernanceSyncMessage(), asker)
        self.assertEqual(asker.of("inv")[0].items, (InvItem(MSG_GOVERNANCE_OBJECT, obj.hash),))
        self.assertEqual((asker.of("ssc")[0].item_id, asker.of("ssc")[0].count), (SYNC_GOVOBJ, 1))
        have = BloomFilter.sized(1, 0.001, 5)
        have.insert(votes[0].hash)
        asker.sent.clear()
        # Announced to it before (ignored while it was syncing): sent again when it asks.
        asker.known_inventory.add(votes[1].hash)
        self.receive("govsync", GovernanceSyncMessage(obj.hash, have), asker)
        announced = [item for inv in asker.of("inv") for item in inv.items]
        self.assertEqual(sorted(announced, key=lambda i: i.hash), sorted(
            [InvItem(MSG_GOVERNANCE_OBJECT, obj.hash)]
            + [InvItem(MSG_GOVERNANCE_OBJECT_VOTE, v.hash) for v in votes[1:]], key=lambda i: i.hash))
        self.assertEqual(asker.of("ssc")[1].item_id, SYNC_GOVOBJ_VOTE)
        self.assertEqual(self.p2p.inventory[MSG_GOVERNANCE_OBJECT_VOTE].lookup(votes[1].hash).body,
                         votes[1].serialize())
        # Each new peer is sent one govsync once the masternode list is synced.
        self.p2p.on_tick[0](self.clock.seconds())
        self.p2p.on_tick[0](self.clock.seconds())
        self.assertEqual(len(self.other.of("govsync")), 1)
