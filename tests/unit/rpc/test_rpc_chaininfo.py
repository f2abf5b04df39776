"""getblockchaininfo's Core 0.17 extras over the real stack, and the node's warnings as
getblockchaininfo, getnetworkinfo, getmininginfo and REST /chaininfo all show them: one
source, raised by real blocks."""

from __future__ import annotations

from twisted.internet.defer import inlineCallbacks

from coin.chain.warnings import UNKNOWN_VERSIONS_WARNING, ChainWarningMonitor
from coin.consensus.versionbits import VERSIONBITS_TOP_BITS
from coin.rpc.methods.blockchain import METHODS as BLOCKCHAIN_METHODS
from coin.rpc.methods.mining import METHODS as MINING_METHODS
from coin.rpc.methods.network import METHODS as NETWORK_METHODS
from tests.unit.rest.test_rest import RESTTestCase


class WarningsTests(RESTTestCase):
    methods = BLOCKCHAIN_METHODS + NETWORK_METHODS + MINING_METHODS

    @inlineCallbacks
    def setUp(self):
        yield super().setUp()
        # As the node wires it (coin.service), on this stack's chain access.
        self.service.add_worker_hook(ChainWarningMonitor(self.access.warnings, self.state,
                                                         self.access.is_initial_block_download))

    @inlineCallbacks
    def warnings(self):
        """``warnings`` of the three RPCs and of REST /chaininfo."""
        shown = []
        for method in ("getblockchaininfo", "getnetworkinfo", "getmininginfo"):
            shown.append((yield self.result(method))["warnings"])
        rest = yield self.get("/rest/chaininfo.json")
        shown.append(rest.json()["warnings"])
        return shown

    @inlineCallbacks
    def test_unknown_block_versions_everywhere(self):
        # The prepared chain's blocks are years old: initial block download, no checks.
        info = yield self.result("getblockchaininfo")
        self.assertTrue(info["initialblockdownload"])
        self.clock.set_mock_time(self.state.tip.time + 60)
        info = yield self.result("getblockchaininfo")
        self.assertFalse(info["initialblockdownload"])
        self.assertEqual((yield self.warnings()), [""] * 4)
        yield self.mine(51, version=VERSIONBITS_TOP_BITS | 1 << 12)
        self.assertEqual((yield self.warnings()), [UNKNOWN_VERSIONS_WARNING] * 4)
        info = yield self.result("getblockchaininfo")
        self.assertEqual(list(info)[-3:], ["softforks", "bip9_softforks", "warnings"])

    @inlineCallbacks
    def test_size_on_disk_is_the_block_files(self):
        info = yield self.result("getblockchaininfo")
        self.assertEqual(info["size_on_disk"], self.state.store.file_usage())
        yield self.mine(1)
        grown = yield self.result("getblockchaininfo")
        self.assertGreater(grown["size_on_disk"], info["size_on_disk"])
        rest = yield self.get("/rest/chaininfo.json")
        self.assertEqual(rest.json(), grown)
