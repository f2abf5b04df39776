"""Consensus rules: context-free and contextual checks, subsidy, difficulty, soft forks."""
