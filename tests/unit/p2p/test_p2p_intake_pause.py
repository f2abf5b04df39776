"""P2P intake while the database server is away: nothing asked for, nobody penalised or
dropped, download resumed by the outage monitor's probe once the server is back."""

from __future__ import annotations

from typing import List

from twisted.internet.defer import maybeDeferred

from coin.p2p.messages import MSG_TX, BlockMessage, HeadersMessage, InvItem, InvMessage
from coin.storage.errors import DatabaseUnreachable
from coin.storage.outage import LONGEST_PROBE_INTERVAL, DatabaseOutage
from tests.unit.p2p.test_p2p_sync import SyncTestCase, chain_blocks, feed, sent


class IntakePauseTests(SyncTestCase):
    def setUp(self) -> None:
        self.source = self.make(40)
        self.node = self.make()
        self.blocks = chain_blocks(self.source)
        self.away = False
        self.outage = DatabaseOutage(self.node.reactor, self.probe, maybeDeferred, "db")
        self.outage.add_listener(self.node.sync)
        self.addCleanup(self.outage.stop)

    def probe(self) -> None:
        if self.away:
            raise DatabaseUnreachable("ping failed")

    def lose_database(self) -> None:
        self.away = True
        self.outage.lost()  # what the store does when a statement finds the server gone

    def requested(self, transport) -> List[bytes]:
        return [i.hash for m in sent(transport, "getdata") for i in m.items]

    def test_no_block_asked_for_or_validated_until_the_database_is_back(self) -> None:
        sync = self.node.sync
        sync.block_download_timeout_base = 5
        peer, transport = self.node.connect(start_height=40)
        feed(peer, HeadersMessage([b.header for b in self.blocks[:20]]))
        self.node.flush()
        self.assertEqual(len(self.requested(transport)), 16)
        self.lose_database()
        # Blocks asked for before the outage arrive: dropped without a score, not stored.
        feed(peer, *[BlockMessage(b) for b in self.blocks[:4]])
        self.node.flush()
        self.assertEqual(self.node.state.height, 0)
        # New headers are still accepted (kept in memory), but no block is asked for.
        feed(peer, HeadersMessage([b.header for b in self.blocks[20:]]))
        self.node.flush()
        self.assertEqual(self.node.state.best_header.height, 40)
        self.assertEqual(self.requested(transport), [])
        # Long past the download timeout: the peer did nothing wrong and stays.
        for _ in range(7):
            self.node.advance(1)
        self.assertEqual(self.requested(transport), [])
        self.assertFalse(transport.disconnecting)
        self.assertEqual(peer.ban_score, 0)
        # The server returns: the next probe (at most the longest interval later) resumes.
        self.away = False
        for _ in range(int(LONGEST_PROBE_INTERVAL)):
            self.node.advance(1)
        self.assertTrue(self.outage.reachable)
        # The dropped blocks are asked for again (the rest are still in flight).
        self.assertEqual(self.requested(transport), [b.hash for b in self.blocks[:4]])
        while peer.inflight:
            feed(peer, *[BlockMessage(b) for b in self.blocks if b.hash in peer.inflight])
            self.node.flush()
        self.assertEqual(self.node.state.height, 40)
        self.assertFalse(transport.disconnecting)
        self.assertEqual(peer.ban_score, 0)

    def test_transactions_not_asked_for_while_the_database_is_away(self) -> None:
        peer, transport = self.node.connect(start_height=40)
        feed(peer, HeadersMessage([b.header for b in self.blocks]))
        for block in self.blocks:  # out of initial block download: transactions are asked for
            feed(peer, BlockMessage(block))
            self.node.flush()
        sent(transport)
        self.lose_database()
        feed(peer, InvMessage([InvItem(MSG_TX, b"\x01" * 32)]))
        self.assertEqual(self.requested(transport), [])
        self.away = False
        self.node.advance(1)
        feed(peer, InvMessage([InvItem(MSG_TX, b"\x01" * 32)]))
        self.assertEqual(self.requested(transport), [b"\x01" * 32])
