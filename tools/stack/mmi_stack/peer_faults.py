"""Faults on the running peers, for tests/fault: restarts, pauses, etcd compaction."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from .config import REPO_ROOT, StackError
from .host import read_env_file, tail


class PeerFaultsMixin:
    """Part of Stack: the peers' restart scripts and signals."""

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
        script = "restart-kafka" if self.cfg.transport == "kafka" else "restart-mosquitto"
        self._peer_script(script, "broker", f"DOWN_SECONDS={int(down_seconds)}")
        self.broker_env = read_env_file(os.path.join(self.peers_dir, "broker", "env"))
        self._save_state()

    def restart_maestro(self, kill: bool = True, down_seconds: float = 0) -> None:
        """restart-maestro (transport grpc): the Maestro server killed (SIGKILL, or SIGTERM) and
        started again with the same command line, so on the same ports."""
        self._peer_script("restart-maestro", "maestro", f"SIGNAL={'KILL' if kill else 'TERM'}",
                          f"DOWN_SECONDS={int(down_seconds)}")
        self.maestro_env = read_env_file(os.path.join(self.peers_dir, "maestro", "env"))
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
