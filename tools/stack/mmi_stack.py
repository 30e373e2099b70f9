"""mmi_stack: the whole system as local processes on loopback, for the demo and the benchmarks.

Starts the real peers through tests/peers/bin/start-* (hub kube-apiserver + etcd with every CRD,
PostgreSQL, mosquitto or Kafka), the two services configured from the Helm chart's values
(`helm template` + examples/values-<transport>.yaml + local overrides), and tools/fleet-sim
simulating N managed clusters. Python 3 standard library only. See tools/stack/README.md.

    from mmi_stack import Stack, StackConfig
    stack = Stack(StackConfig(work_dir="/tmp/mmi-demo", build_dir="build/release", clusters=50))
    try:
        stack.start_peers(); stack.create_managed_clusters(); stack.apply_examples()
        stack.start_dispatcher(); stack.start_status_sink(); stack.start_fleet_sim()
        apps = [stack.generated_application("guestbook", c) for c in stack.cluster_names()]
        stack.create_applications(apps)
    finally:
        stack.stop()
"""

from __future__ import annotations

import base64
import concurrent.futures
import dataclasses
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from typing import Any, Callable, Iterable

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Names used by examples/ and the chart.
ARGO_NAMESPACE = "openshift-gitops"
RELEASE_NAMESPACE = "open-cluster-management"
RELEASE_NAME = "mmi"
CHART_DIR = os.path.join(REPO_ROOT, "charts", "multicluster-maestro-integrations")
EXAMPLES_DIR = os.path.join(REPO_ROOT, "examples")
PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
CLUSTERSET_LABEL = "cluster.open-cluster-management.io/clusterset"
DECISIONS_PER_OBJECT = 100  # OCM pages PlacementDecisions at 100 entries
APP_API = "/apis/argoproj.io/v1alpha1"
OCM_CLUSTER_API = "/apis/cluster.open-cluster-management.io"

SERVICES = ("dispatcher", "status-sink", "fleet-sim")
# Peer processes whose PID a peer's env file names (for process_stats).
PEER_PID_KEYS = {
    "kube-apiserver": ("hub", "KUBE_APISERVER_PID"),
    "etcd": ("hub", "ETCD_PID"),
    "postgres": ("postgres", "PG_PID"),
    "mosquitto": ("broker", "MOSQUITTO_PID"),
    "kafka": ("broker", "KAFKA_PID"),
}


SERVICE_USERS_GROUP = "mmi-services"
# cfg.secure: the MQTT user (client certificate CN) of each process, as examples/mosquitto-acl.conf
# and tests/peers/mosquitto/fleet-sim.acl.conf name them.
SECURE_MQTT_USERS = {"dispatcher": "mmi.dispatcher", "status-sink": "mmi.status-sink",
                     "fleet-sim": "fleet-sim.test"}


class StackError(RuntimeError):
    """Something of the stack failed to start or answer; the message says what and why."""


@dataclasses.dataclass
class StackConfig:
    work_dir: str
    build_dir: str = os.path.join(REPO_ROOT, "build", "release")
    transport: str = "mqtt"  # "mqtt" | "kafka"
    clusters: int = 50
    fleet_args: list[str] = dataclasses.field(default_factory=list)
    log_level: str = "info"
    # ManagedCluster / fleet-sim names: <cluster_prefix><i zero-padded to cluster_digits>.
    cluster_prefix: str = "cluster-"
    cluster_digits: int = 4
    # Also create ManagedCluster local-cluster (label local-cluster=true): the hub itself, skipped.
    local_cluster: bool = True
    # Extra `helm template --set` overrides (e.g. "dispatcher.dispatch.workers=8").
    helm_set: list[str] = dataclasses.field(default_factory=list)
    # How long a service / fleet-sim may take to report /readyz (ASan builds are slow).
    ready_timeout: float = 120.0
    # Peer start timeout (the start-* scripts have their own, this is the outer bound).
    peer_timeout: float = 300.0
    # Give each service its own hub user (client certificate CN=mmi-<service>, group
    # SERVICE_USERS_GROUP, bound to cluster-admin) instead of the admin kubeconfig, whose
    # system:masters group API Priority and Fairness exempts (tests/fault throttles the services).
    service_users: bool = False
    # Secure by default, as examples/ ships it (MQTT only): mosquitto over mTLS only with
    # examples/mosquitto-acl.conf (each service and fleet-sim authenticated by its client
    # certificate's CN), PostgreSQL over TLS with a sslmode=verify-full DSN and a checked password.
    secure: bool = False
    # fleet-sim writes its agents' snapshot to <work_dir>/fleet-sim-state.json on SIGUSR1
    # (--state-file; see fleet_sim_state()).
    fleet_state_file: bool = False
    # fleet-sim also plays this many clusters past `clusters` that are not registered at start
    # (no ManagedCluster): register_cluster() joins one later (the demo's join and leave).
    spare_clusters: int = 0


# ------------------------------------------------------------------------------------------------
# Small helpers
# ------------------------------------------------------------------------------------------------


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def read_env_file(path: str) -> dict[str, str]:
    env: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                env[k] = v
    return env


