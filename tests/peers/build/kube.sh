#!/usr/bin/env bash
# build/kube.sh: builds the kube-apiserver test peer (kube-apiserver + kubectl + etcd) from the Go
# module proxy. Idempotent: when everything is already installed it says so and returns.
#
#   build/kube.sh                 build/install into $MMI_PEERS_HOME/kube-$MMI_KUBERNETES_VERSION/bin
#   build/kube.sh --update-go-mod rewrite tests/peers/kube/go.mod (+ go.sum) for $MMI_KUBERNETES_VERSION
#
# Sources: k8s.io/kubernetes at $MMI_KUBERNETES_VERSION, required by our own tiny module
# tests/peers/kube (go.mod lists the three commands as `tool`s and replaces every staging module
# k8s.io/* v0.0.0 by its published v0.<minor>.<patch>). Nothing third-party is vendored or committed:
# sources land in the Go module cache, objects in the Go build cache.
#
# etcd: built from go.etcd.io/etcd/server/v3 at the version k8s.io/kubernetes itself requires
# (v3.6.4 for v1.34.4; our go.mod lists it as a third `tool`), so the hub behaves like a real one:
# with etcd >= 3.4.31/3.5.13 kube-apiserver enables RequestWatchProgress, which consistent LISTs
# served from its watch cache and streaming lists (WatchList, `sendInitialEvents=true`) need. With
# Debian bookworm's etcd 3.4.23 (used until 2026-11-25) both were off: every consistent LIST went
# to etcd (a paged LIST of 300,000 Applications took 494 s on a busy hub) and WatchList answered
# 500 "the required storage feature RequestWatchProgress is disabled". etcdctl (compaction only)
# still comes from Debian's `etcd-client` package: the v3 API it speaks is the same.
source "$(dirname "$0")/../lib.sh"

MOD_DIR="$MMI_REPO_ROOT/tests/peers/kube"
KUBE_HOME="$MMI_PEERS_HOME/kube-$MMI_KUBERNETES_VERSION"
BIN="$KUBE_HOME/bin"
STAGING_VERSION="v0.${MMI_KUBERNETES_VERSION#v1.}"   # v1.34.4 -> v0.34.4

# Go commands run only inside our module, never vendoring, never fetching a different toolchain.
gomod() { (cd "$MOD_DIR" && GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 go "$@"); }

# apt_install <pkg...>: installs Debian packages, waiting while another process holds the dpkg lock.
apt_install() {
  local i
  for i in $(seq 1 120); do
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >"$KUBE_HOME/apt.log" 2>&1; then
      return 0
    fi
    if grep -q 'Could not get lock\|dpkg frontend lock\|Unable to acquire' "$KUBE_HOME/apt.log"; then
      [ "$i" = 1 ] && log "dpkg lock is held by another process; waiting"
      sleep 5
      continue
    fi
    cat "$KUBE_HOME/apt.log" >&2
    die "apt-get install $* failed"
  done
  die "dpkg lock still held after 10 minutes"
}

update_go_mod() {
  log "resolving k8s.io/kubernetes@$MMI_KUBERNETES_VERSION"
  local modfile
  modfile="$(cd "$MOD_DIR" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$MMI_KUBERNETES_VERSION" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')"
  local mods
  mods="$(awk '/^require \(/{r=1;next} r&&/^\)/{r=0} r&&$1 ~ /^k8s\.io\// && $2=="v0.0.0"{print $1}' "$modfile" | sort -u)"
  [ -n "$mods" ] || die "no v0.0.0 staging requirements found in $modfile"
  {
    go_mod_header github.com/mmi/tests/peers/kube k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3
    echo "// Staging modules: k8s.io/kubernetes requires them as v0.0.0 and replaces them by"
    echo "// ./staging/...; a dependent module must point them at the published versions."
    echo "replace ("
    local m
    for m in $mods; do printf '\t%s => %s %s\n' "$m" "$m" "$STAGING_VERSION"; done
    echo ")"
  } > "$MOD_DIR/go.mod"
  rm -f "$MOD_DIR/go.sum"
  timed "go mod tidy" gomod mod tidy
  log "wrote $MOD_DIR/go.mod and go.sum for k8s.io/kubernetes $MMI_KUBERNETES_VERSION"
}

