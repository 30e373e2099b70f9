#!/usr/bin/env bash
# build/helm.sh: builds helm $MMI_HELM_VERSION from the Go module proxy into
#   $MMI_PEERS_HOME/helm-$MMI_HELM_VERSION/bin/helm
# with the same version ldflags as helm's Makefile, so `helm version` reports the pinned release.
# Idempotent: returns at once when the binary is already there and reports the right version.
source "$(dirname "$0")/../lib.sh"

dest="$MMI_PEERS_HOME/helm-$MMI_HELM_VERSION"
bin="$dest/bin/helm"

if [ -x "$bin" ] && "$bin" version --template '{{.Version}}' 2>/dev/null | grep -qx "$MMI_HELM_VERSION"; then
  log "helm $MMI_HELM_VERSION already built: $bin"
  exit 0
fi

command -v go >/dev/null || die "go is not installed"
mod="helm.sh/helm/v3"

fetch_module() {
  # Downloads the module (and its go.mod) into the module cache; prints the go.mod path.
  go mod download -json "$mod@$MMI_HELM_VERSION" > "$dest/.download.json"
}

build_helm() {
  local gomod k8s_minor ldflags
  gomod="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["GoMod"])' "$dest/.download.json")"
  # helm's go.mod must have no replace directives for `go install pkg@version` to work.
  if grep -qE '^replace|=>' "$gomod"; then
    die "helm $MMI_HELM_VERSION go.mod has replace directives; go install @version cannot build it"
  fi
  # The Kubernetes version helm was built against (k8s.io/client-go v0.N.x => 1.N), as the Makefile does.
  k8s_minor="$(sed -nE 's#^[[:space:]]*k8s.io/client-go v0\.([0-9]+)\..*#\1#p' "$gomod" | head -n1)"
  ldflags="-w -s"
  ldflags+=" -X $mod/internal/version.version=$MMI_HELM_VERSION"
  ldflags+=" -X $mod/internal/version.metadata="
  ldflags+=" -X $mod/internal/version.gitTreeState=clean"
  if [ -n "$k8s_minor" ]; then
    ldflags+=" -X $mod/pkg/lint/rules.k8sVersionMajor=1 -X $mod/pkg/lint/rules.k8sVersionMinor=$k8s_minor"
    ldflags+=" -X $mod/pkg/chartutil.k8sVersionMajor=1 -X $mod/pkg/chartutil.k8sVersionMinor=$k8s_minor"
  fi
  mkdir -p "$dest/bin.tmp"
  CGO_ENABLED=0 GOBIN="$dest/bin.tmp" \
    go install -trimpath -ldflags "$ldflags" "$mod/cmd/helm@$MMI_HELM_VERSION"
  rm -rf "${dest:?}/bin"
  mv "$dest/bin.tmp" "$dest/bin"
}

mkdir -p "$dest"
rm -rf "$dest/bin.tmp"
timed "download helm $MMI_HELM_VERSION module" fetch_module
timed "build helm $MMI_HELM_VERSION" build_helm
rm -f "$dest/.download.json"
"$bin" version --template '{{.Version}}' | grep -qx "$MMI_HELM_VERSION" \
  || die "built helm reports $("$bin" version --short) instead of $MMI_HELM_VERSION"
log "helm ready: $bin ($("$bin" version --short))"
