"""coind started the way Core-era tools start Core 0.17 (issue #13): the options it now
accepts take effect, the ones it refuses say why, and the HTTP/REST answers are Core's.

One node carries all the accepted options at once (suite time stays flat); nodes run in the
test process. Refusals are checked by coind processes exiting at argument time, before
anything is started, and by their stderr."""

from __future__ import annotations

import json
import os
import re
import time

from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import REGTEST
from coin.mempool.policy import FeeRate
from coin.p2p.messages import (
    MSG_BLOCK,
    MSG_TX,
    GetDataMessage,
    InvItem,
    InvMessage,
    PingMessage,
    encode_message,
)
from coin.primitives.address import encode_wif
from coin.testing.chainbuilder import deterministic_key
from tests.inprocess import NodeTestCase
from tests.nodeharness import MINER_ADDRESS, NodeClient, NodeProcess, RPCFailure
from tests.p2pclient import RawPeer
from tests.functional.test_wallet_admin import p2pkh
from tests.functional.test_daemon import run_coind

MOCKTIME = 2_000_000_000

#: What a Core-era harness passes, plus the options issue #13 names.
ACCEPTED = [
    "-logtimemicros", "-debug=1", "-debugexclude=net", "-debugexclude=rpc",
    "-mocktime=%d" % MOCKTIME, "-stopatheight=3", "-addresstype=legacy", "-changetype=legacy",
    "-deprecatedrpc=accounts", "-deprecatedrpc=signrawtransaction", "-maxtipage=86400",
    "-allowprivatenet=1", "-spendzeroconfchange=0", "-disablewallet", "-connect=0",
    "-listen=1", "-upnp=0", "-listenonion=0", "-discover=0", "-dnsseed=0", "-noproxy",
    "-shrinkdebugfile=0", "-assumevalid=0", "-logtimestamps=1", "-feefilter=1",
    "-zapwallettxes=0", "-maxuploadtarget=0", "-blocksonly", "-maxorphantx=5",
    "-whitelist=127.0.0.1", "-banscore=1", "-maxsendbuffer=1000", "-checklevel=4",
]


