#!/usr/bin/env python3
"""e2e_chart: the Helm chart installed for real onto a one-node cluster whose pods run the image.

The hub kube-apiserver, PostgreSQL and mosquitto start as in the demo (tools/stack/mmi_stack/);
tests/peers/bin/start-node joins a node to the hub (containerd + runc, kubelet, kube-scheduler,
kube-controller-manager, kube-proxy; pods in network namespaces on a bridge); the image built from
the Dockerfile (tests/peers/build/image.sh, cached by source tree) is loaded into the node's
containerd. Then, exactly as charts/multicluster-maestro-integrations/README.md ("Install")
says:

  1. the DSN Secret, `helm install --wait` with examples/values-mqtt.yaml plus values: both
     Deployments Ready through their real probes, no container restarted, the services talk to
     the hub with their ServiceAccounts' tokens (no admin credentials in the pods; any
     "forbidden" in their logs fails the test);
  2. Prometheus scrapes both pods through the chart's metrics Services (ClusterIPs routed by
     kube-proxy);
  3. tools/fleet-sim plays the agents of N clusters, the GitOpsCluster controller writes their
     cluster secrets, Argo CD's real ApplicationSet controller (on the hub: start-argocd) generates
     one Application per cluster and ApplicationSet of examples/ and every one becomes Synced and
     Healthy on the hub; one cluster leaves the placement, the controller deletes its
     Applications and their deletion is confirmed (agent, then hub);
  4. `helm upgrade` with a changed value rolls both pods, and the new dispatcher republishes
     nothing (the agents receive no spec event);
  5. `helm uninstall --wait` leaves no object of the release and no container on the node.

Prints what each step took. Exit 0 only when every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import urllib.parse
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools", "stack"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from mmi_stack import (APP_API, ARGO_NAMESPACE, RELEASE_NAME, RELEASE_NAMESPACE, Stack, StackConfig,  # noqa: E402
                       StackError, metric_sum, prepare_work_dir)
from pods import INSTANCE, ChartOnNode, image_facts, run, start_node  # noqa: E402
from checks import check, verdict, wait_for  # noqa: E402


timings: dict[str, float] = {}


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wait_until(what: str, timeout: float, fn, interval: float = 0.5):
    """checks.wait_for with the timeout before the condition, as this test's calls give them."""
    return wait_for(what, fn, timeout, interval)


