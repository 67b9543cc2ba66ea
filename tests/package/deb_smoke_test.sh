#!/usr/bin/env bash
# The Debian package as a user on a fresh Debian 12 gets it:
#
#   tests/package/deb_smoke_test.sh [FILE.deb]   (`make deb-test`; default: scripts/build-deb.sh)
#
# A clean bookworm root from debootstrap (scripts/debian-root.sh), then, in a
# chroot of it, `apt-get install ./iosfarm_*.deb` (apt fetches what the
# package depends on, nothing else is there), and a smoke test: every binary
# answers --version, `iosfarm tune squeezenet --backend cpu --batch 1,2
# --save` writes a tuned model file, `iosfarm inspect` and `iosfarm run`
# read it, and Debian's python3 imports the installed package and runs the
# file through iosfarm.Session without PYTHONPATH. Needs root (or sudo) and
# the Debian archive; takes minutes (debootstrap, the package's dependencies,
# a CPU tune). Exit 1 naming the step that failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/debian-root.sh
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

deb=${1:-}
if [ -z "$deb" ]; then
  deb=$(scripts/build-deb.sh | tail -1)
fi
[ -f "$deb" ] || { echo "deb-smoke: no package file '$deb'" >&2; exit 1; }
deb=$(realpath "$deb")

work=$(mktemp -d /tmp/iosfarm-deb-smoke.XXXXXX)
root="$work/root"
cleanup() {
  for m in dev/pts dev proc sys; do
    mountpoint -q "$root/$m" 2> /dev/null && $sudo umount -l "$root/$m"
  done
  $sudo rm -rf "$work"
}
trap cleanup EXIT

step() { echo "deb-smoke: $*"; }
start=$SECONDS
make_debian_root "$root" deb-smoke
step "debian root made in $((SECONDS - start)) s"
$sudo mount -t proc proc "$root/proc"
$sudo mount -t sysfs sys "$root/sys"
$sudo mount --bind /dev "$root/dev"
$sudo mount --bind /dev/pts "$root/dev/pts"
$sudo cp /etc/resolv.conf "$root/etc/resolv.conf" 2> /dev/null || true
$sudo cp "$deb" "$root/tmp/"
in_root() { $sudo chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 /bin/bash -euo pipefail -c "$1"; }

start=$SECONDS
in_root "apt-get update -q > /tmp/apt.log 2>&1 && DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends /tmp/$(basename "$deb") >> /tmp/apt.log 2>&1" ||
  { $sudo tail -30 "$root/tmp/apt.log" >&2; echo "deb-smoke: apt-get install failed" >&2; exit 1; }
step "installed $(basename "$deb") with its dependencies in $((SECONDS - start)) s" \
  "($(in_root "dpkg-query -W -f='\${Package}\n' | wc -l") packages in the root)"

check() {  # check NAME SCRIPT: runs SCRIPT in the root, fails naming NAME
  local name=$1 out
  if ! out=$(in_root "$2" 2>&1); then
    echo "$out" | tail -20 >&2
    echo "deb-smoke: $name failed" >&2
    exit 1
  fi
  step "$name: ok"
  [ -z "$out" ] || echo "$out" | sed 's/^/  /'
}
check "versions" 'iosfarm --version && iosfarm-server --version && iosfarm-worker --version'
check "tune" 'cd /tmp && iosfarm tune squeezenet --backend cpu --batch 1,2 --save sq.iosfarm \
  --db /tmp/latency.db 2> tune.err | grep "^saved"'
check "inspect" 'iosfarm inspect /tmp/sq.iosfarm | head -5'
check "run" 'iosfarm run /tmp/sq.iosfarm --backend cpu --batch 2 --iterations 3 | grep schedule'
check "python" 'cd / && python3 -c "
import numpy as np, iosfarm
s = iosfarm.Session(\"/tmp/sq.iosfarm\", backend=\"cpu\")
out = next(iter(s.outputs))
y = s.run({\"input\": np.zeros((2, 3, 224, 224), np.float32)})[out]
assert s.batches == [1, 2] and y.shape == (2, 1000), (s.batches, y.shape)
print(\"iosfarm\", iosfarm.__version__, \"from\", iosfarm.__file__, \"batches\", s.batches, y.shape)
"'
check "header and CMake package" 'test -f /usr/include/iosfarm/runtime.h && \
  ls /usr/lib/*/cmake/iosfarm/iosfarmConfig.cmake'
step "passed"
