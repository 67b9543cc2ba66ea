#!/bin/sh
# Prints, one per line, the Debian/Ubuntu packages that own the shared
# libraries the given binaries load (ldd), so a runtime image installs exactly
# what the build stage linked against, whatever the distribution names them
# (Debian 12: libgrpc++1.51; Ubuntu 24.04: libgrpc++1.51t64). Libraries that
# no package owns (the CUDA driver's, the vDSO) are skipped. Fails when a
# binary has an unresolved library.
#
#   docker/runtime-packages.sh /out/bin/iosfarm-server ... > runtime-packages.txt
set -eu
[ "$#" -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
libs=$(mktemp)
for binary in "$@"; do
  if ldd "$binary" | grep -q "not found"; then
    echo "runtime-packages: $binary has unresolved libraries:" >&2
    ldd "$binary" | grep "not found" >&2
    exit 1
  fi
  ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' >> "$libs"
done
sort -u "$libs" | while read -r lib; do
  real=$(readlink -f "$lib")
  # Merged /usr: dpkg may know the file under /lib or /usr/lib.
  for candidate in "$lib" "$real" "/usr$lib" "/usr$real" "${lib#/usr}" "${real#/usr}"; do
    owner=$(dpkg -S "$candidate" 2>/dev/null | head -n 1 | cut -d: -f1) || true
    if [ -n "$owner" ]; then
      echo "$owner"
      break
    fi
  done
done | sort -u
rm -f "$libs"
