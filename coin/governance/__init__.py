"""Governance: proposals, triggers and watchdogs, their votes, and superblock budgets.

Dash 0.12.3's design as the reference node (dime-coin/dimecoin 2.3.0.0) has it, with
this chain's parameters (design.md §6). One concern per module: ``params`` (per-network
numbers and superblock maths), ``object`` (the object model), ``validator`` (proposal
data), ``collateral`` (the fee transaction), ``vote`` (votes, tallies, cached flags),
``store`` (the objects and ``governance.dat``) and ``service`` (the node's service).
"""