class AcceptedOptionsTests(NodeTestCase):
    def test_one_node_with_every_accepted_option(self) -> None:
        node = self.start_node(*ACCEPTED)
        # Datadir layout: wallets/ is made with a new datadir even with -disablewallet.
        self.assertTrue(os.path.isdir(os.path.join(node.net_datadir, "wallets")))
        # -debug=1 less -debugexclude.
        logging = node.rpc("logging")
        self.assertEqual((logging["net"], logging["rpc"], logging["mempool"]),
                         (False, False, True))
        # -mocktime: the node's clock, so the next block's time.
        first = node.rpc("generatetoaddress", 1, MINER_ADDRESS)[0]
        self.assertEqual(node.rpc("getblockheader", first)["time"], MOCKTIME)
        # -logtimemicros: debug.log stamps carry microseconds.
        with open(os.path.join(node.net_datadir, "debug.log")) as f:
            lines = f.read().splitlines()
        self.assertTrue(lines)
        self.assertTrue(all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z ", line)
                            for line in lines if line[:2] == "20"), lines[:3])
        self._http_and_rest_as_core(node, first)
        self._blocks_only_and_whitelist(node)
        # -stopatheight=3: still serving at 2, stopped (cleanly) once 3 is the tip.
        node.rpc("generatetoaddress", 1, MINER_ADDRESS)
        self.assertEqual(node.rpc("getblockcount"), 2)
        try:
            node.rpc("generatetoaddress", 1, MINER_ADDRESS)
        except OSError:
            pass  # the reply may be lost to the shutdown
        self.assertEqual(node.wait(60), 0)

    def _blocks_only_and_whitelist(self, node: NodeClient) -> None:
        """-blocksonly: version relay=0, transaction invs not asked for, except from a
        -whitelist peer (-whitelistrelay); a whitelisted peer is never banned."""
        inv = InvMessage([InvItem(MSG_TX, bytes(range(32)))])
        plain = RawPeer(node.p2p_port, bind="127.0.0.2")
        self.addCleanup(plain.close)
        self.assertFalse(plain.handshake().relay)
        plain.send(inv)
        plain.send(PingMessage(7))
        self.assertEqual(plain.wait_for("pong").nonce, 7)
        self.assertNotIn("getdata", [m.command for m in plain.received])
        trusted = RawPeer(node.p2p_port, bind="127.0.0.1")
        self.addCleanup(trusted.close)
        trusted.handshake()
        trusted.send(inv)
        self.assertEqual(trusted.wait_for("getdata").items, inv.items)
        # -banscore=1: a second version message bans the plain peer, not the trusted one.
        for peer in (plain, trusted):
            peer.send(peer.version_message())
        self.assertTrue(plain.wait_closed())
        trusted.send(PingMessage(8))
        self.assertEqual(trusted.wait_for("pong").nonce, 8)
        self.assertEqual([b["address"] for b in node.rpc("listbanned")], ["127.0.0.2/32"])
        node.rpc("setban", "127.0.0.1", "add")
        again = RawPeer(node.p2p_port, bind="127.0.0.1")  # banned, whitelisted: let in
        self.addCleanup(again.close)
        again.handshake()
        self.assertEqual(node.rpc("getmempoolinfo")["size"], 0)

    def _http_and_rest_as_core(self, node: NodeClient, block_hash: str) -> None:
        # The query string is part of the hash (Core hands the whole target to REST).
        status, _, body = node.post(b"", path="/rest/block/%s.json?x=y" % block_hash,
                                    method="GET")
        self.assertEqual((status, body), (400, b"Invalid hash: %s.json?x=y\r\n"
                                          % block_hash.encode()))
        # A very long request line: 400, as Core (libevent) answers, not 404.
        status, _, _ = node.post(b"", path="/rest/" + "a" * 9000 + ".json", method="GET")
        self.assertEqual(status, 400)
        # POST getutxos with the outpoints in the body, read as Core 0.17 reads it.
        block = node.rpc("getblock", block_hash)
        coinbase = bytes.fromhex(block["tx"][0])[::-1] + (0).to_bytes(4, "little")
        status, headers, body = node.post(b"\x01" + coinbase, path="/rest/getutxos.bin")
        self.assertEqual((status, headers["content-type"]), (200, "application/octet-stream"))
        self.assertEqual(body[:4], (1).to_bytes(4, "little"))
        self.assertEqual(body[36:39], b"\x01\x01\x01")  # bitmap: found
        status, _, hex_body = node.post((b"\x01" + coinbase).hex().encode(),
                                        path="/rest/getutxos.hex")
        self.assertEqual((status, hex_body), (200, body.hex().encode() + b"\n"))
        status, _, text = node.post(b"\x01" + coinbase, path="/rest/getutxos.json")
        self.assertEqual((status, text), (400, b"Error: empty request\r\n"))


