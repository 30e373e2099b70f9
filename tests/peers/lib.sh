# shellcheck shell=bash
# Shared helpers for the peer scripts under tests/peers/. Sourced, never executed.
#
# Conventions (every start-* script follows them):
#   start-<peer> <data-dir> [KEY=VALUE ...]
#     - creates <data-dir>, picks free loopback ports, starts the peer's processes in the
#       background, records each PID in <data-dir>/pids (one per line, in start order),
#       writes logs under <data-dir>/logs/, waits until the peer is ready, writes the
#       connection facts as KEY=VALUE lines to <data-dir>/env, and exits 0.
#     - on failure it prints the tail of the logs to stderr, stops what it started and
#       exits non-zero. It never falls back to anything fake.
#   stop <data-dir>: stops the PIDs listed in <data-dir>/pids (reverse order, TERM then KILL),
#     then removes the directories listed in <data-dir>/external-dirs (see nobody_dir).
# Built peer binaries live under $MMI_PEERS_HOME (default $HOME/.cache/mmi-peers).

set -euo pipefail

MMI_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MMI_PEERS_HOME="${MMI_PEERS_HOME:-$HOME/.cache/mmi-peers}"
export MMI_REPO_ROOT MMI_PEERS_HOME

# Pinned versions of every peer, in one place.
MMI_KUBERNETES_VERSION="${MMI_KUBERNETES_VERSION:-v1.34.4}"
# Maestro: an exact pseudo-version (the Go module proxy lists none but serves this one).
MMI_MAESTRO_VERSION="v0.0.0-20251014140049-293e719bc362"
MMI_HELM_VERSION="v3.21.4"
MMI_KAFKA_VERSION="4.1.0"
MMI_ARGOCD_VERSION="v3.2.11"

# maestro_home: where build/maestro.sh puts the Maestro server (by the pseudo-version's commit).
maestro_home() { printf '%s\n' "$MMI_PEERS_HOME/maestro-${MMI_MAESTRO_VERSION##*-}"; }

# maestro_wait_ready <pid> <rest-url> <health-url> <grpc-port> [<broker-port>]: waits until the
# Maestro server `pid` answers GET /api/maestro/v1/consumers with 200, its health check with 200
# (it answers 503 for a few seconds after /consumers already answers 200) and its gRPC source
# server (and gRPC broker, when given) accept connections. start-maestro and restart-maestro.
maestro_wait_ready() {
  local pid="$1" rest="$2" health="$3" grpc_port="$4" broker_port="${5:-}"
  port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
  wait_for "maestro REST $rest" 90 "$pid" curl -sf -o /dev/null "$rest/api/maestro/v1/consumers" \
    && wait_for "maestro health check $health" 60 "$pid" curl -sf -o /dev/null "$health" \
    && wait_for "maestro gRPC source server :$grpc_port" 30 "$pid" port_open "$grpc_port" \
    && { [ -z "$broker_port" ] \
      || wait_for "maestro gRPC broker :$broker_port" 30 "$pid" port_open "$broker_port"; }
}

# mmi_use_ccache: sets MMI_CCACHE_ARGS to the CMake flags that put Debian's ccache in front of the
# compilers (none when ccache is missing) and exports its settings: the cache in ~/.cache/ccache,
# the checkout as base dir and the working directory left out of the hash, so a fresh clone at
# another path (CI) hits what an earlier clone compiled and recompiles only what changed.
mmi_use_ccache() {
  MMI_CCACHE_ARGS=()
  command -v ccache >/dev/null || return 0
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}" CCACHE_BASEDIR="$MMI_REPO_ROOT"
  export CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-10G}"
  MMI_CCACHE_ARGS=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
}

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# peer_init <data-dir>: prepares the directory layout and sets PEER_DIR.
peer_init() {
  PEER_DIR="$(mkdir -p "$1" && cd "$1" && pwd)"
  mkdir -p "$PEER_DIR/logs"
  : > "$PEER_DIR/env"
  : > "$PEER_DIR/pids"
  export PEER_DIR
}

