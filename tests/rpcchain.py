"""RPC methods over a real chain: JSON bytes in, JSON back, nothing of ours mocked.

``ChainRPCTestCase`` copies a prepared regtest datadir (``TIP_HEIGHT`` blocks mined to
the ChainBuilder's default key, one second apart), runs it in a real
``ValidationService`` (worker thread, real reactor) behind ``ChainAccess`` with its own
``NodeClock``, and calls methods through a real ``JSONRPCCore``. Subclasses set
``methods`` (the modules' METHODS; control's are always added) and may set ``params``
to a network whose chain starts empty.
"""

from __future__ import annotations

import shutil
from typing import Any, List, Optional, Sequence

import simplejson
from twisted.internet import reactor
from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.trial.unittest import TestCase

from coin.chain.access import ChainAccess
from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.service import ValidationService
from coin.chainparams import REGTEST, ChainParams
from coin.config.node import DEFAULT_MAX_TX_FEE
from coin.mempool.accept import PoolPolicy
from coin.mempool.pool import Mempool
from coin.mempool.service import MempoolService
from coin.primitives.address import Destination, encode_address
from coin.primitives.block import Block
from coin.primitives.hashes import hash160, hash_to_hex
from coin.rpc.auth import Whitelist
from coin.rpc.jsonrpc import JSONRPCCore, Reply, Warmup
from coin.rpc.methods.control import METHODS as CONTROL_METHODS
from coin.rpc.registry import MethodTable, RPCMethod
from coin.storage.chainstore import ChainStore
from coin.testing.chainbuilder import ChainBuilder, Spendable, open_chain
from coin.views.amounts import parse_amount

from .prepared import prepared_datadir
from .rpchelpers import FakeNode

#: Height of the prepared chain: the coinbases of blocks 1..10 are mature for block 111.
TIP_HEIGHT = 110

def _mine_chain(datadir: str) -> list:
    chain = open_chain(datadir)
    builder = ChainBuilder(chain)
    builder.mine(TIP_HEIGHT)
    chain.close()
    return list(builder.coinbase_outputs)


def prepared_chain() -> tuple:
    """``(datadir, coinbase spendables by height - 1)``, built once per test run."""
    return prepared_datadir(_mine_chain, _mine_chain)


class ChainRPCTestCase(TestCase):
    """A running validation service and an RPC core over it."""

    methods: Sequence[RPCMethod] = ()
    params: ChainParams = REGTEST

    def setUp(self) -> Deferred:
        datadir = self.mktemp()
        if self.params is REGTEST:
            template, self.coinbases = prepared_chain()
            shutil.copytree(template, datadir)
        else:
            self.coinbases = []
        store = ChainStore(datadir, self.params)
        store.open()
        self.clock = NodeClock()
        self.service = ValidationService(ChainState(self.params, store, clock=self.clock),
                                         reactor)
        self.service.startService()
        self.addCleanup(self.service.stopService)
        self.access = ChainAccess(self.service, self.clock, reactor)
        self.state = self.service.chainstate
        self.mempool = MempoolService(self.service, Mempool(now=self.clock.now),
                                      # Standardness off, as on a default regtest node.
                                      PoolPolicy(require_standard=False), now=self.clock.now,
                                      max_tx_fee=parse_amount(DEFAULT_MAX_TX_FEE))
        self.mempool.startService()
        self.addCleanup(self.mempool.stopService)
        self.access.mempool = self.mempool.pool
        self.node = FakeNode(chain=self.access, mempool=self.mempool)
        self.core = JSONRPCCore(MethodTable(CONTROL_METHODS + list(self.methods)), self.node,
                                whitelist=Whitelist(), warmup=Warmup(None), clock=reactor)
        self.builder = ChainBuilder(self.state)
        return self.service.ready

    # -- calling

    def send(self, method: str, *params: Any, **named: Any) -> Deferred:
        """Fires with the Reply to one request (id 1)."""
        body = {"jsonrpc": "1.0", "id": 1, "method": method,
                "params": named if named else list(params)}
        return self.core.handle(simplejson.dumps(body).encode(), "u")

    def send_raw(self, body: bytes) -> Deferred:
        return self.core.handle(body, "u")

    @inlineCallbacks
    def result(self, method: str, *params: Any, **named: Any):
        """The result of a call that must succeed (numbers as Decimal, as printed)."""
        reply: Reply = yield self.send(method, *params, **named)
        answer = simplejson.loads(reply.body, use_decimal=True)
        self.assertEqual((reply.status, answer["error"]), (200, None), (method, params, named))
        return answer["result"]

    @inlineCallbacks
    def error(self, method: str, *params: Any, **named: Any):
        """``(http_status, code, message)`` of a call that must fail."""
        reply: Reply = yield self.send(method, *params, **named)
        answer = simplejson.loads(reply.body)
        self.assertIsNone(answer["result"], (method, params, named))
        return reply.status, answer["error"]["code"], answer["error"]["message"]

    # -- the chain

    def address(self, key_hash: Optional[bytes] = None) -> str:
        """A P2PKH address (default: the builder's key) on this network."""
        if key_hash is None:
            key_hash = hash160(self.builder.pubkey)
        return encode_address(Destination("pubkeyhash", key_hash), self.params)

    def tip_hex(self) -> str:
        return hash_to_hex(self.state.tip.hash)

    def build(self, **options: Any) -> Deferred:
        """A solved block from the builder (on the writer thread); not submitted."""
        builder = self.builder
        parent = options.pop("parent", None)
        return self.access.call(
            lambda cs: builder.build(parent=cs.lookup(parent) if parent else None, **options))

    @inlineCallbacks
    def mine(self, count: int = 1, **options: Any):
        """Build and submit ``count`` blocks on the tip; fires with the blocks."""
        blocks: List[Block] = []
        for _ in range(count):
            block = yield self.build(**options)
            yield self.access.submit_block(block)
            blocks.append(block)
        return blocks

    def mature_coinbase(self, height: int) -> Spendable:
        """The prepared chain's coinbase output of block ``height`` (1..TIP_HEIGHT)."""
        return self.coinbases[height - 1]
