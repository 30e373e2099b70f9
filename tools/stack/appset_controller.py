"""appset_controller: a stand-in for Argo CD's ApplicationSet controller, for the demo and e2e tests.

What it does is what the real controller (v3.5.1) does for a `clusterDecisionResource`
ApplicationSet, in the parts this project interacts with (`../shared/spec/hub-apis.md` §1.7, §2.5,
§4.7):

* **Generation on refresh.** It watches ApplicationSets and reconciles one when it is created or
  carries `argocd.argoproj.io/application-set-refresh: "true"` (which it then removes, as the real
  controller does). A reconcile reads each generator's duck-type ConfigMap (`configMapRef`:
  apiVersion, kind, statusListKey, matchKey), lists the resources its `labelSelector` selects,
  keeps the decided clusters that have an Argo CD cluster secret, renders the template per
  cluster (Stack.generated_application), creates the missing Applications and deletes the owned
  ones no longer generated. It does not requeue on a timer (the real one does, every
  `requeueAfterSeconds`): what it generates after a PlacementDecision change came from the
  GitOpsCluster controller's refresh nudge.
* **RollingSync** (`spec.strategy.type: RollingSync`): every generated Application gets
  `spec.syncPolicy.automated.enabled: false`; steps select Applications by `matchExpressions` on
  their labels; a step starts only when every Application of the earlier steps is Healthy; it
  starts by writing the real controller's `operation` (initiatedBy applicationset-controller,
  automated, the Reason info, `sync.prune` from the template, retry limit 5 or the policy's)
  onto the step's OutOfSync Applications; each Application goes Waiting -> Pending -> Progressing
  -> Healthy in the ApplicationSet's `status.applicationStatus`.

It also records, from its Application watch, every status change of the Applications it owns
(`timeline`), which the tests read.

Python 3 standard library only; one thread per watch, stopped by stop().
"""

from __future__ import annotations

import copy
import http.client
import json
import threading
import time
import urllib.parse
from typing import Any, Callable

from mmi_stack import APP_API, ARGO_NAMESPACE, KubeError, Stack, StackError, label_selector_matches

REFRESH_ANNOTATION = "argocd.argoproj.io/application-set-refresh"
ROLLING_SYNC_REASON = "ApplicationSet RollingSync triggered a sync of this Application resource"
ROLLING_SYNC_USER = "applicationset-controller"


def is_rolling_sync(appset: dict) -> bool:
    return ((appset.get("spec") or {}).get("strategy") or {}).get("type") == "RollingSync"


def app_step(app: dict, steps: list[dict]) -> int | None:
    """Index of the first RollingSync step whose matchExpressions select `app`'s labels."""
    labels = (app.get("metadata") or {}).get("labels") or {}
    for i, step in enumerate(steps):
        if label_selector_matches({"matchExpressions": step.get("matchExpressions") or []}, labels):
            return i
    return None


def rolling_sync_operation(app: dict) -> dict:
    """The `operation` the real controller writes to start a step (progressive_sync.go)."""
    policy = (app.get("spec") or {}).get("syncPolicy") or {}
    op: dict[str, Any] = {"initiatedBy": {"username": ROLLING_SYNC_USER, "automated": True},
                          "info": [{"name": "Reason", "value": ROLLING_SYNC_REASON}],
                          "sync": {}, "retry": {"limit": 5}}
    if (policy.get("automated") or {}).get("prune"):
        op["sync"]["prune"] = True
    if policy.get("syncOptions"):
        op["sync"]["syncOptions"] = list(policy["syncOptions"])
    if policy.get("retry"):
        op["retry"] = copy.deepcopy(policy["retry"])
    return op


def app_view(app: dict) -> tuple[str, str, str]:
    """(sync status, health status, operationState phase) of an Application, "" where absent."""
    st = app.get("status") or {}
    return ((st.get("sync") or {}).get("status") or "", (st.get("health") or {}).get("status") or "",
            (st.get("operationState") or {}).get("phase") or "")


