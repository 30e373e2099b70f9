#!/usr/bin/env bash
# build/image.sh: builds the project's image from the Dockerfile at the repository root, on a
# Debian 12 base image made here (debootstrap from Debian's packages: no registry is asked for
# anything), and the node's sandbox ("pause") image; writes each as a docker-archive that
# bin/start-node loads into containerd. Everything is cached under $MMI_PEERS_HOME/image:
#
#   storage/                    buildah's image store (base image, build layers, the images)
#   base-debian12-r<N>.done     the base image localhost/mmi/debian:12-r<N> exists
#   pause-<hash>.tar            localhost/mmi-node/pause:<hash of pause.c>
#   mmi-src-<hash>.tar          localhost/mmi/mmi:src-<hash>, <hash> = the source tree (below)
#
#   build/image.sh               builds what is missing; prints the facts below
#   build/image.sh --binaries <build dir>
#                                the same image, but its two binaries are <build dir>'s
#                                services/dispatcher/dispatcher and services/status-sink/status-sink
#                                (a Release build of this tree on this Debian 12 host; stripped
#                                here) instead of a compile in the Dockerfile's build stage: a
#                                named build context replaces that stage, and the toolchain
#                                stage is not built either. scripts/test passes its Release build.
#   build/image.sh --base        only the base and pause images (what does not depend on the
#                                source tree: scripts/bootstrap runs this)
#   build/image.sh --print-ref   only prints the facts (no build)
#
# Printed (stdout): MMI_IMAGE=localhost/mmi/mmi:src-<hash> MMI_IMAGE_ARCHIVE=<tar>
# PAUSE_IMAGE=... PAUSE_IMAGE_ARCHIVE=<tar>. One build at a time (a lock in $IMAGE_HOME); working
# containers a killed build left behind are removed first.
#
# The source tree hash covers what the Dockerfile's `COPY . .` takes: every file git tracks or
# would track (untracked files that are not ignored), minus build/ and .git/ (.dockerignore),
# with its content and mode. A change to any of them makes a new image; nothing else does. The
# build stage keeps its compiler cache (ccache) in a buildah cache mount, so a rebuild after a
# small change recompiles only what changed.
#
# buildah runs as root with the overlay driver, the host network for RUN steps (apt-get reaches
# Debian's mirror, as on the host) and --pull=never: a FROM naming anything but the local base
# image fails instead of reaching a registry.
source "$(dirname "$0")/../lib.sh"

IMAGE_HOME="$MMI_PEERS_HOME/image"
STORAGE="$IMAGE_HOME/storage"
RUNROOT="/run/mmi-buildah"
BASE_RECIPE=1                                   # bump when make_base_image changes
BASE_IMAGE="localhost/mmi/debian:12-r$BASE_RECIPE"
BUILD_DEPS_IMAGE="localhost/mmi/build-deps:latest"
DEBIAN_MIRROR="${MMI_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

bah() { buildah --root "$STORAGE" --runroot "$RUNROOT" --storage-driver overlay "$@"; }

