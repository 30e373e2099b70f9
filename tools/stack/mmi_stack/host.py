"""This machine: free loopback ports, the peers' env files, log tails, plain HTTP GETs."""

from __future__ import annotations

import http.client
import os
import random
import socket
import urllib.parse


# Ports are picked below the kernel's ephemeral range (ip_local_port_range) and at random. A port
# handed out here is free only until its peer binds it, which may be seconds later (a JVM or an
# API server starting), and the same port is bound again when a test restarts a peer in place:
# inside the ephemeral range, any outgoing connection on the machine could take it in between,
# and tests run side by side (docs/ci.md). Below it, only another pick here can, 1 in ~22,000.
_PORT_FLOOR = 10000


def _ephemeral_floor() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now, outside the ephemeral range when it can."""
    rng = random.SystemRandom()
    ceiling = _ephemeral_floor()
    for _ in range(100 if ceiling > _PORT_FLOOR + 1000 else 0):
        port = rng.randrange(_PORT_FLOOR, ceiling)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    with socket.socket() as s:  # a machine whose ephemeral range starts low: the kernel's pick
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":  # tests/peers/lib.sh's free_port
    print(free_port())


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


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    parsed = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)
    try:
        conn.request("GET", parsed.path or "/")
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    finally:
        conn.close()
