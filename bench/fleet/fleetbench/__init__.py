"""The parts of bench/fleet/fleet_bench.py (Python 3 standard library only); the Files table of
bench/fleet/README.md says what each module holds."""