def tail(path: str, lines: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
        return "\n".join(data.splitlines()[-lines:])
    except OSError as e:
        return f"(cannot read {path}: {e})"


_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Prometheus text format -> {metric name: [(labels, value), ...]} (histogram series keep
    their _bucket/_sum/_count names)."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, rest = line.split("{", 1)
            label_text, _, value_text = rest.rpartition("}")
            labels = {
                k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                for k, v in _LABEL_RE.findall(label_text)
            }
        else:
            parts = line.split()
            name, value_text, labels = parts[0], " ".join(parts[1:]), {}
        fields = value_text.split()
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        out.setdefault(name.strip(), []).append((labels, value))
    return out


def metric_sum(metrics: dict, name: str, **labels: str) -> float:
    """Sum of the series of `name` whose labels include `labels`."""
    total = 0.0
    for series_labels, value in metrics.get(name, []):
        if all(series_labels.get(k) == v for k, v in labels.items()):
            total += value
    return total


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    parsed = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)
    try:
        conn.request("GET", parsed.path or "/")
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    finally:
        conn.close()


def label_selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics (empty selector = everything)."""
    if not selector:
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


_TEMPLATE_RE = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")


def render_fasttemplate(value: Any, params: dict[str, str]) -> Any:
    """The ApplicationSet controller's default (non-goTemplate) rendering: every string in the
    template has `{{param}}` replaced; unknown params stay as they are."""
    if isinstance(value, str):
        return _TEMPLATE_RE.sub(lambda m: params.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [render_fasttemplate(v, params) for v in value]
    if isinstance(value, dict):
        return {render_fasttemplate(k, params): render_fasttemplate(v, params) for k, v in value.items()}
    return value


def configmap_data_blocks(rendered: str) -> dict[str, str]:
    """The `data:` entries written as literal blocks (`key: |`) of a rendered ConfigMap, without
    a YAML library: the chart's configmap.yaml indents data keys by 2 and their text by 4."""
    blocks: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in rendered.splitlines():
        m = re.match(r"^  ([A-Za-z0-9_.\-]+): \|-?\s*$", line)
        if m:
            if current:
                blocks[current] = "\n".join(lines).rstrip() + "\n"
            current, lines = m.group(1), []
            continue
        if current is None:
            continue
        if line.startswith("    ") or not line.strip():
            lines.append(line[4:])
        else:
            blocks[current] = "\n".join(lines).rstrip() + "\n"
            current, lines = None, []
    if current:
        blocks[current] = "\n".join(lines).rstrip() + "\n"
    return blocks


# ------------------------------------------------------------------------------------------------
# Hub API client (HTTPS with the admin client certificate, one keep-alive connection per thread)
# ------------------------------------------------------------------------------------------------


class KubeError(StackError):
    def __init__(self, method: str, path: str, status: int, body: str):
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


class HubClient:
    def __init__(self, env: dict[str, str]):
        url = urllib.parse.urlsplit(env["KUBE_API_URL"])
        self.host, self.port = url.hostname, url.port
        self.ctx = ssl.create_default_context(cafile=env["KUBE_CA_FILE"])
        self.ctx.load_cert_chain(env["KUBE_CLIENT_CERT_FILE"], env["KUBE_CLIENT_KEY_FILE"])
        self._local = threading.local()

    def _conn(self) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
            self._local.conn = conn
        return conn

    def raw(self, method: str, path: str, body: Any = None,
            content_type: str = "application/json") -> tuple[int, str]:
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            headers["Content-Type"] = content_type
        for attempt in range(2):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                return resp.status, resp.read().decode("utf-8", "replace")
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json", ok: Iterable[int] = ()) -> dict:
        status, text = self.raw(method, path, body, content_type)
        if 200 <= status < 300 or status in ok:
            try:
                return json.loads(text) if text else {}
            except json.JSONDecodeError:
                return {"raw": text}
        raise KubeError(method, path, status, text)

    def list_all(self, path: str, page: int = 500) -> list[dict]:
        items: list[dict] = []
        cont = ""
        while True:
            sep = "&" if "?" in path else "?"
            q = f"{path}{sep}limit={page}" + (f"&continue={urllib.parse.quote(cont)}" if cont else "")
            body = self.request("GET", q)
            items.extend(body.get("items") or [])
            cont = (body.get("metadata") or {}).get("continue") or ""
            if not cont:
                return items


# ------------------------------------------------------------------------------------------------
# The stack
# ------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Proc:
    name: str
    popen: subprocess.Popen
    log_path: str
    admin_port: int
    args: list[str]


# The watchdog stops everything in stack.json once its owner is gone without calling stop(). It
# forks once more and the intermediate process exits, so the watchdog is nobody's descendant: a
# ctest timeout, which kills the test's whole process tree, spares it. It learns of its owner's
# death from EOF on a pipe whose only writer is the owner (no PID polling: a reused PID or an
# unreaped zombie would look alive); the owner writes "q" to dismiss it after a clean stop().
_WATCHDOG = r"""
import json, os, signal, subprocess, sys, time
rfd, state, pid_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if os.fork():
    os._exit(0)
with open(pid_file, "w") as f:
    f.write(str(os.getpid()))
try:
    word = os.read(rfd, 1)
except OSError:
    word = b""
if word == b"q":
    sys.exit(0)
try:
    with open(state) as f:
        s = json.load(f)
except Exception:
    sys.exit(0)
for pgid in s.get("starting_pgids", []):
    try: os.killpg(pgid, signal.SIGKILL)
    except Exception: pass
for pid in s.get("pids", []):
    try: os.kill(pid, signal.SIGTERM)
    except Exception: pass
time.sleep(3)
for pid in s.get("pids", []):
    try: os.kill(pid, signal.SIGKILL)
    except Exception: pass
for d in s.get("peer_dirs", []):
    subprocess.run([s["stop_script"], d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""


def prepare_work_dir(work_dir: str) -> None:
    """Refuses a work dir whose processes still run (another stack); otherwise wipes it, so that no
    run adopts a previous run's peers or data (PostgreSQL keeps its data dir across starts)."""
    state = os.path.join(work_dir, "stack.json")
    pids: list[int] = []
    if os.path.exists(state):
        with open(state, encoding="utf-8") as f:
            try:
                pids = json.load(f).get("pids", [])
            except json.JSONDecodeError:
                pids = []
    peers = os.path.join(work_dir, "peers")
    if os.path.isdir(peers):
        for d in os.listdir(peers):
            pid_file = os.path.join(peers, d, "pids")
            if os.path.exists(pid_file):
                with open(pid_file, encoding="utf-8") as f:
                    pids += [int(x) for x in f.read().split() if x.isdigit()]
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass
        raise StackError(f"{work_dir} is in use (pid {pid} still runs): stop that stack or use another work dir")
    if os.path.isdir(work_dir):
        shutil.rmtree(work_dir)
    os.makedirs(work_dir)


class Stack:
    def __init__(self, cfg: StackConfig):
        if cfg.transport not in ("mqtt", "kafka"):
            raise StackError(f"transport must be mqtt or kafka, got {cfg.transport!r}")
        if cfg.clusters < 1:
            raise StackError("clusters must be at least 1")
        self.cfg = cfg
        self.work_dir = os.path.abspath(cfg.work_dir)
        self.build_dir = os.path.abspath(cfg.build_dir)
        self.logs_dir = os.path.join(self.work_dir, "logs")
        self.config_dir = os.path.join(self.work_dir, "config")
        self.peers_dir = os.path.join(self.work_dir, "peers")
        for d in (self.logs_dir, self.config_dir, self.peers_dir):
            os.makedirs(d, exist_ok=True)
        self.peers_home = os.environ.get("MMI_PEERS_HOME", os.path.expanduser("~/.cache/mmi-peers"))
        self.hub_env: dict[str, str] = {}
        self.pg_env: dict[str, str] = {}
        self.broker_env: dict[str, str] = {}
        self._hub: HubClient | None = None
        self._procs: dict[str, _Proc] = {}
        self._external: dict[str, tuple[str, Callable[[], bool]]] = {}  # attach_external()
        self._peer_dirs: list[str] = []  # in start order
        self._lock = threading.Lock()
        self._stopped = False
        self._watchdog_fd: int | None = None  # write end of the watchdog's pipe
        self._starting_pgids: list[int] = []    # start-* scripts still running (own sessions)
        self._configs: dict[str, str] | None = None
        self._appsets: dict[str, dict] = {}
        self._secret_servers: dict[str, str] | None = None  # cluster -> server of its secret
        self._secret_servers_at = 0.0

    # ---- paths and names ----------------------------------------------------------------------

    def binary(self, name: str) -> str:
        rel = {"dispatcher": "services/dispatcher/dispatcher",
               "status-sink": "services/status-sink/status-sink",
               "fleet-sim": "tools/fleet-sim/fleet-sim"}[name]
        path = os.path.join(self.build_dir, rel)
        if not os.access(path, os.X_OK):
            raise StackError(f"{path} missing: build the {name} target in {self.build_dir}")
        return path

    def cluster_name(self, i: int) -> str:
        return f"{self.cfg.cluster_prefix}{i:0{self.cfg.cluster_digits}d}"

    def cluster_names(self) -> list[str]:
        return [self.cluster_name(i) for i in range(1, self.cfg.clusters + 1)]

    @property
    def hub(self) -> HubClient:
        if self._hub is None:
            raise StackError("the hub is not started: call start_peers() first")
        return self._hub

    def helm_binary(self) -> str:
        out = subprocess.run(
            ["bash", "-c", 'source "$0/tests/peers/lib.sh" && printf %s "$MMI_PEERS_HOME/helm-$MMI_HELM_VERSION/bin/helm"',
             REPO_ROOT], capture_output=True, text=True, check=False)
        path = out.stdout.strip()
        if out.returncode != 0 or not os.access(path, os.X_OK):
            raise StackError(f"helm not found ({path or out.stderr.strip()}): run scripts/bootstrap")
        return path

    # ---- peers --------------------------------------------------------------------------------

    def _peer_alive(self, d: str) -> bool:
        env_path, pids_path = os.path.join(d, "env"), os.path.join(d, "pids")
        if not (os.path.isfile(env_path) and os.path.getsize(env_path) > 0 and os.path.isfile(pids_path)):
            return False
        with open(pids_path) as f:
            pids = [int(p) for p in f.read().split() if p.strip().isdigit()]
        if not pids:
            return False
        for pid in pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                pass
        return True

    def start_peer(self, script: str, dirname: str, *args: str) -> dict[str, str]:
        d = os.path.join(self.peers_dir, dirname)
        if d not in self._peer_dirs:
            self._peer_dirs.append(d)
        self._save_state()
        if self._peer_alive(d):
            return read_env_file(os.path.join(d, "env"))
        log = os.path.join(self.logs_dir, f"peer-{dirname}.log")
        cmd = [os.path.join(REPO_ROOT, "tests", "peers", "bin", script), d, *args]
        with open(log, "ab") as out:
            # Own session: a Ctrl-C in the terminal reaches only us; we stop the peers in order.
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            self._starting_pgids.append(proc.pid)
            self._save_state()  # the watchdog kills the script's process group if we die now
            try:
                rc = proc.wait(timeout=self.cfg.peer_timeout)
            except BaseException:  # timeout, Ctrl-C: the script and what it started so far go
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
                subprocess.run([os.path.join(REPO_ROOT, "tests", "peers", "bin", "stop"), d],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
                if not isinstance(sys.exc_info()[1], subprocess.TimeoutExpired):
                    raise
                rc = -1
            finally:
                self._starting_pgids.remove(proc.pid)
        if rc != 0:
            raise StackError(f"{script} {d} failed (exit {rc}); {log}:\n{tail(log)}")
        return read_env_file(os.path.join(d, "env"))

    def start_peers(self) -> None:
        """Hub kube-apiserver + etcd (every CRD), PostgreSQL and the broker. Idempotent."""
        self._start_watchdog()
        self.hub_env = self.start_peer("start-kube", "hub", "ROLE=hub")
        self._hub = HubClient(self.hub_env)
        self.pg_env = self.start_peer("start-postgres", "postgres", *(["TLS=1"] if self.cfg.secure else []))
        if self.cfg.transport == "mqtt":
            acl = []
            if self.cfg.secure:
                acl = [f"ACL_FILE={os.path.join(EXAMPLES_DIR, 'mosquitto-acl.conf')},"
                       f"{os.path.join(REPO_ROOT, 'tests', 'peers', 'mosquitto', 'fleet-sim.acl.conf')}",
                       "CLIENTS=" + ",".join(SECURE_MQTT_USERS.values())]
            self.broker_env = self.start_peer("start-mosquitto", "broker", *acl)
        else:
            self.broker_env = self.start_peer("start-kafka", "broker")
            self.ensure_kafka_topics()
        if self.cfg.service_users:
            self.ensure_service_users()
        self._save_state()

    def ensure_service_users(self) -> None:
        """cfg.service_users: a client certificate per service (CN=mmi-<service>, O=mmi-services)
        signed by the hub's CA, a kubeconfig each (config/<service>.kubeconfig) and a
        ClusterRoleBinding of the group to cluster-admin. Idempotent."""
        pki = os.path.dirname(self.hub_env["KUBE_CA_FILE"])
        ca_key = os.path.join(pki, "ca.key")
        if not os.path.exists(ca_key):
            raise StackError(f"{ca_key} missing: the hub peer keeps its CA key there (start-kube)")
        with open(self.hub_env["KUBECONFIG"], encoding="utf-8") as f:
            admin_config = f.read()
        for service in ("dispatcher", "status-sink"):
            path = os.path.join(self.config_dir, f"{service}.kubeconfig")
            if os.path.exists(path):
                continue
            key, csr, crt = (os.path.join(self.config_dir, f"{service}.{x}") for x in ("key", "csr", "crt"))
            ext = os.path.join(self.config_dir, f"{service}.ext")
            with open(ext, "w", encoding="utf-8") as f:
                f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                        "extendedKeyUsage=clientAuth\n")
            for cmd in (["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key],
                        ["openssl", "req", "-new", "-key", key, "-subj",
                         f"/O={SERVICE_USERS_GROUP}/CN=mmi-{service}", "-out", csr],
                        ["openssl", "x509", "-req", "-in", csr, "-CA", self.hub_env["KUBE_CA_FILE"],
                         "-CAkey", ca_key, "-CAcreateserial", "-CAserial", os.path.join(self.config_dir, "ca.srl"),
                         "-sha256", "-days", "30", "-extfile", ext, "-out", crt]):
                out = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if out.returncode != 0:
                    raise StackError(f"{shlex.join(cmd)} failed: {out.stderr.strip()}")
            with open(crt, "rb") as f:
                crt_b64 = base64.b64encode(f.read()).decode()
            with open(key, "rb") as f:
                key_b64 = base64.b64encode(f.read()).decode()
            text, n1 = re.subn(r"(client-certificate-data:\s*)\S+", lambda m: m.group(1) + crt_b64, admin_config)
            text, n2 = re.subn(r"(client-key-data:\s*)\S+", lambda m: m.group(1) + key_b64, text)
            if n1 != 1 or n2 != 1:
                raise StackError(f"{self.hub_env['KUBECONFIG']}: expected one embedded client certificate and key")
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(path + ".tmp", 0o600)
            os.replace(path + ".tmp", path)
        self.hub.request("PATCH", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/mmi-services"
                         "?fieldManager=mmi-stack&force=true",
                         {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                          "metadata": {"name": "mmi-services"},
                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                      "name": "cluster-admin"},
                          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                        "name": SERVICE_USERS_GROUP}]},
                         "application/apply-patch+yaml")

    # ---- faults on peers (tests/fault) ----------------------------------------------------------

    def _peer_script(self, script: str, dirname: str, *args: str, timeout: float = 300) -> str:
        d = os.path.join(self.peers_dir, dirname)
        log = os.path.join(self.logs_dir, f"peer-{dirname}.log")
        with open(log, "ab") as out:
            proc = subprocess.run([os.path.join(REPO_ROOT, "tests", "peers", "bin", script), d, *args],
                                  stdout=subprocess.PIPE, stderr=out, stdin=subprocess.DEVNULL,
                                  timeout=timeout, check=False)
        if proc.returncode != 0:
            raise StackError(f"{script} {d} failed (exit {proc.returncode}); {log}:\n{tail(log)}")
        return proc.stdout.decode("utf-8", "replace")

    def restart_broker(self, down_seconds: float = 0) -> None:
        """restart-mosquitto / restart-kafka: same ports and configuration (mosquitto keeps no
        sessions: persistence false)."""
        script = "restart-mosquitto" if self.cfg.transport == "mqtt" else "restart-kafka"
        self._peer_script(script, "broker", f"DOWN_SECONDS={int(down_seconds)}")
        self.broker_env = read_env_file(os.path.join(self.peers_dir, "broker", "env"))
        self._save_state()

    def restart_kube_apiserver(self, kill: bool = False) -> None:
        """restart-kube-apiserver (etcd stays up): same URL, new PID."""
        self._peer_script("restart-kube-apiserver", "hub", *(["--kill"] if kill else []))
        self.hub_env = read_env_file(os.path.join(self.peers_dir, "hub", "env"))
        self._save_state()

    def compact_etcd(self) -> int:
        """compact-etcd: compacts the hub's etcd to its current revision; returns it."""
        out = self._peer_script("compact-etcd", "hub", timeout=60).strip().splitlines()
        return int(out[-1]) if out and out[-1].isdigit() else 0

    def restart_postgres(self, down_seconds: float = 0, timeout: float = 60) -> None:
        """Stops the postmaster (fast shutdown: SIGINT ends every session) and starts it again
        with the same command line, so on the same port and data; updates PG_PID in the peer's
        env and pids files. Clients see their connections end and the same DSN come back."""
        d = os.path.join(self.peers_dir, "postgres")
        old = int(self.pg_env["PG_PID"])
        with open(f"/proc/{old}/cmdline", "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
        os.kill(old, signal.SIGINT)
        deadline = time.monotonic() + timeout
        while os.path.exists(f"/proc/{old}"):
            try:
                with open(f"/proc/{old}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        break
            except OSError:
                break
            if time.monotonic() > deadline:
                raise StackError(f"postgres (pid {old}) did not stop within {timeout:.0f}s")
            time.sleep(0.05)
        if down_seconds:
            time.sleep(down_seconds)
        if os.getuid() == 0:
            argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", *argv]
        n = 1
        while os.path.exists(os.path.join(d, "logs", f"postgres-restart-{n}.log")):
            n += 1
        with open(os.path.join(d, "logs", f"postgres-restart-{n}.log"), "ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        pids_path = os.path.join(d, "pids")
        with open(pids_path, encoding="utf-8") as f:
            pids = [p for p in f.read().split() if p.strip() and p.strip() != str(old)]
        with open(pids_path, "w", encoding="utf-8") as f:
            f.write("\n".join([*pids, str(proc.pid)]) + "\n")
        env_path = os.path.join(d, "env")
        with open(env_path, encoding="utf-8") as f:
            lines = [l for l in f.read().splitlines() if not l.startswith("PG_PID=")]
        with open(env_path, "w", encoding="utf-8") as f:
            f.write("\n".join([*lines, f"PG_PID={proc.pid}"]) + "\n")
        self.pg_env = read_env_file(env_path)
        self._save_state()
        ready = os.path.join(self.pg_env["PG_BIN_DIR"], "pg_isready")
        while True:
            rc = proc.poll()
            if rc is not None:
                raise StackError(f"postgres exited with {rc} after its restart; see {d}/logs")
            if subprocess.run([ready, "-h", "127.0.0.1", "-p", self.pg_env["PG_PORT"], "-U", "mmi", "-d", "mmi"],
                              capture_output=True, check=False).returncode == 0:
                return
            if time.monotonic() > deadline + 60:
                raise StackError("postgres not ready after its restart")
            time.sleep(0.2)

    def signal_peer(self, name: str, sig: int) -> None:
        """Sends `sig` to a peer's main process (e.g. SIGSTOP/SIGCONT to pause the broker)."""
        os.kill(self.pid(name), sig)

    def fleet_sim_state(self, timeout: float = 120) -> dict:
        """cfg.fleet_state_file: asks fleet-sim for its agents' snapshot (SIGUSR1) and returns it
        (see tools/fleet-sim `--state-file`): {"clusters": {cluster: {"works": [...],
        "deleted": [...]}}, "applications", "generation", "written_at"}."""
        path = os.path.join(self.work_dir, "fleet-sim-state.json")
        if os.path.exists(path):
            os.remove(path)  # fleet-sim writes a new one (atomically: a rename)
        pid = self.pid("fleet-sim")
        if not self.running("fleet-sim"):
            raise StackError("fleet-sim is not running")
        os.kill(pid, signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while True:
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    try:
                        state = json.load(f)
                    except json.JSONDecodeError:
                        state = {}
                if state.get("generation"):
                    return state
            if not self.running("fleet-sim"):
                raise StackError(f"fleet-sim exited; {self.logs_dir}/fleet-sim.log:\n{tail(os.path.join(self.logs_dir, 'fleet-sim.log'))}")
            if time.monotonic() > deadline:
                raise StackError(f"fleet-sim wrote no state file within {timeout:.0f}s ({path})")
            time.sleep(0.1)

    def kafka_topics(self) -> list[str]:
        """The spec and status topics of the rendered config (sourceEventsTopic, agentEventsTopic)."""
        with open(self.render_configs()["dispatcher"], encoding="utf-8") as f:
            text = f.read()
        topics = re.findall(r"^\s+(?:sourceEventsTopic|agentEventsTopic):\s*(\S+)\s*$", text, re.M)
        return sorted({t.strip("\"'") for t in topics}) or ["agentevents", "sourceevents"]

    def ensure_kafka_topics(self, timeout: float = 60) -> None:
        """Creates the topics before any client subscribes, as a Kafka operator does: a consumer
        group subscribed to a topic that does not exist yet gets no partitions (and the status
        sink is not ready) until its next metadata refresh. A metadata request for the topic
        creates it (the peer runs with auto.create.topics.enable=true, num.partitions=1)."""
        kcat = shutil.which("kcat") or shutil.which("kafkacat")
        if kcat is None:
            raise StackError("kcat not found: run scripts/bootstrap")
        bootstrap = self.broker_env["KAFKA_BOOTSTRAP"]
        deadline = time.monotonic() + timeout
        for topic in self.kafka_topics():
            while True:
                out = subprocess.run([kcat, "-b", bootstrap, "-L", "-t", topic, "-m", "10"],
                                     capture_output=True, text=True, check=False)
                if out.returncode == 0 and re.search(rf'topic "{re.escape(topic)}" with [1-9]', out.stdout):
                    break
                if time.monotonic() > deadline:
                    raise StackError(f"Kafka topic {topic} not created: {out.stdout.strip()} {out.stderr.strip()}")
                time.sleep(0.5)

    def broker_address(self) -> str:
        if self.cfg.transport == "mqtt":
            return self.broker_env["MQTT_MTLS_HOST" if self.cfg.secure else "MQTT_HOST"]
        return self.broker_env["KAFKA_BOOTSTRAP"]

    # ---- hub objects --------------------------------------------------------------------------

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
        """A ManagedCluster `name` in ManagedClusterSet `global` (a cluster joining the fleet)."""
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
        objs = [self.managed_cluster(c) for c in self.cluster_names()]
        if self.cfg.local_cluster:
            objs.append(self.managed_cluster("local-cluster", local=True))
        self._parallel(self._apply, objs, concurrency)

    def apply_examples(self) -> None:
        """Namespaces, the Argo CD server Service the GitOpsCluster controller looks for, every
        Kubernetes object of examples/ (kubectl apply --server-side), and the PlacementDecisions
        the placement controller would write for every Placement (all matching clusters, paged
        at 100 per object)."""
        namespaces = {ARGO_NAMESPACE}
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
        args = ["apply", "--server-side", "--field-manager=mmi-stack", "--force-conflicts"]
        for f in files:
            args += ["-f", os.path.join(EXAMPLES_DIR, f)]
        self.kubectl(*args)
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
            wanted = set(p["spec"].get("clusterSets") or bound) & bound
            predicates = p["spec"].get("predicates") or [{}]
            chosen = []
            for mc in clusters:
                labels = mc["metadata"].get("labels") or {}
                in_set = False
                for sname in wanted:
                    sel = ((sets.get(sname) or {}).get("spec") or {}).get("clusterSelector") or {}
                    if sel.get("selectorType") == "LabelSelector":
                        in_set = in_set or label_selector_matches(sel.get("labelSelector"), labels)
                    elif sname in sets:
                        in_set = in_set or labels.get(CLUSTERSET_LABEL) == sname
                if not in_set:
                    continue
                if any(label_selector_matches(((pr.get("requiredClusterSelector") or {}).get("labelSelector")),
                                              labels) for pr in predicates):
                    chosen.append(mc["metadata"]["name"])
            chosen.sort()
            n = p["spec"].get("numberOfClusters")
            if n is not None:
                chosen = chosen[: int(n)]
            pages = [chosen[i:i + DECISIONS_PER_OBJECT] for i in range(0, len(chosen), DECISIONS_PER_OBJECT)] or [[]]
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
        `appset_name` (as stored on the hub) for `cluster`: template rendered with the
        clusterDecisionResource params (name, server, clusterName, reason, and `values.<k>` of
        `generator`, or of every generator when none is named), owner reference to the
        ApplicationSet, the resources finalizer when the template names none."""
        appset = self.appset(appset_name, namespace)
        spec = appset.get("spec") or {}
        if spec.get("goTemplate"):
            raise StackError(f"ApplicationSet {appset_name}: goTemplate rendering is not simulated")
        params = {"name": cluster, "server": self._cluster_server(cluster), "clusterName": cluster, "reason": ""}
        for gen in [generator] if generator is not None else spec.get("generators") or []:
            for k, v in ((gen.get("clusterDecisionResource") or {}).get("values") or {}).items():
                params[f"values.{k}"] = str(v)
        tmpl = render_fasttemplate(spec.get("template") or {}, params)
        tmeta = tmpl.get("metadata") or {}
        meta: dict[str, Any] = {"name": tmeta.get("name") or f"{cluster}-{appset_name}",
                                "namespace": tmeta.get("namespace") or namespace}
        if tmeta.get("labels"):
            meta["labels"] = dict(tmeta["labels"])
        if tmeta.get("annotations"):
            meta["annotations"] = dict(tmeta["annotations"])
        finalizers = list(tmeta.get("finalizers") or [])
        preserve = ((spec.get("syncPolicy") or {}).get("preserveResourcesOnDeletion")) is True
        if not finalizers and not preserve:
            finalizers = ["resources-finalizer.argocd.argoproj.io"]
        if finalizers:
            meta["finalizers"] = finalizers
        meta["ownerReferences"] = [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                                    "name": appset["metadata"]["name"], "uid": appset["metadata"]["uid"],
                                    "controller": True, "blockOwnerDeletion": True}]
        return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta,
                "spec": tmpl.get("spec") or {}}

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

    # ---- services -----------------------------------------------------------------------------

    def helm_args(self) -> list[str]:
        """`helm template` arguments: examples/values-<transport>.yaml plus the local overrides
        (plain loopback broker, no TLS, no broker credentials; DSN from the environment)."""
        t = self.cfg.transport
        sets = ["store.existingSecret=mmi-postgresql",
                f"dispatcher.logLevel={self.cfg.log_level}", f"statusSink.logLevel={self.cfg.log_level}",
                "transport.tls.enabled=false", "transport.tls.existingSecret=", "transport.tls.certKey=",
                "transport.credentials.existingSecret="]
        if t == "mqtt":
            sets += [f"transport.mqtt.brokerHost={self.broker_address()}", "transport.mqtt.username="]
        else:
            sets += [f"transport.kafka.bootstrapServer={self.broker_address()}",
                     "transport.kafka.sasl.mechanism=", "transport.kafka.sasl.username="]
        if self.cfg.secure and t == "mqtt":
            # mTLS, each service with its own certificate (the ACL's user is its CN).
            sets += ["transport.tls.enabled=true"]
            clients = self.broker_env["MQTT_CLIENTS_DIR"]
            for service, key in (("dispatcher", "dispatcher"), ("status-sink", "statusSink")):
                cn = SECURE_MQTT_USERS[service]
                sets += [f"{key}.transportOverrides.tls.caFile={self.broker_env['MQTT_CA_FILE']}",
                         f"{key}.transportOverrides.tls.clientCertFile={clients}/{cn}.crt",
                         f"{key}.transportOverrides.tls.clientKeyFile={clients}/{cn}.key"]
        sets += list(self.cfg.helm_set)
        args = ["template", RELEASE_NAME, CHART_DIR, "--namespace", RELEASE_NAMESPACE,
                "-f", os.path.join(EXAMPLES_DIR, f"values-{t}.yaml")]
        for s in sets:
            args += ["--set", s]
        return args

    def render_configs(self) -> dict[str, str]:
        """Renders the chart and writes config/{dispatcher,status-sink}.yaml from its ConfigMap
        (and config/rendered.yaml, the whole output). Returns {service: path}."""
        if self._configs is not None:
            return self._configs
        if not self.broker_env:
            raise StackError("start_peers() first: the config needs the broker address")
        helm = self.helm_binary()
        args = self.helm_args()
        out = subprocess.run([helm, *args], capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise StackError(f"helm {shlex.join(args)} failed: {out.stderr.strip()}")
        with open(os.path.join(self.config_dir, "rendered.yaml"), "w", encoding="utf-8") as f:
            f.write(out.stdout)
        cm = ""
        for doc in out.stdout.split("\n---"):
            if re.search(r"^kind: ConfigMap\s*$", doc, re.M) and "dispatcher.yaml: |" in doc:
                cm = doc
        blocks = configmap_data_blocks(cm)
        configs = {}
        for service, key in (("dispatcher", "dispatcher.yaml"), ("status-sink", "status-sink.yaml")):
            if key not in blocks:
                raise StackError(f"the rendered ConfigMap has no {key} (see {self.config_dir}/rendered.yaml)")
            path = os.path.join(self.config_dir, key)
            with open(path, "w", encoding="utf-8") as f:
                f.write(blocks[key])
            configs[service] = path
        self._configs = configs
        return configs

    def source_id(self) -> str:
        with open(self.render_configs()["dispatcher"], encoding="utf-8") as f:
            m = re.search(r"^\s+sourceId:\s*(\S+)\s*$", f.read(), re.M)
        return m.group(1).strip("\"'") if m else "app-work-client"

    def _service_env(self, name: str) -> dict[str, str]:
        env = dict(os.environ)
        for k in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
            env.pop(k, None)
        kubeconfig = self.hub_env["KUBECONFIG"]
        if self.cfg.service_users:
            kubeconfig = os.path.join(self.config_dir, f"{name}.kubeconfig")
        env.update({"KUBECONFIG": kubeconfig,
                    "MMI_STORE_DSN": self.pg_env["PG_DSN"],  # from Secret mmi-postgresql in the chart
                    "POD_NAME": f"{name}-local-0", "POD_NAMESPACE": RELEASE_NAMESPACE})
        return env

    def _start(self, name: str, args: list[str], env: dict[str, str], admin_port: int) -> _Proc:
        with self._lock:
            old = self._procs.get(name)
            if old is not None and old.popen.poll() is None:
                raise StackError(f"{name} is already running (pid {old.popen.pid})")
        log_path = os.path.join(self.logs_dir, f"{name}.log")
        out = open(log_path, "ab")
        out.write(f"\n===== {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {shlex.join(args)}\n".encode())
        out.flush()
        popen = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=env, cwd=self.work_dir, start_new_session=True)
        out.close()
        proc = _Proc(name, popen, log_path, admin_port, args)
        with self._lock:
            self._procs[name] = proc
        self._save_state()
        deadline = time.monotonic() + self.cfg.ready_timeout
        url = f"http://127.0.0.1:{admin_port}/readyz"
        last = ""
        while True:
            rc = popen.poll()
            if rc is not None:
                raise StackError(f"{name} exited with {rc} before it was ready; {log_path}:\n{tail(log_path)}")
            try:
                status, body = http_get(url, timeout=2)
                if status == 200:
                    return proc
                last = f"HTTP {status}: {body.strip()[:300]}"
            except OSError as e:
                last = str(e)
            if time.monotonic() > deadline:
                self.kill_process(name)
                raise StackError(f"{name} not ready after {self.cfg.ready_timeout:.0f}s ({url}: {last}); "
                                 f"{log_path}:\n{tail(log_path)}")
            time.sleep(0.25)

    def start_dispatcher(self, extra_args: list[str] | None = None) -> None:
        cfg = self.render_configs()["dispatcher"]
        port = free_port()
        args = [self.binary("dispatcher"), f"--config={cfg}", f"--admin-listen=127.0.0.1:{port}",
                *(extra_args or [])]
        self._start("dispatcher", args, self._service_env("dispatcher"), port)

    def start_status_sink(self, extra_args: list[str] | None = None) -> None:
        cfg = self.render_configs()["status-sink"]
        port = free_port()
        args = [self.binary("status-sink"), f"--config={cfg}", f"--admin-listen=127.0.0.1:{port}",
                *(extra_args or [])]
        self._start("status-sink", args, self._service_env("status-sink"), port)

    def fleet_sim_args(self, port: int, extra_args: list[str] | None = None) -> list[str]:
        return [self.binary("fleet-sim"), "--transport", self.cfg.transport, "--broker", self.broker_address(),
                "--source-id", self.source_id(), "--clusters", str(self.cfg.clusters + self.cfg.spare_clusters),
                "--cluster-prefix", self.cfg.cluster_prefix, "--cluster-digits", str(self.cfg.cluster_digits),
                "--metrics-listen", f"127.0.0.1:{port}", "--log-level", self.cfg.log_level,
                *(["--state-file", os.path.join(self.work_dir, "fleet-sim-state.json")]
                  if self.cfg.fleet_state_file else []),
                *self._fleet_sim_tls_args(),
                *self.cfg.fleet_args, *(extra_args or [])]

    def _fleet_sim_tls_args(self) -> list[str]:
        if not (self.cfg.secure and self.cfg.transport == "mqtt"):
            return []
        clients = self.broker_env["MQTT_CLIENTS_DIR"]
        cn = SECURE_MQTT_USERS["fleet-sim"]
        return ["--mqtt-ca-file", self.broker_env["MQTT_CA_FILE"],
                "--mqtt-cert-file", f"{clients}/{cn}.crt", "--mqtt-key-file", f"{clients}/{cn}.key"]

    def secrets(self) -> dict[str, str]:
        """What must never appear in a log: the DSN password, the hub bearer token, and the
        private keys the processes were given (their first line of base64, which a leaked key
        would carry). Keyed by a name for the report."""
        out = {}
        if self.pg_env.get("PG_TLS") == "1" and self.pg_env.get("PG_PASSWORD"):
            # Random and checked only with TLS=1 (otherwise the fixed word "mmi", not a secret).
            out["postgres password"] = self.pg_env["PG_PASSWORD"]
        if self.hub_env.get("KUBE_TOKEN"):
            out["hub token"] = self.hub_env["KUBE_TOKEN"]
        keys = []
        if self.cfg.secure and self.cfg.transport == "mqtt":
            keys = [f"{self.broker_env['MQTT_CLIENTS_DIR']}/{cn}.key" for cn in SECURE_MQTT_USERS.values()]
        for path in keys:
            with open(path, encoding="utf-8") as f:
                body = [line.strip() for line in f if line.strip() and not line.startswith("-----")]
            if body:
                out[f"private key {os.path.basename(path)}"] = body[0]
        return out

    def start_fleet_sim(self, extra_args: list[str] | None = None) -> None:
        port = free_port()
        self._start("fleet-sim", self.fleet_sim_args(port, extra_args), dict(os.environ), port)

    def pid(self, name: str) -> int:
        with self._lock:
            proc = self._procs.get(name)
        if proc is not None:
            return proc.popen.pid
        if name in PEER_PID_KEYS:
            which, key = PEER_PID_KEYS[name]
            env = {"hub": self.hub_env, "postgres": self.pg_env, "broker": self.broker_env}[which]
            if key in env:
                return int(env[key])
        raise StackError(f"no process {name!r}")

    def running(self, name: str) -> bool:
        with self._lock:
            proc = self._procs.get(name)
            external = self._external.get(name)
        if external is not None:
            return external[1]()
        return proc is not None and proc.popen.poll() is None

    def attach_external(self, name: str, admin_url: str, alive: Callable[[], bool]) -> None:
        """`name` (a service) runs outside the stack, e.g. as a pod the chart installed
        (tools/stack/pods.py): admin_url()/metrics() reach it at `admin_url`, running() asks
        `alive`."""
        with self._lock:
            self._external[name] = (admin_url.rstrip("/"), alive)

    def stop_process(self, name: str, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Signals the process and waits for it (SIGKILL after `timeout`). Returns its exit code
        (negative = killed by that signal)."""
        with self._lock:
            proc = self._procs.get(name)
        if proc is None:
            raise StackError(f"{name} was never started")
        if proc.popen.poll() is None:
            try:
                proc.popen.send_signal(sig)
                return proc.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
            except ProcessLookupError:
                pass
        return proc.popen.wait()

    def kill_process(self, name: str) -> int:
        return self.stop_process(name, signal.SIGKILL, timeout=30)

    def admin_url(self, name: str) -> str:
        with self._lock:
            proc = self._procs.get(name)
            external = self._external.get(name)
        if external is not None:
            return external[0]
        if proc is None:
            raise StackError(f"{name} was never started")
        return f"http://127.0.0.1:{proc.admin_port}"

    def process_stats(self, name: str) -> dict[str, float]:
        """{"rss_bytes", "cpu_seconds"} of the process (a service, fleet-sim or a peer's main
        process: kube-apiserver, etcd, postgres (postmaster only), mosquitto, kafka)."""
        pid = self.pid(name)
        rss = 0
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1]) * 1024
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError as e:
            raise StackError(f"{name} (pid {pid}) is not running") from e
        ticks = os.sysconf("SC_CLK_TCK")
        return {"rss_bytes": rss, "cpu_seconds": (int(fields[11]) + int(fields[12])) / ticks}

    def metrics_text(self, name: str) -> str:
        if name == "kube-apiserver":
            status, text = self.hub.raw("GET", "/metrics")
            if status != 200:
                raise StackError(f"kube-apiserver /metrics: HTTP {status}")
            return text
        status, text = http_get(self.admin_url(name) + "/metrics", timeout=10)
        if status != 200:
            raise StackError(f"{name} /metrics: HTTP {status}")
        return text

    def metrics(self, name: str) -> dict[str, list[tuple[dict[str, str], float]]]:
        return parse_prometheus(self.metrics_text(name))

    # ---- tools --------------------------------------------------------------------------------

    def kubectl(self, *args: str, input: str | None = None) -> str:  # noqa: A002 - contract name
        out = subprocess.run([self.hub_env["KUBECTL"], *args], input=input, capture_output=True, text=True,
                             env={**os.environ, "KUBECONFIG": self.hub_env["KUBECONFIG"]}, check=False)
        if out.returncode != 0:
            raise StackError(f"kubectl {shlex.join(args)} failed (exit {out.returncode}): {out.stderr.strip()}")
        return out.stdout

    def kube_get(self, path: str) -> dict:
        return self.hub.request("GET", path)

    def psql(self, sql: str) -> str:
        out = subprocess.run([os.path.join(self.pg_env["PG_BIN_DIR"], "psql"), self.pg_env["PG_DSN"],
                              "-v", "ON_ERROR_STOP=1", "-tAq", "-c", sql], capture_output=True, text=True,
                             check=False)
        if out.returncode != 0:
            raise StackError(f"psql failed: {out.stderr.strip()}")
        return out.stdout

    # ---- lifecycle ----------------------------------------------------------------------------

    def _state_path(self) -> str:
        return os.path.join(self.work_dir, "stack.json")

    def _save_state(self) -> None:
        with self._lock:
            procs = {n: {"pid": p.popen.pid, "admin_url": f"http://127.0.0.1:{p.admin_port}", "log": p.log_path,
                         "args": p.args} for n, p in self._procs.items()}
        state = {"transport": self.cfg.transport, "clusters": self.cfg.clusters, "processes": procs,
                 "pids": [p["pid"] for p in procs.values()], "peer_dirs": list(self._peer_dirs),
                 "starting_pgids": list(self._starting_pgids),
                 "stop_script": os.path.join(REPO_ROOT, "tests", "peers", "bin", "stop"),
                 "hub": self.hub_env, "postgres": self.pg_env, "broker": self.broker_env}
        tmp = self._state_path() + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=1)
        os.replace(tmp, self._state_path())

    def _start_watchdog(self) -> None:
        """A detached process that stops everything in stack.json if this process dies without
        calling stop() (SIGKILL, a ctest timeout); see _WATCHDOG."""
        if self._watchdog_fd is not None:
            return
        self._save_state()
        rfd, wfd = os.pipe()  # not inheritable: only the watchdog gets rfd (pass_fds)
        try:
            launcher = subprocess.Popen(
                [sys.executable, "-c", _WATCHDOG, str(rfd), self._state_path(),
                 os.path.join(self.work_dir, "watchdog.pid")],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(rfd,), start_new_session=True)
            launcher.wait()  # exits right after forking the watchdog
        finally:
            os.close(rfd)
        self._watchdog_fd = wfd

    def _dismiss_watchdog(self) -> None:
        if self._watchdog_fd is None:
            return
        try:
            os.write(self._watchdog_fd, b"q")
        except OSError:
            pass
        os.close(self._watchdog_fd)
        self._watchdog_fd = None

    def stop(self) -> None:
        """Stops fleet-sim, the services (SIGTERM, then SIGKILL) and the peers (by PID). Safe to
        call twice."""
        with self._lock:
            names = [n for n in ("fleet-sim", "status-sink", "dispatcher") if n in self._procs]
            names += [n for n in self._procs if n not in names]
        for name in names:
            try:
                self.stop_process(name, signal.SIGTERM, timeout=30)
            except Exception:  # noqa: BLE001 - stopping must go on
                pass
        stop_script = os.path.join(REPO_ROOT, "tests", "peers", "bin", "stop")
        for d in reversed(self._peer_dirs):
            subprocess.run([stop_script, d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        self._dismiss_watchdog()
        self._stopped = True

    def __enter__(self) -> "Stack":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
