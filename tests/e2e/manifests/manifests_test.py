#!/usr/bin/env python3
"""e2e_manifests: manifest delivery (ADR 0007, issue 38 item 7) on a spoke with no Argo CD.

The whole system as local processes (tools/stack): the hub kube-apiserver with Argo CD's real
ApplicationSet controller and repo-server, its argocd-cmp-server sidecar serving the
`mmi-template` plugin (start-argocd CMP=on), PostgreSQL, mosquitto, the dispatcher with manifest
delivery on (manifests.repoServer.address = the hub's repo-server), the status sink, and
fleet-sim in apply mode as the work agent of cluster-0001, the one-node cluster: a real API
server and kubelet, and no Argo CD at all. examples/gitopscluster.yaml and
examples/manifest-delivery/applicationset.yaml are applied as shipped, but for their repoURL
(github.com is out of reach): a git server on loopback serves a repository whose
examples/apps/guestbook-lite/ is this checkout's.

Checks, in order (stage `all`, the default):
  1. the ApplicationSets generate the four Applications (plain, Helm, Kustomize, CMP), each with
     the delivery annotation, and their pods run on the node;
  2. each hub Application's status is the rendered revision's: Synced/Healthy, sync.revision the
     commit's sha, sourceType, resources[] with the Deployment Synced/Healthy, operationState
     Succeeded;
  3. a commit that changes the plain variant's pod template rolls out: the new sha on the hub
     (resolveInterval, no refresh) and a new pod on the node;
  4. a commit with broken YAML shows a ComparisonError condition on the hub Application (after an
     argocd.argoproj.io/refresh) while the old pod keeps running; the fix clears it;
  5. the hand-over between the modes (ADR 0007, issue 38 item 6): the ApplicationSet of the plain,
     Helm and Kustomize variants switched to `delivery: application` puts a spoke Application
     (with Argo CD's resources finalizer) on the node while its objects stay, same uids; switched
     back to `manifests`, the spoke Application goes (its finalizer was released first, and the
     node has no Argo CD to run it), the objects stay, same uids, and the hub Applications are
     Synced/Healthy at the repository's head again;
  6. deleting a hub Application prunes its objects from the node before its finalizer goes; the
     ApplicationSet controller then makes it again.

Stage `spoke` runs what needs no dispatcher or sink wiring: the peers, the Applications generated
with the annotation, and a hand-made ManifestBundle (the contract's shape: ServerSideApply,
Foreground delete option, feedback rules) published to the broker as the dispatcher would, which
fleet-sim applies to the node (its pod runs, its status feedback is reported) and deletes again.
Seconds are printed, never asserted.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools", "stack"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from mmi_stack import (ARGO_NAMESPACE, AppWatch, KubeError, Stack, StackConfig, StackError,  # noqa: E402
                       app_view, prepare_work_dir)
from checks import app_path, check, get_app, hub_app, run_checks, wait_for  # noqa: E402

NODE = "cluster-0001"
SHIPPED_REPO_URL = "https://github.com/multicluster-maestro-integrations/multicluster-maestro-integrations.git"
APPSET_FILES = ["gitopscluster.yaml", "manifest-delivery/applicationset.yaml"]
GUESTBOOK = os.path.join(REPO, "examples", "apps", "guestbook-lite")
GIT_REPO = "mmi"  # the loopback repository standing in for SHIPPED_REPO_URL
# variant -> (namespace on the spoke, Argo CD source type, Deployment name (Helm: the release))
VARIANTS = {
    "plain": ("guestbook-lite", "Directory", "guestbook-lite"),
    "helm": ("guestbook-lite-helm", "Helm", f"{NODE}-gl-helm"),
    "kustomize": ("guestbook-lite-kustomize", "Kustomize", "kz-guestbook-lite"),
    "cmp": ("guestbook-lite-cmp", "Plugin", "guestbook-lite"),
}
DELIVERY = "apps.open-cluster-management.io/delivery"
# The ApplicationSet of examples/manifest-delivery/applicationset.yaml that generates the plain
# variant; its matrix generates the Helm and Kustomize ones from the same template, so a switch of
# its template's delivery annotation switches all three.
HANDOVER_APPSET = "guestbook-manifests"
HANDOVER_VARIANTS = ("plain", "helm", "kustomize")
RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"
SHARED_DIR = os.environ.get("MMI_SHARED_DIR") or os.path.join(REPO, "..", "shared")
RESOLVE_INTERVAL = 20  # manifests.resolveInterval (s): how soon a commit is seen without a refresh


def app_name(variant: str, cluster: str = NODE) -> str:
    return f"{cluster}-gl-{variant}"


def status(app: dict | None) -> dict:
    return (app or {}).get("status") or {}


def revision(app: dict | None) -> str:
    return (status(app).get("sync") or {}).get("revision") or ""


def conditions(app: dict | None) -> list[dict]:
    return status(app).get("conditions") or []


def pods(stack: Stack, namespace: str, running: bool = False) -> list[str]:
    body = stack.spoke(NODE).request("GET", f"/api/v1/namespaces/{namespace}/pods")
    return sorted(p["metadata"]["name"] for p in body.get("items") or []
                  if not running or (p.get("status") or {}).get("phase") == "Running")


def exists(stack: Stack, path: str) -> bool:
    try:
        stack.spoke(NODE).request("GET", path)
        return True
    except KubeError as e:
        if e.status == 404:
            return False
        raise


# ---- the git repository the examples read ---------------------------------------------------

class GitRepo:
    """A loopback git repository whose tree is examples/apps/guestbook-lite under the path the
    shipped example names; commit() makes the next commit from a changed copy."""

    def __init__(self, stack: Stack):
        self.stack = stack
        self.src = os.path.join(stack.work_dir, "git-src", "manifests")
        self._copy()
        self.env = stack.start_peer("start-git", "git-manifests", f"REPO={GIT_REPO}:{self.src}")
        self.url = f"{self.env['GIT_URL']}/{GIT_REPO}.git"

    def _copy(self) -> None:
        shutil.rmtree(self.src, ignore_errors=True)
        shutil.copytree(GUESTBOOK, os.path.join(self.src, "examples", "apps", "guestbook-lite"))

    def path(self, rel: str) -> str:
        return os.path.join(self.src, "examples", "apps", "guestbook-lite", rel)

    def head(self) -> str:
        out = subprocess.run(["git", "--git-dir", os.path.join(self.env["GIT_REPOS_DIR"], f"{GIT_REPO}.git"),
                              "rev-parse", "refs/heads/main"], capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def commit(self, message: str) -> str:
        out = subprocess.run([os.path.join(REPO, "tests", "peers", "bin", "commit-dir"),
                              os.path.join(self.stack.peers_dir, "git-manifests"), GIT_REPO, self.src, message],
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise StackError(f"commit-dir failed: {out.stderr.strip()}")
        return out.stdout.strip().splitlines()[-1]


# ---- the stack -------------------------------------------------------------------------------

def start_hub_argocd(stack: Stack) -> None:
    """The hub and its Argo CD before start_peers() (which then finds them running): the
    repo-server's revision cache (ARGOCD_RECONCILIATION_TIMEOUT, APP_RESYNC) shorter than the
    dispatcher's resolveInterval, so a commit is seen at the next resolve, as Argo CD's default
    pair (180 s both) does at its own pace."""
    hub = stack.start_peer("start-kube", "hub", "ROLE=hub")
    stack.start_peer("start-argocd", "argocd-hub", "ROLE=hub", f"KUBECONFIG={hub['KUBECONFIG']}",
                     f"KUBECTL={hub['KUBECTL']}", f"APP_RESYNC={RESOLVE_INTERVAL // 2}", "CMP=on")


def configure_manifest_delivery(stack: Stack) -> None:
    """The dispatcher's `manifests` settings (services/dispatcher/README.md), written into the
    config rendered from the chart: the hub's repo-server in plaintext (start-argocd runs it with
    --disable-tls), Argo CD's namespace, a short resolve interval."""
    path = stack.render_configs()["dispatcher"]
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    kept, skipping = [], False
    for line in lines:  # drop a `manifests:` block the chart may render
        if line.startswith("manifests:"):
            skipping = True
            continue
        if skipping and (line.startswith(" ") or not line.strip()):
            continue
        skipping = False
        kept.append(line)
    kept += ["manifests:",
             "  repoServer:",
             f"    address: \"{stack.argocd_env['REPO_SERVER_ADDR']}\"",
             "    tls:",
             "      enabled: false",
             f"  resolveInterval: \"{RESOLVE_INTERVAL}s\"",
             "  renderTimeout: \"60s\"",
             f"  argocdNamespace: {ARGO_NAMESPACE}"]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(kept) + "\n")