class UploadTargetAndPriorityTests(NodeTestCase):
    def test_upload_target_receive_buffer_and_printpriority(self) -> None:
        """-maxuploadtarget=1 (1 MiB): Core's uploadtarget numbers, and blocks a week older
        than the best header go to whitelisted peers only; -maxreceivebuffer=1: a burst is
        read and answered in full; -printpriority: one "fee ... txid ..." line per mined
        transaction."""
        old = MOCKTIME - 10 * 24 * 3600
        node = self.start_node(
            "-maxuploadtarget=1", "-maxreceivebuffer=1", "-printpriority", "-connect=0",
            "-listen=1", "-whitelist=127.0.0.1", "-mocktime=%d" % old)
        historical = node.rpc("generatetoaddress", 101, node.rpc("getnewaddress"))[0]
        txids = [node.rpc("sendtoaddress", MINER_ADDRESS, amount) for amount in (1, 2)]
        entries = {txid: node.rpc("getmempoolentry", txid) for txid in txids}
        node.rpc("setmocktime", MOCKTIME)
        recent = node.rpc("generatetoaddress", 1, MINER_ADDRESS)[0]
        self.assertEqual(sorted(node.rpc("getblock", recent)["tx"][1:]), sorted(txids))
        with open(os.path.join(node.net_datadir, "debug.log")) as f:
            logged = re.findall(r" fee (\S+ COIN/kB) txid ([0-9a-f]{64})$", f.read(), re.M)
        self.assertEqual(sorted(logged), sorted(
            (FeeRate.from_fee(round(e["modifiedfee"] * 10 ** 8), e["size"]).to_string(), txid)
            for txid, e in entries.items()))
        # Nothing sent yet: a full budget and cycle; the block reserve alone exceeds 1 MiB.
        self.assertEqual(node.rpc("getnettotals")["uploadtarget"], {
            "timeframe": 86400, "target": 1048576, "target_reached": False,
            "serve_historical_blocks": False, "bytes_left_in_cycle": 1048576,
            "time_left_in_cycle": 86400})
        plain = RawPeer(node.p2p_port, bind="127.0.0.2")
        self.addCleanup(plain.close)
        plain.handshake()
        # One write: a getdata (answered after a block read) and pings queued behind it.
        plain.send_raw(b"".join(
            encode_message(REGTEST.message_start, m) for m in
            [GetDataMessage([InvItem(MSG_BLOCK, bytes.fromhex(recent)[::-1])])]
            + [PingMessage(n) for n in range(60)]))
        self.assertEqual(plain.wait_for("block").block.hash_hex, recent)
        self.assertEqual([plain.wait_for("pong").nonce for _ in range(60)], list(range(60)))
        totals = node.rpc("getnettotals")
        self.assertEqual(totals["uploadtarget"]["bytes_left_in_cycle"],
                         1048576 - totals["totalbytessent"])
        self.assertEqual(totals["uploadtarget"]["time_left_in_cycle"], 86400)
        old_block = GetDataMessage([InvItem(MSG_BLOCK, bytes.fromhex(historical)[::-1])])
        plain.send(old_block)
        self.assertTrue(plain.wait_closed())
        self.assertNotIn("block", [m.command for m in plain.received])
        trusted = RawPeer(node.p2p_port, bind="127.0.0.1")
        self.addCleanup(trusted.close)
        trusted.handshake()
        trusted.send(old_block)
        self.assertEqual(trusted.wait_for("block").block.hash_hex, historical)


class CheckBlocksTests(NodeTestCase):
    def test_start_up_verifies_the_last_checkblocks_blocks(self) -> None:
        """Core's start-up VerifyDB: the last 6 blocks at level 3 by default; a damaged
        older block is found once -checkblocks=0 (all) asks for it."""
        node = self.start_node()
        hashes = node.rpc("generatetoaddress", 10, MINER_ADDRESS)
        raw = bytes.fromhex(node.rpc("getblock", hashes[0], 0))
        self.assertEqual(node.stop(), 0)
        path = os.path.join(node.net_datadir, "blocks", "blk00000.dat")
        with open(path, "r+b") as f:
            data = f.read()
            at = data.index(raw) + len(raw) - 1  # the coinbase's lock time: a new merkle root
            f.seek(at)
            f.write(bytes([data[at] ^ 1]))
        node.restart("-checklevel=3")
        self.assertEqual(node.rpc("getblockcount"), 10)
        self.assertEqual(node.stop(), 0)
        # A process: the exit status and the stderr text.
        process = NodeProcess.start(node.datadir, ["-checkblocks=0"], wait=False)
        self.addCleanup(process.kill)
        self.assertEqual(process.wait(60), 1)
        self.assertIn("Error: Corrupted block database detected.", process.stderr_text())


