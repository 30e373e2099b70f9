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
        # With StackConfig(argocd=True) Argo CD's ApplicationSet controller generates the
        # Applications; the benches create them directly:
        apps = [stack.generated_application("guestbook", c) for c in stack.cluster_names()]
        stack.create_applications(apps)
    finally:
        stack.stop()

This file is the package's whole public surface: callers import from `mmi_stack`, never from its
modules, so the modules can move without touching them.
"""

from .app_watch import AppWatch, Watch, app_view
from .chart import configmap_data_blocks
from .config import (APP_API, ARGO_NAMESPACE, CHART_DIR, CLUSTERSET_LABEL, DECISIONS_PER_OBJECT, EXAMPLES_DIR,
                     OCM_CLUSTER_API, PEER_PID_KEYS, PLACEMENT_LABEL, RELEASE_NAME, RELEASE_NAMESPACE, REPO_ROOT,
                     SECURE_MQTT_USERS, SERVICE_USERS_GROUP, SERVICES, StackConfig, StackError)
from .generation import (decision_pages, label_selector_matches, placement_selection, render_application,
                         render_fasttemplate, work_resource_id)
from .host import free_port, http_get, read_env_file, tail
from .hub_client import HubClient, KubeError
from .prometheus import metric_sum, parse_prometheus
from .stack import Stack
from .workdir import prepare_work_dir

__all__ = [
    "AppWatch", "Watch", "app_view", "APP_API", "ARGO_NAMESPACE", "CHART_DIR", "CLUSTERSET_LABEL", "DECISIONS_PER_OBJECT", "EXAMPLES_DIR",
    "OCM_CLUSTER_API", "PEER_PID_KEYS", "PLACEMENT_LABEL", "RELEASE_NAME", "RELEASE_NAMESPACE", "REPO_ROOT",
    "SECURE_MQTT_USERS", "SERVICE_USERS_GROUP", "SERVICES", "HubClient", "KubeError", "Stack", "StackConfig",
    "StackError", "configmap_data_blocks", "decision_pages", "free_port", "http_get", "label_selector_matches",
    "metric_sum", "parse_prometheus", "placement_selection", "prepare_work_dir", "read_env_file",
    "render_application", "render_fasttemplate", "tail", "work_resource_id",
]
