#!/usr/bin/env python3
"""The fault matrix (issue #19 item 2, ctest label `fault`): the whole system under load, one
fault at a time, each followed by a convergence check counted per Application.

One stack per transport (tools/stack/mmi_stack/: hub kube-apiserver + etcd, PostgreSQL,
mosquitto or Kafka, both services from the Helm chart, fleet-sim playing the agents of N
clusters with Argo CD's status churn; for grpc the real Maestro server, its database in the same
PostgreSQL, between the services and mosquitto, where fleet-sim's agents are). Setup: N ManagedClusters, the examples, A ApplicationSets
and the N x A Applications they would generate, created through the API. Then, for each fault:

  1. a mutator thread creates, changes (spec.source.targetRevision) and deletes Applications on
     the hub before, during and right after the fault;
  2. the fault is injected and lifted (kill -9 and restart a service, restart or pause a peer,
     throttle the services' hub user with API Priority and Fairness, ...);
  3. from the moment it is lifted, the harness polls until the system has converged or
     --timeout passes, and counts per Application, from the hub (a full LIST) and from the
     agents' ground truth (fleet-sim's snapshot, `--state-file` + SIGUSR1):
       lost  - a hub Application whose spec never reached its agent; a deleted Application still
               on its agent or still on the hub (finalizer not released)
       stale - the agent holds an older spec than the hub; or the hub status (sync, health,
               revision) differs from the last status the agent reported (reports younger than
               --inflight-seconds at the time of the hub LIST are in flight, not stale)
       duplicates - spec events an agent received whose resourceversion it already held (or
               older), summed over the fault's window (informational)
     plus the dispatcher's outbox (mmi_dispatcher_outbox_pending and the outbox table), which
     must be empty. recovery_s = from the fault's end to the first converged poll.
     Pass = converged: 0 lost, 0 stale, outbox empty.

A fault's check must pass (or time out) before the next fault starts. The report is JSON
(--json) and a Markdown table (--markdown). Exit code 0 only when every fault passed. Python 3
standard library only.

    tests/fault/fault_matrix.py --transport mqtt --json /tmp/fault-mqtt.json
    tests/fault/fault_matrix.py --transport kafka --faults broker_restart,status_sink_kill9
    tests/fault/fault_matrix.py --transport grpc --clusters 10 --appsets 30   # 300 Applications
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import traceback

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tools", "stack"))

from mmi_stack import (APP_API, ARGO_NAMESPACE, SERVICE_USERS_GROUP, KubeError,  # noqa: E402
                       Stack, StackConfig, StackError, metric_sum, parse_prometheus)

NS = ARGO_NAMESPACE
CLUSTER_ANNOTATION = "apps.open-cluster-management.io/ocm-managed-cluster"
THROTTLE_NAME = "mmi-fault-throttle"
FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"

# Every fault, in the order they run. kafka runs the subset in KAFKA_FAULTS.
MQTT_FAULTS = [
    "dispatcher_kill9", "status_sink_kill9", "broker_restart", "broker_restart_agents_first",
    "broker_pause_60s",
    "postgres_restart", "kube_apiserver_restart", "hub_throttle_60s", "etcd_compact_during_relist",
    "fleet_sim_restart", "fleet_sim_restart_dispatcher_down",
]
KAFKA_FAULTS = ["broker_restart", "status_sink_kill9"]
# grpc: the services on the real Maestro server's gRPC source API, fleet-sim's agents behind it on
# mosquitto. The hub-side faults (kube-apiserver restart, etcd compaction) do not depend on the
# transport and run in the mqtt row; the faults of the dispatcher's own MQTT session
# (broker_restart_agents_first, broker_pause_60s) have no counterpart: Maestro is the one on
# mosquitto, and maestro_kill9 stands for the loss of the services' broker.
GRPC_FAULTS = [
    "dispatcher_kill9", "status_sink_kill9", "maestro_kill9", "postgres_restart", "broker_restart",
    "hub_throttle_60s", "fleet_sim_restart", "fleet_sim_restart_dispatcher_down",
]
FAULTS = {"mqtt": MQTT_FAULTS, "kafka": KAFKA_FAULTS, "grpc": GRPC_FAULTS}

DESCRIPTIONS = {
    "dispatcher_kill9": "kill -9 of the dispatcher while it publishes a 10% change, restarted",
    "status_sink_kill9": "kill -9 of the status sink while it writes statuses, restarted",
    "broker_restart": "broker restarted on the same ports (mosquitto keeps no sessions: persistence false)",
    "broker_restart_agents_first": "agents paused while the broker accepts updates for them, broker restarted "
                                   "(those updates lost with it), agents back and asking for their specs "
                                   "5 s before the dispatcher resubscribes",
    "broker_pause_60s": "broker paused 60 s (SIGSTOP/SIGCONT)",
    "postgres_restart": "PostgreSQL restarted (fast shutdown, same port and data)",
    "kube_apiserver_restart": "hub kube-apiserver restarted (etcd stays up)",
    "hub_throttle_60s": "hub throttling for 60 s: APF FlowSchema for the services' users, 1 share, Reject",
    "etcd_compact_during_relist": "dispatcher killed and restarted; etcd compacted every ~0.3 s until it is ready",
    "fleet_sim_restart": "fleet-sim killed and restarted with empty state (agents reconnect, spec resync)",
    "fleet_sim_restart_dispatcher_down": "dispatcher down; fleet-sim killed and restarted with empty state "
                                         "(its spec resync unanswered); dispatcher restarted 10 s later",
    "maestro_kill9": "kill -9 of the Maestro server while the dispatcher publishes a 10% change to it, "
                     "started again on the same ports (restart-maestro)",
}
# Where the grpc stack differs: one PostgreSQL holds our database and Maestro's; mosquitto sits
# between Maestro and the agents, and the services do not use it.
GRPC_DESCRIPTIONS = {
    "broker_restart": "mosquitto between Maestro and the agents restarted on the same port (no sessions kept)",
    "postgres_restart": "PostgreSQL restarted (fast shutdown, same port and data): our database and "
                        "Maestro's, the same server here",
    "fleet_sim_restart_dispatcher_down": "dispatcher down; fleet-sim killed and restarted with empty state "
                                         "(Maestro answers its spec resync from its database); dispatcher "
                                         "restarted 10 s later",
}


def description(fault: str, transport: str) -> str:
    if transport == "grpc" and fault in GRPC_DESCRIPTIONS:
        return GRPC_DESCRIPTIONS[fault]
    return DESCRIPTIONS[fault]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())}] {msg}", flush=True)


class FaultMatrix:
    def __init__(self, args: argparse.Namespace, stack: Stack):
        self.args = args
        self.stack = stack
        self.rng = random.Random(args.seed)
        self.names_lock = threading.Lock()
        self.live: dict[str, str] = {}  # Application name -> cluster, as the harness made them
        self.deleted_ever: set[str] = set()
        self.results: list[dict] = []
        self.fault_index = 0
        # Applications an earlier fault left lost or stale: not counted again by later faults
        # (reported as carried_over), so that each row shows what its own fault did.
        self.carried: set[str] = set()
        self.maestro_exits = 0  # grpc: times the Maestro server exited by itself

    # ---- setup --------------------------------------------------------------------------------

    def appsets(self) -> list[str]:
        return [f"appset-{i:03d}" for i in range(self.args.appsets)]

    def setup(self) -> dict:
        st = self.stack
        t0 = time.monotonic()
        log(f"starting peers ({self.args.transport}) under {self.args.work_dir}")
        st.start_peers()
        st.create_managed_clusters()
        st.apply_examples()
        example = json.loads(st.kubectl("create", "--dry-run=client", "-o", "json", "-f",
                                        os.path.join(REPO_ROOT, "examples", "applicationset.yaml")))
        items = []
        for i, name in enumerate(self.appsets()):
            obj = json.loads(json.dumps(example))
            obj["metadata"] = {"name": name, "namespace": NS}
            tmpl = obj["spec"]["template"]
            tmpl["metadata"]["name"] = "{{name}}-" + name
            tmpl["spec"]["source"]["path"] = f"guestbook-{i:03d}"
            items.append(obj)
        st.kubectl("apply", "--server-side", "--field-manager=fault-matrix", "-f", "-",
                   input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        log("starting the dispatcher, the status sink and fleet-sim")
        st.start_dispatcher()
        st.start_status_sink()
        st.start_fleet_sim()
        apps = [st.generated_application(a, c) for a in self.appsets() for c in st.cluster_names()]
        log(f"creating {len(apps)} Applications")
        t = time.monotonic()
        st.create_applications(apps, concurrency=self.args.write_threads)
        for app in apps:
            self.live[app["metadata"]["name"]] = app["metadata"]["annotations"][CLUSTER_ANNOTATION]
        created_s = time.monotonic() - t
        log(f"created in {created_s:.0f} s; waiting for the initial convergence")
        check = self.converge(time.monotonic(), before=None, deleted=set())
        if not check["converged"]:
            raise StackError(f"the initial fleet did not converge: {json.dumps(check['counts'])} "
                             f"examples {json.dumps(check['examples'])[:2000]}")
        return {"applications": len(apps), "create_s": round(created_s, 1),
                "initial_convergence_s": check["recovery_s"], "setup_s": round(time.monotonic() - t0, 1)}

    # ---- hub mutations ------------------------------------------------------------------------

    def _retry(self, fn, stop_at: float):
        """Runs a hub request until it succeeds (the hub may be down or throttled for a while)."""
        while True:
            try:
                return fn()
            except (KubeError, StackError, OSError, http.client.HTTPException) as e:
                if isinstance(e, KubeError) and e.status not in (0, 429, 500, 503, 504):
                    raise
                if time.monotonic() > stop_at:
                    raise
                time.sleep(0.5)

    def create_app(self, tag: str, stop_at: float) -> None:
        st = self.stack
        cluster = self.rng.choice(st.cluster_names())
        appset = self.rng.choice(self.appsets())
        app = st.generated_application(appset, cluster)
        name = f"{cluster}-{tag}"
        app["metadata"]["name"] = name
        app["spec"]["source"]["targetRevision"] = tag

        def post():
            status, text = st.hub.raw("POST", f"{APP_API}/namespaces/{NS}/applications", app)
            if status == 409:
                return
            if not 200 <= status < 300:
                raise KubeError("POST", name, status, text)
        self._retry(post, stop_at)
        with self.names_lock:
            self.live[name] = cluster

    def update_app(self, tag: str, stop_at: float) -> None:
        with self.names_lock:
            name = self.rng.choice(sorted(self.live))
        path = f"{APP_API}/namespaces/{NS}/applications/{name}"
        self._retry(lambda: self.stack.hub.request(
            "PATCH", path, {"spec": {"source": {"targetRevision": tag}}}, "application/merge-patch+json"),
            stop_at)

    def delete_app(self, stop_at: float) -> str:
        with self.names_lock:
            name = self.rng.choice(sorted(self.live))
            del self.live[name]
            self.deleted_ever.add(name)
        path = f"{APP_API}/namespaces/{NS}/applications/{name}"
        self._retry(lambda: self.stack.hub.request("DELETE", path, ok=(404,)), stop_at)
        return name

    def bulk_update(self, count: int, tag: str) -> int:
        """Changes `count` Applications at once (what an ApplicationSet change does)."""
        with self.names_lock:
            names = self.rng.sample(sorted(self.live), min(count, len(self.live)))
        stop_at = time.monotonic() + 300

        def one(name):
            # ok=404: the mutator may have deleted it meanwhile.
            path = f"{APP_API}/namespaces/{NS}/applications/{name}"
            self._retry(lambda: self.stack.hub.request(
                "PATCH", path, {"spec": {"source": {"targetRevision": tag}}},
                "application/merge-patch+json", ok=(404,)), stop_at)
        with concurrent.futures.ThreadPoolExecutor(self.args.write_threads) as pool:
            list(pool.map(one, names))
        return len(names)

    class Mutator:
        """Creates, changes and deletes Applications in a loop (2 changes : 1 create : 1 delete)
        until stopped; counts what it did and the deletions it issued."""

        def __init__(self, matrix: "FaultMatrix", prefix: str, interval: float):
            self.m, self.prefix, self.interval = matrix, prefix, interval
            self.stop_event = threading.Event()
            self.counts = {"created": 0, "updated": 0, "deleted": 0, "failed": 0}
            self.deleted: set[str] = set()
            self.errors: list[str] = []
            self.thread = threading.Thread(target=self.run, name="mutator", daemon=True)

        def run(self):
            k = 0
            while not self.stop_event.is_set():
                k += 1
                tag = f"{self.prefix}-{k:04d}"
                stop_at = time.monotonic() + 180
                try:
                    op = k % 4
                    if op in (0, 2):
                        self.m.update_app(tag, stop_at)
                        self.counts["updated"] += 1
                    elif op == 1:
                        self.m.create_app(tag, stop_at)
                        self.counts["created"] += 1
                    else:
                        self.deleted.add(self.m.delete_app(stop_at))
                        self.counts["deleted"] += 1
                except Exception as e:  # noqa: BLE001 - counted and reported
                    self.counts["failed"] += 1
                    self.errors.append(str(e)[:300])
                self.stop_event.wait(self.interval)

        def __enter__(self):
            self.thread.start()
            return self

        def __exit__(self, *exc):
            self.stop_event.set()
            self.thread.join()

    # ---- observation --------------------------------------------------------------------------

    def outbox(self) -> dict:
        st = self.stack
        pending = None
        if st.running("dispatcher"):
            try:
                pending = metric_sum(st.metrics("dispatcher"), "mmi_dispatcher_outbox_pending")
            except (StackError, OSError):
                pending = None
        try:
            rows = int(st.psql("SELECT count(*) FROM outbox").strip() or 0)
        except StackError:
            rows = None
        return {"metric": pending, "rows": rows}

    def duplicates_total(self, state: dict) -> dict[str, int]:
        out = {}
        for cluster, agent in state["clusters"].items():
            for w in agent["works"]:
                out[f"{cluster}/{w['id']}"] = int(w.get("duplicate_specs", 0))
        return out

    def check(self, deleted: set[str]) -> dict:
        """One poll: the hub's Applications (LIST first), then the agents' snapshot, then the
        outbox. Counts per Application."""
        st = self.stack
        listed_at = time.time()
        hub_apps = st.list_applications(NS)
        state = st.fleet_sim_state()
        outbox = self.outbox()
        inflight_after = listed_at - self.args.inflight_seconds
        # The agents' Applications by (cluster, name).
        held: dict[tuple[str, str], dict] = {}
        for cluster, agent in state["clusters"].items():
            for w in agent["works"]:
                for m in w.get("manifests", []):
                    if m.get("kind") == "Application":
                        held[(cluster, m["name"])] = w
        counts = {"lost_spec": 0, "stale_spec": 0, "stale_status": 0, "lost_delete": 0,
                  "orphan_on_agent": 0, "status_in_flight": 0}
        examples: dict[str, list] = {k: [] for k in counts}

        failing: set[str] = set()  # keys of what is lost or stale now (status in flight excluded)
        carried = 0

        def note(kind, item):
            nonlocal carried
            key = f"{item['app']}"
            if kind != "status_in_flight":
                failing.add(key)
                if key in self.carried:
                    carried += 1  # left lost or stale by an earlier fault: counted there
                    return
            counts[kind] += 1
            if len(examples[kind]) < 5:
                examples[kind].append(item)
        confirmed = {}  # ManifestWork name (<namespace>-<name>) -> deletions the agent confirmed
        for agent in state["clusters"].values():
            for d in agent.get("deleted", []):
                confirmed[d.get("work", "")] = d.get("confirmations", 0)
        hub_keys = set()
        for app in hub_apps:
            meta = app["metadata"]
            name = meta["name"]
            cluster = (meta.get("annotations") or {}).get(CLUSTER_ANNOTATION, "")
            hub_keys.add((cluster, name))
            if meta.get("deletionTimestamp"):
                note("lost_delete", {"app": name, "cluster": cluster, "finalizers": meta.get("finalizers"),
                                     "deletion_timestamp": meta.get("deletionTimestamp"),
                                     "still_on_agent": (cluster, name) in held,
                                     "agent_confirmed_deletions": confirmed.get(f"{NS}-{name}", 0),
                                     "deleted_in_this_fault": name in deleted})
                continue
            want = ((app.get("spec") or {}).get("source") or {}).get("targetRevision")
            w = held.get((cluster, name))
            if w is None:
                note("lost_spec", {"app": name, "cluster": cluster, "hub_revision": want})
                continue
            spoke = next((m for m in w["manifests"] if m.get("name") == name), {})
            got = ((spoke.get("spec") or {}).get("source") or {}).get("targetRevision")
            if got != want:
                note("stale_spec", {"app": name, "hub": want, "agent": got, "agent_version": w["version"]})
                continue
            st_hub = app.get("status") or {}
            hub_status = ((st_hub.get("sync") or {}).get("status"), (st_hub.get("health") or {}).get("status"),
                          (st_hub.get("sync") or {}).get("revision"))
            agent_status = (w.get("sync"), w.get("health"), w.get("revision"))
            if hub_status != agent_status:
                item = {"app": name, "hub": hub_status, "agent": agent_status,
                        "agent_reported_s_ago": round(listed_at - w.get("status_at", 0), 1)}
                note("status_in_flight" if w.get("status_at", 0) >= inflight_after else "stale_status", item)
        for (cluster, name), w in held.items():
            if (cluster, name) not in hub_keys:
                note("lost_delete" if name in self.deleted_ever else "orphan_on_agent",
                     {"app": name, "cluster": cluster, "version": w["version"],
                      "deleted_in_this_fault": name in deleted})
        outbox_empty = outbox["rows"] == 0 and (outbox["metric"] in (0, 0.0))
        lost = counts["lost_spec"] + counts["lost_delete"] + counts["orphan_on_agent"]
        stale = counts["stale_spec"] + counts["stale_status"]
        converged = lost == 0 and stale == 0 and counts["status_in_flight"] == 0 and outbox_empty
        return {"converged": converged, "lost": lost, "stale": stale, "counts": counts, "examples": examples,
                "carried_over": carried, "failing": failing,
                "outbox": outbox, "hub_applications": len(hub_apps), "agent_applications": len(held),
                "state": state}

    def converge(self, fault_end: float, before: dict | None, deleted: set[str]) -> dict:
        """Polls check() until converged or --timeout after `fault_end` (monotonic)."""
        deadline = fault_end + self.args.timeout
        polls = 0
        last = None
        while True:
            polls += 1
            try:
                last = self.check(deleted)
                error = None
            except (StackError, KubeError, OSError, http.client.HTTPException) as e:
                error = str(e)[:500]
                log(f"  check failed (retrying): {error}")
            now = time.monotonic()
            self.restart_maestro_if_exited()
            if last is not None and last["converged"] and error is None:
                break
            if now > deadline:
                break
            if last is not None and polls % 5 == 0:
                log(f"  not converged yet: lost {last['lost']} stale {last['stale']} {last['counts']} "
                    f"outbox {last['outbox']}")
            time.sleep(self.args.poll_seconds)
        if last is None:
            raise StackError(f"no convergence check succeeded: {error}")
        dups_after = self.duplicates_total(last["state"])
        dups_before = self.duplicates_total(before) if before else {}
        duplicates = 0
        for key, n in dups_after.items():
            b = dups_before.get(key, 0)
            duplicates += n - b if n >= b else n  # a restarted fleet-sim counts from 0
        last.pop("state")
        self.carried = set(last.pop("failing"))
        last["recovery_s"] = round(time.monotonic() - fault_end, 1) if last["converged"] else None
        last["duplicates"] = duplicates
        last["polls"] = polls
        return last

    # ---- faults -------------------------------------------------------------------------------

    def wait_counter(self, name: str, metric: str, before: float, timeout: float = 60) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                v = metric_sum(self.stack.metrics(name), metric)
                if v > before:
                    return v
            except (StackError, OSError):
                pass
            time.sleep(0.02)
        raise StackError(f"{name}: {metric} did not move within {timeout:.0f}s")

    def kill_mid_work(self, name: str, metric: str, tag: str) -> dict:
        st = self.stack
        before = metric_sum(st.metrics(name), metric)
        bulk = threading.Thread(target=self.bulk_update, args=(self.args.bulk, tag), daemon=True)
        bulk.start()
        self.wait_counter(name, metric, before)
        metrics = st.metrics(name)
        rc = st.kill_process(name)
        info = {"killed_rc": rc, f"{metric}_at_kill": metric_sum(metrics, metric) - before}
        if name == "dispatcher":
            info["outbox_pending_at_kill"] = metric_sum(metrics, "mmi_dispatcher_outbox_pending")
        bulk.join()
        return info

    def kill_maestro_mid_work(self, tag: str) -> dict:
        """SIGKILL of the Maestro server as soon as the dispatcher publishes a bulk change to it;
        restart-maestro starts it again on the same ports (returns once it is ready)."""
        st = self.stack
        before = metric_sum(st.metrics("dispatcher"), "mmi_events_published_total")
        bulk = threading.Thread(target=self.bulk_update, args=(self.args.bulk, tag), daemon=True)
        bulk.start()
        at_kill = self.wait_counter("dispatcher", "mmi_events_published_total", before) - before
        t = time.monotonic()
        st.restart_maestro(kill=True)
        info = {"published_at_kill": at_kill, "maestro_down_s": round(time.monotonic() - t, 1)}
        bulk.join()
        return info

    def apply_throttle(self) -> None:
        hub = self.stack.hub
        hub.request("PATCH", f"{FLOWCONTROL}/prioritylevelconfigurations/{THROTTLE_NAME}?fieldManager=fault-matrix&force=true",
                    {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
                     "metadata": {"name": THROTTLE_NAME},
                     "spec": {"type": "Limited",
                              "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                          "borrowingLimitPercent": 0, "limitResponse": {"type": "Reject"}}}},
                    "application/apply-patch+yaml")
        hub.request("PATCH", f"{FLOWCONTROL}/flowschemas/{THROTTLE_NAME}?fieldManager=fault-matrix&force=true",
                    {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                     "metadata": {"name": THROTTLE_NAME},
                     "spec": {"priorityLevelConfiguration": {"name": THROTTLE_NAME},
                              "matchingPrecedence": 50, "distinguisherMethod": {"type": "ByUser"},
                              "rules": [{"subjects": [{"kind": "Group", "group": {"name": SERVICE_USERS_GROUP}}],
                                         "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                                            "resources": ["*"], "namespaces": ["*"],
                                                            "clusterScope": True}],
                                         "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}},
                    "application/apply-patch+yaml")

    def remove_throttle(self) -> None:
        for kind in ("flowschemas", "prioritylevelconfigurations"):
            self.stack.hub.request("DELETE", f"{FLOWCONTROL}/{kind}/{THROTTLE_NAME}", ok=(404,))

    def rejected_429(self) -> float:
        text = self.stack.metrics_text("kube-apiserver")
        m = parse_prometheus(text)
        return metric_sum(m, "apiserver_flowcontrol_rejected_requests_total", priority_level=THROTTLE_NAME)

    def broker_restart_agents_first(self, tag: str) -> dict:
        """The order of the race seen on 2026-11-26 (docs/reliability.md), forced: updates the
        broker accepted but had not delivered are lost with it, and the agents' spec resync
        requests reach no subscriber because they reconnect before the dispatcher does."""
        st = self.stack
        published = metric_sum(st.metrics("dispatcher"), "mmi_events_published_total")

        def signal_process(name, sig):
            os.kill(st.pid(name), sig)
        signal_process("fleet-sim", signal.SIGSTOP)
        try:
            changed = self.bulk_update(self.args.bulk // 3, tag)
            # The dispatcher publishes them; the broker accepts them and queues them for the paused agents.
            self.wait_counter("dispatcher", "mmi_events_published_total", published + changed - 1)
            signal_process("dispatcher", signal.SIGSTOP)
            try:
                st.restart_broker()
            finally:
                signal_process("fleet-sim", signal.SIGCONT)
                time.sleep(5)
        finally:
            signal_process("fleet-sim", signal.SIGCONT)
            signal_process("dispatcher", signal.SIGCONT)
        return {"changed": changed}

    def inject(self, fault: str, tag: str) -> dict:
        """Injects and lifts `fault`; returns facts about it. Mutations run meanwhile."""
        st = self.stack
        info: dict = {}
        if fault == "dispatcher_kill9":
            info = self.kill_mid_work("dispatcher", "mmi_events_published_total", tag)
            st.start_dispatcher()
        elif fault == "status_sink_kill9":
            info = self.kill_mid_work("status-sink", "mmi_status_updates_total", tag)
            st.start_status_sink()
        elif fault == "maestro_kill9":
            info = self.kill_maestro_mid_work(tag)
        elif fault == "broker_restart":
            self.bulk_update(self.args.bulk // 3, tag)
            st.restart_broker()
        elif fault == "broker_restart_agents_first":
            info = self.broker_restart_agents_first(tag)
        elif fault == "broker_pause_60s":
            name = "mosquitto" if self.args.transport == "mqtt" else "kafka"
            st.signal_peer(name, signal.SIGSTOP)
            try:
                self.bulk_update(self.args.bulk // 3, tag)
                time.sleep(self.args.pause_seconds)
            finally:
                st.signal_peer(name, signal.SIGCONT)
        elif fault == "postgres_restart":
            self.bulk_update(self.args.bulk // 3, tag)
            st.restart_postgres()
        elif fault == "kube_apiserver_restart":
            self.bulk_update(self.args.bulk // 3, tag)
            st.restart_kube_apiserver()
        elif fault == "hub_throttle_60s":
            before = self.rejected_429()
            self.apply_throttle()
            try:
                t = time.monotonic()
                self.bulk_update(self.args.bulk, tag)
                time.sleep(max(0.0, self.args.pause_seconds - (time.monotonic() - t)))
                info["rejected_429"] = self.rejected_429() - before
            finally:
                self.remove_throttle()
        elif fault == "etcd_compact_during_relist":
            st.kill_process("dispatcher")
            self.bulk_update(self.args.bulk // 3, tag)
            box: dict = {}
            starter = threading.Thread(target=lambda: box.update(
                error=self._call(st.start_dispatcher)), daemon=True)
            starter.start()
            compactions = 0
            while starter.is_alive():
                st.compact_etcd()
                compactions += 1
                time.sleep(0.3)
            starter.join()
            if box.get("error"):
                raise StackError(box["error"])
            info["compactions"] = compactions
        elif fault == "fleet_sim_restart":
            st.kill_process("fleet-sim")
            st.start_fleet_sim()
        elif fault == "fleet_sim_restart_dispatcher_down":
            st.kill_process("dispatcher")
            st.kill_process("fleet-sim")
            st.start_fleet_sim()
            time.sleep(10)
            st.start_dispatcher()
        else:
            raise StackError(f"unknown fault {fault}")
        return info

    @staticmethod
    def _call(fn) -> str | None:
        try:
            fn()
            return None
        except Exception as e:  # noqa: BLE001 - handed to the caller
            return str(e)

    def restart_maestro_if_exited(self) -> None:
        """grpc: a Maestro server that exited by itself (a panic) fails the fault; it is started
        again (restart-maestro), as its Deployment would, so that the matrix goes on."""
        if self.args.transport != "grpc" or self.maestro_running():
            return
        self.maestro_exits += 1
        log("  the Maestro server EXITED (see peers/maestro/logs): starting it again")
        self.stack.restart_maestro()

    def maestro_running(self) -> bool:
        """The Maestro server's process is there and not a zombie (restart-maestro's child)."""
        try:
            with open(f"/proc/{self.stack.pid('maestro')}/stat", encoding="utf-8") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def run_fault(self, fault: str) -> dict:
        self.fault_index += 1
        tag = f"f{self.fault_index:02d}"
        desc = description(fault, self.args.transport)
        log(f"=== fault {self.fault_index}: {fault} ({self.args.transport}): {desc}")
        before = self.stack.fleet_sim_state()
        maestro_exits_before = self.maestro_exits
        t_start = time.monotonic()
        result = {"fault": fault, "transport": self.args.transport, "description": desc}
        with self.Mutator(self, tag, self.args.mutate_interval) as mut:
            time.sleep(self.args.lead_seconds)
            try:
                result["fault_info"] = self.inject(fault, tag)
            except Exception as e:  # noqa: BLE001 - the fault could not be injected: a failure
                result["fault_info"] = {"error": str(e)[:2000]}
                log(f"  injecting {fault} FAILED: {e}")
                traceback.print_exc()
            fault_end = time.monotonic()
            time.sleep(self.args.trail_seconds)
        result["fault_s"] = round(fault_end - t_start, 1)
        result["mutations"] = dict(mut.counts)
        if mut.errors:
            result["mutation_errors"] = mut.errors[:5]
        # A process that died during the fault (every fault restarts what it stops) crashed: that
        # fails the fault; it is started again so that the matrix goes on.
        crashed = []
        for name, start in (("dispatcher", self.stack.start_dispatcher),
                            ("status-sink", self.stack.start_status_sink),
                            ("fleet-sim", self.stack.start_fleet_sim)):
            if not self.stack.running(name):
                rc = self.stack.stop_process(name)
                crashed.append({"process": name, "exit_code": rc})
                log(f"  {name} EXITED during the fault (exit code {rc}, negative = signal): starting it again")
                start()
        self.restart_maestro_if_exited()
        check = self.converge(fault_end, before, mut.deleted)
        if self.maestro_exits > maestro_exits_before:
            crashed.append({"process": "maestro", "exits": self.maestro_exits - maestro_exits_before})
        if crashed:
            result["crashed"] = crashed
        result.update({"recovery_s": check["recovery_s"], "lost": check["lost"], "stale": check["stale"],
                       "duplicates": check["duplicates"], "converged": check["converged"],
                       "counts": check["counts"], "examples": check["examples"], "outbox": check["outbox"],
                       "carried_over": check["carried_over"],
                       "hub_applications": check["hub_applications"],
                       "agent_applications": check["agent_applications"]})
        result["pass"] = bool(check["converged"] and check["lost"] == 0 and check["stale"] == 0
                              and "error" not in result["fault_info"] and not crashed)
        log(f"  {fault}: {'PASS' if result['pass'] else 'FAIL'} recovery {result['recovery_s']} s, lost "
            f"{result['lost']}, stale {result['stale']}, duplicates {result['duplicates']}, "
            f"mutations {result['mutations']}, {result['fault_info']}")
        if crashed:
            log(f"  crashed during the fault: {crashed}")
        if not result["pass"]:
            log(f"  counts {result['counts']} outbox {result['outbox']} examples "
                f"{json.dumps(result['examples'])[:3000]}")
        return result


def markdown_table(results: list[dict]) -> str:
    lines = ["| fault | transport | recovery s | lost | stale | duplicates | pass |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in results:
        rec = "-" if r.get("recovery_s") is None else f"{r['recovery_s']:.1f}"
        lines.append(f"| {r['fault']} | {r['transport']} | {rec} | {r.get('lost', '-')} | "
                     f"{r.get('stale', '-')} | {r.get('duplicates', '-')} | "
                     f"{'yes' if r.get('pass') else '**no**'} |")
    return "\n".join(lines) + "\n"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transport", choices=tuple(FAULTS), default="mqtt")
    p.add_argument("--faults", default="", help="comma-separated subset, in this order (default: all "
                   "of the transport)")
    p.add_argument("--clusters", type=int, default=30)
    p.add_argument("--appsets", type=int, default=100)
    p.add_argument("--build-dir", default=os.path.join(REPO_ROOT, "build", "release"))
    p.add_argument("--work-dir", default="")
    p.add_argument("--json", default="", help="write the report here")
    p.add_argument("--markdown", default="", help="write the table here")
    p.add_argument("--timeout", type=float, default=180, help="per fault: seconds from its end to converge")
    p.add_argument("--pause-seconds", type=float, default=60, help="broker pause and throttle duration")
    p.add_argument("--bulk", type=int, default=300, help="Applications changed at once by a fault's load")
    p.add_argument("--mutate-interval", type=float, default=0.25, help="seconds between the mutator's ops")
    p.add_argument("--lead-seconds", type=float, default=3, help="mutations before a fault")
    p.add_argument("--trail-seconds", type=float, default=3, help="mutations after a fault")
    p.add_argument("--inflight-seconds", type=float, default=15,
                   help="an agent status this young at the hub LIST is in flight, not stale")
    p.add_argument("--poll-seconds", type=float, default=2)
    p.add_argument("--write-threads", type=int, default=8)
    p.add_argument("--refresh-min", type=int, default=120)
    p.add_argument("--refresh-max", type=int, default=180)
    p.add_argument("--changes-per-minute", type=float, default=30)
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--log-level", default="info")
    p.add_argument("--set", action="append", default=[], help="extra helm --set for both services")
    p.add_argument("--maestro-db-connections", type=int, default=150,
                   help="grpc: Maestro's database pool (start-maestro DB_MAX_OPEN_CONNECTIONS)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.work_dir:
        args.work_dir = f"/tmp/mmi-fault-{args.transport}"
    faults = [f for f in args.faults.split(",") if f] or FAULTS[args.transport]
    for f in faults:
        if f not in DESCRIPTIONS:
            print(f"unknown fault {f}; known: {', '.join(DESCRIPTIONS)}", file=sys.stderr)
            return 2
    from mmi_stack import prepare_work_dir
    prepare_work_dir(args.work_dir)
    fleet_args = ["--refresh-min", str(args.refresh_min), "--refresh-max", str(args.refresh_max),
                  "--changes-per-minute", str(args.changes_per_minute)]
    stack = Stack(StackConfig(work_dir=args.work_dir, build_dir=args.build_dir, transport=args.transport,
                              clusters=args.clusters, fleet_args=fleet_args, log_level=args.log_level,
                              helm_set=list(args.set), service_users=True, fleet_state_file=True,
                              maestro_db_connections=args.maestro_db_connections))

    def on_term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    matrix = FaultMatrix(args, stack)
    report = {"meta": {"started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "transport": args.transport, "clusters": args.clusters, "appsets": args.appsets,
                       "applications": args.clusters * args.appsets, "faults": faults,
                       "build_dir": args.build_dir, "timeout_s": args.timeout,
                       "churn": {"refresh_min": args.refresh_min, "refresh_max": args.refresh_max,
                                 "changes_per_minute": args.changes_per_minute},
                       "pass_rule": "converged within the timeout with 0 lost, 0 stale, outbox empty",
                       "maestro_db_connections": args.maestro_db_connections},
              "faults": []}
    try:
        rev = subprocess.run(["git", "-C", REPO_ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO_ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=False).stdout.strip()
        report["meta"]["git"] = rev + ("-dirty" if dirty else "")
    except OSError:
        pass
    t0 = time.monotonic()
    rc = 0
    try:
        report["setup"] = matrix.setup()
        log(f"setup done: {report['setup']}")
        for fault in faults:
            result = matrix.run_fault(fault)
            report["faults"].append(result)
            rc |= 0 if result["pass"] else 1
            write_reports(args, report)
    except BaseException as e:  # noqa: BLE001 - reported, then everything is stopped
        report["error"] = f"{type(e).__name__}: {e}"
        log(f"ERROR: {report['error']}")
        traceback.print_exc()
        rc = 1
    finally:
        log("stopping the stack")
        stack.stop()
        report["meta"]["total_s"] = round(time.monotonic() - t0, 1)
        write_reports(args, report)
    print(markdown_table(report["faults"]), end="")
    log(f"{'all faults passed' if rc == 0 else 'FAILED'} in {report['meta']['total_s']:.0f} s")
    return rc


def write_reports(args, report) -> None:
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json + ".tmp", "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
        os.replace(args.json + ".tmp", args.json)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(markdown_table(report["faults"]))


if __name__ == "__main__":
    sys.exit(main())
