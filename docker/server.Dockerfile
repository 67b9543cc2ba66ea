# syntax=docker/dockerfile:1
# iosfarm-server image: the tuning farm's central server (and the `iosfarm`
# CLI, for `docker exec ... iosfarm list`). Build from the repository root:
#
#   docker build -f docker/server.Dockerfile -t iosfarm/server:0.1.0 .
#
# Runs as the unprivileged user iosfarm (uid 10001); the SQLite database lives
# in the volume /var/lib/iosfarm. Tokens come from IOSFARM_CLIENT_TOKENS /
# IOSFARM_WORKER_TOKENS or from --client-tokens/--worker-tokens files; without
# them the server refuses to listen beyond loopback (docs/operations.md).

ARG DEBIAN_VERSION=12

# ---------------------------------------------------------------- build
FROM debian:${DEBIAN_VERSION} AS build
# The -dev packages of DESIGN.md / scripts/install-deps.sh (no PyTorch: the
# tests are not built here).
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libspdlog-dev libsqlite3-dev libgtest-dev libgmock-dev \
      libonnx-dev libdnnl-dev ocl-icd-opencl-dev nlohmann-json3-dev libcli11-dev \
      pybind11-dev python3-dev libxtensor-dev \
      libssl-dev prometheus-cpp-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIOSFARM_CUDA=OFF \
 && cmake --build /build --target iosfarm-server iosfarm \
 && install -D -m 0755 /build/server/iosfarm-server /out/bin/iosfarm-server \
 && install -D -m 0755 /build/client/iosfarm /out/bin/iosfarm \
 && install -D -m 0755 docker/iosfarm-healthcheck /out/bin/iosfarm-healthcheck \
 && docker/runtime-packages.sh /out/bin/iosfarm-server /out/bin/iosfarm > /out/runtime-packages.txt

# ---------------------------------------------------------------- runtime
FROM debian:${DEBIAN_VERSION}-slim
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
# Runtime libraries of the binaries, sqlite3 for online backups
# (`sqlite3 /var/lib/iosfarm/farm.db ".backup ..."`), python3-grpcio for the
# health check.
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive xargs -a /tmp/runtime-packages.txt \
      apt-get install -y -q --no-install-recommends --no-upgrade sqlite3 python3-grpcio \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/iosfarm --shell /usr/sbin/nologin iosfarm \
 && install -d -o iosfarm -g iosfarm -m 0750 /var/lib/iosfarm
COPY --from=build /out/bin/ /usr/local/bin/
# Fails the image build when a library is missing.
RUN iosfarm-server --help > /dev/null && iosfarm --help > /dev/null && iosfarm-healthcheck --help > /dev/null

USER iosfarm
WORKDIR /var/lib/iosfarm
VOLUME /var/lib/iosfarm
EXPOSE 7070
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["iosfarm-healthcheck", "127.0.0.1:7070"]
ENTRYPOINT ["iosfarm-server"]
CMD ["--listen", "0.0.0.0:7070", "--db", "/var/lib/iosfarm/farm.db"]
