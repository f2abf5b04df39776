"""Prometheus metrics (``-metricsbind``): what operators graph and alert on.

:mod:`coin.metrics.instruments` holds the counters and histograms the RPC, REST and
validation code feed as they work; :mod:`coin.metrics.collector` reads the node's
current state at scrape time; :mod:`coin.metrics.service` serves ``/metrics`` on its own
listener.  Each node has its own registry, so several nodes can share a process.
See doc/metrics.md.
"""

from coin.metrics.instruments import Instruments

__all__ = ["Instruments"]
