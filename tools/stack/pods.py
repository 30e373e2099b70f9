"""pods: the two services as pods, installed by the Helm chart onto a one-node cluster joined to the
stack's hub, for `scripts/demo --pods` and tests/e2e/chart.

    node = start_node(stack, image)            # tests/peers/bin/start-node, the image loaded
    chart = ChartOnNode(stack, node, image)
    chart.install()                            # the DSN Secret, helm install --wait
    chart.attach()                             # stack.metrics("dispatcher") etc. reach the pods

The install is the chart README's ("Install"): examples/values-mqtt.yaml plus only values (image,
broker and PostgreSQL addresses as the pods see this machine, the DSN Secret; plain MQTT without
users, since the stack's broker has neither; one replica of each service on a two-core node).
Needs root (containerd, network namespaces, iptables). Python 3 standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess

from mmi_stack import (CHART_DIR, EXAMPLES_DIR, RELEASE_NAME, RELEASE_NAMESPACE, REPO_ROOT, Stack,
                       StackError, http_get, parse_prometheus, read_env_file)

INSTANCE = f"app.kubernetes.io/instance={RELEASE_NAME}"
COMPONENTS = ("dispatcher", "status-sink")


def run(cmd: list[str], env: dict | None = None, timeout: float = 900) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if out.returncode != 0:
        raise StackError(f"{' '.join(cmd)} failed (exit {out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out.stdout


def image_facts() -> dict[str, str]:
    """Builds the image if the source tree changed (cached otherwise, tests/peers/build/image.sh)
    and returns MMI_IMAGE, MMI_IMAGE_ARCHIVE, PAUSE_IMAGE, PAUSE_IMAGE_ARCHIVE."""
    out = run([os.path.join(REPO_ROOT, "tests", "peers", "build", "image.sh")], timeout=3600)
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def start_node(stack: Stack, image: dict[str, str]) -> dict[str, str]:
    """A node joined to the stack's hub (after start_peers()), the image loaded, PostgreSQL and
    the MQTT broker reachable from the pods. Registered with the stack: its stop() and watchdog
    tear the node down. Returns the node's env (NODE_NAME, NODE_HOST_ADDRESS, ...)."""
    if os.geteuid() != 0:
        raise StackError("pods need root (containerd, network namespaces, iptables)")
    if stack.cfg.transport != "mqtt":
        raise StackError("pods: only --transport mqtt is wired (the broker's address as the pods see it)")
    ports = f"{stack.pg_env['PG_PORT']},{stack.broker_env['MQTT_PORT']}"
    node = stack.start_peer("start-node", "node", f"HUB={stack.peers_dir}/hub", f"HOST_PORTS={ports}",
                            f"IMAGES={image['MMI_IMAGE_ARCHIVE']}")
    # start-node restarts the hub's kube-apiserver (ServiceAccount admission on): new PID.
    stack.hub_env = read_env_file(os.path.join(stack.peers_dir, "hub", "env"))
    return node


def helm_install_args(verb: str, image: str, node: dict, broker_port: str, extra: list[str]) -> list[str]:
    """The install command of the chart README, with this run's addresses."""
    repo, _, tag = image.rpartition(":")
    sets = [f"image.repository={repo}",
            f"transport.mqtt.brokerHost={node['NODE_HOST_ADDRESS']}:{broker_port}",
            # The test broker is plain MQTT without users (values-mqtt.yaml: mTLS + a password).
            "transport.tls.enabled=false", "transport.tls.existingSecret=",
            "transport.credentials.existingSecret=", "transport.mqtt.username=",
            # Two pods on a two-core node: one of each service (default 2 each; a rolling update
            # of two 500m dispatchers plus two sinks does not fit beside its surge pod).
            "dispatcher.replicas=1", "statusSink.replicas=1", *extra]
    args = [verb, RELEASE_NAME, CHART_DIR, "-n", RELEASE_NAMESPACE,
            "-f", os.path.join(EXAMPLES_DIR, "values-mqtt.yaml")]
    args += ["--set-string", f"image.tag={tag}"]
    for s in sets:
        args += ["--set", s]
    return args + ["--wait", "--timeout", "5m"]


