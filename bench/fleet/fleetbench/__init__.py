"""Helpers of bench/fleet/fleet_bench.py (Python 3 standard library only)."""