class Step:
    """with Step("name"): ... records how long the block took in `timings`."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.t0 = time.monotonic()
        say(f"--- {self.name}")
        return self

    def __exit__(self, *exc):
        timings[self.name] = round(time.monotonic() - self.t0, 1)
        say(f"--- {self.name}: {timings[self.name]}s")


def check_pods(cl: ChartOnNode, when: str) -> None:
    """No container restarted, and no request of either service was forbidden by RBAC."""
    for c in ("dispatcher", "status-sink"):
        pod = cl.pod_of(c)
        restarts = sum(s.get("restartCount", 0) for s in pod["status"].get("containerStatuses") or [])
        check(restarts == 0, f"{c} ({when}): no container restart")
        denied = [line for line in cl.pod_logs(pod).splitlines() if re.search(r"forbidden|\b403\b", line, re.I)]
        check(not denied, f"{c} ({when}): no request forbidden by RBAC in its log {denied[:2]}")


def fleet_metric(stack: Stack, name: str) -> int:
    return int(metric_sum(stack.metrics("fleet-sim"), name))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", required=True, help="build tree with tools/fleet-sim/fleet-sim")
    p.add_argument("--work-dir", required=True)
    p.add_argument("--clusters", type=int, default=10)
    p.add_argument("--timeout", type=float, default=300, help="bound of each wait on the system")
    p.add_argument("--image", nargs=2, metavar=("REF", "ARCHIVE"),
                   help="use this image archive instead of build/image.sh's (a local iteration)")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("e2e_chart needs root (containerd, network namespaces, iptables)", file=sys.stderr)
        return 1
    n = args.clusters
    t_start = time.monotonic()

    with Step("image (build/image.sh: built, or cached by source tree)"):
        img = ({"MMI_IMAGE": args.image[0], "MMI_IMAGE_ARCHIVE": args.image[1]} if args.image
               else image_facts())
        say(f"image {img['MMI_IMAGE']} ({os.path.getsize(img['MMI_IMAGE_ARCHIVE']) / 2**20:.0f} MiB archive)")

    prepare_work_dir(args.work_dir)
    stack = Stack(StackConfig(work_dir=args.work_dir, build_dir=args.build_dir, clusters=n, transport="mqtt",
                              argocd=True))
    try:
        stack.binary("fleet-sim")
        with Step("peers (hub, PostgreSQL, mosquitto)"):
            stack.start_peers()
        with Step("node (start-node: containerd, kubelet, scheduler, controller-manager, kube-proxy)"):
            # Registered with the stack: its stop() and watchdog tear the node down first.
            node = start_node(stack, img)
        say(f"node {node['NODE_NAME']} Ready; pods reach this machine at {node['NODE_HOST_ADDRESS']}")
        cl = ChartOnNode(stack, node, img["MMI_IMAGE"], log=say)
        stack.create_managed_clusters()
        stack.apply_examples()

        # ---- 1. install ----------------------------------------------------------------------
        with Step("helm install --wait (both Deployments Ready)"):
            check(node["NODE_HOST_ADDRESS"] in cl.dsn(), "the DSN names the node's host address")
            cl.install()
        pods = {c: cl.pod_of(c) for c in ("dispatcher", "status-sink")}
        for c, pod in pods.items():
            st = pod["status"]
            ready = {x["type"]: x["status"] for x in st.get("conditions") or []}.get("Ready")
            check(ready == "True", f"{c} pod {pod['metadata']['name']} Ready on {pod['spec'].get('nodeName')}")
            ctr = pod["spec"]["containers"][0]
            check(ctr["readinessProbe"]["httpGet"]["path"] == "/readyz"
                  and ctr["livenessProbe"]["httpGet"]["path"] == "/healthz", f"{c}: real HTTP probes")
            check(ctr["image"] == img["MMI_IMAGE"], f"{c} runs {ctr['image']}")
            sc = ctr.get("securityContext") or {}
            check(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
                  and (pod["spec"].get("securityContext") or {}).get("runAsUser") == 65532,
                  f"{c}: read-only root, no privilege escalation, uid 65532")
            env_names = {e["name"] for e in ctr.get("env") or []}
            check("KUBECONFIG" not in env_names, f"{c}: no kubeconfig, the ServiceAccount token is its hub credential")
            check(pod["spec"].get("serviceAccountName", "").endswith(c),
                  f"{c} runs as ServiceAccount {pod['spec'].get('serviceAccountName')}")
            mounts = [m["mountPath"] for m in ctr.get("volumeMounts") or []]
            check("/var/run/secrets/kubernetes.io/serviceaccount" in mounts, f"{c}: ServiceAccount token mounted")
        for lease, c in (("mmi-dispatcher", "dispatcher"), ("mmi-status-sink", "status-sink")):
            holder = wait_until(f"Lease {lease} held", args.timeout, lambda l=lease: (cl.kubectl_json(
                "-n", RELEASE_NAMESPACE, "get", "lease", l).get("spec") or {}).get("holderIdentity"), 1)
            check(holder.split("_")[0] == pods[c]["metadata"]["name"], f"Lease {lease} held by the pod ({holder})")

        # ---- 2. Prometheus through the Services ------------------------------------------------
        with Step("Prometheus scrapes both pods through the chart's Services"):
            targets = {c: cl.metrics_service(c) for c in ("dispatcher", "status-sink")}
            prom = stack.start_peer("start-prometheus", "prometheus",
                                     "TARGET=" + ",".join(targets.values()), "SCRAPE_INTERVAL=1s")

            def scraped() -> dict:
                q = urllib.parse.quote("mmi_leader_election_is_leader")
                try:
                    with urllib.request.urlopen(f"{prom['PROMETHEUS_URL']}/api/v1/query?query={q}", timeout=5) as r:
                        res = json.load(r)["data"]["result"]
                except OSError:
                    return {}
                return {r["metric"]["instance"]: float(r["value"][1]) for r in res} \
                    if {r["metric"]["instance"] for r in res} >= set(targets.values()) else {}
            got = wait_until("both Services scraped by Prometheus", 60, scraped, 1)
            for c, t in targets.items():
                check(got.get(t) == 1.0, f"Prometheus scraped {c} through Service {t}: leader {got.get(t)}")

        # ---- 3. the demo's flow ----------------------------------------------------------------
        with Step(f"fleet-sim, {n} Applications Synced and Healthy"):
            stack.start_fleet_sim()
            wait_until(f"{n} cluster secrets from the GitOpsCluster controller", args.timeout,
                       lambda: len(stack.cluster_secrets()) >= n, 1)
            appsets = sorted(a["metadata"]["name"] for a in stack.hub.list_all(
                f"{APP_API}/namespaces/{ARGO_NAMESPACE}/applicationsets"))
            k = n * len(appsets)
            counts = wait_until(f"{k} Applications generated and Synced and Healthy", args.timeout,
                                lambda: (lambda c: c if c["synced_healthy"] >= k else None)(stack.application_counts()), 0.5)
            check(counts["synced_healthy"] == k and counts["total"] == k,
                  f"every Application the ApplicationSet controller generated ({', '.join(appsets)} x {n}) "
                  f"Synced and Healthy on the hub: {counts}")
            d = cl.metrics("dispatcher")
            check(metric_sum(d, "mmi_dispatcher_dispatches_total", action="create", result="ok") == k,
                  f"{k} create events accepted by the broker")

        with Step("a cluster leaves: its Applications' deletion confirmed (agent, then the hub's finalizer)"):
            leaving = stack.cluster_name(1)
            victims = [f"{leaving}-{a}" for a in appsets]
            stack.deregister_cluster(leaving)
            stack.write_placement_decisions()
            wait_until(f"{', '.join(victims)} gone from the agent", args.timeout,
                       lambda: fleet_metric(stack, "mmi_fleet_sim_applications") <= k - len(victims), 0.5)
            wait_until(f"{', '.join(victims)} gone from the hub", args.timeout,
                       lambda: all(stack.hub.raw("GET", f"{APP_API}/namespaces/{ARGO_NAMESPACE}/applications/{v}")[0]
                                   == 404 for v in victims), 0.5)
            check(True, f"{', '.join(victims)} deleted by the ApplicationSet controller: the agent removed them "
                        "and the hub objects are gone")
            k -= len(victims)

        check_pods(cl, "before the upgrade")

        # ---- 4. upgrade ------------------------------------------------------------------------
        with Step("helm upgrade with a changed value (both pods roll, nothing republished)"):
            before = {c: cl.pod_of(c)["metadata"]["uid"] for c in ("dispatcher", "status-sink")}
            specs_before = fleet_metric(stack, "mmi_fleet_sim_specs_received_total")
            check(specs_before >= k + 2 * len(appsets),
                  f"the agents received {specs_before} spec events (creates and {len(appsets)} deletes)")
            cl.upgrade(["transport.mqtt.keepAlive=30s"])
            after = {}
            for c in before:
                pod = wait_until(f"the new {c} pod alone", args.timeout, lambda c=c: (lambda ps: ps[0] if len(ps) == 1
                                 and ps[0]["metadata"]["uid"] != before[c] else None)(
                    [x for x in cl.pods() if x["metadata"]["labels"].get("app.kubernetes.io/component") == c]), 1)
                after[c] = pod["metadata"]["uid"]
                check(after[c] != before[c], f"{c} rolled to pod {pod['metadata']['name']}")
            wait_until("the new dispatcher leads and tracks every Application", args.timeout,
                       lambda: (lambda m: metric_sum(m, "mmi_leader_election_is_leader") == 1
                                and metric_sum(m, "mmi_dispatcher_tracked_resources") == k)(cl.metrics("dispatcher")), 1)
            wait_until("the new status sink leads", args.timeout,
                       lambda: metric_sum(cl.metrics("status-sink"), "mmi_leader_election_is_leader") == 1, 1)
            time.sleep(10)  # a window in which a republish would show
            d = cl.metrics("dispatcher")
            published = metric_sum(d, "mmi_dispatcher_dispatches_total") + metric_sum(d, "mmi_events_published_total")
            check(published == 0, f"the new dispatcher published nothing ({published:.0f} dispatches and events)")
            check(fleet_metric(stack, "mmi_fleet_sim_specs_received_total") == specs_before,
                  "the agents received no spec event after the upgrade")
            counts = stack.application_counts()
            check(counts["synced_healthy"] == k, f"still every Application Synced and Healthy: {counts}")

        check_pods(cl, "after the upgrade")

        # ---- 5. uninstall ----------------------------------------------------------------------
        with Step("helm uninstall --wait leaves nothing behind"):
            cl.helm_run(["uninstall", RELEASE_NAME, "-n", RELEASE_NAMESPACE, "--wait", "--timeout", "3m"])
            wait_until("the release's pods gone", args.timeout, lambda: not cl.pods(), 1)
            left = stack.kubectl("-n", RELEASE_NAMESPACE, "get",
                                 "all,configmaps,secrets,serviceaccounts,roles,rolebindings,endpointslices",
                                 "-l", INSTANCE, "-o", "name").split()
            left += stack.kubectl("get", "clusterroles,clusterrolebindings", "-l", INSTANCE, "-o", "name").split()
            check(not left, f"no object of the release is left: {left}")
            check(not run([cl.helm, "list", "-n", RELEASE_NAMESPACE, "-q"], env=cl.env).strip(), "helm lists no release")
            ctr = ["ctr", "--address", node["CONTAINERD_ADDRESS"], "--namespace", "k8s.io"]
            running = wait_until("no container running on the node", 60, lambda: (lambda out: out if not [
                l for l in out.splitlines()[1:] if "RUNNING" in l] else None)(run([*ctr, "tasks", "ls"])) or "none", 1)
            check(True, f"no container runs on the node ({running.strip().splitlines()[0] if running else ''})")
            leases = stack.kubectl("-n", RELEASE_NAMESPACE, "get", "leases", "-o", "name").split()
            say(f"left by the services (not chart objects): Leases {leases}, "
                f"{len(stack.cluster_secrets())} Argo CD cluster secrets")
    except StackError as e:
        check(False, f"{e}")
    finally:
        say("stopping fleet-sim, the node and the peers ...")
        t0 = time.monotonic()
        stack.stop()
        timings["stop"] = round(time.monotonic() - t0, 1)
    timings["total"] = round(time.monotonic() - t_start, 1)
    print("\ntimings (s): " + json.dumps(timings, indent=1), flush=True)
    return verdict(f"logs: {args.work_dir}/logs/, pod logs: {args.work_dir}/peers/node/pod-logs/")


if __name__ == "__main__":
    sys.exit(main())
