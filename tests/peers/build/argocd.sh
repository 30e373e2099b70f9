#!/usr/bin/env bash
# build/argocd.sh: builds the Argo CD test peer from the Go module proxy into
#   $MMI_PEERS_HOME/argocd-$MMI_ARGOCD_VERSION/bin/
#     argocd-peer                         tests/peers/argocd: Argo CD $MMI_ARGOCD_VERSION's
#                                         application-controller, applicationset-controller,
#                                         repo-server, cmp-server and git credential helper
#     argocd-application-controller ...   symlinks: the binary picks its component by its name
#     kustomize                           the kustomize the repo-server runs (Argo CD's pin)
#     helm                                a symlink to the helm peer (build/helm.sh)
# and the CRDs of that release under crds/ (from the module's manifests/crds/).
#
# Why a module of our own (tests/peers/argocd): `go install` refuses a module with replace
# directives, and Argo CD's go.mod has them; ours requires Argo CD and repeats its replace block.
# Its main registers only the components the tests start (not the API server with its UI, the CLI,
# Dex, notifications): about a third less to compile than Argo CD's cmd.
#
# v3.2.11 is the newest release that builds here: v3.2.12 as the proxy serves it does not compile
# (settings.ValidateExternalURL undefined), and 3.3+ need a nested gitops-engine module the proxy
# refuses. Idempotent: a stamp of the module's files says whether the binary is current.
#
#   build/argocd.sh              the binary, kustomize, the CRDs
#   build/argocd.sh --download   only `go mod download` of the module (the protos the C++ build
#                                takes from the module cache; scripts/bootstrap --early)
source "$(dirname "$0")/../lib.sh"

MOD_DIR="$MMI_REPO_ROOT/tests/peers/argocd"
ARGOCD_HOME="$MMI_PEERS_HOME/argocd-$MMI_ARGOCD_VERSION"
BIN="$ARGOCD_HOME/bin"
COMPONENTS=(argocd-application-controller argocd-applicationset-controller argocd-repo-server
  argocd-cmp-server argocd-git-ask-pass)
# What Argo CD's image ships beside it (hack/tool-versions.sh of the release).
KUSTOMIZE_VERSION="v5.7.0"

gomod() { (cd "$MOD_DIR" && GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 go "$@"); }

stamp() { cat "$MOD_DIR/go.mod" "$MOD_DIR/go.sum" "$MOD_DIR/main.go" | sha256sum | cut -c1-16; }

pinned() { awk '$1=="github.com/argoproj/argo-cd/v3"{print $2; exit} $1=="require" && $2=="github.com/argoproj/argo-cd/v3"{print $3; exit}' "$MOD_DIR/go.mod"; }

built() {
  [ -x "$BIN/argocd-peer" ] && [ "$(cat "$BIN/.stamp" 2>/dev/null)" = "$(stamp)" ] || return 1
  [ -x "$BIN/kustomize" ] && [ -d "$ARGOCD_HOME/crds" ] || return 1
  local c
  for c in "${COMPONENTS[@]}"; do [ -L "$BIN/$c" ] || return 1; done
}

build_argocd() {
  local ldflags="-s -w" pkg="github.com/argoproj/argo-cd/v3/common"
  # The version Argo CD reports (its Makefile's -X flags; the proxy does not tell the commit).
  ldflags+=" -X $pkg.version=${MMI_ARGOCD_VERSION#v} -X $pkg.gitTag=$MMI_ARGOCD_VERSION"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(gomod list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' github.com/argoproj/argo-cd/v3)"
  nice -n 19 bash -c 'cd "$0" && GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
    go build -p "$1" -trimpath -ldflags "$2" -o "$3" .' \
    "$MOD_DIR" "${MMI_GO_BUILD_P:-$(nproc)}" "$ldflags" "$BIN/.argocd-peer.tmp"
  mv -f "$BIN/.argocd-peer.tmp" "$BIN/argocd-peer"
  local c
  for c in "${COMPONENTS[@]}"; do ln -sfn argocd-peer "$BIN/$c"; done
}

build_kustomize() {
  [ -x "$BIN/kustomize" ] && "$BIN/kustomize" version 2>/dev/null | grep -q "${KUSTOMIZE_VERSION}" && return 0
  rm -rf "$BIN/.kustomize.tmp" && mkdir -p "$BIN/.kustomize.tmp"
  GOBIN="$BIN/.kustomize.tmp" GOTOOLCHAIN=local CGO_ENABLED=0 nice -n 19 go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kustomize/api/provenance.version=kustomize/$KUSTOMIZE_VERSION" \
    "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  mv -f "$BIN/.kustomize.tmp/kustomize" "$BIN/kustomize"
  rmdir "$BIN/.kustomize.tmp"
}

copy_crds() {
  local dir
  dir="$(gomod list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)"
  [ -d "$dir/manifests/crds" ] || die "no manifests/crds in $dir"
  rm -rf "$ARGOCD_HOME/crds" && mkdir -p "$ARGOCD_HOME/crds"
  cp "$dir"/manifests/crds/*-crd.yaml "$ARGOCD_HOME/crds/"
}

main() {
  if [ "${1:-}" = --download ]; then
    # Only the module and its dependencies (seconds): the protos libs/argocd_repo compiles from
    # (cmake/MmiArgoCdProtos.cmake) are in the module cache before the build is configured.
    timed "go mod download (argocd $MMI_ARGOCD_VERSION)" gomod mod download
    return
  fi
  mkdir -p "$BIN"
  # One build at a time: a second caller waits here, then finds the binary current.
  exec 9>"$ARGOCD_HOME/.build.lock"
  flock 9
  [ "$(pinned)" = "$MMI_ARGOCD_VERSION" ] \
    || die "tests/peers/argocd/go.mod requires argo-cd '$(pinned)' but lib.sh pins $MMI_ARGOCD_VERSION"
  # The helm the repo-server runs is the helm peer (Argo CD ships helm 3.18; ours is newer).
  bash "$MMI_REPO_ROOT/tests/peers/build/helm.sh" >/dev/null
  ln -sfn "$MMI_PEERS_HOME/helm-$MMI_HELM_VERSION/bin/helm" "$BIN/helm"
  if built; then
    log "argocd $MMI_ARGOCD_VERSION already built in $BIN (delete it to rebuild)"
    return 0
  fi
  timed "go mod download (argocd $MMI_ARGOCD_VERSION)" gomod mod download
  timed "argocd CRDs" copy_crds
  timed "build kustomize $KUSTOMIZE_VERSION" build_kustomize
  log "building Argo CD $MMI_ARGOCD_VERSION (${COMPONENTS[*]}; cold: many minutes on 2 cores)"
  timed "go build argocd-peer" build_argocd
  stamp > "$BIN/.stamp"
  built || die "argocd peer incomplete in $BIN"
  log "argocd peer ready in $BIN"
}

main "$@"
