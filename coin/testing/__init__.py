"""Helpers for tests and benchmarks that drive the real node components."""
