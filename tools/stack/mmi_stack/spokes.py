"""Real spokes: managed clusters that run Argo CD's real application-controller.

A real spoke is a managed kube-apiserver (start-kube ROLE=managed), optionally the one-node cluster
on it (start-node: pods really run, so Deployment health is real), and Argo CD's spoke role on it
(start-argocd ROLE=spoke: redis, repo-server, application-controller). fleet-sim plays its work
agent in apply mode (--apply-cluster NAME=KUBECONFIG): it applies each ManifestBundle to that API
server as the OCM work agent does. Every other cluster stays simulated.

The spokes cannot reach github.com, so a git server on loopback (start-git) serves a mirror of the
repository the examples name, `argocd-example-apps.git`, whose `guestbook/` folder holds
examples/apps/guestbook-lite/plain without its Namespace and namespace fields (the Applications'
destination namespace and CreateNamespace=true place it, as for the upstream guestbook).
apply_examples() then rewrites that one repoURL to the mirror; nothing else of examples/ changes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from .config import EXAMPLES_DIR, REPO_ROOT, StackError
from .host import read_env_file
from .hub_client import HubClient

EXAMPLES_REPO_URL = "https://github.com/argoproj/argocd-example-apps.git"
MIRROR_REPO = "argocd-example-apps"
MIRROR_APP_PATH = "guestbook"
GUESTBOOK_LITE_PLAIN = os.path.join(EXAMPLES_DIR, "apps", "guestbook-lite", "plain")


class SpokesMixin:
    """Part of Stack: the git mirror, the real spokes and their clients."""

    def real_spoke_names(self) -> list[str]:
        return self.cluster_names()[:self.cfg.real_spokes]

    def node_spoke_name(self) -> str | None:
        """The real spoke on the one-node cluster (the first one, with cfg.node_spoke)."""
        names = self.real_spoke_names()
        return names[0] if names and self.cfg.node_spoke else None

    @staticmethod
    def mirror_files() -> dict[str, str]:
        """The mirror's first commit, {relative path: text}: guestbook/ from guestbook-lite/plain
        without its Namespace and namespace fields (tests change it and commit_mirror())."""
        files = {}
        for name in sorted(os.listdir(GUESTBOOK_LITE_PLAIN)):
            with open(os.path.join(GUESTBOOK_LITE_PLAIN, name), encoding="utf-8") as f:
                text = f.read()
            if not re.search(r"^kind:\s*Namespace\s*$", text, re.M):
                files[f"{MIRROR_APP_PATH}/{name}"] = re.sub(r"^  namespace:.*\n", "", text, flags=re.M)
        return files

    @staticmethod
    def _write_tree(dest: str, files: dict[str, str]) -> str:
        """Writes exactly `files` under `dest` (replaced). Returns dest."""
        shutil.rmtree(dest, ignore_errors=True)
        for rel, text in files.items():
            path = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return dest

    def start_git_mirror(self) -> dict[str, str]:
        if not self.git_env:
            src = self._write_tree(os.path.join(self.work_dir, "git-src", "first"), self.mirror_files())
            self.git_env = self.start_peer("start-git", "git", f"REPO={MIRROR_REPO}:{src}")
        return self.git_env

    def mirror_repo_url(self) -> str:
        return f"{self.start_git_mirror()['GIT_URL']}/{MIRROR_REPO}.git"

    def commit_mirror(self, files: dict[str, str], message: str) -> str:
        """The mirror's next commit holds exactly `files`; returns its SHA."""
        src = self._write_tree(os.path.join(self.work_dir, "git-src", "next"), files)
        out = subprocess.run([os.path.join(REPO_ROOT, "tests", "peers", "bin", "commit-dir"),
                              os.path.join(self.peers_dir, "git"), MIRROR_REPO, src, message],
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise StackError(f"commit-dir failed: {out.stderr.strip()}")
        return out.stdout.strip().splitlines()[-1]

    def examples_text(self, text: str) -> str:
        """An examples/ file as applied: with real spokes, the examples' repoURL points at the mirror."""
        if self.cfg.real_spokes > 0:
            text = text.replace(EXAMPLES_REPO_URL, self.mirror_repo_url())
        return text

    def start_real_spokes(self) -> None:
        """Every real spoke: its API server, the node for the first one (cfg.node_spoke), and Argo
        CD's spoke role with cfg.spoke_resync as its reconciliation interval (no jitter; none
        with cfg.spoke_argocd False).
        After start_peers(); before start_fleet_sim(), which gets their kubeconfigs. Idempotent."""
        if self.cfg.real_spokes == 0:
            return
        self.start_git_mirror()
        for name in self.real_spoke_names():
            kube = self.start_peer("start-kube", f"spoke-{name}", "ROLE=managed")
            if name == self.node_spoke_name():
                if os.geteuid() != 0:
                    raise StackError("a node spoke needs root (containerd, network namespaces, iptables)")
                self.start_peer("start-node", f"node-{name}", f"HUB={self.peers_dir}/spoke-{name}")
                # start-node restarts the spoke's kube-apiserver (same URL, new PID).
                kube = read_env_file(os.path.join(self.peers_dir, f"spoke-{name}", "env"))
            argocd = {}
            if self.cfg.spoke_argocd:
                argocd = self.start_peer("start-argocd", f"argocd-{name}", "ROLE=spoke",
                                         f"KUBECONFIG={kube['KUBECONFIG']}", f"KUBECTL={kube['KUBECTL']}",
                                         f"APP_RESYNC={self.cfg.spoke_resync}", "APP_RESYNC_JITTER=0")
            self.spoke_envs[name] = {"kube": kube, "argocd": argocd}
            self.spoke_clients[name] = HubClient(kube)
        self._save_state()

    def spoke(self, name: str) -> HubClient:
        if name not in self.spoke_clients:
            raise StackError(f"{name} is not a real spoke (start_real_spokes() first)")
        return self.spoke_clients[name]

    def spoke_kubectl(self, name: str, *args: str) -> str:
        kube = self.spoke_envs[name]["kube"]
        out = subprocess.run([kube["KUBECTL"], *args], capture_output=True, text=True,
                             env={**os.environ, "KUBECONFIG": kube["KUBECONFIG"]}, check=False)
        if out.returncode != 0:
            raise StackError(f"kubectl ({name}) {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout

    def apply_cluster_args(self) -> list[str]:
        """fleet-sim's apply mode for every real spoke."""
        return [arg for name in self.real_spoke_names()
                for arg in ("--apply-cluster", f"{name}={self.spoke_envs[name]['kube']['KUBECONFIG']}")]