class ChartOnNode:
    """kubectl/helm against the hub, and the chart's pods and Services."""

    def __init__(self, stack: Stack, node: dict, image: str, log=print):
        self.stack = stack
        self.node = node
        self.image = image
        self.log = log
        self.helm = stack.helm_binary()
        self.env = {**os.environ, "KUBECONFIG": stack.hub_env["KUBECONFIG"]}

    def kubectl_json(self, *args: str) -> dict:
        return json.loads(self.stack.kubectl(*args, "-o", "json"))

    def helm_run(self, args: list[str]) -> str:
        self.log("helm " + " ".join(args))
        return run([self.helm, *args], env=self.env, timeout=600)

    def dsn(self) -> str:
        """The stack's DSN with the address the pods reach PostgreSQL at."""
        return self.stack.pg_env["PG_DSN"].replace("127.0.0.1", self.node["NODE_HOST_ADDRESS"], 1)

    def install(self, extra: list[str] | None = None) -> None:
        """The DSN Secret, then helm install --wait (both Deployments Ready)."""
        self.stack.kubectl("-n", RELEASE_NAMESPACE, "create", "secret", "generic", "mmi-postgresql",
                           f"--from-literal=dsn={self.dsn()}")
        self.helm_run(helm_install_args("install", self.image, self.node, self.stack.broker_env["MQTT_PORT"],
                                        extra or []))

    def upgrade(self, extra: list[str]) -> None:
        self.helm_run(helm_install_args("upgrade", self.image, self.node, self.stack.broker_env["MQTT_PORT"],
                                        extra))

    def attach(self) -> None:
        """stack.admin_url/metrics/running of both services reach their pods (through the metrics
        Services' ClusterIPs, routed by kube-proxy on this machine)."""
        for c in COMPONENTS:
            self.stack.attach_external(c, f"http://{self.metrics_service(c)}", lambda c=c: self.ready(c))

    def pods(self) -> list[dict]:
        return self.kubectl_json("-n", RELEASE_NAMESPACE, "get", "pods", "-l", INSTANCE)["items"]

    def pod_of(self, component: str) -> dict:
        pods = [p for p in self.pods() if p["metadata"]["labels"].get("app.kubernetes.io/component") == component
                and not p["metadata"].get("deletionTimestamp")]
        if len(pods) != 1:
            raise StackError(f"expected one {component} pod, found {[p['metadata']['name'] for p in pods]}")
        return pods[0]

    def ready(self, component: str) -> bool:
        try:
            pod = self.pod_of(component)
        except StackError:
            return False
        conditions = {x["type"]: x["status"] for x in pod["status"].get("conditions") or []}
        return conditions.get("Ready") == "True"

    def metrics_service(self, component: str) -> str:
        """ClusterIP:port of the component's metrics Service."""
        items = self.kubectl_json("-n", RELEASE_NAMESPACE, "get", "services", "-l",
                                  f"{INSTANCE},app.kubernetes.io/metrics=true,app.kubernetes.io/component={component}")["items"]
        if len(items) != 1:
            raise StackError(f"expected one metrics Service of {component}, found {len(items)}")
        spec = items[0]["spec"]
        return f"{spec['clusterIP']}:{spec['ports'][0]['port']}"

    def metrics(self, component: str) -> dict:
        """The component's /metrics, fetched through its Service (kube-proxy routes the ClusterIP)."""
        status, text = http_get(f"http://{self.metrics_service(component)}/metrics", timeout=5)
        if status != 200:
            raise StackError(f"{component} /metrics through its Service: HTTP {status}")
        return parse_prometheus(text)

    def pod_logs(self, pod: dict) -> str:
        name = pod["metadata"]["name"]
        return self.stack.kubectl("-n", RELEASE_NAMESPACE, "logs", name, "--all-containers")
