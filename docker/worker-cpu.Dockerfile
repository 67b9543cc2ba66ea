# syntax=docker/dockerfile:1
# iosfarm-worker image with the cpu backend (oneDNN): measures for a CPU
# device key, e.g. for CPU inference or to try a farm without a GPU.
#
#   docker build -f docker/worker-cpu.Dockerfile -t iosfarm/worker-cpu:0.1.0 .
#   docker run iosfarm/worker-cpu:0.1.0 --server farm:7070 --device-key xeon-8480 --backend cpu
#
# The worker token comes from $IOSFARM_WORKER_TOKEN or --token-file. The
# worker listens on no port (it dials the server), so the image has no
# HEALTHCHECK: it reconnects by itself and exits 1 only when the server
# refuses it for good, which the restart policy handles.

ARG DEBIAN_VERSION=12

# ---------------------------------------------------------------- build
FROM debian:${DEBIAN_VERSION} AS build
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
 && cmake --build /build --target iosfarm-worker \
 && install -D -m 0755 /build/worker/iosfarm-worker /out/bin/iosfarm-worker \
 && docker/runtime-packages.sh /out/bin/iosfarm-worker > /out/runtime-packages.txt

# ---------------------------------------------------------------- runtime
FROM debian:${DEBIAN_VERSION}-slim
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive xargs -a /tmp/runtime-packages.txt \
      apt-get install -y -q --no-install-recommends --no-upgrade \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin iosfarm
COPY --from=build /out/bin/ /usr/local/bin/
RUN iosfarm-worker --help > /dev/null

USER iosfarm
ENTRYPOINT ["iosfarm-worker"]
CMD ["--help"]
