#!/usr/bin/env bash
# Installs the Debian 12 packages iosfarm needs, only those missing.
# Runs apt-get as root, or through sudo when not root. Idempotent.
set -euo pipefail

# What configuring and building needs (`make run`: the CLI and its libraries).
build_packages=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libspdlog-dev libsqlite3-dev libgtest-dev libgmock-dev
  libonnx-dev libdnnl-dev ocl-icd-opencl-dev nlohmann-json3-dev libcli11-dev
  libssl-dev prometheus-cpp-dev libxtensor-dev
  python3 pybind11-dev python3-dev
)
# What the tests need besides (`make test`): PyTorch and torchvision export
# real ONNX models, clang builds the fuzz target, docker-compose and yamllint
# check the deployment files, grpcio speaks to the server from Python (and
# the Python Farm client, whose progress bars are tqdm's).
test_packages=(
  python3-torch python3-torchvision python3-onnx python3-yaml python3-numpy python3-pytest
  python3-grpcio python3-tqdm sqlite3 clang libclang-rt-14-dev docker-compose yamllint
)

# Usage: install-deps.sh [build|test] (default: test, everything).
case "${1:-test}" in
  build) packages=("${build_packages[@]}") ;;
  test) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "install-deps: usage: install-deps.sh [build|test]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "install-deps: missing packages (${missing[*]}) and not root, no sudo" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