def start(stack: Stack) -> GitRepo:
    start_hub_argocd(stack)
    stack.start_peers()
    check(bool(stack.argocd_env.get("CMP_PLUGIN_SOCKET")),
          f"the hub repo-server has its CMP sidecar ({stack.argocd_env.get('CMP_PLUGIN_SOCKET')})")
    stack.start_real_spokes()
    # (Its API server has the trimmed Argo CD CRDs start-kube installs on every managed cluster;
    # nothing reconciles them.)
    check(not stack.spoke_envs[NODE]["argocd"] and not os.path.exists(os.path.join(stack.peers_dir, f"argocd-{NODE}")),
          f"{NODE} runs no Argo CD (no application-controller, no repo-server)")
    repo = GitRepo(stack)
    stack.create_managed_clusters()
    return repo


def check_generated(watch: AppWatch) -> None:
    names = {app_name(v) for v in VARIANTS}
    wait_for("the four Applications generated", lambda: names <= set(watch.app_names()), 240)
    annotated = {n for n in names if ((watch.app(n) or {}).get("metadata", {}).get("annotations") or {}).get(
        DELIVERY) == "manifests"}
    check(annotated == names, f"the ApplicationSets generated {sorted(names)} with {DELIVERY}: manifests "
                              f"(annotated: {sorted(annotated)})")


