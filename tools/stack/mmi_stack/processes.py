"""The processes the stack started: readiness, stop, PIDs, /metrics, /proc."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import subprocess
import time
from typing import Callable

from .config import PEER_PID_KEYS, StackError
from .host import http_get, tail
from .prometheus import parse_prometheus


@dataclasses.dataclass
class _Proc:
    name: str
    popen: subprocess.Popen
    log_path: str
    admin_port: int
    args: list[str]


class ProcessesMixin:
    """Part of Stack: the processes it started (or attached), their readiness, signals, /metrics
    and /proc figures."""

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

    def pid(self, name: str) -> int:
        with self._lock:
            proc = self._procs.get(name)
        if proc is not None:
            return proc.popen.pid
        if name in PEER_PID_KEYS:
            which, key = PEER_PID_KEYS[name]
            env = {"hub": self.hub_env, "postgres": self.pg_env, "broker": self.broker_env,
                   "maestro": self.maestro_env}[which]
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
