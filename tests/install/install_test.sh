#!/usr/bin/env bash
# The installed package as a user sees it: `cmake --install` into a fresh
# prefix, then examples/classify configured with find_package(iosfarm) and
# built against it, run on a zoo model; the installed library exports the
# public API only, and the installed Python module imports.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/include/iosfarm/runtime.h" || { echo "header not installed" >&2; exit 1; }
config=$(find "$work/prefix" -name iosfarmConfig.cmake)
test -n "$config" || { echo "iosfarmConfig.cmake not installed" >&2; exit 1; }
library=$(find "$work/prefix" -name 'libiosfarm_runtime.so.*' -type f)
test -n "$library" || { echo "libiosfarm_runtime.so not installed" >&2; exit 1; }
test -x "$work/prefix/bin/iosfarm" || { echo "the iosfarm CLI was not installed" >&2; exit 1; }

# Only the public API leaves the library.
leaked=$(nm -D --defined-only --demangle "$library" | awk '{ $1 = ""; $2 = ""; print }' |
         grep -v -E '^ *(iosfarm::(Session|Error|Version|ReadNpy|WriteNpy)|typeinfo (name )?for iosfarm::Error|vtable for iosfarm::Error)' || true)
if [ -n "$leaked" ]; then
  echo "libiosfarm_runtime exports more than the public API:" >&2
  echo "$leaked" | head -20 >&2
  exit 1
fi

generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$source_dir/examples/classify" -B "$work/classify" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/classify" > "$work/build.log"
"$work/classify/classify" --version | grep -q "^classify (iosfarm [0-9]"
"$work/classify/classify" squeezenet --runs 3 | tee "$work/out"
grep -q "squeezenet, sequential schedule" "$work/out"
test "$(grep -c '^class ' "$work/out")" -eq 5

# A bad model is an error with a message, not a crash.
if "$work/classify/classify" no_such_model 2> "$work/err"; then
  echo "classify accepted a model that does not exist" >&2
  exit 1
fi
grep -q "neither a zoo model" "$work/err"

module_dir=$(dirname "$(dirname "$(find "$work/prefix" -path '*dist-packages/iosfarm/__init__.py' | head -1)")")
for f in _native.pyi py.typed v1/farm_pb2.py v1/farm_pb2_grpc.py; do
  test -f "$module_dir/iosfarm/$f" || { echo "iosfarm/$f not installed" >&2; exit 1; }
done
PYTHONPATH="$module_dir" /usr/bin/python3 -c \
  "import iosfarm; s = iosfarm.Session('squeezenet'); print('python', iosfarm.__version__, s.inputs)"
# iosfarm.optimize finds the installed CLI beside the package.
env -u IOSFARM_CLI PYTHONPATH="$module_dir" /usr/bin/python3 -c \
  "from iosfarm import torch_optimize as t; p = t._find_cli(); assert p.startswith('$work/prefix/'), p"
echo "install test: OK"
