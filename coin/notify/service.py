"""The node's notifications to other programs: ZeroMQ topics and -*notify commands.

What is announced, and when, follows Core 0.17's CZMQNotificationInterface and its
-blocknotify (doc/notify.md):

* a transaction on entering the pool, again for each transaction of a connected block,
  and for each transaction of a disconnected block;
* the tip (hashblock, rawblock, -blocknotify) once per activation that connected a block,
  outside initial block download: in a reorg only the new tip, never a disconnected block.

Chain and pool events arrive on the validation worker, in the order Core signals them:
a hook before the mempool's announces disconnected blocks' transactions, the pool then
announces those it takes back, and a hook after the mempool's announces the connected
blocks and the tip.  Each only queues work (coin.notify.zmq, coin.notify.hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

from twisted.application import service
from twisted.internet.defer import Deferred, succeed
from twisted.internet.threads import deferToThreadPool

from coin.chain.events import BlockConnected, BlockDisconnected, ChainEvent, TipChanged
from coin.config.args import Config
from coin.notify.hooks import HookRunner, alert_command, block_command, wallet_command
from coin.notify.zmq import ZmqPublisher, notifiers_from_config
from coin.primitives.transaction import Transaction

if TYPE_CHECKING:
    from coin.governance.object import GovernanceObject
    from coin.governance.vote import Vote

#: One ZeroMQ event: the topic and what builds its body.
Event = Tuple[str, Callable[[], bytes]]


def _command(config: Config, name: str) -> str:
    """A -*notify command; negated (``-noblocknotify``) or empty is none."""
    value = config.get(name) or ""
    return "" if value == "0" else value


class NotifyService(service.Service):
    """ZeroMQ publishing and notification commands, wired to the node's event sources.

    Built first and started first (its sockets are bound before any event), stopped last
    (what validation announced while stopping is still sent).
    """

    name = "notify"

    def __init__(self, config: Config, reactor: Any) -> None:
        self.reactor = reactor
        self.zmq = ZmqPublisher(notifiers_from_config(config))
        self.hooks = HookRunner(reactor)
        self.block_command = _command(config, "blocknotify")
        self.wallet_command = _command(config, "walletnotify")
        self.alert_command = _command(config, "alertnotify")
        self._is_initial_block_download: Callable[[], bool] = lambda: False

    @property
    def _announces_txs(self) -> bool:
        return self.zmq.wants("hashtx") or self.zmq.wants("rawtx")

    # ------------------------------------------------------------------ wiring

    def watch_disconnects(self, validation: Any) -> None:
        """Call before the mempool subscribes, so disconnected blocks' transactions are
        announced before the pool announces those it takes back (Core's order)."""
        if self._announces_txs:
            validation.add_worker_hook(self._before_pool)

    def attach(self, validation: Any, mempool: Any, governance: Any, wallets: Optional[Any],
               warnings: Any, is_initial_block_download: Callable[[], bool]) -> None:
        """Subscribe to everything else; only what some option asks for is subscribed."""
        self._is_initial_block_download = is_initial_block_download
        zmq = self.zmq
        if self._announces_txs or zmq.wants("hashblock") or zmq.wants("rawblock") or self.block_command:
            validation.add_worker_hook(self._after_pool)
        if self._announces_txs:
            mempool.add_listener(self.transaction)
        if zmq.wants("hashgovernanceobject") or zmq.wants("rawgovernanceobject"):
            governance.on_object.append(self.governance_object)
        if zmq.wants("hashgovernancevote") or zmq.wants("rawgovernancevote"):
            governance.on_vote.append(self.governance_vote)
        if self.wallet_command and wallets is not None:
            wallets.tx_listeners.append(self.wallet_transaction)
        if self.alert_command:
            warnings.alert_listeners.append(self.alert)

    # ------------------------------------------------------------------ life cycle

    def startService(self) -> None:
        super().startService()
        self.zmq.start()

    def stopService(self) -> Deferred:
        super().stopService()
        self.hooks.stop()
        if not self.zmq.active:
            return succeed(None)
        return deferToThreadPool(self.reactor, self.reactor.getThreadPool(), self.zmq.stop)

    # ------------------------------------------------------------------ events

    def _announce(self, kind: str, reversed_hash: Callable[[], bytes], raw: Callable[[], bytes],
                  batch: Optional[List[Event]] = None) -> None:
        """hash<kind> (the hash as Core shows it, byte-reversed) and raw<kind>: queued now,
        or added to ``batch`` for the caller to queue."""
        events = [("hash" + kind, reversed_hash), ("raw" + kind, raw)]
        if batch is None:
            self.zmq.publish_batch(events)
        else:
            batch.extend(events)

    def transaction(self, tx: Transaction, batch: Optional[List[Event]] = None) -> None:
        """hashtx and rawtx (any thread)."""
        self._announce("tx", lambda: tx.txid[::-1], tx.serialize, batch)

    def _before_pool(self, chainstate: Any, events: List[ChainEvent]) -> None:
        batch: List[Event] = []
        for event in events:
            if isinstance(event, BlockDisconnected):
                for tx in event.block.txs:
                    self.transaction(tx, batch)
        self.zmq.publish_batch(batch)

    def _after_pool(self, chainstate: Any, events: List[ChainEvent]) -> None:
        batch: List[Event] = []
        last: Optional[BlockConnected] = None
        tip = None
        for event in events:
            if isinstance(event, BlockConnected):
                if self._announces_txs:
                    for tx in event.block.txs:
                        self.transaction(tx, batch)
                last = event
            elif isinstance(event, TipChanged):
                tip = event.entry
        # Core's UpdatedBlockTip: nothing when no block was connected, nor during IBD.
        if last is not None and last.entry is tip and not self._is_initial_block_download():
            self._announce("block", lambda: tip.hash[::-1], last.block.serialize, batch)
            if self.block_command:
                self.hooks.run_from_thread(block_command(self.block_command, tip.hash[::-1].hex()))
        self.zmq.publish_batch(batch)

    def governance_object(self, obj: "GovernanceObject") -> None:
        self._announce("governanceobject", lambda: obj.hash[::-1], obj.serialize)

    def governance_vote(self, vote: "Vote") -> None:
        self._announce("governancevote", lambda: vote.hash[::-1], vote.serialize)

    def wallet_transaction(self, wallet_name: str, txid: bytes) -> None:
        """-walletnotify, for a transaction new to the wallet or changed (any thread)."""
        self.hooks.run_from_thread(wallet_command(self.wallet_command, txid[::-1].hex(), wallet_name))

    def alert(self, message: str) -> None:
        """-alertnotify (any thread)."""
        self.hooks.run_from_thread(alert_command(self.alert_command, message))
