"""The e2e tests' checks: each prints `ok` or `FAIL` with what it checked, failures are collected,
and verdict() ends the test with its exit code. Python 3 standard library only."""

from __future__ import annotations

failures: list[str] = []


def check(cond: bool, what: str) -> bool:
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def verdict(where_to_look: str) -> int:
    """1 with the number of failed checks and `where_to_look` (the logs), else 0."""
    if failures:
        print(f"\n{len(failures)} check(s) failed; {where_to_look}", flush=True)
        return 1
    print("\nall checks passed", flush=True)
    return 0
