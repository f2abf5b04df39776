"""The masternode service: wires the list, payments, sync and the active masternode to the
chain (block events, UTXO look-ups, the coinbase hooks) and to P2P (message handlers).

Messages are pushed to peers whole (``mnb``, ``mnp``, ``mnw``) rather than announced by
``inv`` as the reference does; the reference accepts them either way.  ``dseg`` and
``mnget`` are answered even before this node's own sync finished (the reference ignores
them until then, which stalls a network whose nodes all start together).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Tuple

import coincurve
from twisted.application import service
from twisted.internet.defer import Deferred
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from coin.chainparams import MAIN, ChainParams
from coin.config.hostport import split_host_port
from coin.consensus.subsidy import block_subsidy
from coin.masternode import signing
from coin.masternode.active import STARTED, ActiveMasternode
from coin.masternode.cache import (
    MNCACHE_NAME, MNCACHE_VERSION, MNPAYMENTS_NAME, MNPAYMENTS_VERSION, CacheError,
    decode_masternodes, decode_votes, encode_masternodes, encode_votes, read_cache, write_cache,
)
from coin.masternode.conf import MasternodeEntry, conf_path, read_masternode_conf
from coin.masternode.manager import MasternodeError, MasternodeManager
from coin.masternode.params import masternode_params
from coin.masternode.payments import SIGNATURES_TOTAL, VOTE_AHEAD, PaymentVotes
from coin.masternode.record import OUTPOINT_SPENT, UPDATE_REQUIRED
from coin.masternode.sync import SYNC_LIST, SYNC_MNW, TICK_SECONDS, MasternodeSync
from coin.p2p.messages import (
    DsegMessage, MasternodeBroadcastMessage, MasternodePingMessage, MnGetMessage,
    PaymentVoteMessage, SyncStatusCountMessage,
)
from coin.p2p.netaddr import ip_to_bytes
from coin.primitives.address import AddressError, decode_wif
from coin.primitives.hashes import hash160
from coin.primitives.transaction import OutPoint, Transaction
from coin.script.standard import p2pkh_script
from coin.spork import SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, SporkManager

log = Logger()

MNCACHE_FILE = "mncache.dat"
MNPAYMENTS_FILE = "mnpayments.dat"
#: Seconds between two checks of the list and of the active masternode.
CHECK_SECONDS = 1
#: On main, a peer may ask for the whole list once in this many seconds (else scored 34).
DSEG_INTERVAL = 3 * 60 * 60
DSEG_REPEAT_BAN = 34
#: A missing masternode is asked for at most once in this many seconds (the reference's hour).
ASK_FOR_MN_SECONDS = 60 * 60


class MasternodeConfigError(Exception):
    """A masternode option the node cannot start with."""


class BroadcastError(Exception):
    """Why a broadcast could not be created (the reference's ``errorMessage``)."""


def active_from_config(enabled: bool, privkey: Optional[str], params: ChainParams
                       ) -> Optional[ActiveMasternode]:
    """-masternode / -masternodeprivkey, refused with the reference's messages."""
    if not enabled:
        return None
    if not privkey:
        raise MasternodeConfigError("You must specify a masternodeprivkey in the configuration. "
                                    "Please see documentation for help.")
    try:
        secret, compressed = decode_wif(privkey, params)
    except (AddressError, ValueError):
        raise MasternodeConfigError("Invalid masternodeprivkey. Please see documentation.") from None
    return ActiveMasternode(coincurve.PrivateKey(secret), compressed)


class MasternodeService(service.Service):
    """Masternodes of one node.  ``sporks`` is the node's spork manager (SPORK_8)."""

    name = "masternodes"

    def __init__(self, params: ChainParams, chain: Any, p2p: Any, is_ibd: Callable[[], bool],
                 subscribe: Callable[[object], None], now: Callable[[], float], reactor: Any,
                 datadir: str, mnconf: str, active: Optional[ActiveMasternode] = None,
                 sporks: Optional[SporkManager] = None) -> None:
        self.params = params
        self.mn_params = masternode_params(params.name)
        self.chain = chain
        self.p2p = p2p
        self._is_ibd = is_ibd
        self._now = now
        self.reactor = reactor
        self.datadir = datadir
        self.active = active
        self.sporks = sporks
        self.manager = MasternodeManager(self.mn_params, params.p2p_port)
        self.payments = PaymentVotes(self.manager, self.mn_params)
        self.sync = MasternodeSync(reactor.seconds, self.blockchain_synced)
        self._conf_path = conf_path(mnconf, datadir)
        #: masternode.conf, read at privileged start (nothing is opened before).
        self.conf_entries: List[MasternodeEntry] = []
        self.conf_errors: List[str] = []
        self._dseg_asked: Dict[str, float] = {}
        self._asked_for: Dict[OutPoint, float] = {}
        self._loop: Optional[LoopingCall] = None
        self._ticks = 0
        subscribe(self)
        for command, handler in (("mnb", self._on_mnb), ("mnp", self._on_mnp),
                                 ("dseg", self._on_dseg), ("mnw", self._on_mnw),
                                 ("mnget", self._on_mnget), ("ssc", self._on_ssc)):
            p2p.register_handler(command, handler)
        p2p.on_disconnect.append(lambda peer: self.sync.peer_gone(peer.id))
        state = chain.state
        state.payee_check = self._payee_check
        state.block_payee = self._block_payee

    # ------------------------------------------------------------ chain helpers

    def now(self) -> int:
        """Network-adjusted time (mockable)."""
        return int(self._now())

    def blockchain_synced(self) -> bool:
        return not self._is_ibd()

    @property
    def tip_height(self) -> int:
        return self.chain.state.height

    def block_hash_at(self, height: int) -> Optional[bytes]:
        entry = self.chain.state.at_height(height) if height >= 0 else None
        return None if entry is None else entry.hash

    def _height_of(self, block_hash: bytes) -> Optional[int]:
        state = self.chain.state
        entry = state.lookup(block_hash)
        return entry.height if entry is not None and state.contains(entry) else None

    def payments_enforced(self) -> bool:
        """SPORK_8 active (no spork manager wired: off)."""
        return self.sporks is not None and self.sporks.is_active(
            SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, self.now())

    def _payee_check(self, height: int, coinbase: Transaction) -> bool:
        """The ``bad-cb-payee`` rule (worker thread): only enforced with SPORK_8 on and the
        list synced, as in the reference."""
        if not (self.payments_enforced() and self.sync.is_synced()):
            return True
        return self.payments.is_coinbase_valid(coinbase, height, block_subsidy(height, self.params))

    def _block_payee(self, height: int) -> Optional[Tuple[bytes, int]]:
        """What the miner pays at ``height`` (worker thread)."""
        return self.payments.block_payee(height, block_subsidy(height, self.params))

    # ------------------------------------------------------------ service

    def privilegedStartService(self) -> None:
        """Read masternode.conf (created when missing) once the data directory is open."""
        super().privilegedStartService()
        self.conf_entries, self.conf_errors = read_masternode_conf(
            self._conf_path, MAIN.p2p_port, self.params.name == "main")
        for error in self.conf_errors:
            log.error("Error reading masternode configuration file: {error}", error=error)

    def startService(self) -> None:
        super().startService()
        self._load()
        self._loop = LoopingCall(self._tick)
        self._loop.clock = self.reactor
        self._loop.start(CHECK_SECONDS, now=False)

    def stopService(self) -> None:
        super().stopService()
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._dump()

    def _path(self, name: str) -> str:
        return os.path.join(self.datadir, name)

    def _load(self) -> None:
        for name, magic, version, apply in (
                (MNCACHE_FILE, MNCACHE_NAME, MNCACHE_VERSION,
                 lambda payload: self.manager.load(*decode_masternodes(payload))),
                (MNPAYMENTS_FILE, MNPAYMENTS_NAME, MNPAYMENTS_VERSION,
                 lambda payload: self.payments.load(decode_votes(payload)))):
            try:
                apply(read_cache(self._path(name), magic, version, self.params.message_start))
            except FileNotFoundError:
                continue
            except (CacheError, OSError) as e:
                log.warn("{name}: {error}; ignored, the list is rebuilt from the network",
                         name=name, error=e)
                continue
            log.info("Loaded {name}: {mns} masternodes, {votes} payment votes", name=name,
                     mns=len(self.manager), votes=len(self.payments))

    def _dump(self) -> None:
        message_start = self.params.message_start
        try:
            write_cache(self._path(MNCACHE_FILE), MNCACHE_NAME, MNCACHE_VERSION, message_start,
                        encode_masternodes(*self.manager.snapshot()))
            write_cache(self._path(MNPAYMENTS_FILE), MNPAYMENTS_NAME, MNPAYMENTS_VERSION,
                        message_start, encode_votes(self.payments.votes()))
        except OSError as e:
            log.error("Writing the masternode caches failed: {error}", error=e)

    def _tick(self) -> None:
        now = self.now()
        for masternode, old in self.manager.check_all(now):
            log.debug("masternode {outpoint}: {old} -> {new}",
                      outpoint=signing.outpoint_short(masternode.outpoint),
                      old=old, new=masternode.state_name)
        if self.active is not None and self.chain.state.tip is not None:
            ping = self.active.manage(self.manager, self.blockchain_synced(), now,
                                      self.block_hash_at, self.tip_height)
            if ping is not None:
                self._accept_ping(ping, None)
        self._ticks += 1
        if self._ticks % TICK_SECONDS == 0:
            self.sync_tick()

    def sync_tick(self) -> None:
        peers = {peer.id: peer for peer in self.p2p.handshaked_peers()}
        for peer_id, asset in self.sync.tick(list(peers)):
            if asset == SYNC_LIST:
                peers[peer_id].send(DsegMessage())
            elif asset == SYNC_MNW:
                peers[peer_id].send(MnGetMessage(len(self.manager)))

    # ------------------------------------------------------------ blocks

    def block_connected(self, entry: Any, block: Any) -> None:
        spent = [txin.prevout for tx in block.txs[1:] for txin in tx.vin]
        for masternode in self.manager.block_connected(entry.height, spent):
            log.info("masternode {outpoint}: collateral spent",
                     outpoint=signing.outpoint_short(masternode.outpoint))
        self.payments.block_connected(entry.height, block.header.time, block.txs[0],
                                      block_subsidy(entry.height, self.params))
        if entry.height % 100 == 0:
            self.payments.prune(entry.height)
        if self.active is not None and self.active.state == STARTED:
            self._vote(entry.height + VOTE_AHEAD)

    def block_disconnected(self, entry: Any, block: Any) -> None:
        self.manager.block_disconnected(entry.height)
        self.payments.block_disconnected(entry.height)

    def _vote(self, height: int) -> None:
        """The active masternode votes for ``height``'s payee when in the top ten."""
        assert self.active is not None and self.active.outpoint is not None
        rank = self.manager.rank(self.active.outpoint, height, self.block_hash_at)
        if rank is None or rank > SIGNATURES_TOTAL:
            return
        winner, _ = self.payments.next_in_queue(height, self.tip_height, self.now(),
                                                self.block_hash_at)
        if winner is None:
            log.debug("no masternode to vote for at height {height}", height=height)
            return
        payee = p2pkh_script(hash160(winner.broadcast.collateral_pubkey))
        unsigned = PaymentVoteMessage(self.active.outpoint, height, payee)
        vote = replace(unsigned, signature=signing.sign(
            self.active.key, signing.vote_string(unsigned), self.active.compressed))
        self._accept_vote(vote, None)

    # ------------------------------------------------------------ P2P

    def _relay(self, message: Any, origin: Any) -> None:
        for peer in self.p2p.handshaked_peers():
            if peer is not origin:
                peer.send(message)

    def _refused(self, peer: Any, error: MasternodeError) -> None:
        log.debug("{reason} (peer={peer})", reason=error.reason,
                  peer=peer.id if peer is not None else "local")
        if peer is not None:
            peer.misbehaving(error.ban_score, error.reason)

    def submit_broadcast(self, mnb: MasternodeBroadcastMessage, origin: Any = None) -> Deferred:
        """Check ``mnb`` against the UTXO set, add and relay it; fires with True if new.
        Errors go to the peer's score (``origin``) or, locally, out as MasternodeError."""
        d = self.chain.get_coins([mnb.outpoint.key()])

        def checked(coins: List[Any]) -> bool:
            if not self.manager.add_broadcast(mnb, coins[0], self.tip_height, self.block_hash_at,
                                              self.now()):
                return False
            log.info("masternode {outpoint} added ({addr})",
                     outpoint=signing.outpoint_short(mnb.outpoint),
                     addr=signing.service_string(mnb.ip, mnb.port))
            self._relay(mnb, origin)
            return True

        return d.addCallback(checked)

    def _on_mnb(self, peer: Any, mnb: MasternodeBroadcastMessage) -> Optional[Deferred]:
        if not self.blockchain_synced():
            return None  # the reference ignores masternode messages until then
        d = self.submit_broadcast(mnb, peer)

        def refused(failure: Failure) -> None:
            failure.trap(MasternodeError)
            self._refused(peer, failure.value)

        return d.addErrback(refused)

    def _accept_ping(self, mnp: MasternodePingMessage, origin: Any) -> None:
        try:
            if self.manager.process_ping(mnp, self.now(), self._height_of(mnp.block_hash),
                                         self.tip_height):
                self._relay(mnp, origin)
        except MasternodeError as e:
            if origin is not None and self.manager.get(mnp.outpoint) is None:
                self._ask_for(origin, mnp.outpoint)
            self._refused(origin, e)

    def _ask_for(self, peer: Any, outpoint: OutPoint) -> None:
        """Ask ``peer`` for a broadcast we miss, at most once an hour per masternode."""
        now = self.reactor.seconds()
        if self._asked_for.get(outpoint, 0) > now:
            return
        if len(self._asked_for) > 10 * len(self.manager) + 100:
            self._asked_for = {o: t for o, t in self._asked_for.items() if t > now}
        self._asked_for[outpoint] = now + ASK_FOR_MN_SECONDS
        peer.send(DsegMessage(outpoint))

    def _on_mnp(self, peer: Any, mnp: MasternodePingMessage) -> None:
        if self.blockchain_synced():
            self._accept_ping(mnp, peer)

    def _accept_vote(self, vote: PaymentVoteMessage, origin: Any) -> None:
        try:
            if self.payments.add_vote(vote, self.tip_height, self.block_hash_at):
                self._relay(vote, origin)
        except MasternodeError as e:
            self._refused(origin, e)

    def _on_mnw(self, peer: Any, vote: PaymentVoteMessage) -> None:
        if self.blockchain_synced():
            self._accept_vote(vote, peer)

    def _on_dseg(self, peer: Any, message: DsegMessage) -> None:
        if not message.outpoint.is_null():
            masternode = self.manager.get(message.outpoint)
            if masternode is not None:
                peer.send(replace(masternode.broadcast, last_ping=masternode.last_ping))
            return
        if self.params.name == "main":
            if self._dseg_asked.get(peer.ip, 0) > self.now():
                peer.misbehaving(DSEG_REPEAT_BAN, "dseg: peer already asked me for the list")
                return
            self._dseg_asked[peer.ip] = self.now() + DSEG_INTERVAL
        sent = 0
        for masternode in self.manager:
            if masternode.state in (OUTPOINT_SPENT, UPDATE_REQUIRED):
                continue
            peer.send(replace(masternode.broadcast, last_ping=masternode.last_ping))
            sent += 1
        peer.send(SyncStatusCountMessage(SYNC_LIST, sent))

    def _on_mnget(self, peer: Any, message: MnGetMessage) -> None:
        """Every stored vote (the reference sends only the next 20 heights' and fetches the
        past ones block by block; one answer is simpler and lets a new node check the
        payees of recent blocks at once)."""
        votes = self.payments.votes()
        for vote in votes:
            peer.send(vote)
        peer.send(SyncStatusCountMessage(SYNC_MNW, len(votes)))

    def _on_ssc(self, peer: Any, message: SyncStatusCountMessage) -> None:
        log.debug("ssc: asset {asset}, {count} items from peer={peer}", asset=message.item_id,
                  count=message.count, peer=peer.id)
        self.sync.status_count(peer.id, message.item_id)

    # ------------------------------------------------------------ controller

    def create_broadcast(self, entry: MasternodeEntry, wallet: Any, offline: bool = False
                         ) -> MasternodeBroadcastMessage:
        """The reference's CMasternodeBroadcast::Create for one masternode.conf line: the
        wallet's collateral key signs the broadcast, the masternode key its first ping."""
        if not offline and not self.blockchain_synced():
            raise BroadcastError("Sync in progress. Must wait until sync is complete to start "
                                 "Masternode")
        try:
            secret, compressed = decode_wif(entry.private_key, self.params)
        except (AddressError, ValueError):
            raise BroadcastError("Invalid masternode key %s" % entry.private_key) from None
        collateral = self._collateral_key(wallet, entry)
        if collateral is None:
            raise BroadcastError("Could not allocate outpoint %s:%s for masternode %s"
                                 % (entry.txid, entry.index, entry.address))
        outpoint, key, key_compressed = collateral
        ip, port = split_host_port(entry.address, 0)
        try:
            ip_to_bytes(ip)
        except ValueError:
            raise BroadcastError("Invalid address %s for masternode." % entry.address) from None
        main_port = MAIN.p2p_port
        if self.params.name == "main" and port != main_port:
            raise BroadcastError("Invalid port %d for masternode %s, only %d is supported on "
                                 "mainnet." % (port, entry.address, main_port))
        if self.params.name != "main" and port == main_port:
            raise BroadcastError("Invalid port %d for masternode %s, %d is the only supported on "
                                 "mainnet." % (port, entry.address, main_port))
        now = self.now()
        block_hash = self.block_hash_at(max(0, self.tip_height - 12))
        assert block_hash is not None
        masternode_key = coincurve.PrivateKey(secret)
        ping = signing.make_ping(outpoint, block_hash, now, masternode_key, compressed)
        return signing.make_broadcast(outpoint, ip, port, (key, key_compressed),
                                      (masternode_key, compressed), now, ping)

    def _collateral_key(self, wallet: Any, entry: MasternodeEntry
                        ) -> Optional[Tuple[OutPoint, coincurve.PrivateKey, bool]]:
        """The wallet's unspent collateral output named by ``entry`` and its key."""
        try:
            txid = bytes.fromhex(entry.txid)[::-1]
            index = int(entry.index)
        except ValueError:
            return None
        for output in wallet.available_coins():
            out = output.wtx.tx.vout[output.n]
            if output.wtx.txid != txid or output.n != index or out.value != self.mn_params.collateral:
                continue
            pubkey = wallet.keys.by_hash.get(out.script_pubkey[3:23])
            if pubkey is not None and out.script_pubkey == p2pkh_script(hash160(pubkey)) \
                    and wallet.keys.have_secret(pubkey):
                secret = wallet.keys.secret_of(pubkey)
                return OutPoint(txid, index), coincurve.PrivateKey(secret), len(pubkey) == 33
        return None

    def conf_entry(self, alias: str) -> Optional[MasternodeEntry]:
        for entry in self.conf_entries:
            if entry.alias == alias:
                return entry
        return None

    def collateral_outputs(self, wallet: Any) -> List[Tuple[str, int]]:
        """``masternode outputs``: the wallet's unspent outputs of exactly the collateral."""
        return [(o.wtx.txid[::-1].hex(), o.n) for o in wallet.available_coins()
                if o.wtx.tx.vout[o.n].value == self.mn_params.collateral]
