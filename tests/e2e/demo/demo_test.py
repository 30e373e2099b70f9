#!/usr/bin/env python3
"""e2e_demo: runs `scripts/demo --exit` with N clusters and checks what it claims.

Asserts the exit code, the JSON summary (every Application created, dispatched and Synced+Healthy
on the hub, one cluster secret per cluster and none for local-cluster, the acm-placement
ConfigMap, GitOpsCluster Ready), that the joining cluster's Application reached its agent and left
it again (seconds printed, not asserted), and that no process the demo started is still running. With
--secure (mTLS with the examples' mosquitto ACL, PostgreSQL over TLS with verify-full), also that
every log of the run was searched and holds none of the DSN password, the hub token and the
private keys.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, verdict  # noqa: E402


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not running (reaped by init later).
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def started_pids(work_dir: str) -> dict[int, str]:
    pids: dict[int, str] = {}
    with open(os.path.join(work_dir, "stack.json"), encoding="utf-8") as f:
        state = json.load(f)
    for name, proc in state.get("processes", {}).items():
        pids[int(proc["pid"])] = name
    watchdog = os.path.join(work_dir, "watchdog.pid")
    if os.path.exists(watchdog):
        with open(watchdog, encoding="utf-8") as f:
            text = f.read().strip()
        if text.isdigit():
            pids[int(text)] = "watchdog"
    for peer in state.get("peer_dirs", []):
        # tests/peers/bin/stop empties <peer>/pids; the env file keeps the PIDs.
        env = os.path.join(peer, "env")
        if not os.path.exists(env):
            continue  # its start script failed before writing it (the demo failed already)
        with open(env, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                if key.endswith("_PID") and value.isdigit():
                    pids[int(value)] = f"{os.path.basename(peer)}:{key}"
    return pids


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--demo", required=True)
    p.add_argument("--build-dir", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--clusters", type=int, default=10)
    p.add_argument("--transport", default="mqtt")
    p.add_argument("--secure", action="store_true")
    args = p.parse_args()
    n = args.clusters
    os.makedirs(os.path.dirname(args.work_dir), exist_ok=True)
    summary_path = args.work_dir + "-summary.json"
    if os.path.exists(summary_path):
        os.remove(summary_path)

    cmd = [args.demo, "--exit", "--clusters", str(n), "--transport", args.transport,
           "--build-dir", args.build_dir, "--work-dir", args.work_dir, "--summary-json", summary_path]
    if args.secure:
        cmd.append("--secure")
    print("running: " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    demo = subprocess.Popen(cmd)
    try:
        rc = demo.wait(timeout=780)
    except subprocess.TimeoutExpired:
        # SIGTERM: the demo stops its stack and writes its summary; SIGKILL only if it hangs.
        demo.send_signal(signal.SIGTERM)
        try:
            demo.wait(timeout=90)
        except subprocess.TimeoutExpired:
            demo.kill()
            demo.wait()
        rc = None
        check(False, "scripts/demo finished within 780 s")
    print(f"demo exited with {rc} after {time.monotonic() - t0:.0f}s", flush=True)

    check(rc == 0, "scripts/demo exit code is 0")
    check(os.path.exists(summary_path), f"summary written to {summary_path}")
    if os.path.exists(summary_path):
        with open(summary_path, encoding="utf-8") as f:
            s = json.load(f)
        check(s.get("ok") is True and s.get("reason") == "", f"summary ok (reason: {s.get('reason')!r})")
        check(s.get("exit_code") == rc, "summary records the exit code")
        check(s.get("clusters") == n, f"{n} clusters simulated")
        check(s.get("applications_created") == n, f"{n} Applications created (got {s.get('applications_created')})")
        check(s.get("applications_on_hub") == n, f"{n} Applications on the hub (got {s.get('applications_on_hub')})")
        check(s.get("applications_dispatched") == n,
              f"{n} Applications dispatched (got {s.get('applications_dispatched')})")
        check((s.get("dispatch_events") or {}).get("create") == n,
              f"{n} create events accepted by the broker (got {s.get('dispatch_events')})")
        hs = s.get("hub_status") or {}
        check(hs.get("by_sync") == {"Synced": n}, f"hub sync status: {hs.get('by_sync')}")
        check(hs.get("by_health") == {"Healthy": n}, f"hub health status: {hs.get('by_health')}")
        check(hs.get("synced_healthy") == n, f"{n} Synced+Healthy")
        check(s.get("cluster_secrets") == n, f"{n} cluster secrets (got {s.get('cluster_secrets')})")
        check(s.get("local_cluster_secret") is False, "no cluster secret for local-cluster")
        cm = s.get("acm_placement_configmap") or {}
        check(cm.get("kind") == "placementdecisions" and cm.get("matchKey") == "clusterName",
              f"acm-placement ConfigMap: {cm}")
        check((s.get("gitopscluster_conditions") or {}).get("Ready") == "True",
              f"GitOpsCluster Ready: {s.get('gitopscluster_conditions')}")
        check((s.get("status_writes") or {}).get("ok", 0) >= n, f"status-sink wrote: {s.get('status_writes')}")
        check(set((s.get("metrics_urls") or {}).keys()) == {"dispatcher", "status-sink", "fleet-sim"},
              "metrics URLs of the three processes")
        # The last act: a cluster joins the Placement and leaves it; only "it happened" is
        # asserted, the seconds are printed (never a timing assertion).
        jl = s.get("join_leave") or {}
        print(f"join and leave: {json.dumps(jl, sort_keys=True)}", flush=True)
        for key in ("join_agent_seconds", "join_hub_synced_healthy_seconds", "leave_agent_seconds",
                    "leave_finalizer_seconds"):
            check(isinstance(jl.get(key), (int, float)), f"join and leave: {key} measured")
        check(jl.get("generated") == 1 and jl.get("deleted") == 1,
              f"the ApplicationSet stand-in generated and deleted the joining cluster's Application: {jl}")
        check(jl.get("refreshes_taken", 0) >= 2 and jl.get("appset_refreshes", 0) >= jl.get("refreshes_taken", 0),
              f"the GitOpsCluster controller refreshed the ApplicationSet on the join and the leave: {jl}")
        if args.transport == "grpc":
            m = s.get("maestro") or {}
            print(f"maestro: {json.dumps(m, sort_keys=True)}", flush=True)
            check(m.get("resource_bundles") == n and not m.get("missing_ids") and not m.get("unexpected_ids"),
                  f"Maestro's REST API lists {n} resource bundles with the dispatcher's ids: {m}")
            check(not m.get("without_status"), "every resource bundle in Maestro has a status")
            check(m.get("statuses_received", 0) >= n, "statuses came back to the sink through the gRPC subscription")
            check(m.get("left_cluster_bundle_http") == 404, "the left cluster's resource bundle is deleted in Maestro")
            r = m.get("restart") or {}
            check(r.get("dispatches_after_restart") == 0 and r.get("bundles_changed") == [],
                  f"restarting the services republished nothing: {r}")
            r = m.get("maestro_restart") or {}
            check(r.get("dispatches_after_restart") == 0 and r.get("bundles_changed") == [],
                  f"killing and restarting Maestro republished nothing, the publisher came back: {r}")
        scan = s.get("secrets_in_logs") or {}
        check(scan.get("files", 0) >= 5, f"the run's logs were searched for secrets ({scan.get('files')} files)")
        check("hub token" in scan.get("secrets", []), f"searched for the hub token: {scan.get('secrets')}")
        if args.secure:
            check(s.get("secure") is True, "the demo ran secure (mTLS + ACL, PostgreSQL verify-full)")
            check("postgres password" in scan.get("secrets", []),
                  f"searched for the DSN password: {scan.get('secrets')}")
            keys = [k for k in scan.get("secrets", []) if k.startswith("private key")]
            check(len(keys) == 3, f"searched for the three processes' private keys: {keys}")
        check(scan.get("hits") == [], f"no secret in any log: {scan.get('hits')}")
    if os.path.exists(os.path.join(args.work_dir, "stack.json")):
        pids = started_pids(args.work_dir)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = {pid: name for pid, name in pids.items() if alive(pid)}
        check(len(pids) >= 6, f"the demo recorded its processes ({len(pids)})")
        check(not left, f"every process the demo started is stopped (still running: {left})")
    else:
        check(False, "stack.json written by the demo")

    return verdict(f"logs: {args.work_dir}/logs/")


if __name__ == "__main__":
    sys.exit(main())
