"""The two services and fleet-sim: configured from the rendered chart and started."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

from .chart import configmap_data_blocks
from .config import CHART_DIR, EXAMPLES_DIR, RELEASE_NAME, RELEASE_NAMESPACE, SECURE_MQTT_USERS, StackError
from .host import free_port


class ServicesMixin:
    """Part of Stack: helm template, the config files, each process's command line and environment."""

    def helm_args(self) -> list[str]:
        """`helm template` arguments: examples/values-<transport>.yaml plus the local overrides
        (plain loopback broker, no TLS, no broker credentials; DSN from the environment)."""
        t = self.cfg.transport
        sets = ["store.existingSecret=mmi-postgresql",
                f"dispatcher.logLevel={self.cfg.log_level}", f"statusSink.logLevel={self.cfg.log_level}",
                "transport.tls.enabled=false", "transport.tls.existingSecret=", "transport.tls.certKey=",
                "transport.credentials.existingSecret=", "transport.credentials.serviceAccountToken=false"]
        if t == "mqtt":
            sets += [f"transport.mqtt.brokerHost={self.broker_address()}", "transport.mqtt.username="]
        elif t == "grpc":
            # Unconfirmed deletions looked up in Maestro's REST API (a 404 confirms them).
            sets += [f"transport.grpc.url={self.broker_address()}",
                     f"dispatcher.maestroRest.url={self.maestro_env['MAESTRO_REST_URL']}"]
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
        if self.cfg.secure and t == "grpc":
            # TLS 1.3 to Maestro with its mtls authentication: start-maestro's CA and client
            # certificate (CN=mmi-source-client, O=mmi-sources), the group granted on the hub.
            m = self.maestro_env
            sets += ["transport.tls.enabled=true"]
            for key in ("dispatcher", "statusSink"):
                sets += [f"{key}.transportOverrides.tls.caFile={m['MAESTRO_GRPC_CA_FILE']}",
                         f"{key}.transportOverrides.tls.clientCertFile={m['MAESTRO_GRPC_CLIENT_CERT_FILE']}",
                         f"{key}.transportOverrides.tls.clientKeyFile={m['MAESTRO_GRPC_CLIENT_KEY_FILE']}"]
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
        # Over grpc the agents sit behind Maestro, on its MQTT topics under its own source id.
        grpc = self.cfg.transport == "grpc"
        return [self.binary("fleet-sim"), "--transport", "mqtt" if grpc else self.cfg.transport,
                "--broker", self.agent_broker_address(),
                "--source-id", self.maestro_env["MAESTRO_SOURCE_ID"] if grpc else self.source_id(), "--clusters", str(self.cfg.clusters + self.cfg.spare_clusters),
                "--cluster-prefix", self.cfg.cluster_prefix, "--cluster-digits", str(self.cfg.cluster_digits),
                "--metrics-listen", f"127.0.0.1:{port}", "--log-level", self.cfg.log_level,
                *(["--state-file", os.path.join(self.work_dir, "fleet-sim-state.json")]
                  if self.cfg.fleet_state_file else []),
                *self._fleet_sim_tls_args(), *self._fleet_sim_apply_args(),
                *self.cfg.fleet_args, *(extra_args or [])]

    def _fleet_sim_apply_args(self) -> list[str]:
        if self.cfg.real_spokes and len(self.spoke_envs) < self.cfg.real_spokes:
            raise StackError("start_real_spokes() before start_fleet_sim(): fleet-sim applies to them")
        return self.apply_cluster_args()

    def _fleet_sim_tls_args(self) -> list[str]:
        if not (self.cfg.secure and self.cfg.transport == "mqtt"):
            return []
        clients = self.broker_env["MQTT_CLIENTS_DIR"]
        cn = SECURE_MQTT_USERS["fleet-sim"]
        return ["--mqtt-ca-file", self.broker_env["MQTT_CA_FILE"],
                "--mqtt-cert-file", f"{clients}/{cn}.crt", "--mqtt-key-file", f"{clients}/{cn}.key"]

    def start_fleet_sim(self, extra_args: list[str] | None = None) -> None:
        port = free_port()
        self._start("fleet-sim", self.fleet_sim_args(port, extra_args), dict(os.environ), port)

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
        elif self.cfg.secure and self.cfg.transport == "grpc":
            keys = [self.maestro_env["MAESTRO_GRPC_CLIENT_KEY_FILE"]]
        for path in keys:
            with open(path, encoding="utf-8") as f:
                body = [line.strip() for line in f if line.strip() and not line.startswith("-----")]
            if body:
                out[f"private key {os.path.basename(path)}"] = body[0]
        return out
