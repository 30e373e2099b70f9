# syntax=docker/dockerfile:1
# The image of both services (/usr/local/bin/mmi-dispatcher, /usr/local/bin/mmi-status-sink),
# used by charts/multicluster-maestro-integrations. Debian 12 (bookworm) in both stages, with the
# same Debian packages as scripts/bootstrap (toolchain + C++ libraries; the tests are not built).
#
#   docker build -t quay.io/multicluster-maestro-integrations/mmi:0.1.0 .

ARG DEBIAN_IMAGE=debian:12-slim

# ---- build: cmake preset "release" (RelWithDebInfo), only the two service binaries ----------
FROM ${DEBIAN_IMAGE} AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake ninja-build pkg-config git python3 python3-pip openssl curl ca-certificates \
      libabsl-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc \
      librdkafka-dev libpaho-mqtt-dev libpaho-mqttpp-dev libpqxx-dev nlohmann-json3-dev \
      prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev libcurl4-openssl-dev \
      libyaml-cpp-dev libcli11-dev libspdlog-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN rm -rf build/release \
 && cmake --preset release -DMMI_BUILD_TESTS=OFF -DMMI_WERROR=ON \
 && cmake --build --preset release --target dispatcher status-sink \
 && install -D -s -m 0755 build/release/services/dispatcher/dispatcher /out/mmi-dispatcher \
 && install -D -s -m 0755 build/release/services/status-sink/status-sink /out/mmi-status-sink

# ---- runtime: only the shared libraries the binaries link, a non-root user ------------------
FROM ${DEBIAN_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates tzdata \
      libabsl20220623 libc-ares2 libcivetweb1 libcurl4 libgrpc++1.51 libgrpc29 \
      libpaho-mqtt1.3 libpaho-mqttpp3-1 libpq5 libpqxx-6.4 libprometheus-cpp-core1.0 \
      libprotobuf32 librdkafka++1 librdkafka1 libre2-9 libssl3 libstdc++6 libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 65532 mmi \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin mmi
COPY --from=build /out/ /usr/local/bin/
# Every binary fails at start if a library is missing: check it at build time.
RUN for b in /usr/local/bin/mmi-dispatcher /usr/local/bin/mmi-status-sink; do \
      if ldd "$b" | grep -q 'not found'; then ldd "$b"; exit 1; fi; "$b" --help >/dev/null; \
    done
LABEL org.opencontainers.image.title="multicluster-maestro-integrations" \
      org.opencontainers.image.description="Argo CD pull model over Maestro/OCM CloudEvents: dispatcher and status sink" \
      org.opencontainers.image.base.name="docker.io/library/debian:12-slim"
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/mmi-dispatcher"]
CMD ["--help"]
