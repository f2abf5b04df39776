"""Masternodes (issue #14): records and states, signed broadcasts and pings, the list manager.

One concern per module: :mod:`.params` (this chain's decided numbers, design.md §6),
:mod:`.signing` (the reference node's signed strings), :mod:`.record` (one masternode and
its state machine), :mod:`.manager` (the list, ranks, collateral checks) and :mod:`.cache`
(``mncache.dat``).  Nothing here imports P2P or RPC code; the service wires them.
"""
