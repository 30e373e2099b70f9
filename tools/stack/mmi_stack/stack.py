"""Stack: the state every part shares (configuration, peers' env, processes) and the lifecycle."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import threading
from typing import Any, Callable

from .config import REPO_ROOT, StackConfig, StackError
from .hub_client import HubClient
from .hub_objects import HubObjectsMixin
from .peer_faults import PeerFaultsMixin
from .peers import PeersMixin
from .processes import ProcessesMixin, _Proc
from .services import ServicesMixin
from .spokes import SpokesMixin
from .workdir import dismiss_watchdog, start_watchdog


class Stack(PeersMixin, PeerFaultsMixin, HubObjectsMixin, ServicesMixin, SpokesMixin, ProcessesMixin):
    """The whole system under one work dir; see tools/stack/README.md. Each mixin holds one
    concern; this class holds the state they share and the lifecycle."""

    def __init__(self, cfg: StackConfig):
        if cfg.transport not in ("mqtt", "kafka", "grpc"):
            raise StackError(f"transport must be mqtt, kafka or grpc, got {cfg.transport!r}")
        if cfg.secure and cfg.transport == "kafka":
            raise StackError("secure is for MQTT (the ACL is mosquitto's) or grpc (Maestro's mTLS)")
        if cfg.clusters < 1:
            raise StackError("clusters must be at least 1")
        if not 0 <= cfg.real_spokes <= cfg.clusters:
            raise StackError("real_spokes must be between 0 and clusters")
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
        self.argocd_env: dict[str, str] = {}
        self.maestro_env: dict[str, str] = {}  # transport grpc: start-maestro's facts
        self.git_env: dict[str, str] = {}  # real spokes: start-git's facts
        self.spoke_envs: dict[str, dict[str, dict[str, str]]] = {}  # real spoke -> {kube, argocd}
        self.spoke_clients: dict[str, HubClient] = {}
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
                 "hub": self.hub_env, "postgres": self.pg_env, "broker": self.broker_env,
                 "maestro": self.maestro_env}
        tmp = self._state_path() + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=1)
        os.replace(tmp, self._state_path())

    def _start_watchdog(self) -> None:
        """A detached process that stops everything in stack.json if this process dies without
        calling stop() (SIGKILL, a ctest timeout); see workdir._WATCHDOG."""
        if self._watchdog_fd is not None:
            return
        self._save_state()
        self._watchdog_fd = start_watchdog(self._state_path(), os.path.join(self.work_dir, "watchdog.pid"))

    def _dismiss_watchdog(self) -> None:
        if self._watchdog_fd is None:
            return
        dismiss_watchdog(self._watchdog_fd)
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