ensure_etcdctl() {
  if ! command -v etcdctl >/dev/null; then
    log "installing Debian etcd-client (etcdctl)"
    timed "apt-get install etcd-client" apt_install etcd-client
  fi
  ln -sfn "$(command -v etcdctl)" "$BIN/etcdctl"
}

# The etcd version our go.mod resolves (the one k8s.io/kubernetes requires).
etcd_version() { gomod list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3; }

etcd_built() {
  [ -x "$BIN/etcd" ] && [ ! -L "$BIN/etcd" ] && \
    "$BIN/etcd" --version 2>/dev/null | grep -qx "etcd Version: ${1#v}"
}

build_cmd() {
  local name="$1" ldflags="$2"
  gomod build -trimpath -ldflags "$ldflags" -o "$BIN/.$name.tmp" "k8s.io/kubernetes/cmd/$name"
  mv -f "$BIN/.$name.tmp" "$BIN/$name"
}

main() {
  if [ "${1:-}" = "--update-go-mod" ]; then
    mkdir -p "$KUBE_HOME"
    update_go_mod
    return 0
  fi
  [ $# -eq 0 ] || die "usage: build/kube.sh [--update-go-mod]"

  local etcd_ver
  etcd_ver="$(etcd_version)" || die "go.etcd.io/etcd/server/v3 is not in $MOD_DIR/go.mod; run: $0 --update-go-mod"
  if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kubectl" ] && etcd_built "$etcd_ver" && [ -x "$BIN/etcdctl" ]; then
    log "kube peer $MMI_KUBERNETES_VERSION already built in $BIN (delete it to rebuild)"
    return 0
  fi
  mkdir -p "$BIN"
  local t0; t0=$(date +%s)

  local pinned
  pinned="$(awk '$1=="k8s.io/kubernetes"{print $2} $1=="require" && $2=="k8s.io/kubernetes"{print $3}' "$MOD_DIR/go.mod")"
  [ "$pinned" = "$MMI_KUBERNETES_VERSION" ] || \
    die "tests/peers/kube/go.mod requires k8s.io/kubernetes '$pinned' but lib.sh pins $MMI_KUBERNETES_VERSION; run: $0 --update-go-mod"

  ensure_etcdctl

  timed "go mod download (k8s.io/kubernetes $MMI_KUBERNETES_VERSION and deps)" gomod mod download

  local ldflags
  ldflags="$(kube_version_ldflags "$MOD_DIR")" || die "cannot read k8s.io/kubernetes from $MOD_DIR/go.mod"

  if [ ! -x "$BIN/kube-apiserver" ] || [ ! -x "$BIN/kubectl" ]; then
    log "building kube-apiserver (cold builds take several minutes on 2 cores)"
    timed "go build kube-apiserver" build_cmd kube-apiserver "$ldflags"
    log "building kubectl"
    timed "go build kubectl" build_cmd kubectl "$ldflags"
  fi
  if ! etcd_built "$etcd_ver"; then
    log "building etcd $etcd_ver"
    rm -f "$BIN/etcd"  # the Debian symlink of older caches
    timed "go build etcd" gomod build -trimpath -ldflags "-s -w" -o "$BIN/.etcd.tmp" go.etcd.io/etcd/server/v3
    mv -f "$BIN/.etcd.tmp" "$BIN/etcd"
  fi

  log "kube-apiserver: $("$BIN/kube-apiserver" --version)"
  log "kubectl: $("$BIN/kubectl" version --client 2>/dev/null | head -n1)"
  log "etcd: $("$BIN/etcd" --version | head -n1)"
  log "kube peer ready in $BIN (total $(( $(date +%s) - t0 ))s)"
}

main "$@"