class WalletOptionsTests(NodeTestCase):
    def test_rescan_at_start_finds_what_the_wallet_skipped(self) -> None:
        node = self.start_node()
        key = deterministic_key("-rescan option")
        node.rpc("generatetoaddress", 1, p2pkh(key))
        node.rpc("importprivkey", encode_wif(key.secret, REGTEST), "", False)  # no rescan
        self.assertEqual(node.rpc("getwalletinfo")["txcount"], 0)
        self.assertEqual(node.stop(), 0)
        node.restart("-rescan")
        self.assertEqual(node.rpc("getwalletinfo")["txcount"], 1)


    def test_walletbroadcast_0_keeps_payments_out_of_the_mempool(self) -> None:
        node = self.start_node("-walletbroadcast=0")
        node.rpc("generatetoaddress", 101, node.rpc("getnewaddress"))
        txid = node.rpc("sendtoaddress", MINER_ADDRESS, 1)
        self.assertEqual(node.rpc("gettransaction", txid)["confirmations"], 0)
        self.assertEqual(node.rpc("getrawmempool"), [])


    def test_zapwallettxes_forgets_and_rescans(self) -> None:
        node = self.start_node()
        node.rpc("generatetoaddress", 101, node.rpc("getnewaddress"))
        confirmed = node.rpc("sendtoaddress", MINER_ADDRESS, 1)
        node.rpc("generatetoaddress", 1, MINER_ADDRESS)
        received = node.rpc("gettransaction", confirmed)["timereceived"]
        pending = node.rpc("sendtoaddress", MINER_ADDRESS, 2)
        count = node.rpc("getwalletinfo")["txcount"]
        self.assertEqual(node.stop(), 0)
        # Mode 1: found again by the rescan with its metadata; the unconfirmed one is gone
        # (and not brought back from mempool.dat: -persistmempool=0 is implied).
        node.restart("-zapwallettxes=1")
        self.assertEqual(node.rpc("gettransaction", confirmed)["timereceived"], received)
        self.assertEqual(node.rpc("getwalletinfo")["txcount"], count - 1)
        with self.assertRaises(RPCFailure) as caught:
            node.rpc("gettransaction", pending)
        self.assertEqual(caught.exception.code, -5)
        self.assertEqual(node.rpc("getrawmempool"), [])
        self.assertEqual(node.stop(), 0)
        result = run_coind("-regtest", "-datadir=" + node.datadir,
                           "-zapwallettxes=2", "-wallet=a", "-wallet=b")
        self.assertEqual((result.returncode, result.stderr),
                         (1, "Error: -zapwallettxes is only allowed with a single wallet "
                          "file\n"))


#: Refused options and the reason coind gives (the list is in doc/config.md).
REFUSED = [
    ("-proxy=127.0.0.1:9050", "proxy", "it has no SOCKS5 proxy support yet"),
    ("-onion=127.0.0.1:9050", "onion", "it has no SOCKS5 proxy support yet"),
    ("-loadblock=blk00000.dat", "loadblock", "importing external block files is not "
     "implemented (copy them to blocks/ and use -reindex)"),
]


class RefusedOptionsTests(SynchronousTestCase):
    def test_refused_options_say_why(self) -> None:
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        base = ["-regtest", "-datadir=" + datadir]
        started = time.monotonic()
        for arg, name, reason in REFUSED:
            result = run_coind(*(base + [arg]))
            self.assertEqual((result.returncode, result.stderr),
                             (1, "Error: -%s is not supported by this node: %s\n"
                              % (name, reason)), arg)
        for args, message in (
                (["-addresstype=bech32"], "Error: Unknown address type 'bech32' (this chain "
                 "has no segwit: the only type is 'legacy')\n"),
                (["-testnet", "-mocktime=5"], "Error: -mocktime is for regression testing "
                 "(-regtest mode) only\n")):
            result = run_coind(*(["-datadir=" + datadir] + args
                                 + (["-regtest"] if "-testnet" not in args else [])))
            self.assertEqual((result.returncode, result.stderr), (1, message), args)
        self.assertEqual(os.listdir(datadir), [])  # refused before anything was created
        # Wallet fee options are checked as Core checks them.
        result = run_coind("-regtest", "-datadir=" + datadir, "-paytxfee=0.000001",
                           "-printtoconsole=0")
        self.assertEqual((result.returncode, result.stderr),
                         (1, "Error: Invalid amount for -paytxfee=<amount>: '0.000001' (must be "
                          "at least 0.00001000 COIN/kB)\n"))
        result = run_coind("-regtest", "-datadir=" + datadir, "-fallbackfee=x")
        self.assertEqual((result.returncode, result.stderr),
                         (1, "Error: Invalid amount for -fallbackfee=<amount>: 'x'\n"))
        self.assertLess(time.monotonic() - started, 60)

    def test_help_lists_every_option(self) -> None:
        plain = run_coind("-help").stdout
        debug = run_coind("-help-debug").stdout
        for option in ("-proxy=<ip:port>", "-allowprivatenet", "-spendzeroconfchange",
                       "-whitelist=<IP address or network>", "-rpcthreads=<n>"):
            self.assertIn("\n  %s\n" % option, plain)
        for option in ("-mocktime=<n>", "-stopatheight=<n>", "-logtimemicros",
                       "-checkblocks=<n>"):
            self.assertNotIn("\n  %s\n" % option, plain)
            self.assertIn("\n  %s\n" % option, debug)
        self.assertIn("ZeroMQ notification options:", plain)
        json.dumps(plain)  # text only