# ---- stage spoke: a hand-made bundle ----------------------------------------------------------

def hand_made_bundle() -> dict:
    """The contract's ManifestBundle shape for two objects of the plain variant."""
    ns = "e2e-hand-made"
    manifests = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "guestbook-lite", "namespace": ns},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "hand-made"}},
                  "template": {"metadata": {"labels": {"app": "hand-made"}},
                               "spec": {"automountServiceAccountToken": False,
                                        "containers": [{"name": "guestbook", "image": "localhost/mmi-node/pause:latest",
                                                        "imagePullPolicy": "Never"}]}}}},
    ]
    ssa = {"type": "ServerSideApply", "serverSideApply": {"fieldManager": "work-agent", "force": True}}
    configs = [
        {"resourceIdentifier": {"group": "", "resource": "namespaces", "name": ns, "namespace": ""},
         "updateStrategy": ssa,
         "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "phase", "path": ".status.phase"}]}]},
        {"resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "guestbook-lite", "namespace": ns},
         "updateStrategy": ssa, "feedbackRules": [{"type": "WellKnownStatus"}]},
    ]
    return {"manifests": manifests, "manifestConfigs": configs, "deleteOption": {"propagationPolicy": "Foreground"}}


def publish(stack: Stack, ce_type: str, resource_id: str, version: int, payload: dict | None) -> None:
    """One spec event to the agent of NODE, as the dispatcher publishes it over MQTT 5 (binary
    mode: the CloudEvent attributes as user properties, the data as the payload)."""
    host, port = stack.agent_broker_address().rsplit(":", 1)
    props = {"ce-specversion": "1.0", "ce-id": str(uuid.uuid4()), "ce-source": stack.source_id(),
             "ce-type": f"io.open-cluster-management.works.v1alpha1.manifestbundles.spec.{ce_type}",
             "ce-time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "ce-resourceid": resource_id,
             "ce-resourceversion": str(version), "ce-clustername": NODE, "ce-originalsource": "",
             "ce-metadata": json.dumps({"name": resource_id, "namespace": NODE, "uid": resource_id,
                                        "resourceVersion": "0",
                                        "annotations": {DELIVERY: "manifests"}})}
    if ce_type == "delete_request":
        props["ce-deletiontimestamp"] = props["ce-time"]
    cmd = ["mosquitto_pub", "-V", "mqttv5", "-h", host, "-p", port, "-q", "1",
           "-t", f"sources/{stack.source_id()}/consumers/{NODE}/sourceevents",
           "-D", "publish", "content-type", "application/json"]
    for k, v in props.items():
        cmd += ["-D", "publish", "user-property", k, v]
    cmd += ["-m", json.dumps(payload or {})]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise StackError(f"mosquitto_pub failed: {out.stderr.strip()}")


class AgentEvents:
    """Every status event fleet-sim's agents publish (mosquitto_sub), for the hand-made bundle."""

    def __init__(self, stack: Stack):
        host, port = stack.agent_broker_address().rsplit(":", 1)
        self.lines: list[str] = []
        self.proc = subprocess.Popen(["mosquitto_sub", "-V", "mqttv5", "-h", host, "-p", port, "-F", "%j",
                                      "-t", f"sources/{stack.source_id()}/consumers/+/agentevents"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    def payloads(self, resource_id: str) -> list[dict]:
        out = []
        for line in list(self.lines):
            try:
                e = json.loads(line)
            except ValueError:
                continue
            up = (e.get("properties") or {}).get("user-properties") or {}
            if up.get("ce-resourceid") == resource_id:
                try:
                    out.append(json.loads(e.get("payload") or "{}"))
                except ValueError:
                    pass
        return out

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def feedback_of(payloads: list[dict], kind: str) -> dict:
    """The latest status feedback values of the manifest of `kind`, {name: value}."""
    values = {}
    for p in payloads:  # a ManifestBundleStatus: resourceStatus[] of ManifestConditions
        for m in p.get("resourceStatus") or []:
            if (m.get("resourceMeta") or {}).get("kind") == kind:
                for v in (m.get("statusFeedback") or {}).get("values") or []:
                    values[v.get("name")] = v.get("fieldValue")
    return values


def check_hand_made_bundle(stack: Stack) -> None:
    events = AgentEvents(stack)
    time.sleep(1)  # subscribed before the first publish
    rid = str(uuid.uuid4())
    try:
        t = time.monotonic()
        publish(stack, "create_request", rid, 1, hand_made_bundle())
        wait_for("the hand-made bundle's pod running on the node", lambda: pods(stack, "e2e-hand-made", True), 180)
        print(f"hand-made bundle: pod running on the node {time.monotonic() - t:.1f}s after the publish", flush=True)
        check(True, f"{NODE}: fleet-sim applied the hand-made bundle with ServerSideApply and its pod runs")
        try:
            wait_for("the Deployment's WellKnownStatus feedback with a ready replica",
                     lambda: (feedback_of(events.payloads(rid), "Deployment").get("ReadyReplicas") or {}).get(
                         "integer") == 1, 60)
        except StackError:
            print(f"the agent's last status of the hand-made bundle: {json.dumps(events.payloads(rid)[-1:])[:2000]}",
                  flush=True)
            raise
        check(True, "the agent reported the Deployment's WellKnownStatus feedback (ReadyReplicas 1)")
        t = time.monotonic()
        publish(stack, "delete_request", rid, 1, None)
        wait_for("the hand-made objects pruned", lambda: not exists(
            stack, "/apis/apps/v1/namespaces/e2e-hand-made/deployments/guestbook-lite") and not pods(
            stack, "e2e-hand-made"), 180)
        print(f"hand-made bundle: pruned {time.monotonic() - t:.1f}s after the delete", flush=True)
        check(True, f"{NODE}: the delete request pruned the bundle's Deployment and pods")
    finally:
        events.stop()


# ---- stage all: through the dispatcher and the sink -------------------------------------------

def healthy_with(stack: Stack, variant: str, sha: str):
    app = hub_app(stack, app_name(variant))
    return app if app_view(app or {})[:2] == ("Synced", "Healthy") and revision(app) == sha else None


def check_rendered_and_running(stack: Stack, repo: GitRepo) -> None:
    sha = repo.head()
    t = time.monotonic()
    for v, (ns, source_type, deployment) in VARIANTS.items():
        name = app_name(v)
        app = wait_for(f"{name} Synced/Healthy at {sha[:8]} on the hub", lambda: healthy_with(stack, v, sha), 300)
        print(f"{name}: Synced/Healthy at {sha[:8]} on the hub {time.monotonic() - t:.1f}s after the start",
              flush=True)
        check(bool(pods(stack, ns, running=True)), f"{name}: its pod runs on {NODE} ({pods(stack, ns)})")
        st = status(app)
        resources = {(r.get("kind"), r.get("name")): r for r in st.get("resources") or []}
        dep = resources.get(("Deployment", deployment)) or {}
        check(st.get("sourceType") == source_type and dep.get("status") == "Synced" and
              (dep.get("health") or {}).get("status") == "Healthy" and ("Namespace", ns) in resources,
              f"{name}: sourceType {st.get('sourceType')}, resources {sorted(k for k in resources)} with the "
              f"Deployment {dep.get('status')}/{(dep.get('health') or {}).get('status')}")
        op = st.get("operationState") or {}
        check(op.get("phase") == "Succeeded" and (op.get("syncResult") or {}).get("revision") == sha,
              f"{name}: operationState {op.get('phase')} at {((op.get('syncResult') or {}).get('revision') or '')[:8]}")
        check(not any(c.get("type") == "ComparisonError" for c in conditions(app)),
              f"{name}: no ComparisonError ({[c.get('type') for c in conditions(app)]})")


def check_commit_rolls_out(stack: Stack, repo: GitRepo) -> None:
    ns = VARIANTS["plain"][0]
    before = pods(stack, ns, running=True)
    with open(repo.path("plain/deployment.yaml"), encoding="utf-8") as f:
        text = f.read()
    marker = "    metadata:\n      labels: {app.kubernetes.io/name: guestbook-lite}\n"
    if marker not in text:
        raise StackError("plain/deployment.yaml changed shape: update check_commit_rolls_out")
    with open(repo.path("plain/deployment.yaml"), "w", encoding="utf-8") as f:
        f.write(text.replace(marker, marker.replace("labels:", "annotations: {e2e/rollout: \"2\"}\n      labels:")))
    t = time.monotonic()
    sha = repo.commit("guestbook-lite: a new pod template")
    name = app_name("plain")
    wait_for(f"{name}: {sha[:8]} Synced/Healthy on the hub", lambda: healthy_with(stack, "plain", sha),
             RESOLVE_INTERVAL * 3 + 120)
    print(f"commit {sha[:8]} -> Synced/Healthy at it on the hub: {time.monotonic() - t:.1f}s "
          f"(resolveInterval {RESOLVE_INTERVAL}s)", flush=True)
    after = wait_for("a new pod running", lambda: [p for p in pods(stack, ns, running=True) if p not in before], 180)
    # The old ReplicaSet's pod goes too (Running while it terminates): the next check compares pods.
    gone = wait_for("the old pod gone", lambda: not set(before) & set(pods(stack, ns)), 120)
    check(bool(after) and gone, f"commit {sha[:8]} rolled out: new pod {after}, old {before} gone")
    # The other variants read the same repository: the new revision shows on them too, with
    # nothing sent again (their rendered output did not change).
    others = [v for v in VARIANTS if v != "plain"]
    wait_for("the new revision on the other variants", lambda: all(revision(hub_app(stack, app_name(v))) == sha
                                                                   for v in others), RESOLVE_INTERVAL * 3 + 60)
    check(True, f"{', '.join(app_name(v) for v in others)}: sync.revision {sha[:8]} too")


def refresh(stack: Stack, name: str) -> None:
    stack.hub.request("PATCH", app_path(name), {"metadata": {"annotations": {"argocd.argoproj.io/refresh": "normal"}}},
                      "application/merge-patch+json")


def check_broken_commit(stack: Stack, repo: GitRepo) -> None:
    ns = VARIANTS["plain"][0]
    name = app_name("plain")
    before = pods(stack, ns, running=True)
    broken = repo.path("plain/broken.yaml")
    with open(broken, "w", encoding="utf-8") as f:
        f.write("apiVersion: v1\nkind: ConfigMap\nmetadata: [name: broken\n")
    t = time.monotonic()
    repo.commit("guestbook-lite: bad YAML")
    refresh(stack, name)
    app = wait_for(f"{name}: ComparisonError on the hub",
                   lambda: (lambda a: a if any(c.get("type") == "ComparisonError" for c in conditions(a)) else None)(
                       hub_app(stack, name)), 120)
    message = next(c.get("message", "") for c in conditions(app) if c.get("type") == "ComparisonError")
    print(f"{name}: ComparisonError {time.monotonic() - t:.1f}s after the commit and refresh: {message[:160]}",
          flush=True)
    check("broken.yaml" in message, f"{name}: the ComparisonError names the broken file")
    time.sleep(5)  # what would go wrong (a bundle without the Deployment) has had time to
    check(pods(stack, ns, running=True) == before, f"{name}: the old pod keeps running ({before})")
    os.remove(broken)
    repo.commit("guestbook-lite: fixed")
    refresh(stack, name)
    wait_for(f"{name}: ComparisonError gone", lambda: not any(
        c.get("type") == "ComparisonError" for c in conditions(hub_app(stack, name))), 120)
    check(True, f"{name}: the fix in git cleared the ComparisonError")
    wait_for(f"{name} annotation refresh removed", lambda: "argocd.argoproj.io/refresh" not in (
        (hub_app(stack, name) or {}).get("metadata", {}).get("annotations") or {}), 60)
    check(True, f"{name}: the dispatcher removed the refresh annotation")


# ---- the hand-over between the modes ------------------------------------------------------------

def live_uids(stack: Stack) -> dict[str, str | None]:
    """{API path: uid or None when absent} of the switched variants' objects on the node: each
    one's Namespace and Deployment, and the plain variant's ConfigMap and Service."""
    paths = []
    for v in HANDOVER_VARIANTS:
        ns, _, deployment = VARIANTS[v]
        paths += [f"/api/v1/namespaces/{ns}", f"/apis/apps/v1/namespaces/{ns}/deployments/{deployment}"]
    ns, _, name = VARIANTS["plain"]
    paths += [f"/api/v1/namespaces/{ns}/configmaps/{name}", f"/api/v1/namespaces/{ns}/services/{name}"]
    uids = {}
    for path in paths:
        try:
            meta = stack.spoke(NODE).request("GET", path).get("metadata") or {}
            # An object being deleted counts as gone: the hand-over must delete nothing.
            uids[path] = None if meta.get("deletionTimestamp") else meta.get("uid")
        except KubeError as e:
            if e.status != 404:
                raise
            uids[path] = None
    return uids


def prepare_spoke_for_applications(stack: Stack) -> None:
    """What Application delivery needs on a spoke with no Argo CD: the Application CRD (only the
    CRD: nothing reconciles it) and the namespace the dispatcher puts the spoke Application in
    (ARGO_NAMESPACE). start-kube ROLE=managed installs both; applied again here (idempotent) so
    that the check does not depend on it."""
    crd = os.path.join(SHARED_DIR, "crds", "argoproj.io_applications.yaml")
    stack.spoke_kubectl(NODE, "apply", "--server-side", "--field-manager=e2e-manifests", "--force-conflicts",
                        "-f", crd)
    spoke = stack.spoke(NODE)
    wait_for("the Application CRD established on the node", lambda: any(
        c.get("type") == "Established" and c.get("status") == "True" for c in (spoke.request(
            "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/applications.argoproj.io").get(
            "status") or {}).get("conditions") or []), 60)
    spoke.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": ARGO_NAMESPACE}}, ok=(409,))


def switch_delivery(stack: Stack, mode: str) -> None:
    """The delivery annotation of HANDOVER_APPSET's template (the generated Applications are its:
    an edit of one would be reverted)."""
    stack.hub.request("PATCH", f"/apis/argoproj.io/v1alpha1/namespaces/{ARGO_NAMESPACE}/applicationsets/"
                      f"{HANDOVER_APPSET}", {"spec": {"template": {"metadata": {"annotations": {DELIVERY: mode}}}}},
                      "application/merge-patch+json")


def delivery_of(app: dict | None) -> str | None:
    return ((app or {}).get("metadata", {}).get("annotations") or {}).get(DELIVERY)


def check_handover(stack: Stack, repo: GitRepo) -> None:
    names = [app_name(v) for v in HANDOVER_VARIANTS]
    spoke = stack.spoke(NODE)
    plain_ns = VARIANTS["plain"][0]
    before = live_uids(stack)
    plain_pods = pods(stack, plain_ns, running=True)
    check(all(before.values()), f"before the switch, on {NODE}: {len(before)} objects of {', '.join(names)}")
    prepare_spoke_for_applications(stack)

    t = time.monotonic()
    switch_delivery(stack, "application")
    wait_for(f"{', '.join(names)} with {DELIVERY}: application on the hub",
             lambda: all(delivery_of(hub_app(stack, n)) == "application" for n in names), 120)
    generated = time.monotonic() - t
    spoke_apps = wait_for(f"the spoke Applications {names} on {NODE}", lambda: (lambda apps: apps if all(
        apps) else None)([get_app(spoke, n) for n in names]), 240)
    print(f"manifests -> application: the ApplicationSet generated the annotation in {generated:.1f}s, "
          f"the spoke Applications on the node {time.monotonic() - t:.1f}s after the switch", flush=True)
    finalizers = {a["metadata"]["name"]: (a.get("metadata") or {}).get("finalizers") or [] for a in spoke_apps}
    check(all(RESOURCES_FINALIZER in f for f in finalizers.values()),
          f"the spoke Applications carry Argo CD's resources finalizer ({finalizers})")
    after = live_uids(stack)
    check(after == before, f"{NODE}: after the hand-over to an Application the objects are the same (uids "
                           f"{sum(1 for p in before if after[p] == before[p])}/{len(before)} unchanged)")
    time.sleep(10)  # a late delete (an owner reference left, a Foreground work delete) has had time
    later = live_uids(stack)
    check(later == before and pods(stack, plain_ns, running=True) == plain_pods,
          f"{NODE}: 10s later still the same objects, and the plain variant's pods {plain_pods}")

    # The node has no Argo CD, so nothing writes the spoke Applications' status: the work agent
    # reports their `dispatchVersion` feedback value alone, which the sink saves as the
    # acknowledgement of the way back's first step (StatusUpdate::ack_only).
    now = [get_app(spoke, n) for n in names]
    check(all(a is not None and "status" not in a for a in now),
          f"{NODE}: the spoke Applications have no status (no Argo CD on the node)")

    t = time.monotonic()
    switch_delivery(stack, "manifests")
    gone = wait_for(f"the spoke Applications {names} gone from {NODE}",
                    lambda: all(get_app(spoke, n) is None for n in names) and time.monotonic(), 240)
    sha = repo.head()
    for n, v in zip(names, HANDOVER_VARIANTS):
        wait_for(f"{n} Synced/Healthy at {sha[:8]} on the hub", lambda: healthy_with(stack, v, sha), 240)
    print(f"application -> manifests: the spoke Applications gone {gone - t:.1f}s, the hub Applications "
          f"Synced/Healthy at {sha[:8]} {time.monotonic() - t:.1f}s after the switch", flush=True)
    check(True, f"{NODE}: the spoke Applications are gone, so their resources finalizer was released first "
                f"(no Argo CD on the node would have run it)")
    after = live_uids(stack)
    check(after == before and pods(stack, plain_ns, running=True) == plain_pods,
          f"{NODE}: after the hand-over back to manifests the objects are the same (uids "
          f"{sum(1 for p in before if after[p] == before[p])}/{len(before)} unchanged) and the plain "
          f"variant's pods too")
    check(True, f"{', '.join(names)}: Synced/Healthy at {sha[:8]} on the hub again")


def check_delete_prunes(stack: Stack, watch: AppWatch) -> None:
    name = app_name("kustomize")
    ns, _, deployment = VARIANTS["kustomize"]
    dep_path = f"/apis/apps/v1/namespaces/{ns}/deployments/{deployment}"
    uid = (watch.app(name) or {}).get("metadata", {}).get("uid")
    finalizers = ((watch.app(name) or {}).get("metadata") or {}).get("finalizers") or []
    check(exists(stack, dep_path) and bool(finalizers), f"{name}: deployed, with finalizers {finalizers}")
    t = time.monotonic()
    last_seen = t
    released = None  # when the hub object with `uid` was first seen gone (polled, not the watch's
    # DELETED event, which a watch reconnecting at that moment can miss)

    def hub_released() -> bool:
        app = hub_app(stack, name)
        return app is None or (app.get("metadata") or {}).get("uid") != uid

    stack.hub.request("DELETE", app_path(name))
    while True:  # polls the node until the Deployment is gone, and the hub meanwhile
        if released is None and hub_released():
            released = time.monotonic()
        if not exists(stack, dep_path):
            break
        last_seen = time.monotonic()
        if last_seen - t > 240:
            raise StackError(f"{name}: {dep_path} still on the node after 240s")
        time.sleep(0.2)
    if released is None:
        wait_for(f"{name} (uid {uid}) gone from the hub", hub_released, 240)
        released = time.monotonic()
    print(f"delete {name}: Deployment last seen on the node {last_seen - t:.1f}s, hub Application released "
          f"{released - t:.1f}s after the delete", flush=True)
    check(last_seen < released,
          f"{name}: the node's objects were pruned before the hub released the Application")
    wait_for(f"{name} generated again, Synced/Healthy", lambda: app_view(watch.app(name) or {})[:2] == (
        "Synced", "Healthy") and (watch.app(name) or {})["metadata"]["uid"] != uid, 240)
    wait_for("its pod running again", lambda: pods(stack, ns, running=True), 180)
    check(True, f"{name}: generated again and delivered again")


def run(stack: Stack, stage: str) -> None:
    t0 = time.monotonic()
    repo = start(stack)
    with AppWatch(stack) as watch:
        stack.apply_examples(APPSET_FILES, {SHIPPED_REPO_URL: repo.url})
        if stage == "spoke":
            # The dispatcher as configured without manifest delivery: its GitOpsCluster controller
            # makes the cluster secrets and acm-placement the ApplicationSets generate from; the
            # spoke gets a hand-made bundle.
            stack.start_dispatcher()
            stack.start_fleet_sim()
            check_generated(watch)
            check_hand_made_bundle(stack)
        else:
            configure_manifest_delivery(stack)
            stack.start_dispatcher()
            stack.start_status_sink()
            stack.start_fleet_sim()
            check_generated(watch)
            check_rendered_and_running(stack, repo)
            check_commit_rolls_out(stack, repo)
            check_broken_commit(stack, repo)
            check_handover(stack, repo)
            check_delete_prunes(stack, watch)
    print(f"stage {stage}: {time.monotonic() - t0:.0f}s", flush=True)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--build-dir", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--stage", choices=("all", "spoke"), default="all")
    args = p.parse_args()
    prepare_work_dir(args.work_dir)
    # One cluster, the node: the dispatcher's render dedup across clusters is unit-tested and
    # measured by the fleet bench; here every check is about the real spoke.
    stack = Stack(StackConfig(work_dir=args.work_dir, build_dir=args.build_dir, clusters=1,
                              ready_timeout=180, argocd=True, real_spokes=1, spoke_argocd=False))
    return run_checks(stack, lambda: run(stack, args.stage), "the run went through",
                      f"logs: {args.work_dir}/logs/ and {args.work_dir}/peers/")


if __name__ == "__main__":
    sys.exit(main())
