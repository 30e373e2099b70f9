#!/usr/bin/env bash
# build/node.sh: builds what a one-node cluster needs next to the hub (bin/start-node): kubelet,
# kube-scheduler, kube-controller-manager and kube-proxy from the Go module proxy at
# $MMI_KUBERNETES_VERSION (the hub's version), and the sandbox ("pause") binary from
# tests/peers/node/pause.c. Installs containerd, runc, the CNI plugins, iptables and conntrack
# from Debian. Idempotent: when everything is there it says so and returns.
#
#   build/node.sh                 build/install into $MMI_PEERS_HOME/node-$MMI_KUBERNETES_VERSION/bin
#   build/node.sh --update-go-mod rewrite tests/peers/node/go.mod (+ go.sum) for $MMI_KUBERNETES_VERSION
#
# Sources: k8s.io/kubernetes, required by our module tests/peers/node (go.mod lists the four
# commands as `tool`s and points every staging module k8s.io/* v0.0.0 at its published
# v0.<minor>.<patch>, exactly as tests/peers/kube does for kube-apiserver). One `go build` builds
# the four commands, two packages at a time (MMI_GO_BUILD_P, default 2) at the lowest CPU priority:
# the packages kube-apiserver shares with them come from the Go build cache.
source "$(dirname "$0")/../lib.sh"

MOD_DIR="$MMI_REPO_ROOT/tests/peers/node"
NODE_HOME="$MMI_PEERS_HOME/node-$MMI_KUBERNETES_VERSION"
BIN="$NODE_HOME/bin"
STAGING_VERSION="v0.${MMI_KUBERNETES_VERSION#v1.}"   # v1.34.4 -> v0.34.4
COMMANDS=(kubelet kube-scheduler kube-controller-manager kube-proxy)
DEBIAN_NODE_PACKAGES=(containerd runc containernetworking-plugins iptables conntrack debootstrap buildah)

gomod() { (cd "$MOD_DIR" && GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 go "$@"); }

# apt_install <pkg...>: installs Debian packages, waiting while another process holds the dpkg lock.
apt_install() {
  local i
  for i in $(seq 1 120); do
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >"$NODE_HOME/apt.log" 2>&1; then
      return 0
    fi
    if grep -q 'Could not get lock\|dpkg frontend lock\|Unable to acquire' "$NODE_HOME/apt.log"; then
      [ "$i" = 1 ] && log "dpkg lock is held by another process; waiting"
      sleep 5
      continue
    fi
    if [ "$i" = 1 ] && grep -q 'Unable to locate\|has no installation candidate' "$NODE_HOME/apt.log"; then
      DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$NODE_HOME/apt.log" 2>&1 || true
      continue
    fi
    cat "$NODE_HOME/apt.log" >&2
    die "apt-get install $* failed"
  done
  die "dpkg lock still held after 10 minutes"
}

ensure_debian() {
  local missing=() p
  for p in "${DEBIAN_NODE_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing Debian packages ${missing[*]} and we are not root"
  log "installing Debian ${missing[*]}"
  timed "apt-get install ${missing[*]}" apt_install "${missing[@]}"
}

update_go_mod() {
  local kube_mod="$MMI_REPO_ROOT/tests/peers/kube/go.mod"
  grep -q "^require k8s.io/kubernetes $MMI_KUBERNETES_VERSION\$\|k8s.io/kubernetes $MMI_KUBERNETES_VERSION" "$kube_mod" \
    || die "run tests/peers/build/kube.sh --update-go-mod first: its replace block is reused"
  {
    go_mod_header github.com/mmi/tests/peers/node "${COMMANDS[@]/#/k8s.io/kubernetes/cmd/}"
    sed -n '/^\/\/ Staging modules/,$p' "$kube_mod"
  } > "$MOD_DIR/go.mod"
  rm -f "$MOD_DIR/go.sum"
  timed "go mod tidy" gomod mod tidy
  log "wrote $MOD_DIR/go.mod and go.sum for k8s.io/kubernetes $MMI_KUBERNETES_VERSION"
}

built() {
  local c
  for c in "${COMMANDS[@]}" pause; do [ -x "$BIN/$c" ] || return 1; done
  "$BIN/kubelet" --version 2>/dev/null | grep -qx "Kubernetes $MMI_KUBERNETES_VERSION" || return 1
  [ "$(cat "$BIN/.pause.sha256" 2>/dev/null)" = "$(sha256sum < "$MOD_DIR/pause.c")" ]
}

build_pause() {
  gcc -static -Os -s -Wall -Werror -o "$BIN/.pause.tmp" "$MOD_DIR/pause.c"
  mv -f "$BIN/.pause.tmp" "$BIN/pause"
  sha256sum < "$MOD_DIR/pause.c" > "$BIN/.pause.sha256"
}

build_commands() {
  local ldflags
  ldflags="$(kube_version_ldflags "$MOD_DIR")" || die "cannot read k8s.io/kubernetes from $MOD_DIR/go.mod"
  local pkgs=() c
  for c in "${COMMANDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  rm -rf "$BIN/.tmp" && mkdir -p "$BIN/.tmp"
  nice -n 19 bash -c 'cd "$0" && GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
    go build -p "$1" -trimpath -ldflags "$2" -o "$3/" "${@:4}"' \
    "$MOD_DIR" "${MMI_GO_BUILD_P:-2}" "$ldflags" "$BIN/.tmp" "${pkgs[@]}"
  for c in "${COMMANDS[@]}"; do mv -f "$BIN/.tmp/$c" "$BIN/$c"; done
  rmdir "$BIN/.tmp"
}

main() {
  mkdir -p "$BIN"
  if [ "${1:-}" = "--update-go-mod" ]; then
    update_go_mod
    return 0
  fi
  [ $# -eq 0 ] || die "usage: build/node.sh [--update-go-mod]"
  ensure_debian
  if built; then
    log "node peer $MMI_KUBERNETES_VERSION already built in $BIN (delete it to rebuild)"
    return 0
  fi
  local pinned t0; t0=$(date +%s)
  pinned="$(awk '$1=="k8s.io/kubernetes"{print $2} $1=="require" && $2=="k8s.io/kubernetes"{print $3}' "$MOD_DIR/go.mod" | head -n1)"
  [ "$pinned" = "$MMI_KUBERNETES_VERSION" ] || \
    die "tests/peers/node/go.mod requires k8s.io/kubernetes '$pinned' but lib.sh pins $MMI_KUBERNETES_VERSION; run: $0 --update-go-mod"
  timed "go mod download (node)" gomod mod download
  timed "build pause" build_pause
  if ! { [ -x "$BIN/kubelet" ] && "$BIN/kubelet" --version 2>/dev/null | grep -qx "Kubernetes $MMI_KUBERNETES_VERSION"; }; then
    log "building ${COMMANDS[*]} (cold: several minutes on 2 cores)"
    timed "go build ${COMMANDS[*]}" build_commands
  fi
  built || die "node peer incomplete in $BIN"
  log "kubelet: $("$BIN/kubelet" --version)"
  log "node peer ready in $BIN (total $(( $(date +%s) - t0 ))s)"
}

main "$@"
