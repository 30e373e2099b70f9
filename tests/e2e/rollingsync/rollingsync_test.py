#!/usr/bin/env python3
"""e2e_rollingsync: examples/applicationset-rollingsync.yaml rolled out step by step.

The whole system as local processes (tools/stack: real hub, PostgreSQL, mosquitto, both services
configured from the chart, fleet-sim with `--sync-model argocd`, so a spoke with `automated` off
reports OutOfSync until an `operation` arrives), with Argo CD's real ApplicationSet controller
(v3.2.11, progressive syncs on) generating the Applications and driving the rollout: it takes
`automated` off every generated Application and writes an `operation` on the step being rolled
out. Checks, from the hub as a watch saw it (mmi_stack.AppWatch):
  * no Application synced before its step's operation was written (nothing synced by itself);
  * step 2's operations were written, and step 2's Applications started syncing, only after every
    Application of step 1 was Healthy on the hub;
  * every Application showed Progressing before Healthy on the hub (the writes are counted);
  * the dispatcher removed every `operation` from the hub, and every Application ends Synced,
    Healthy, operationState Succeeded, Healthy in the ApplicationSet's status.
Seconds are printed, never asserted.
"""

import argparse
import json
import os
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools", "stack"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from mmi_stack import AppWatch, Stack, StackConfig, StackError, app_view, metric_sum, prepare_work_dir  # noqa: E402
from checks import check, run_checks  # noqa: E402

APPSET = "guestbook-rolling"
def first(timeline, app: str, pred, after: float = 0.0) -> float | None:
    """Time of the first hub status of `app` (at or after `after`) for which pred(sync, health, phase)."""
    for t, name, sync, health, phase in timeline:
        if name == app and t >= after and pred(sync, health, phase):
            return t
    return None


def run(stack: Stack, n: int, timeout: float) -> None:
    stack.start_peers()
    stack.create_managed_clusters()
    with AppWatch(stack) as watch:
        stack.apply_examples()
        stack.start_dispatcher()
        stack.start_status_sink()
        stack.start_fleet_sim()
        deadline = time.monotonic() + timeout
        while len(stack.cluster_secrets()) < n:
            if time.monotonic() > deadline:
                raise StackError("the GitOpsCluster controller did not write the cluster secrets")
            time.sleep(0.5)

        apps = [f"{c}-{APPSET}" for c in stack.cluster_names()]
        step1, step2 = apps[:1], apps[1:]  # the example's step 1 is cluster-0001
        t0 = time.monotonic()
        while True:
            status = watch.application_status(APPSET)
            views = {a: app_view(watch.app(a) or {}) for a in apps}
            if len(status) == n and all(e.get("status") == "Healthy" for e in status.values()) and \
                    all(v == ("Synced", "Healthy", "Succeeded") for v in views.values()):
                break
            if time.monotonic() > deadline:
                raise StackError(f"rollout not finished in {timeout:.0f}s: applicationStatus "
                                 f"{json.dumps(status)}, hub {views}, events {watch.events[-10:]}")
            time.sleep(0.5)
        print(f"rolled out {n} Applications in {time.monotonic() - t0:.1f}s", flush=True)
        timeline, events = list(watch.timeline), list(watch.events)
        final = {a: watch.app(a) or {} for a in apps}
        appset_status = watch.application_status(APPSET)

    def rel(t):
        return None if t is None else round(t - t0, 2)

    ops = {}
    for t, what, a in events:
        if what == "operation" and a not in ops:
            ops[a] = t
    for t, name, sync, health, phase in timeline:
        if name in apps:
            print(f"  {rel(t):7.2f}s {name}: sync {sync or '-'} health {health or '-'} operation {phase or '-'}")
    for t, what, a in events:
        if a in apps:
            print(f"  {rel(t):7.2f}s hub: {a} {what}")

    check(set(ops) == set(apps), f"the ApplicationSet controller wrote an operation on every Application: {sorted(ops)}")
    for a in apps:
        synced = first(timeline, a, lambda s, h, p: s == "Synced" or p != "")
        check(first(timeline, a, lambda s, h, p: s == "OutOfSync") is not None,
              f"{a} reported OutOfSync before its sync")
        check(synced is not None and a in ops and synced > ops[a],
              f"{a} synced only after its operation (operation {rel(ops.get(a))}s, first sync {rel(synced)}s)")
        healthy = first(timeline, a, lambda s, h, p: h == "Healthy" and s == "Synced")
        progressing = first(timeline, a, lambda s, h, p: h == "Progressing", ops.get(a, 0))
        check(progressing is not None and healthy is not None and progressing < healthy,
              f"{a} showed Progressing ({rel(progressing)}s) before Healthy ({rel(healthy)}s) on the hub")
        check("operation" not in final[a], f"{a}: the dispatcher removed the operation from the hub")
        automated = ((final[a].get("spec") or {}).get("syncPolicy") or {}).get("automated")
        # Argo CD v3.2 removes `automated` from RollingSync Applications (3.5 writes enabled: false).
        check(automated is None or automated.get("enabled") is False,
              f"{a}: automated sync off, as RollingSync sets it (got {automated})")
        check((appset_status.get(a) or {}).get("status") == "Healthy",
              f"{a}: Healthy in the ApplicationSet's applicationStatus ({appset_status.get(a)})")
    step1_healthy = max(first(timeline, a, lambda s, h, p: s == "Synced" and h == "Healthy" and p == "Succeeded")
                        or float("inf") for a in step1)
    for a in step2:
        started = first(timeline, a, lambda s, h, p: s == "Synced" or p != "")
        check(ops.get(a, 0) > step1_healthy,
              f"{a}: step 2 operation ({rel(ops.get(a))}s) after step 1 Healthy ({rel(step1_healthy)}s)")
        check(started is not None and started > step1_healthy,
              f"{a}: step 2 began syncing ({rel(started)}s) after step 1 Healthy ({rel(step1_healthy)}s)")
    progressing_writes = sum(1 for _, name, _, h, _ in timeline if h == "Progressing" and name in apps)
    sink = stack.metrics("status-sink")
    injected = int(metric_sum(sink, "mmi_status_progressing_writes_total", result="ok"))
    print(f"Progressing-before-Healthy: {progressing_writes} hub states Progressing seen "
          f"({injected} written by the sink ahead of a Healthy the spoke reported directly)", flush=True)
    check(progressing_writes >= n, f"at least one Progressing state per Application ({progressing_writes})")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--build-dir", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--clusters", type=int, default=3)
    p.add_argument("--timeout", type=float, default=300)
    args = p.parse_args()
    prepare_work_dir(args.work_dir)
    stack = Stack(StackConfig(work_dir=args.work_dir, build_dir=args.build_dir, clusters=args.clusters,
                              ready_timeout=180, argocd=True,
                              fleet_args=["--sync-model", "argocd", "--auto-sync-delay", "1",
                                          "--operation-duration", "2"]))
    return run_checks(stack, lambda: run(stack, args.clusters, args.timeout), "the rollout ran",
                      f"logs: {args.work_dir}/logs/")


if __name__ == "__main__":
    sys.exit(main())
