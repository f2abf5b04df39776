"""The few per-network facts that arguments, coin.conf and coin-cli need.

``coin.chainparams`` builds genesis blocks and imports the primitives (about
30 ms); coin-cli must start in a few. This table is therefore kept apart and
``tests/unit/config/test_config.py`` checks that it agrees with ``coin.chainparams``.
"""

from __future__ import annotations


class Network:
    """Name, default ports and datadir subfolder of one network."""

    __slots__ = ("name", "rpc_port", "p2p_port", "datadir_subdir")

    def __init__(self, name: str, rpc_port: int, p2p_port: int, datadir_subdir: str) -> None:
        self.name = name
        self.rpc_port = rpc_port
        self.p2p_port = p2p_port
        self.datadir_subdir = datadir_subdir

    def __repr__(self) -> str:
        return "Network(%r)" % self.name


NETWORKS: dict[str, Network] = {
    n.name: n for n in (
        Network("main", 11931, 11932, ""),
        Network("test", 21931, 21932, "testnet3"),
        Network("regtest", 31931, 31932, "regtest"),
    )
}