# free_port: prints a TCP port on 127.0.0.1 that is free right now, picked at random below the
# kernel's ephemeral range (why: tools/stack/mmi_stack/host.py, which both share).
free_port() { python3 -B "$MMI_REPO_ROOT/tools/stack/mmi_stack/host.py"; }

# emit KEY VALUE: records one connection fact in $PEER_DIR/env.
emit() { printf '%s=%s\n' "$1" "$2" >> "$PEER_DIR/env"; }

# run_bg <name> <cmd...>: starts a process in the background with its own log; records its PID.
run_bg() {
  local name="$1"; shift
  "$@" > "$PEER_DIR/logs/$name.log" 2>&1 &
  local pid=$!
  echo "$pid" >> "$PEER_DIR/pids"
  log "started $name (pid $pid)"
  LAST_PID=$pid
}

# wait_for <what> <timeout-seconds> <pid-or-0> <cmd...>: polls cmd until it succeeds.
# Fails early when the watched pid has exited.
wait_for() {
  local what="$1" timeout="$2" pid="$3"; shift 3
  local deadline=$(( $(date +%s) + timeout ))
  while ! "$@" >/dev/null 2>&1; do
    if [ "$pid" != 0 ] && ! kill -0 "$pid" 2>/dev/null; then
      log "$what: process $pid exited before it became ready"
      return 1
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "$what: not ready after ${timeout}s"
      return 1
    fi
    sleep 0.2
  done
  log "$what is ready"
}

# stop_pids <data-dir>: TERM then KILL every recorded PID, newest first.
stop_pids() {
  local dir="$1" pid
  [ -f "$dir/pids" ] || return 0
  local pids
  pids="$(tac "$dir/pids")"
  for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
  local deadline=$(( $(date +%s) + 15 ))
  for pid in $pids; do
    while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  : > "$dir/pids"
}

# Where nobody_dir puts a directory when nobody cannot reach the peer directory: any directory
# every user can traverse (/var/tmp: on disk, unlike a tmpfs /tmp, and big enough for the fleet
# benchmark's database).
MMI_NOBODY_TMPDIR="${MMI_NOBODY_TMPDIR:-/var/tmp}"

# nobody_dir <name>: for a peer process that runs as `nobody` (we are root), prints the path of a
# directory owned by nobody:nogroup that nobody can reach. That is $PEER_DIR/<name> when nobody
# can traverse $PEER_DIR. Otherwise (a checkout under /root, or under any 0700 directory such as
# one made by `mktemp -d`) it is a fresh directory $MMI_NOBODY_TMPDIR/mmi-peer-<name>.XXXXXXXX,
# $PEER_DIR/<name> becomes a symlink to it (for people; pass the printed path to the peer, which
# cannot follow the symlink), and its path is appended to $PEER_DIR/external-dirs so that
# `stop <data-dir>` removes it. A symlink left by an earlier start whose target still exists is
# reused, as an in-tree directory would be.
nobody_dir() {
  local name="$1" link="$PEER_DIR/$1" dir
  if setpriv --reuid=nobody --regid=nogroup --clear-groups -- test -x "$PEER_DIR"; then
    mkdir -p "$link"
    chown nobody:nogroup "$link"
    printf '%s\n' "$link"
    return 0
  fi
  if [ -L "$link" ] && [ -d "$link" ]; then
    dir="$(readlink -f "$link")"
  else
    setpriv --reuid=nobody --regid=nogroup --clear-groups -- test -x "$MMI_NOBODY_TMPDIR" \
      || die "nobody can reach neither $PEER_DIR nor MMI_NOBODY_TMPDIR=$MMI_NOBODY_TMPDIR"
    rm -rf "$link"
    dir="$(mktemp -d "$MMI_NOBODY_TMPDIR/mmi-peer-$name.XXXXXXXX")" || die "mktemp in $MMI_NOBODY_TMPDIR failed"
    ln -s "$dir" "$link"
    printf '%s\n' "$dir" >> "$PEER_DIR/external-dirs"
    log "nobody cannot reach $PEER_DIR: $name is kept in $dir (removed by stop)"
  fi
  chown nobody:nogroup "$dir"
  printf '%s\n' "$dir"
}

