#!/usr/bin/env bash
# build/maestro.sh: builds maestro's single binary (server, agent, migration, ...) at the pinned
# commit MMI_MAESTRO_COMMIT into $MMI_PEERS_HOME/maestro-<short commit>/bin/maestro.
# Source comes from the Go module proxy only: tests/peers/maestro/ is a build-only module that
# imports github.com/openshift-online/maestro/cmd/maestro; it is copied to a scratch directory,
# the pin is resolved there with `go get`, and the binary is built from the module cache.
# Nothing third-party is vendored or written into the repository. Idempotent: returns at once
# when the binary exists.
source "$(dirname "$0")/../lib.sh"

short="${MMI_MAESTRO_COMMIT:0:12}"
prefix="$MMI_PEERS_HOME/maestro-$short"
bin="$prefix/bin/maestro"
if [ -x "$bin" ]; then
  log "maestro $short already built: $bin"
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || die "go not found: run scripts/bootstrap"
module="github.com/openshift-online/maestro"
work="$prefix/build"
rm -rf "$work"
mkdir -p "$work" "$prefix/bin"
cp "$MMI_REPO_ROOT/tests/peers/maestro/go.mod" "$MMI_REPO_ROOT/tests/peers/maestro/tools.go" "$work/"
[ -f "$MMI_REPO_ROOT/tests/peers/maestro/go.sum" ] && cp "$MMI_REPO_ROOT/tests/peers/maestro/go.sum" "$work/"

resolve() {
  local out
  if ! out="$(cd "$work" && go get "$module@$MMI_MAESTRO_COMMIT" 2>&1)"; then
    printf '%s\n' "$out" >&2
    if grep -q '403 Forbidden' <<<"$out"; then
      die "the Go module proxy refuses $module (or one of its dependencies): Maestro cannot be built on this machine"
    fi
    die "go get $module@$MMI_MAESTRO_COMMIT failed"
  fi
  (cd "$work" && go mod tidy)
  log "resolved $(cd "$work" && go list -m "$module")"
}
build() {
  (cd "$work" && CGO_ENABLED=0 go build -trimpath -o "$bin.tmp" "$module/cmd/maestro")
  mv "$bin.tmp" "$bin"
}
verify() {
  local help
  help="$("$bin" --help 2>&1)" || die "$bin --help failed"
  local sub
  for sub in server agent migration; do
    grep -qE "^  $sub( |$)" <<<"$help" || die "$bin has no '$sub' subcommand"
  done
}

timed "resolve $module@$short" resolve
timed "build maestro" build
timed "verify maestro subcommands" verify
log "built $bin"
echo "$bin"
