#!/usr/bin/env bash
# Builds iosfarm's container images from this checkout with one command
# (`make images`), from the ordinary Dockerfiles in docker/:
#
#   scripts/build-images.sh [server] [worker-cpu] [worker-cuda]   (default: server worker-cpu)
#
# Engine: docker where a docker engine answers (`docker info`), else buildah
# (installed from Debian when missing; as root it runs with chroot isolation
# and the vfs storage driver, no daemon needed).
#
# Base images: the Dockerfiles start FROM debian:12 (build stage) and
# debian:12-slim (runtime stage). Where a registry answers, the official
# images are used unchanged (their apt sources are the images' own). Where
# none does, both names are given to a Debian 12 (bookworm) minbase root file
# system made with debootstrap from the Debian archive this machine's apt
# uses: the sources in /etc/apt/sources.list and /etc/apt/sources.list.d
# (*.list, *.sources) that serve bookworm (and bookworm-security) with the
# main component. The root file system's apt gets the same sources, with
# the bookworm, bookworm-updates and bookworm-security suites as in the
# official images. DEBIAN_MIRROR (and DEBIAN_SECURITY_MIRROR) name another
# archive where this machine's apt has none for bookworm.
#
# Tags: ${IOSFARM_REGISTRY:-iosfarm}/<name>:${IOSFARM_VERSION:-0.1.0}, the names
# deploy/docker-compose.yml uses. Prints each build's time and each image's
# size. Exit 1 on the first failure, naming the image.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/debian-root.sh

images=("$@")
[ "${#images[@]}" -gt 0 ] || images=(server worker-cpu)
registry=${IOSFARM_REGISTRY:-iosfarm}
version=${IOSFARM_VERSION:-0.1.0}
for name in "${images[@]}"; do
  [ -f "docker/$name.Dockerfile" ] || { echo "build-images: no docker/$name.Dockerfile" >&2; exit 2; }
done

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

if command -v docker > /dev/null 2>&1 && docker info > /dev/null 2>&1; then
  engine=docker
else
  engine=buildah
  missing=()
  command -v buildah > /dev/null 2>&1 || missing+=(buildah)
  command -v debootstrap > /dev/null 2>&1 || missing+=(debootstrap)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "build-images: no docker engine; installing ${missing[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  export STORAGE_DRIVER=${STORAGE_DRIVER:-vfs}
  export BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}
fi
echo "build-images: engine $engine"

# --- base images (buildah only: docker pulls what it needs) ---------------
have_image() { $sudo buildah images --noheading --format '{{.Name}}:{{.Tag}}' 2> /dev/null | grep -qx "$1"; }

debootstrap_base() {
  local root
  root=$(mktemp -d /tmp/iosfarm-debian12.XXXXXX)
  trap '$sudo rm -rf "$root"' RETURN
  echo "build-images: no registry answers; making debian:12 with debootstrap"
  local start=$SECONDS
  make_debian_root "$root/rootfs" build-images || exit 1
  $sudo rm -rf "$root"/rootfs/var/lib/apt/lists/* "$root"/rootfs/var/cache/apt/archives/*.deb
  local ctr mnt
  ctr=$($sudo buildah from scratch)
  mnt=$($sudo buildah mount "$ctr")
  $sudo tar -C "$root/rootfs" -cf - . | $sudo tar -C "$mnt" -xf -
  $sudo buildah umount "$ctr" > /dev/null
  $sudo buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/bash "$ctr"
  $sudo buildah commit --quiet "$ctr" docker.io/library/debian:12 > /dev/null
  $sudo buildah rm "$ctr" > /dev/null
  $sudo buildah tag docker.io/library/debian:12 docker.io/library/debian:12-slim
  echo "build-images: debian:12 and debian:12-slim made in $((SECONDS - start)) s"
}

if [ "$engine" = buildah ]; then
  if ! have_image docker.io/library/debian:12 || ! have_image docker.io/library/debian:12-slim; then
    if timeout 60 $sudo buildah pull --quiet docker.io/library/debian:12 > /dev/null 2>&1 &&
       timeout 60 $sudo buildah pull --quiet docker.io/library/debian:12-slim > /dev/null 2>&1; then
      echo "build-images: official debian:12 and debian:12-slim pulled"
    else
      debootstrap_base
    fi
  fi
fi

# --- the images -------------------------------------------------------------
for name in "${images[@]}"; do
  tag="$registry/$name:$version"
  echo "build-images: building $tag (docker/$name.Dockerfile)"
  start=$SECONDS
  log=$(mktemp /tmp/iosfarm-image-$name.XXXXXX.log)
  if [ "$engine" = docker ]; then
    build=(docker build -f "docker/$name.Dockerfile" -t "$tag" .)
  else
    # docker format: keeps HEALTHCHECK (the OCI format has no field for it).
    build=($sudo buildah bud --layers --format docker --pull=false -f "docker/$name.Dockerfile" \
      -t "$tag" .)
  fi
  if ! "${build[@]}" > "$log" 2>&1; then
    tail -30 "$log" >&2
    echo "build-images: $tag failed (full log: $log)" >&2
    exit 1
  fi
  echo "build-images: $tag built in $((SECONDS - start)) s (log: $log)"
done

echo "build-images: images:"
if [ "$engine" = docker ]; then
  for name in "${images[@]}"; do docker image ls "$registry/$name:$version"; done
else
  $sudo buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep -E "/($(IFS='|'; echo "${images[*]}")):$version " || true
fi
