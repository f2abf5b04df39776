"""Gauges read from the node at scrape time (a custom collector: nothing to keep updated).

Values are the ones the RPC reports (getblockchaininfo, getmempoolinfo, getnettotals,
getpeerinfo, masternode count), read on the reactor thread when ``/metrics`` is asked.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Optional

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from coin.chain.ibd import guess_verification_progress
from coin.views.mempool import mempool_info_json


class NodeCollector(Collector):
    """The node's state: chain, peers, traffic, mempool, UTXO cache, wallets, masternodes.

    Takes the parts it reads, not the node: ``chain`` (coin.chain.access.ChainAccess),
    ``mempool`` (MempoolService), ``p2p`` (P2PService), ``coins`` (the UTXO cache),
    ``wallets`` (loaded wallets by name, None with -disablewallet), ``masternodes``
    (the masternode manager) and ``outage`` (coin.storage.outage.DatabaseOutage on a
    database server, else None: SQLite is never unreachable).
    """

    def __init__(self, chain: Any, mempool: Any, p2p: Any, coins: Any,
                 wallets: Optional[Mapping[str, Any]], masternodes: Any,
                 outage: Any = None) -> None:
        self._outage = outage
        self._chain = chain
        self._mempool = mempool
        self._p2p = p2p
        self._coins = coins
        self._wallets = wallets
        self._masternodes = masternodes

    def collect(self) -> Iterator[Metric]:
        view = self._chain.snapshot()
        yield GaugeMetricFamily("coin_blocks", "Height of the active chain's tip",
                                value=view.height)
        best_header = view.best_header
        yield GaugeMetricFamily("coin_headers", "Height of the best known header",
                                value=best_header.height if best_header is not None else -1)
        yield GaugeMetricFamily(
            "coin_verification_progress", "Estimate of verification progress (0..1)",
            value=guess_verification_progress(self._chain.params.tx_data, view.tip, best_header))
        yield from self._peers()
        service = self._mempool
        info = mempool_info_json(service.pool, service.policy.min_relay_fee.sat_per_kb)
        yield GaugeMetricFamily("coin_mempool_transactions", "Transactions in the mempool",
                                value=info["size"])
        yield GaugeMetricFamily("coin_mempool_bytes", "Sum of the mempool transactions' sizes",
                                value=info["bytes"])
        yield GaugeMetricFamily("coin_mempool_usage_bytes", "Memory used by the mempool",
                                value=info["usage"])
        yield GaugeMetricFamily("coin_mempool_min_fee", "Fee rate (coins/kB) a transaction needs "
                                "to enter the mempool (getmempoolinfo's mempoolminfee)",
                                value=float(info["mempoolminfee"]))
        yield GaugeMetricFamily("coin_utxo_cache_entries", "Coins held in the UTXO cache",
                                value=len(self._coins))
        yield GaugeMetricFamily("coin_utxo_cache_bytes", "Estimated memory of the UTXO cache",
                                value=self._coins.usage_bytes())
        yield GaugeMetricFamily("coin_wallets", "Loaded wallets",
                                value=len(self._wallets) if self._wallets is not None else 0)
        masternodes = GaugeMetricFamily("coin_masternodes", "Known masternodes", labels=("state",))
        masternodes.add_metric(("all",), len(self._masternodes))
        masternodes.add_metric(("enabled",), self._masternodes.count_enabled())
        yield masternodes
        if self._outage is not None:
            yield _reachable(self._outage.reachable)

    def _peers(self) -> Iterator[Metric]:
        p2p = self._p2p
        peers = GaugeMetricFamily("coin_peers", "Open P2P connections by direction",
                                  labels=("direction",))
        inbound = sum(1 for peer in list(p2p.peers.values()) if peer.inbound)
        peers.add_metric(("inbound",), inbound)
        peers.add_metric(("outbound",), len(p2p.peers) - inbound)
        yield peers
        yield CounterMetricFamily("coin_network_received_bytes", "Bytes received from peers",
                                  value=p2p.total_bytes_recv)
        yield CounterMetricFamily("coin_network_sent_bytes", "Bytes sent to peers",
                                  value=p2p.total_bytes_sent)


def _reachable(reachable: bool) -> Metric:
    return GaugeMetricFamily("coin_database_reachable", "1 while the chain database server "
                             "answers, 0 while it does not (reads answer -28 / 503)",
                             value=1 if reachable else 0)


class FrontendCollector(Collector):
    """A front end's state: the committed chain it serves, its database, its lag.

    Takes the front end's :class:`~coin.frontend.chain.CommittedChain`.
    """

    def __init__(self, committed: Any) -> None:
        self._committed = committed

    def collect(self) -> Iterator[Metric]:
        committed = self._committed
        tip = committed.chainstate.tip
        yield GaugeMetricFamily("coin_blocks", "Height of the committed chain served",
                                value=tip.height if tip is not None else -1)
        yield GaugeMetricFamily(
            "coin_frontend_lag_seconds", "Seconds the database read is behind the primary "
            "(frontend_lag: 0 on a primary or a caught-up replica, -1 unknown)",
            value=committed.lag)
        yield _reachable(committed.reachable)
        yield CounterMetricFamily("coin_frontend_reloads", "Loads of the writer's commits",
                                  value=committed.reloads)
