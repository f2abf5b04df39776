"""Live events for the page: the node's own event sources, fanned out over WebSockets.

Blocks come from the validation service's reactor-side listeners (coin.chain.events),
pool entries from the mempool service's listener (called on the validation worker, so
handed to the reactor), and a wallet's transactions are those of a block or a pool entry
that the wallet holds (the wallet service's own listeners ran first).  The status frame
is built from RPC results (getblockchaininfo, getpeerinfo, getwalletinfo), sent at
connect and then every STATUS_INTERVAL seconds when it changed.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Set

from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from coin.chain.index import BlockIndexEntry
from coin.primitives.block import Block
from coin.primitives.transaction import Transaction
from coin.rpc.jsonrpc import JSONRPCCore, encode_json

#: Seconds between status checks while a page is connected.
STATUS_INTERVAL = 2.0

log = Logger()


class EventHub:
    """The open WebSockets and the node events they receive (JSON text frames)."""

    def __init__(self, node: Any, core: JSONRPCCore, user: str) -> None:
        self._node = node
        self._core = core
        self._user = user
        self.clients: Set["EventProtocol"] = set()
        self._status: Optional[Dict[str, Any]] = None
        #: Transactions of the blocks (dis)connected since the last tip change.
        self._block_txids: List[bytes] = []
        self._status_loop = LoopingCall(self._refresh_status)
        self._status_loop.clock = node.reactor

    def start(self) -> None:
        self._node.validation.subscribe(self)
        self._node.mempool.add_listener(self._pool_entry_on_worker)

    def stop(self) -> None:
        self._node.validation.unsubscribe(self)
        if self._status_loop.running:
            self._status_loop.stop()
        for client in list(self.clients):
            client.dropConnection(abort=True)

    # ------------------------------------------------------------ clients

    def joined(self, client: "EventProtocol") -> None:
        self.clients.add(client)
        if self._status is not None:
            client.send(self._status)
        if not self._status_loop.running:
            self._status = None
            self._status_loop.start(STATUS_INTERVAL, now=True)

    def left(self, client: "EventProtocol") -> None:
        self.clients.discard(client)
        if not self.clients and self._status_loop.running:
            self._status_loop.stop()

    def broadcast(self, event: Dict[str, Any]) -> None:
        for client in list(self.clients):
            client.send(event)

    # ------------------------------------------------------------ node events

    def block_connected(self, entry: BlockIndexEntry, block: Block) -> None:
        self._block_txids.extend(tx.txid for tx in block.txs)

    def block_disconnected(self, entry: BlockIndexEntry, block: Block) -> None:
        self._block_txids.extend(tx.txid for tx in block.txs)

    def tip_changed(self, entry: BlockIndexEntry) -> None:
        """The new tip first, then the wallet transactions its blocks (dis)connected."""
        self.broadcast({"event": "block", "height": entry.height, "hash": entry.hash[::-1].hex()})
        txids, self._block_txids = self._block_txids, []
        self._wallet_changes(txids)

    def _pool_entry_on_worker(self, tx: Transaction) -> None:
        self._node.reactor.callFromThread(self._pool_entry, tx.txid)

    def _pool_entry(self, txid: bytes) -> None:
        self.broadcast({"event": "mempool", "txid": txid[::-1].hex()})
        self._wallet_changes((txid,))

    def _wallet_changes(self, txids: Iterable[bytes]) -> None:
        if not self.clients or self._node.wallets is None:
            return
        for name, wallet in list(self._node.wallets.wallets.items()):
            for txid in txids:
                if wallet.txs.known(txid):
                    self.broadcast({"event": "wallet", "wallet": name, "txid": txid[::-1].hex()})

    # ------------------------------------------------------------ status

    @inlineCallbacks
    def _refresh_status(self) -> Any:
        try:
            status = yield self._read_status()
        except Exception:
            log.failure("Reading the GUI status failed")
            return
        if status != self._status:
            self._status = status
            self.broadcast(status)

    @inlineCallbacks
    def _read_status(self) -> Any:
        chain = yield self._core.call("getblockchaininfo", [], self._user)
        peers = yield self._core.call("getpeerinfo", [], self._user)
        inbound = sum(1 for peer in peers if peer["inbound"])
        locked: Dict[str, Optional[bool]] = {}
        wallets = self._node.wallets.wallets if self._node.wallets is not None else {}
        for name in list(wallets):
            try:
                info = yield self._core.call("getwalletinfo", [], self._user, name)
            except Exception:  # unloaded meanwhile
                continue
            until = info.get("unlocked_until")
            locked[name] = None if until is None else until == 0
        return {"event": "status", "blocks": chain["blocks"], "headers": chain["headers"],
                "progress": float(chain["verificationprogress"]),
                "ibd": chain["initialblockdownload"], "peers": len(peers),
                "connections_in": inbound, "connections_out": len(peers) - inbound,
                "locked": locked}


class EventProtocol(WebSocketServerProtocol):
    """One page's WebSocket: it receives the hub's frames; what it sends is ignored."""

    def onOpen(self) -> None:
        self.factory.hub.joined(self)

    def onClose(self, wasClean: bool, code: Optional[int], reason: Optional[str]) -> None:
        self.factory.hub.left(self)

    def onMessage(self, payload: bytes, isBinary: bool) -> None:
        """Ignored (a page may send ``{"ping":1}`` to keep the connection busy)."""

    def send(self, event: Dict[str, Any]) -> None:
        self.sendMessage(encode_json(event), isBinary=False)


class EventFactory(WebSocketServerFactory):
    """The WebSocket server of ``/ws`` (no subprotocol)."""

    protocol = EventProtocol

    def __init__(self, hub: EventHub, url: str) -> None:
        super().__init__(url)
        self.hub = hub
        # Origin is checked by the gate in front (coin.gui.web.WebSocketGate).
        self.setProtocolOptions(autoPingInterval=30, autoPingTimeout=30)
