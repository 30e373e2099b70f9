"""The work dir: refusing a busy one, wiping an old one, and the watchdog that stops a stack
whose owner died without stop()."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from .config import StackError


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


def start_watchdog(state_path: str, pid_path: str) -> int:
    """Starts the detached watchdog on `state_path` (see _WATCHDOG); returns the write end of its
    pipe, which only this process holds."""
    rfd, wfd = os.pipe()  # not inheritable: only the watchdog gets rfd (pass_fds)
    try:
        launcher = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(rfd), state_path, pid_path],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(rfd,), start_new_session=True)
        launcher.wait()  # exits right after forking the watchdog
    finally:
        os.close(rfd)
    return wfd


def dismiss_watchdog(wfd: int) -> None:
    """After a clean stop(): the watchdog reads "q" and exits without stopping anything."""
    try:
        os.write(wfd, b"q")
    except OSError:
        pass
    os.close(wfd)
