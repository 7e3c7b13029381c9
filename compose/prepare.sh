#!/usr/bin/env bash
# Prepares the files the compose services and the swarm stack read, under one host directory
# (default /var/lib/patchgate-fleet, or $PATCHGATE_FLEET_DIR, or the first argument):
#   signer/operator.key        operator private key (uid 10001, 0600) - only signerd mounts it (secret)
#   public/operator-keyring.json  operator PUBLIC keyring (0644) - executord and clients
#   certs/ca.crt               test CA certificate (0644); the CA key goes to ca/ca.key (root, 0600,
#                              mounted nowhere)
#   certs/{signer,client}.key  TLS keys read by uid 10001 inside containers (uid 10001, 0600)
#   certs/executor.key         read by executord, which runs as root (root, 0600)
#   executor/                  executord's state and blob store; mounted at this SAME path, because the
#                              executor creates sandbox containers on the host engine (siblings) and
#                              passes host paths as bind-mount sources
# Certificates carry the DNS names signerd, executord, tasks.executord and localhost.
# Keys and certificates are made inside the patchgate image (patchgate-signerd keygen,
# scripts/make_certs.py), so the host needs only Docker. Existing files are kept; --force remakes them.
# Must run as root (files are chowned to the containers' uid 10001).
# Usage: compose/prepare.sh [--force] [DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
dir=${1:-${PATCHGATE_FLEET_DIR:-/var/lib/patchgate-fleet}}
image=${PATCHGATE_IMAGE:-patchgate/patchgate:local}
case "$dir" in /*) ;; *) echo "prepare: DIR must be an absolute path (it is mounted at the same path)" >&2; exit 64;; esac
[ "$(id -u)" = 0 ] || { echo "prepare: run as root (files are chowned to uid 10001)" >&2; exit 1; }
docker image inspect "$image" >/dev/null 2>&1 \
  || { echo "prepare: image $image missing; run compose/build-images.sh first" >&2; exit 1; }

in_image() {  # run a command in the image as root, with $dir at /fleet and no network
  docker run --rm --network none --user 0:0 -v "$dir:/fleet" -v "$here/scripts:/scripts:ro" \
    --entrypoint "" "$image" "$@"
}

if [ "$force" = 1 ]; then rm -rf "$dir/signer" "$dir/public" "$dir/certs" "$dir/ca"; fi
install -d -m 0755 "$dir" "$dir/public" "$dir/certs" "$dir/executor" "$dir/executor/store"
install -d -m 0700 -o 10001 -g 10001 "$dir/signer"
install -d -m 0700 "$dir/ca"

if [ ! -e "$dir/signer/operator.key" ]; then
  keyid=$(in_image patchgate-signerd keygen --out /fleet/signer/operator.key)
  echo "prepare: operator key $keyid" >&2
  # the public half lives in public/ only
  mv "$dir/signer/operator.key.pub" "$dir/public/operator-keyring.json"
fi
[ -e "$dir/public/operator-keyring.json" ] \
  || { echo "prepare: $dir/public/operator-keyring.json missing; rerun with --force" >&2; exit 1; }
chown 10001:10001 "$dir/signer/operator.key"
chmod 0600 "$dir/signer/operator.key"

if [ ! -e "$dir/certs/ca.crt" ]; then
  in_image python /scripts/make_certs.py /fleet/certs \
    --dns signerd --dns executord --dns tasks.executord --dns localhost >/dev/null
  mv "$dir/certs/ca.key" "$dir/ca/ca.key"
  echo "prepare: test CA and signer/executor/client certificates in $dir/certs" >&2
fi
chmod 0644 "$dir"/certs/*.crt "$dir/public/operator-keyring.json"
chown 10001:10001 "$dir/certs/signer.key" "$dir/certs/client.key"
chown 0:0 "$dir/certs/executor.key" "$dir/ca/ca.key"
chmod 0600 "$dir"/certs/*.key "$dir/ca/ca.key"
echo "$dir"
