# syntax=docker/dockerfile:1
# The image of both services (/usr/local/bin/mmi-dispatcher, /usr/local/bin/mmi-status-sink),
# used by charts/multicluster-maestro-integrations. Debian 12 (bookworm) in both stages, with the
# same Debian packages as scripts/bootstrap (toolchain + C++ libraries; the tests are not built).
#
#   docker build -t quay.io/multicluster-maestro-integrations/mmi:0.1.0 .
#
# CI builds it with buildah on a Debian 12 base made locally with debootstrap (no registry):
# tests/peers/build/image.sh passes --build-arg DEBIAN_IMAGE=localhost/mmi/debian:12-r<N>, and
# bin/start-node loads the result into the node's containerd (tests/e2e/chart).
#
# The runtime stage takes the binaries from the stage named `build`. A named build context of
# that name replaces the stage (BuildKit and buildah), so binaries built outside, on the same
# Debian 12, go into the same runtime stage without compiling anything here:
#
#   docker buildx build --build-context build=<dir with out/mmi-dispatcher, out/mmi-status-sink> .
#
# scripts/test does that with its Release build (tests/peers/build/image.sh --binaries).

ARG DEBIAN_IMAGE=debian:12-slim

# ---- build: cmake preset "release" (-O2, no debug info), only the two service binaries -----
# The toolchain and libraries are a stage of their own (tests/peers/build/image.sh tags it to keep
# it in the layer cache between builds).
FROM ${DEBIAN_IMAGE} AS build-deps
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake ninja-build pkg-config git python3 python3-pip openssl curl ca-certificates \
      libabsl-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc \
      librdkafka-dev libpqxx-dev nlohmann-json3-dev libsimdjson-dev \
      libjemalloc-dev libmosquitto-dev \
      prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev libcurl4-openssl-dev \
      libyaml-cpp-dev libcli11-dev libspdlog-dev ccache \
 && rm -rf /var/lib/apt/lists/*

FROM build-deps AS build
WORKDIR /src
COPY . .
# Tests not configured; only the two service targets are built, with -O2 -DNDEBUG and without
# -g: the binaries are stripped, so debug info would only cost compile and link time. The compiler cache
# survives between builds (BuildKit and buildah cache mount): a rebuild after a small change
# recompiles what changed. MMI_BUILD_JOBS bounds the parallel compile jobs.
# The dispatcher's Argo CD repo-server client (manifest delivery, ADR 0007) compiles the .proto
# files of the pinned Argo CD and Kubernetes Go modules; there is no Go here, so
# scripts/fetch-argocd-protos takes them from the Go module proxy (checked against
# tests/peers/argocd/go.sum) into the module cache's layout, and ON makes a miss fail the build.
ARG MMI_BUILD_JOBS=2
ARG GOPROXY=https://proxy.golang.org
RUN --mount=type=cache,id=mmi-ccache,target=/root/.cache/ccache \
    rm -rf build/release /tmp/argocd-protos \
 && GOPROXY="${GOPROXY}" python3 scripts/fetch-argocd-protos /tmp/argocd-protos \
 && cmake --preset release -DMMI_BUILD_TESTS=OFF -DMMI_WERROR=ON \
      -DMMI_WITH_ARGOCD_REPO=ON -DMMI_GO_MODCACHE=/tmp/argocd-protos \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
 && cmake --build --preset release --target dispatcher status-sink -j "${MMI_BUILD_JOBS}" \
 && { ccache --show-stats || true; } \
 && install -D -s -m 0755 build/release/services/dispatcher/dispatcher /out/mmi-dispatcher \
 && install -D -s -m 0755 build/release/services/status-sink/status-sink /out/mmi-status-sink

# ---- runtime: only the shared libraries the binaries link, a non-root user ------------------
FROM ${DEBIAN_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates tzdata \
      libabsl20220623 libc-ares2 libcivetweb1 libcurl4 libgrpc++1.51 libgrpc29 libjemalloc2 \
      libpq5 libpqxx-6.4 libprometheus-cpp-core1.0 libsimdjson14 \
      libprotobuf32 librdkafka++1 librdkafka1 libre2-9 libssl3 libstdc++6 libyaml-cpp0.7 libmosquitto1 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 65532 mmi \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin mmi
COPY --from=build /out/ /usr/local/bin/
# Every binary fails at start if a library is missing, and runs on jemalloc (MMI_ALLOCATOR):
# check both at build time.
RUN for b in /usr/local/bin/mmi-dispatcher /usr/local/bin/mmi-status-sink; do \
      if ldd "$b" | grep -q 'not found'; then ldd "$b"; exit 1; fi; "$b" --help >/dev/null; \
      ldd "$b" | grep -q libjemalloc || { echo "$b is not linked with jemalloc"; exit 1; }; \
    done
LABEL org.opencontainers.image.title="multicluster-maestro-integrations" \
      org.opencontainers.image.description="Argo CD pull model over Maestro/OCM CloudEvents: dispatcher and status sink" \
      org.opencontainers.image.base.name="docker.io/library/debian:12-slim"
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/mmi-dispatcher"]
CMD ["--help"]