tree_hash() {
  (cd "$MMI_REPO_ROOT" && git ls-files -z --cached --others --exclude-standard -- . ':!build' ':!.git' \
    | python3 -c '
import hashlib, os, stat, sys
h = hashlib.sha256()
for p in sorted(set(x for x in sys.stdin.buffer.read().split(b"\0") if x)):
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        continue  # deleted but not yet staged: not in the context
    h.update(p + b"\0" + oct(st.st_mode & 0o7777 | (stat.S_IFLNK if stat.S_ISLNK(st.st_mode) else 0)).encode() + b"\0")
    if stat.S_ISLNK(st.st_mode):
        h.update(os.readlink(p))
    else:
        with open(p, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
print(h.hexdigest()[:16])')
}

pause_hash() { sha256sum < "$MMI_REPO_ROOT/tests/peers/node/pause.c" | cut -c1-12; }

# make_base_image: Debian 12 minbase from debootstrap, trimmed like Debian's "slim" images (no
# docs, man pages or translations, no apt lists or package cache), as one layer.
make_base_image() {
  local root="$IMAGE_HOME/debootstrap.tmp" c mnt
  rm -rf "$root"
  timed "debootstrap bookworm (minbase)" debootstrap --variant=minbase bookworm "$root" "$DEBIAN_MIRROR" \
    > "$IMAGE_HOME/debootstrap.log" 2>&1 || { tail -30 "$IMAGE_HOME/debootstrap.log" >&2; die "debootstrap failed"; }
  cat > "$root/etc/dpkg/dpkg.cfg.d/mmi-slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
  cat > "$root/etc/apt/apt.conf.d/mmi-slim" <<'CFG'
APT::Install-Recommends "false";
Acquire::Languages "none";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
CFG
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/{man,groff,info,lintian}/* "$root"/var/lib/apt/lists/* \
    "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log \
    "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old
  find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main\n' \
    "$DEBIAN_MIRROR" "$DEBIAN_MIRROR" > "$root/etc/apt/sources.list"
  : > "$root/etc/hostname"
  c="$(bah from --pull=never scratch)"
  mnt="$(bah mount "$c")"
  tar -C "$root" -cf - . | tar -C "$mnt" -xpf -
  bah umount "$c" >/dev/null
  bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/bash \
    --label org.opencontainers.image.description="Debian 12 minbase (debootstrap), slim, made by tests/peers/build/image.sh" "$c"
  bah commit --rm -q "$c" "$BASE_IMAGE" >/dev/null
  rm -rf "$root"
  touch "$IMAGE_HOME/base-debian12-r$BASE_RECIPE.done"
}

make_pause_image() {
  local ref="$1" tar="$2" c mnt
  [ -x "$MMI_PEERS_HOME/node-$MMI_KUBERNETES_VERSION/bin/pause" ] || die "run tests/peers/build/node.sh first (pause)"
  c="$(bah from --pull=never scratch)"
  mnt="$(bah mount "$c")"
  install -m 0755 "$MMI_PEERS_HOME/node-$MMI_KUBERNETES_VERSION/bin/pause" "$mnt/pause"
  bah umount "$c" >/dev/null
  bah config --entrypoint '["/pause"]' --user 65535:65535 "$c"
  bah commit --rm -q "$c" "$ref" >/dev/null
  rm -f "$tar.tmp"
  bah push -q "$ref" "docker-archive:$tar.tmp:$ref"
  mv -f "$tar.tmp" "$tar"
}

dockerfile_build() {  # <log> <buildah build args...>
  local out="$1"; shift
  nice -n 10 buildah --root "$STORAGE" --runroot "$RUNROOT" --storage-driver overlay \
    build --layers --force-rm --pull=never --network host --build-arg DEBIAN_IMAGE="$BASE_IMAGE" \
    -f "$MMI_REPO_ROOT/Dockerfile" "$@" "$MMI_REPO_ROOT" >> "$out" 2>&1 \
    || { tail -60 "$out" >&2; die "buildah build failed (log: $out)"; }
}

# stage_binaries <build dir> <dir>: <dir>/out/ holds the stripped binaries of <build dir>, the
# layout of the Dockerfile's build stage.
stage_binaries() {
  local from="$1" dir="$2"
  rm -rf "$dir" && mkdir -p "$dir/out"
  install -s -m 0755 "$from/services/dispatcher/dispatcher" "$dir/out/mmi-dispatcher"
  install -s -m 0755 "$from/services/status-sink/status-sink" "$dir/out/mmi-status-sink"
}

make_app_image() {
  local ref="$1" tar="$2" binaries="$3"
  : > "$IMAGE_HOME/build.log"
  if [ -n "$binaries" ]; then
    stage_binaries "$binaries" "$IMAGE_HOME/binaries.tmp"
    dockerfile_build "$IMAGE_HOME/build.log" --build-context "build=$IMAGE_HOME/binaries.tmp" -t "$ref"
    rm -rf "$IMAGE_HOME/binaries.tmp"
  else
    # The Dockerfile's toolchain stage, tagged so that pruning keeps it (and its apt-get layer).
    dockerfile_build "$IMAGE_HOME/build.log" --target build-deps -t "$BUILD_DEPS_IMAGE"
    dockerfile_build "$IMAGE_HOME/build.log" -t "$ref"
  fi
  rm -f "$tar.tmp"
  bah push -q "$ref" "docker-archive:$tar.tmp:$ref"
  mv -f "$tar.tmp" "$tar"
  # Older archives and images of this script: only the newest is kept.
  local old
  for old in "$IMAGE_HOME"/mmi-src-*.tar; do
    [ "$old" = "$tar" ] || rm -f "$old"
  done
  for old in $(bah images --format '{{.Name}}:{{.Tag}}' | grep '^localhost/mmi/mmi:src-' || true); do
    [ "$old" = "$ref" ] || bah rmi "$old" >/dev/null 2>&1 || true
  done
  # Layers of earlier builds nothing refers to any more (each source tree leaves its COPY and
  # compile layers, ~700 MB).
  bah rmi --prune >/dev/null 2>&1 || true
}

main() {
  local print_only=0 base_only=0 binaries=""
  case "${1:-}" in
    --print-ref) print_only=1 ;;
    --base) base_only=1 ;;
    --binaries)
      binaries="$(cd "${2:?--binaries <build dir>}" && pwd)"
      local b
      for b in services/dispatcher/dispatcher services/status-sink/status-sink; do
        [ -x "$binaries/$b" ] || die "--binaries $2: no $b (build the release preset first)"
      done ;;
    "") ;;
    *) die "usage: build/image.sh [--base|--print-ref|--binaries <build dir>]" ;;
  esac
  mkdir -p "$IMAGE_HOME"
  local src pause app_ref app_tar pause_ref pause_tar
  src="$(tree_hash)"; pause="$(pause_hash)"
  app_ref="localhost/mmi/mmi:src-$src"; app_tar="$IMAGE_HOME/mmi-src-$src.tar"
  pause_ref="localhost/mmi-node/pause:$pause"; pause_tar="$IMAGE_HOME/pause-$pause.tar"
  if [ "$print_only" = 0 ]; then
    command -v buildah >/dev/null && command -v debootstrap >/dev/null \
      || die "buildah/debootstrap missing: run tests/peers/build/node.sh (it installs them)"
    [ "$(id -u)" = 0 ] || die "build/image.sh runs buildah as root"
    mkdir -p "$STORAGE"
    exec 9>"$IMAGE_HOME/lock"
    flock -w 3600 9 || die "another build/image.sh holds $IMAGE_HOME/lock"
    bah rm --all >/dev/null 2>&1 || true
    if [ ! -f "$IMAGE_HOME/base-debian12-r$BASE_RECIPE.done" ] || ! bah inspect --type image "$BASE_IMAGE" >/dev/null 2>&1; then
      timed "base image $BASE_IMAGE" make_base_image
    else
      log "base image $BASE_IMAGE present"
    fi
    if [ ! -s "$pause_tar" ]; then
      timed "pause image $pause_ref" make_pause_image "$pause_ref" "$pause_tar"
    fi
    if [ "$base_only" = 1 ]; then
      :
    elif [ ! -s "$app_tar" ]; then
      if [ -n "$binaries" ]; then
        log "building $app_ref from the Dockerfile with the binaries of $binaries"
      else
        log "building $app_ref from the Dockerfile (cold: apt-get and a Release build of both services)"
      fi
      timed "image $app_ref" make_app_image "$app_ref" "$app_tar" "$binaries"
    else
      log "image $app_ref present ($app_tar)"
    fi
    [ "$base_only" = 1 ] || log "image $app_ref: $(bah images --format '{{.Size}}' "$app_ref" 2>/dev/null || echo '?'), archive $(du -h "$app_tar" | cut -f1)"
  fi
  printf 'MMI_IMAGE=%s\nMMI_IMAGE_ARCHIVE=%s\nPAUSE_IMAGE=%s\nPAUSE_IMAGE_ARCHIVE=%s\n' \
    "$app_ref" "$app_tar" "$pause_ref" "$pause_tar"
}

main "$@"