# remove_external_dirs <data-dir>: removes the directories nobody_dir recorded in
# <data-dir>/external-dirs (only absolute paths named mmi-peer-<name>.XXXXXXXX, as it makes them)
# and the symlinks in <data-dir> that point to them.
remove_external_dirs() {
  local dir="$1" ext link
  [ -f "$dir/external-dirs" ] || return 0
  while IFS= read -r ext; do
    case "$ext" in
      /*/mmi-peer-*.*) ;;
      *) log "not removing '$ext': not a directory nobody_dir made"; continue ;;
    esac
    rm -rf -- "$ext"
    for link in "$dir"/*; do
      if [ -L "$link" ] && [ "$(readlink "$link")" = "$ext" ]; then rm -f -- "$link"; fi
    done
  done < "$dir/external-dirs"
  rm -f "$dir/external-dirs"
}

# fail_with_logs: prints the tail of every log in $PEER_DIR, stops what was started, removes the
# directories it made outside $PEER_DIR, exits 1.
fail_with_logs() {
  log "start failed: $*"
  local f
  for f in "$PEER_DIR"/logs/*.log; do
    [ -f "$f" ] || continue
    printf '\n----- %s (last 40 lines) -----\n' "$f" >&2
    tail -n 40 "$f" >&2
  done
  stop_pids "$PEER_DIR"
  remove_external_dirs "$PEER_DIR"
  exit 1
}

# timed <label> <cmd...>: runs cmd and reports how long it took.
timed() {
  local label="$1"; shift
  local t0 rc=0; t0=$(date +%s)
  "$@" || rc=$?
  log "$label took $(( $(date +%s) - t0 ))s$([ "$rc" = 0 ] || echo " and FAILED (exit $rc)")"
  return "$rc"
}

# kube_version_ldflags <go module dir>: the -ldflags for a Kubernetes command built from the Go module
# proxy, with the same -X version flags as kubernetes' hack/lib/version.sh so `--version` reports the
# real release. The proxy does not tell the git commit, so gitCommit stays empty.
kube_version_ldflags() {
  local build_date major minor ver="${MMI_KUBERNETES_VERSION#v}" ldflags="-s -w" pkg key val
  build_date="$(cd "$1" && GOFLAGS=-mod=mod GOTOOLCHAIN=local go list -m \
    -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)" || return 1
  major="${ver%%.*}"; minor="${ver#*.}"; minor="${minor%%.*}"
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    for key in gitVersion gitMajor gitMinor gitTreeState buildDate gitCommit; do
      case "$key" in
        gitVersion) val="$MMI_KUBERNETES_VERSION" ;;
        gitMajor) val="$major" ;;
        gitMinor) val="$minor" ;;
        gitTreeState) val="clean" ;;
        buildDate) val="$build_date" ;;
        gitCommit) val="" ;;
      esac
      ldflags+=" -X $pkg.$key=$val"
    done
  done
  printf '%s\n' "$ldflags"
}

# go_mod_header <module path> <tool package...>: the head of a go.mod that builds Kubernetes
# commands as Go tools (its require and replace lines follow).
go_mod_header() {
  printf 'module %s\n\ngo 1.24.0\n\ngodebug default=go1.24\n\ntool (\n' "$1"
  shift
  printf '\t%s\n' "$@"
  printf ')\n\nrequire k8s.io/kubernetes %s\n\n' "$MMI_KUBERNETES_VERSION"
}