class _Watch(threading.Thread):
    """List + watch of one collection; `on_event(type, object)` for every object of the list
    (type "LISTED") and every watch event; re-lists after a 410 or an error."""

    def __init__(self, stack: Stack, path: str, on_event: Callable[[str, dict], None], stop: threading.Event):
        super().__init__(daemon=True, name=f"watch {path}")
        self.stack, self.path, self.on_event, self.stop_event = stack, path, on_event, stop
        self.synced = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                body = self.stack.hub.request("GET", self.path)
                for obj in body.get("items") or []:
                    self.on_event("LISTED", obj)
                self.synced.set()
                self._watch(body["metadata"]["resourceVersion"])
            except (OSError, http.client.HTTPException, StackError, ValueError, KeyError) as e:
                self.error = f"{type(e).__name__}: {e}"
                self.stop_event.wait(0.5)

    def _watch(self, rv: str) -> None:
        hub = self.stack.hub
        while not self.stop_event.is_set():
            conn = http.client.HTTPSConnection(hub.host, hub.port, context=hub.ctx, timeout=5)
            sep = "&" if "?" in self.path else "?"
            conn.request("GET", f"{self.path}{sep}watch=1&allowWatchBookmarks=true&timeoutSeconds=300"
                                f"&resourceVersion={rv}", headers={"Accept": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise StackError(f"watch {self.path}: HTTP {resp.status}")
            try:
                while not self.stop_event.is_set():
                    try:
                        line = resp.readline()
                    except TimeoutError:
                        continue  # nothing happened for 5 s; look at the stop flag
                    if not line:
                        break  # the server ended the watch: resume from rv
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        return  # 410 Gone and friends: list again
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if event.get("type") != "BOOKMARK":
                        self.on_event(event["type"], obj)
            finally:
                conn.close()


class AppSetController:
    """The stand-in; `names` are the ApplicationSets (in `namespace`) it owns, the others it leaves
    to nobody, so a test applies examples/ whole and drives only what it means to."""

    def __init__(self, stack: Stack, names: list[str], namespace: str = ARGO_NAMESPACE):
        self.stack, self.names, self.namespace = stack, set(names), namespace
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._appsets: dict[str, dict] = {}
        self._reconciled: set[str] = set()               # generated at least once
        self._apps: dict[str, dict] = {}                 # owned Applications by name
        self._rolling: dict[str, dict[str, dict]] = {}   # appset -> app -> applicationStatus entry
        self.timeline: list[tuple[float, str, str, str, str]] = []  # (t, app, sync, health, phase)
        self.log: list[tuple[float, str, str]] = []      # (t, what, detail)
        self.counts = {"reconciles": 0, "created": 0, "deleted": 0, "refreshes": 0, "operations": 0}
        base = f"{APP_API}/namespaces/{namespace}"
        self._watches = [_Watch(stack, f"{base}/applicationsets", self._on_appset, self._stop),
                         _Watch(stack, f"{base}/applications", self._on_app, self._stop)]
        self._worker = threading.Thread(target=self._run, daemon=True, name="appset-controller")

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self, timeout: float = 30) -> None:
        for w in self._watches:
            w.start()
        for w in self._watches:
            if not w.synced.wait(timeout):
                raise StackError(f"appset controller stand-in: {w.name} not listed in {timeout:.0f}s: {w.error}")
        self._worker.start()
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for t in (*self._watches, self._worker):
            if t.is_alive():
                t.join(timeout=10)

    def __enter__(self) -> "AppSetController":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- what the tests read --------------------------------------------------------------------

    def app(self, name: str) -> dict | None:
        with self._lock:
            return copy.deepcopy(self._apps.get(name))

    def owned_names(self) -> list[str]:
        with self._lock:
            return sorted(self._apps)

    def application_status(self, appset: str) -> dict[str, dict]:
        """RollingSync: the ApplicationSet's status.applicationStatus entries by Application."""
        with self._lock:
            return copy.deepcopy(self._rolling.get(appset, {}))

    # ---- watch callbacks ------------------------------------------------------------------------

    def _on_appset(self, kind: str, obj: dict) -> None:
        name = obj["metadata"]["name"]
        if name not in self.names:
            return
        with self._lock:
            if kind == "DELETED":
                self._appsets.pop(name, None)
                return
            self._appsets[name] = obj
            self._wake.set()

    def _on_app(self, kind: str, obj: dict) -> None:
        owners = obj["metadata"].get("ownerReferences") or []
        if not any(o.get("kind") == "ApplicationSet" and o.get("name") in self.names for o in owners):
            return
        name = obj["metadata"]["name"]
        with self._lock:
            before = self._apps.get(name)
            if kind == "DELETED":
                self._apps.pop(name, None)
                self.log.append((time.monotonic(), "gone", name))
            else:
                self._apps[name] = obj
            view = app_view(obj) if kind != "DELETED" else ("", "", "")
            if before is None or app_view(before) != view:
                self.timeline.append((time.monotonic(), name, *view))
            self._wake.set()

    # ---- the controller -------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(0.5)
            self._wake.clear()
            with self._lock:
                appsets = [copy.deepcopy(a) for a in self._appsets.values()]
            for appset in appsets:
                try:
                    self._maybe_reconcile(appset)
                    if is_rolling_sync(appset):
                        self._progress(appset)
                except (StackError, OSError, http.client.HTTPException) as e:
                    self.log.append((time.monotonic(), "error", f"{appset['metadata']['name']}: {e}"))
                    self._stop.wait(0.5)
                    self._wake.set()

    def _maybe_reconcile(self, appset: dict) -> None:
        meta = appset["metadata"]
        refresh = (meta.get("annotations") or {}).get(REFRESH_ANNOTATION) == "true"
        if not refresh and meta["name"] in self._reconciled:
            return
        self.reconcile(appset)
        if refresh:
            self.counts["refreshes"] += 1
            self.stack.hub.request(
                "PATCH", f"{APP_API}/namespaces/{self.namespace}/applicationsets/{meta['name']}",
                {"metadata": {"annotations": {REFRESH_ANNOTATION: None}}}, "application/merge-patch+json",
                ok=(404,))

    def desired(self, appset: dict) -> dict[str, dict]:
        """The Applications `appset` generates now, by name."""
        name = appset["metadata"]["name"]
        servers = self.stack.cluster_secret_servers(self.namespace)
        self.stack.appset(name, self.namespace, fresh=True)
        out: dict[str, dict] = {}
        for gen in (appset.get("spec") or {}).get("generators") or []:
            for cluster in self._decided_clusters(gen.get("clusterDecisionResource") or {}):
                if cluster not in servers:
                    continue  # the real generator skips a decision without an Argo CD cluster
                app = self.stack.generated_application(name, cluster, self.namespace, generator=gen)
                if is_rolling_sync(appset):
                    automated = app["spec"].setdefault("syncPolicy", {}).setdefault("automated", {})
                    automated["enabled"] = False
                out[app["metadata"]["name"]] = app
        return out

    def reconcile(self, appset: dict) -> None:
        name = appset["metadata"]["name"]
        want = self.desired(appset)
        with self._lock:
            have = {n for n, a in self._apps.items()
                    if any(o.get("name") == name for o in a["metadata"].get("ownerReferences") or [])}
        base = f"{APP_API}/namespaces/{self.namespace}/applications"
        for app_name in sorted(set(want) - have):
            status, text = self.stack.hub.raw("POST", base, want[app_name])
            if status == 409:
                continue
            if not 200 <= status < 300:
                raise KubeError("POST", f"applications/{app_name}", status, text)
            self.counts["created"] += 1
            self.log.append((time.monotonic(), "created", app_name))
        for app_name in sorted(have - set(want)):
            self.stack.hub.request("DELETE", f"{base}/{app_name}", ok=(404,))
            self.counts["deleted"] += 1
            self.log.append((time.monotonic(), "deleted", app_name))
        self.counts["reconciles"] += 1
        self._reconciled.add(name)
        self.log.append((time.monotonic(), "reconciled", name))

    def _decided_clusters(self, gen: dict) -> list[str]:
        if not gen.get("configMapRef"):
            return []
        cm = self.stack.hub.request("GET", f"/api/v1/namespaces/{self.namespace}/configmaps/{gen['configMapRef']}",
                                    ok=(404,))
        data = cm.get("data") or {}
        if not data.get("apiVersion") or not data.get("kind"):
            return []
        selector = gen.get("labelSelector") or {}
        terms = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
        path = f"/apis/{data['apiVersion']}/namespaces/{self.namespace}/{data['kind']}"
        if terms:
            path += "?labelSelector=" + urllib.parse.quote(",".join(terms))
        clusters = []
        for obj in self.stack.hub.list_all(path):
            if not label_selector_matches(selector, (obj.get("metadata") or {}).get("labels") or {}):
                continue
            for d in (obj.get("status") or {}).get(data.get("statusListKey") or "decisions") or []:
                value = d.get(data.get("matchKey") or "clusterName")
                if isinstance(value, str) and value:
                    clusters.append(value)
        return clusters

    # ---- RollingSync ----------------------------------------------------------------------------

    def _progress(self, appset: dict) -> None:
        name = appset["metadata"]["name"]
        steps = (((appset.get("spec") or {}).get("strategy") or {}).get("rollingSync") or {}).get("steps") or []
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with self._lock:
            apps = {n: copy.deepcopy(a) for n, a in self._apps.items()
                    if any(o.get("name") == name for o in a["metadata"].get("ownerReferences") or [])}
            entries = self._rolling.setdefault(name, {})
            before = copy.deepcopy(entries)
            for n in list(entries):
                if n not in apps:
                    del entries[n]
            for n, app in apps.items():
                self._advance(entries, n, app, app_step(app, steps), now)
            to_sync = self._due(entries, apps, len(steps))
            for n in to_sync:
                entries[n].update(status="Pending", message="Application moved to Pending status, watching "
                                  "for the Application resource to start Progressing.", lastTransitionTime=now)
            changed = entries != before
            status = [dict(v) for _, v in sorted(entries.items())]
        for n in to_sync:
            self.stack.hub.request("PATCH", f"{APP_API}/namespaces/{self.namespace}/applications/{n}",
                                   {"operation": rolling_sync_operation(apps[n])}, "application/merge-patch+json")
            self.counts["operations"] += 1
            self.log.append((time.monotonic(), "operation", n))
        if changed:
            self.stack.hub.request("PATCH", f"{APP_API}/namespaces/{self.namespace}/applicationsets/{name}/status",
                                   {"status": {"applicationStatus": status}}, "application/merge-patch+json",
                                   ok=(404,))

    @staticmethod
    def _advance(entries: dict[str, dict], n: str, app: dict, step: int | None, now: str) -> None:
        """One Application's applicationStatus entry moved along what its hub status shows."""
        sync, health, phase = app_view(app)
        e = entries.setdefault(n, {"application": n, "status": "Waiting", "lastTransitionTime": now,
                                   "message": "No Application status found, defaulting status to Waiting.",
                                   "step": str(step + 1 if step is not None else -1)})
        spec = app.get("spec") or {}
        sources = spec.get("sources") or ([spec["source"]] if spec.get("source") else [])
        e["targetRevisions"] = [src.get("targetRevision") or "HEAD" for src in sources]
        if e["status"] == "Healthy" and sync == "OutOfSync":
            e.update(status="Waiting", message="Application has pending changes, setting status to Waiting.",
                     lastTransitionTime=now)
        started = ((app.get("status") or {}).get("operationState") or {}).get("startedAt") or ""
        if e["status"] == "Pending" and (phase == "Running" or (started and started >= e["lastTransitionTime"])):
            e.update(status="Progressing", message="Application resource became Progressing, updating status "
                     "from Pending to Progressing.", lastTransitionTime=now)
        if e["status"] in ("Pending", "Progressing") and health == "Healthy" and sync == "Synced" and \
                phase in ("", "Succeeded") and "operation" not in app:
            e.update(status="Healthy", message="Application resource became Healthy, updating status from "
                     f"{e['status']} to Healthy.", lastTransitionTime=now)
        if e["status"] == "Waiting" and sync == "Synced" and health == "Healthy":
            e.update(status="Healthy", message="Application resource is already Healthy, updating status "
                     "from Waiting to Healthy.", lastTransitionTime=now)

    @staticmethod
    def _due(entries: dict[str, dict], apps: dict[str, dict], n_steps: int) -> list[str]:
        """The Applications whose sync starts now: the Waiting, OutOfSync ones of the first step
        that is not all Healthy, and only once every earlier step is."""
        for step in range(1, n_steps + 1):
            members = [n for n, e in entries.items() if e["step"] == str(step)]
            if all(entries[n]["status"] == "Healthy" for n in members):
                continue
            return sorted(n for n in members if entries[n]["status"] == "Waiting"
                          and app_view(apps[n])[0] == "OutOfSync" and "operation" not in apps[n])
        return []
