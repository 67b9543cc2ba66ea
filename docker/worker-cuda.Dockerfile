# syntax=docker/dockerfile:1
# iosfarm-worker image with the cuda backend (CUDA 13, cuDNN 9, cuBLAS).
#
#   docker build -f docker/worker-cuda.Dockerfile -t iosfarm/worker-cuda:0.1.0 .
#   docker run --gpus device=0 iosfarm/worker-cuda:0.1.0 \
#       --server farm:7070 --device-key h100-sxm --backend cuda --gpu 0
#
# Base images: NVIDIA's CUDA images, which exist for Ubuntu (not Debian). The
# project is developed on CUDA 13.0 (nvcc 13.0.88 = CUDA 13.0 update 2) with
# cuDNN 9, so both stages use the 13.0.2 images with cuDNN 9 and Ubuntu 24.04.
# The build stage is the matching *devel* image and installs Ubuntu's -dev
# packages of the same names as Debian's: binaries are then built against
# exactly the libraries (and the cuDNN) the runtime stage ships. Building on
# Debian 12 instead would link Debian's sonames (libspdlog.so.1.10, ...),
# which Ubuntu 24.04 does not have. docker/runtime-packages.sh turns the
# libraries the binary loads into Ubuntu package names (t64 renames
# included), and the image build fails if one is missing.
#
# Needs an NVIDIA driver that supports CUDA 13 (>= 580) and the NVIDIA
# Container Toolkit on the host. One container drives one GPU: give it one
# (--gpus device=N, compose device_ids, Kubernetes nvidia.com/gpu: 1); inside
# it is always --gpu 0. The image has no HEALTHCHECK (no port; see
# worker-cpu.Dockerfile). Without a GPU the worker exits 1 ("no CUDA device").

ARG CUDA_IMAGE_VERSION=13.0.2
ARG UBUNTU_VERSION=24.04

# ---------------------------------------------------------------- build
FROM nvidia/cuda:${CUDA_IMAGE_VERSION}-cudnn-devel-ubuntu${UBUNTU_VERSION} AS build
# 75 = Turing (T4), 80 = A100, 86/89 = Ampere/Ada workstation and L4/L40, 90 = H100/H200.
ARG CUDA_ARCHITECTURES="75;80;86;89;90"
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
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIOSFARM_CUDA=ON \
      "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}" \
 && cmake --build /build --target iosfarm-worker \
 && install -D -m 0755 /build/worker/iosfarm-worker /out/bin/iosfarm-worker \
 && docker/runtime-packages.sh /out/bin/iosfarm-worker > /out/runtime-packages.txt

# ---------------------------------------------------------------- runtime
FROM nvidia/cuda:${CUDA_IMAGE_VERSION}-cudnn-runtime-ubuntu${UBUNTU_VERSION}
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
# --no-upgrade keeps the CUDA, cuBLAS and cuDNN packages the base image has.
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive xargs -a /tmp/runtime-packages.txt \
      apt-get install -y -q --no-install-recommends --no-upgrade \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin iosfarm
COPY --from=build /out/bin/ /usr/local/bin/
RUN iosfarm-worker --help > /dev/null

# CUDA_CACHE_PATH: the JIT cache in a writable place (the user has no home).
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    CUDA_CACHE_PATH=/tmp/cuda-cache
USER iosfarm
ENTRYPOINT ["iosfarm-worker"]
CMD ["--help"]
