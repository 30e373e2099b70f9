#!/usr/bin/env bash
# build/maestro.sh: builds the Maestro server test peer from the Go module proxy into
#   $MMI_PEERS_HOME/maestro-<12 chars of the pseudo-version's commit>/bin/maestro
# from tests/peers/maestro: a module of our own that requires github.com/openshift-online/maestro
# at $MMI_MAESTRO_VERSION and whose main registers only Maestro's `migration` and `server`
# subcommands. Maestro's agent is left out: it needs an open-cluster-management.io/ocm version
# the proxy refuses (tools/fleet-sim plays the agents).
#
# The proxy lists no Maestro versions but serves this exact one; the checksum database has no
# entry for it, so the hashes come from the committed go.sum (-mod=readonly: nothing is resolved
# anew, every download is checked against go.sum; GONOSUMDB only keeps the go command from asking
# the checksum database about these modules). Idempotent: a stamp of the module's files says
# whether the binary is current.
source "$(dirname "$0")/../lib.sh"

MOD_DIR="$MMI_REPO_ROOT/tests/peers/maestro"
prefix="$(maestro_home)"
bin="$prefix/bin/maestro"

gomod() {
  (cd "$MOD_DIR" && GOFLAGS=-mod=readonly GOTOOLCHAIN=local CGO_ENABLED=0 \
    GONOSUMDB=github.com/openshift-online,open-cluster-management.io go "$@")
}
stamp() { cat "$MOD_DIR/go.mod" "$MOD_DIR/go.sum" "$MOD_DIR/main.go" | sha256sum | cut -c1-16; }
pinned() { awk '$1=="github.com/openshift-online/maestro"{print $2; exit}' "$MOD_DIR/go.mod"; }

verify() {
  local help sub
  help="$("$bin" --help 2>&1)" || die "$bin --help failed: $help"
  for sub in server migration; do
    grep -qE "^  $sub( |$)" <<<"$help" || die "$bin has no '$sub' subcommand"
  done
}

build() {
  mkdir -p "$prefix/bin"
  nice -n 19 bash -c 'cd "$0" && GOFLAGS=-mod=readonly GOTOOLCHAIN=local CGO_ENABLED=0 \
    GONOSUMDB=github.com/openshift-online,open-cluster-management.io \
    go build -p "$1" -trimpath -ldflags "-s -w" -o "$2" .' \
    "$MOD_DIR" "${MMI_GO_BUILD_P:-$(nproc)}" "$bin.tmp"
  mv -f "$bin.tmp" "$bin"
}

[ "$(pinned)" = "$MMI_MAESTRO_VERSION" ] \
  || die "tests/peers/maestro/go.mod requires maestro '$(pinned)' but lib.sh pins $MMI_MAESTRO_VERSION"
# One build at a time: a second caller waits here, then finds the binary current.
mkdir -p "$prefix"
exec 9>"$prefix/.build.lock"
flock 9
if [ -x "$bin" ] && [ "$(cat "$prefix/bin/.stamp" 2>/dev/null)" = "$(stamp)" ]; then
  log "maestro server $MMI_MAESTRO_VERSION already built: $bin"
  echo "$bin"
  exit 0
fi
command -v go >/dev/null || die "go not found: run scripts/bootstrap"
timed "go mod download (maestro $MMI_MAESTRO_VERSION)" gomod mod download
log "building the Maestro server (cold: several minutes on 2 cores)"
timed "go build maestro" build
timed "verify maestro subcommands" verify
stamp > "$prefix/bin/.stamp"
log "built $bin"
echo "$bin"
