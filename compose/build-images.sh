#!/usr/bin/env bash
# Builds the images of the compose and fleet lanes with no registry at all:
#   patchgate/base:bookworm   Debian bookworm (debootstrap --variant=minbase) with python3 and git (the
#                             client in a container runs `git archive`/`git apply`), via `docker import`
#   patchgate/patchgate:local FROM the base: the project wheel in /opt/patchgate, plus pytest for sandboxes
# A user with a registry can skip the base and build compose/Dockerfile with
#   --build-arg BASE=python:3.11-slim   (see README, "Fleet").
# Usage: compose/build-images.sh [--rebuild]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
rebuild=0
[ "${1:-}" = "--rebuild" ] && rebuild=1
base=${PATCHGATE_BASE_IMAGE:-patchgate/base:bookworm}
image=${PATCHGATE_IMAGE:-patchgate/patchgate:local}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

mirror() {
  # The machine's own Debian mirror, as apt is configured (no host is named in this repository).
  if [ -n "${PATCHGATE_DEBIAN_MIRROR:-}" ]; then echo "$PATCHGATE_DEBIAN_MIRROR"; return; fi
  local m
  m=$(grep -h '^URIs:' /etc/apt/sources.list.d/debian.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)
  [ -n "$m" ] || m=$(grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | head -n1 || true)
  [ -n "$m" ] || { echo "build-images: no Debian mirror configured; set PATCHGATE_DEBIAN_MIRROR" >&2; exit 1; }
  echo "$m"
}

# A base imported before git was added to it is rebuilt (the fleet's client container needs git).
base_ok() { have_image "$1" && docker run --rm --network none "$1" sh -c 'command -v git' >/dev/null 2>&1; }

if [ "$rebuild" = 1 ] || ! base_ok "$base"; then
  command -v debootstrap >/dev/null || {
    echo "build-images: installing debootstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null </dev/null
  }
  root=$(mktemp -d /tmp/patchgate-rootfs.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  echo "build-images: debootstrap bookworm into $root (about a minute)" >&2
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,git bookworm "$root" "$(mirror)" >/dev/null
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import -c 'CMD ["/bin/bash"]' - "$base" >/dev/null
  rm -rf "$root"; trap - EXIT
  echo "build-images: $base imported" >&2
fi

# Wheels are built on the host with the host's own package-index settings (proxies, CA bundles), so the
# image build itself needs no network at all.
echo "build-images: building the project wheel and its dependencies' wheels" >&2
rm -rf build/wheels
log=$(mktemp /tmp/patchgate-wheels.XXXXXX.log)
# The dependencies are the runtime lock's exact, hash-checked versions (the ones the tests ran with),
# and the lock goes into the image beside them so the image installs exactly those.
py=${PYTHON:-$here/.venv/bin/python}
{ "$py" -m pip wheel -q --require-hashes -w build/wheels -r requirements/runtime.txt \
  && "$py" -m pip wheel -q --no-deps --no-build-isolation -w build/wheels . \
  && cp requirements/runtime.txt build/wheels/runtime.txt; } >"$log" 2>&1 \
  || { cat "$log" >&2; rm -f "$log"; echo "build-images: pip wheel failed" >&2; exit 1; }
rm -f "$log"
old=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
echo "build-images: docker build $image" >&2
# --network none: nothing in the build needs a network (and the default bridge may be absent)
docker build -q --network none --build-arg BASE="$base" -f compose/Dockerfile -t "$image" . >/dev/null 2>"$here/build/docker-build.log" \
  || { cat "$here/build/docker-build.log" >&2; echo "build-images: docker build failed" >&2; exit 1; }
# the previous build is now untagged; drop it unless a container still uses it
new=$(docker image inspect -f '{{.Id}}' "$image")
if [ -n "$old" ] && [ "$old" != "$new" ]; then docker rmi "$old" >/dev/null 2>&1 || true; fi
echo "build-images: $image ready" >&2
