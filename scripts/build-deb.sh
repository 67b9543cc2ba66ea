#!/usr/bin/env bash
# Builds the Debian package of the whole project (cmake/IosfarmPackaging.cmake):
#
#   scripts/build-deb.sh [BUILD_DIR]   (default build-deb; `make deb`)
#
# A build of its own, configured for /usr, Release, without the CUDA backend
# (Debian 12 packages no CUDA, cuBLAS or cuDNN for it to depend on), of the
# installed targets only; then `cpack -G DEB`. Prints the .deb's path on the
# last line of stdout. Needs the build packages (scripts/install-deps.sh
# build) and dpkg-dev (dpkg-shlibdeps), which build-essential brings.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-deb}
generator=("Unix Makefiles")
command -v ninja > /dev/null 2>&1 && generator=(Ninja)
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -G "${generator[0]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX=/usr -DIOSFARM_CUDA=OFF -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON \
  > "$build_dir/configure.log" 2>&1 ||
  { tail -20 "$build_dir/configure.log" >&2; echo "build-deb: configure failed" >&2; exit 1; }
# What install() names: the three binaries, the runtime and the Python package.
# (iosfarm_python brings the Python stubs of the wire types.)
targets=(iosfarm iosfarm-server iosfarm-worker iosfarm_runtime iosfarm_python)
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"
(cd "$build_dir" && cpack -G DEB > cpack.log 2>&1) ||
  { tail -30 "$build_dir/cpack.log" >&2; echo "build-deb: cpack failed" >&2; exit 1; }
deb=$(ls -t "$build_dir"/iosfarm_*.deb | head -1)
dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p'
echo "$deb"
