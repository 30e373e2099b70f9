"""The hub objects the stack writes in place of OCM and Argo CD controllers: ManagedClusters, the
examples, PlacementDecisions, generated Applications; and what it reads back."""

from __future__ import annotations

import base64
import concurrent.futures
import os
import re
import time
import urllib.parse
from typing import Any, Callable

from .config import (APP_API, ARGO_NAMESPACE, CLUSTERSET_LABEL, EXAMPLES_DIR,
                     OCM_CLUSTER_API, PLACEMENT_LABEL, StackError)
from .generation import decision_pages, placement_selection, render_application
from .hub_client import KubeError


class HubObjectsMixin:
    """Part of Stack: hub objects through the API (server-side apply, parallel POSTs)."""

    def _apply(self, obj: dict) -> dict:
        """Server-side apply of one object through the API (field manager mmi-stack)."""
        api = obj["apiVersion"]
        base = f"/api/{api}" if "/" not in api else f"/apis/{api}"
        plural = {"Namespace": "namespaces", "Service": "services", "ManagedCluster": "managedclusters",
                  "ManagedClusterSet": "managedclustersets", "PlacementDecision": "placementdecisions",
                  "Application": "applications"}[obj["kind"]]
        meta = obj["metadata"]
        ns = meta.get("namespace")
        path = f"{base}/namespaces/{ns}/{plural}/{meta['name']}" if ns else f"{base}/{plural}/{meta['name']}"
        return self.hub.request("PATCH", f"{path}?fieldManager=mmi-stack&force=true", obj,
                                "application/apply-patch+yaml")

    def _parallel(self, fn: Callable[[Any], Any], items: list, concurrency: int) -> list:
        errors: list[str] = []
        results: list = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            for fut in concurrent.futures.as_completed([pool.submit(fn, it) for it in items]):
                try:
                    results.append(fut.result())
                except Exception as e:  # noqa: BLE001 - collected and re-raised below
                    errors.append(str(e))
        if errors:
            raise StackError(f"{len(errors)} of {len(items)} requests failed, first: {errors[0]}")
        return results

    def managed_cluster(self, name: str, local: bool = False) -> dict:
        labels = {"name": name, CLUSTERSET_LABEL: "global", "vendor": "Kubernetes", "cloud": "Other"}
        if local:
            labels["local-cluster"] = "true"
        return {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                "metadata": {"name": name, "labels": labels},
                "spec": {"hubAcceptsClient": True, "leaseDurationSeconds": 60}}

    def register_cluster(self, name: str) -> None:
        """A ManagedCluster `name` in ManagedClusterSet `global` (a cluster joining the fleet);
        with transport grpc also its Maestro consumer, as ACM's Maestro addon creates it."""
        if self.cfg.transport == "grpc":
            self.ensure_maestro_consumers([name])
        self._apply(self.managed_cluster(name))

    def deregister_cluster(self, name: str) -> None:
        """ManagedCluster `name` deleted (a cluster detached from the hub)."""
        self.hub.request("DELETE", f"{OCM_CLUSTER_API}/v1/managedclusters/{name}", ok=(404,))

    def create_managed_clusters(self, concurrency: int = 8) -> None:
        """ManagedCluster cluster-XXXX for every simulated cluster (member of ManagedClusterSet
        `global`), plus local-cluster (label local-cluster=true) unless cfg.local_cluster is off."""
        self._apply({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
                     "metadata": {"name": "global"},
                     "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}}})
        if self.cfg.transport == "grpc":
            self.ensure_maestro_consumers(self.cluster_names())
        objs = [self.managed_cluster(c) for c in self.cluster_names()]
        if self.cfg.local_cluster:
            objs.append(self.managed_cluster("local-cluster", local=True))
        self._parallel(self._apply, objs, concurrency)

    def apply_examples(self, files: list[str] | None = None, rewrite: dict[str, str] | None = None) -> None:
        """Namespaces, the Argo CD server Service the GitOpsCluster controller looks for, every
        Kubernetes object of examples/ (kubectl apply --server-side), and the PlacementDecisions
        the placement controller would write for every Placement (all matching clusters, paged
        at 100 per object). `files` (paths under examples/) replaces the top-level YAML files;
        `rewrite` replaces text in them (e.g. a repoURL by a mirror's) after examples_text()."""
        namespaces = {ARGO_NAMESPACE}
        if files is None:
            files = sorted(f for f in os.listdir(EXAMPLES_DIR)
                           if f.endswith((".yaml", ".yml")) and not f.startswith("values-"))
        for f in files:
            with open(os.path.join(EXAMPLES_DIR, f), encoding="utf-8") as fh:
                namespaces.update(re.findall(r"^\s+namespace:\s*([a-z0-9-]+)\s*$", fh.read(), re.M))
        for ns in sorted(namespaces):
            self._apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        # What an Argo CD install in openshift-gitops has (ArgoServerVerified looks for it).
        self._apply({"apiVersion": "v1", "kind": "Service",
                     "metadata": {"name": "openshift-gitops-server", "namespace": ARGO_NAMESPACE,
                                  "labels": {"app.kubernetes.io/component": "server",
                                             "app.kubernetes.io/part-of": "argocd",
                                             "app.kubernetes.io/name": "openshift-gitops-server"}},
                     "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8080}],
                              "selector": {"app.kubernetes.io/name": "openshift-gitops-server"}}})
        docs = []
        for f in files:
            with open(os.path.join(EXAMPLES_DIR, f), encoding="utf-8") as fh:
                text = self.examples_text(fh.read())
            for old, new in (rewrite or {}).items():
                text = text.replace(old, new)
            docs.append(text)
        self.kubectl("apply", "--server-side", "--field-manager=mmi-stack", "--force-conflicts", "-f", "-",
                     input="\n---\n".join(docs))
        self.write_placement_decisions()

    def write_placement_decisions(self) -> dict[str, list[str]]:
        """For every Placement on the hub: the clusters it selects (bound cluster sets, label
        predicates) as PlacementDecisions <placement>-decision-<N>, 100 per object. Returns
        {"ns/placement": [clusters]}."""
        clusters = self.hub.list_all(f"{OCM_CLUSTER_API}/v1/managedclusters")
        sets = {s["metadata"]["name"]: s for s in self.hub.list_all(f"{OCM_CLUSTER_API}/v1beta2/managedclustersets")}
        result: dict[str, list[str]] = {}
        for p in self.hub.list_all(f"{OCM_CLUSTER_API}/v1beta1/placements"):
            ns, pname = p["metadata"]["namespace"], p["metadata"]["name"]
            bound = {b["spec"]["clusterSet"] for b in self.hub.list_all(
                f"{OCM_CLUSTER_API}/v1beta2/namespaces/{ns}/managedclustersetbindings")}
            chosen = placement_selection(p, clusters, sets, bound)
            pages = decision_pages(chosen)
            base = f"{OCM_CLUSTER_API}/v1beta1/namespaces/{ns}/placementdecisions"
            for idx, page in enumerate(pages, start=1):
                name = f"{pname}-decision-{idx}"
                obj = {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
                       "metadata": {"name": name, "namespace": ns,
                                    "labels": {PLACEMENT_LABEL: pname,
                                               "cluster.open-cluster-management.io/decision-group-index": "0"},
                                    "ownerReferences": [{"apiVersion": "cluster.open-cluster-management.io/v1beta1",
                                                         "kind": "Placement", "name": pname,
                                                         "uid": p["metadata"]["uid"], "controller": True,
                                                         "blockOwnerDeletion": True}]}}
                self._apply(obj)
                status = {"status": {"decisions": [{"clusterName": c, "reason": ""} for c in page]}}
                self.hub.request("PATCH", f"{base}/{name}/status", status, "application/merge-patch+json")
            # Decision objects beyond the current page count are removed (the selection shrank).
            for old in self.hub.list_all(f"{base}?labelSelector={urllib.parse.quote(PLACEMENT_LABEL + '=' + pname)}"):
                m = re.match(rf"^{re.escape(pname)}-decision-(\d+)$", old["metadata"]["name"])
                if m and int(m.group(1)) > len(pages):
                    self.hub.request("DELETE", f"{base}/{old['metadata']['name']}", ok=(404,))
            result[f"{ns}/{pname}"] = chosen
        return result

    def cluster_secrets(self, namespace: str = ARGO_NAMESPACE) -> list[dict]:
        """The Argo CD cluster secrets (label argocd.argoproj.io/secret-type=cluster)."""
        sel = urllib.parse.quote("argocd.argoproj.io/secret-type=cluster")
        return self.hub.list_all(f"/api/v1/namespaces/{namespace}/secrets?labelSelector={sel}")

    def appset(self, name: str, namespace: str = ARGO_NAMESPACE, fresh: bool = False) -> dict:
        """ApplicationSet `name` as stored on the hub (read once and kept, unless `fresh`)."""
        key = f"{namespace}/{name}"
        if fresh or key not in self._appsets:
            self._appsets[key] = self.hub.request("GET", f"{APP_API}/namespaces/{namespace}/applicationsets/{name}")
        return self._appsets[key]

    def cluster_secret_servers(self, namespace: str = ARGO_NAMESPACE) -> dict[str, str]:
        """{cluster name: server} of the Argo CD cluster secrets (their base64 `name`/`server`)."""
        servers = {}
        for s in self.cluster_secrets(namespace):
            data = s.get("data") or {}
            try:
                n = base64.b64decode(data.get("name", "")).decode()
                servers[n] = base64.b64decode(data.get("server", "")).decode().rstrip("/")
            except ValueError:
                continue
        return servers

    def _cluster_server(self, cluster: str) -> str:
        stale = time.monotonic() - self._secret_servers_at > 5.0
        if self._secret_servers is None or (cluster not in self._secret_servers and stale):
            self._secret_servers_at = time.monotonic()
            self._secret_servers = self.cluster_secret_servers()
        # The blank cluster secret's server when the controller has not written it yet.
        return self._secret_servers.get(cluster, f"https://{cluster}-control-plane")

    def generated_application(self, appset_name: str, cluster: str, namespace: str = ARGO_NAMESPACE,
                              generator: dict | None = None) -> dict:
        """The Application the ApplicationSet controller generates from ApplicationSet
        `appset_name` (as stored on the hub) for `cluster` (generation.render_application, with
        the server of the cluster's Argo CD cluster secret)."""
        appset = self.appset(appset_name, namespace)
        if (appset.get("spec") or {}).get("goTemplate"):
            raise StackError(f"ApplicationSet {appset_name}: goTemplate rendering is not simulated")
        return render_application(appset, cluster, self._cluster_server(cluster), namespace, generator)

    def create_applications(self, apps: list[dict], concurrency: int = 8) -> int:
        """POSTs every Application (parallel); an existing one (409) is left alone. Returns the
        number created."""
        def create(app: dict) -> int:
            ns = app["metadata"].get("namespace") or ARGO_NAMESPACE
            status, text = self.hub.raw("POST", f"{APP_API}/namespaces/{ns}/applications", app)
            if status == 409:
                return 0
            if not 200 <= status < 300:
                raise KubeError("POST", f"applications/{app['metadata']['name']}", status, text)
            return 1
        return sum(self._parallel(create, apps, concurrency))

    def list_applications(self, namespace: str | None = ARGO_NAMESPACE) -> list[dict]:
        path = f"{APP_API}/namespaces/{namespace}/applications" if namespace else f"{APP_API}/applications"
        return self.hub.list_all(path)

    def application_counts(self, namespace: str | None = ARGO_NAMESPACE) -> dict[str, Any]:
        """Hub Applications by status: {"total", "by_sync": {..}, "by_health": {..},
        "synced_healthy", "no_status"}."""
        by_sync: dict[str, int] = {}
        by_health: dict[str, int] = {}
        total = both = none = 0
        for app in self.list_applications(namespace):
            total += 1
            st = app.get("status") or {}
            sync = (st.get("sync") or {}).get("status") or "(none)"
            health = (st.get("health") or {}).get("status") or "(none)"
            if not st:
                none += 1
            by_sync[sync] = by_sync.get(sync, 0) + 1
            by_health[health] = by_health.get(health, 0) + 1
            both += sync == "Synced" and health == "Healthy"
        return {"total": total, "by_sync": by_sync, "by_health": by_health, "synced_healthy": both,
                "no_status": none}
