"""The names the stack shares with examples/ and the chart, its settings (StackConfig) and its
error type."""

from __future__ import annotations

import dataclasses
import os


REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

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
    "maestro": ("maestro", "MAESTRO_PID"),
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
    # "mqtt" | "kafka" | "grpc" (the services on the real Maestro server's gRPC source API,
    # fleet-sim as the agents behind it on Maestro's MQTT topics).
    transport: str = "mqtt"
    clusters: int = 50
    fleet_args: list[str] = dataclasses.field(default_factory=list)
    log_level: str = "info"
    # ManagedCluster / fleet-sim names: <cluster_prefix><i zero-padded to cluster_digits>.
    cluster_prefix: str = "cluster-"
    cluster_digits: int = 4
    # Also create ManagedCluster local-cluster (label local-cluster=true): the hub itself, skipped.
    local_cluster: bool = True
    # transport grpc: the Maestro server's database pool (start-maestro DB_MAX_OPEN_CONNECTIONS).
    # Its default, 50, starves for good under a burst of agent statuses (3,000 Applications
    # changing at once: docs/reliability.md, the gRPC row); 150 got through.
    maestro_db_connections: int = 150
    # transport grpc: Maestro server instances on its one database (start-maestro REPLICAS); the
    # services use the first (docs/adr/0005-maestro-server-from-the-module-proxy.md).
    maestro_replicas: int = 1
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
    # The hub runs Argo CD's real ApplicationSet controller (tests/peers/bin/start-argocd ROLE=hub,
    # with its repo-server and redis): the examples' ApplicationSets generate the Applications.
    # Off for the benches and the fault matrix, which create their Applications directly.
    argocd: bool = False
    # The first `real_spokes` clusters are real spokes (mmi_stack.spokes): a managed API server
    # each with Argo CD's application-controller, fleet-sim in apply mode as their work agent,
    # and a git mirror of the examples' repository on loopback. The first one runs on the one-node
    # cluster when node_spoke (root only). spoke_resync: their reconciliation interval (seconds).
    real_spokes: int = 0
    node_spoke: bool = True
    spoke_resync: int = 180
    # False: the real spokes run no Argo CD (manifest delivery, ADR 0007: the work agent applies
    # what the hub's repo-server rendered); fleet-sim still applies their bundles.
    spoke_argocd: bool = True


# ------------------------------------------------------------------------------------------------
# Small helpers
# ------------------------------------------------------------------------------------------------
