"""Starting the real peers (tests/peers/bin/start-*): the hub, PostgreSQL, the broker."""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse

from .config import EXAMPLES_DIR, REPO_ROOT, SECURE_MQTT_USERS, SERVICE_USERS_GROUP, StackError
from .host import read_env_file, tail
from .hub_client import HubClient


class PeersMixin:
    """Part of Stack: the peers' start scripts, the service users on the hub, Kafka topics."""

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
        """Hub kube-apiserver + etcd (every CRD), with cfg.argocd Argo CD's ApplicationSet controller
        on it, PostgreSQL and the broker; for transport grpc mosquitto as the agents' broker and the
        real Maestro server (start-maestro, database `maestro` in the same PostgreSQL) in front of
        it. Idempotent."""
        self._start_watchdog()
        self.hub_env = self.start_peer("start-kube", "hub", "ROLE=hub")
        self._hub = HubClient(self.hub_env)
        if self.cfg.argocd:
            self.argocd_env = self.start_peer("start-argocd", "argocd-hub", "ROLE=hub",
                                              f"KUBECONFIG={self.hub_env['KUBECONFIG']}",
                                              f"KUBECTL={self.hub_env['KUBECTL']}")
        self.pg_env = self.start_peer("start-postgres", "postgres", *(["TLS=1"] if self.cfg.secure else []))
        if self.cfg.transport in ("mqtt", "grpc"):
            acl = []
            if self.cfg.secure and self.cfg.transport == "mqtt":
                acl = [f"ACL_FILE={os.path.join(EXAMPLES_DIR, 'mosquitto-acl.conf')},"
                       f"{os.path.join(REPO_ROOT, 'tests', 'peers', 'mosquitto', 'fleet-sim.acl.conf')}",
                       "CLIENTS=" + ",".join(SECURE_MQTT_USERS.values())]
            self.broker_env = self.start_peer("start-mosquitto", "broker", *acl)
            if self.cfg.transport == "grpc":
                pg = self.pg_env
                self.maestro_env = self.start_peer(
                    "start-maestro", "maestro", "BROKER=mqtt", f"MQTT_HOST={self.broker_env['MQTT_HOST']}",
                    f"PG_HOST={pg['PG_HOST']}", f"PG_PORT={pg['PG_PORT']}", f"PG_USER={pg['PG_USER']}",
                    f"PG_PASSWORD={pg['PG_PASSWORD']}", "PG_DB=maestro", f"PG_BIN_DIR={pg['PG_BIN_DIR']}",
                    f"DB_MAX_OPEN_CONNECTIONS={self.cfg.maestro_db_connections}",
                    f"REPLICAS={self.cfg.maestro_replicas}",
                    *([f"PG_SSLMODE={pg['PG_SSLMODE']}", f"PG_CA_FILE={pg['PG_CA_FILE']}"]
                      if pg.get("PG_TLS") == "1" else []),
                    *(["TLS=1", "AUTHN=mtls", f"KUBECONFIG={self.hub_env['KUBECONFIG']}"]
                      if self.cfg.secure else []))
                if self.cfg.secure:
                    self._grant_maestro_source()
        else:
            self.broker_env = self.start_peer("start-kafka", "broker")
            self.ensure_kafka_topics()
        if self.cfg.service_users:
            self.ensure_service_users()
        self._save_state()

    def _grant_maestro_source(self) -> None:
        """secure grpc: the services' client certificate (start-maestro's, O=mmi-sources) may
        publish and subscribe on our source: the SubjectAccessReview Maestro's mtls authentication
        sends to the hub (what the chart renders for service accounts,
        templates/rbac-maestro-source.yaml)."""
        name = "mmi-demo-maestro-source"
        self.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": name},
                 "rules": [{"nonResourceURLs": [f"/sources/{self.source_id()}"],
                            "verbs": ["pub", "sub"]}]},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": name},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                               "name": "mmi-sources"}]}]}))

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
        """Where the services connect: the broker, or Maestro's gRPC source server."""
        if self.cfg.transport == "grpc":
            return self.maestro_env["MAESTRO_GRPC_ADDR"]
        return self.agent_broker_address()

    def agent_broker_address(self) -> str:
        """Where fleet-sim's agents connect (for grpc: mosquitto, behind Maestro)."""
        if self.cfg.transport in ("mqtt", "grpc"):
            # secure grpc secures the source API; the agents' broker behind Maestro stays plain.
            secure_mqtt = self.cfg.secure and self.cfg.transport == "mqtt"
            return self.broker_env["MQTT_MTLS_HOST" if secure_mqtt else "MQTT_HOST"]
        return self.broker_env["KAFKA_BOOTSTRAP"]

    def maestro_request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        """One call to Maestro's REST API (/api/maestro/v1<path>); (status, parsed JSON body)."""
        if not self.maestro_env:
            raise StackError("Maestro runs only with transport grpc (start_peers() first)")
        parsed = urllib.parse.urlsplit(self.maestro_env["MAESTRO_REST_URL"])
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
        try:
            conn.request(method, "/api/maestro/v1" + path, body=None if body is None else json.dumps(body),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", "replace")
        finally:
            conn.close()
        try:
            return resp.status, (json.loads(text) if text else {})
        except ValueError:
            return resp.status, {"raw": text}

    def ensure_maestro_consumers(self, names: list[str]) -> None:
        """A Maestro consumer per cluster (what ACM's Maestro addon does for each ManagedCluster):
        201 created or 409 already there."""
        for name in names:
            status, body = self.maestro_request("POST", "/consumers", {"name": name})
            if status not in (201, 409):
                raise StackError(f"creating Maestro consumer {name}: HTTP {status} {body}")

    def maestro_resource_bundles(self, source_id: str) -> list[dict]:
        """Every resource bundle Maestro holds for `source_id` (REST, pages of 400)."""
        items: list[dict] = []
        page = 1
        while True:
            query = urllib.parse.quote(f"source='{source_id}'")
            status, body = self.maestro_request("GET", f"/resource-bundles?search={query}&page={page}&size=400")
            if status != 200:
                raise StackError(f"listing Maestro resource bundles: HTTP {status} {body}")
            batch = body.get("items") or []
            items += batch
            if len(batch) < 400:
                return items
            page += 1
