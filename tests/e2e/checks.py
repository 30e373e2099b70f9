"""The e2e tests' checks: each prints `ok` or `FAIL` with what it checked, failures are collected,
and verdict() ends the test with its exit code. Also what the tests on a tools/stack Stack share:
waiting for a condition, reading a hub or spoke Application, and running the checks with the stack
stopped at the end. Python 3 standard library and tools/stack's mmi_stack (the importing test puts
tools/stack on sys.path first)."""

from __future__ import annotations

import time
from typing import Callable

from mmi_stack import APP_API, ARGO_NAMESPACE, KubeError, Stack, StackError

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


def run_checks(stack: Stack, run: Callable[[], None], failed: str, where_to_look: str) -> int:
    """Runs `run()`; a StackError ends it as the failed check "<failed>: <error>". The stack is
    stopped in any case; then the verdict."""
    try:
        run()
    except StackError as e:
        check(False, f"{failed}: {e}")
    finally:
        stack.stop()
    return verdict(where_to_look)


def wait_for(what: str, pred, timeout: float, interval: float = 0.5):
    """pred()'s first truthy value, polled every `interval` s; StackError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise StackError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def app_path(name: str) -> str:
    return f"{APP_API}/namespaces/{ARGO_NAMESPACE}/applications/{name}"


def get_app(client, name: str) -> dict | None:
    """Application `name` from a hub or spoke client; None when it does not exist."""
    try:
        return client.request("GET", app_path(name))
    except KubeError as e:
        if e.status == 404:
            return None
        raise


def hub_app(stack: Stack, name: str) -> dict | None:
    return get_app(stack.hub, name)
