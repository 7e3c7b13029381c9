#!/usr/bin/env bash
# Runs `patchgate check` in a client container attached to the fleet's overlay network: the signer at
# signerd:7700 and the executor replicas at dns:///tasks.executord:7701 (gRPC round robin), both over
# mTLS with the client certificate made by prepare.sh. The client runs as uid 10001 (the owner of the
# client key); OUT is created if needed and handed to uid 10001 so the client can write the ledgers.
# Env: PATCHGATE_FLEET_DIR, PATCHGATE_STACK (default patchgate), PATCHGATE_IMAGE.
# Usage: compose/fleet-check.sh --repo DIR --patch FILE --out DIR [--base REV] [other check flags]
set -euo pipefail
dir=${PATCHGATE_FLEET_DIR:-/var/lib/patchgate-fleet}
stack=${PATCHGATE_STACK:-patchgate}
image=${PATCHGATE_IMAGE:-patchgate/patchgate:local}
repo="" patch="" out="" base=HEAD rest=()
while [ $# -gt 0 ]; do
  case "$1" in
    --repo) repo=$(realpath "$2"); shift 2;;
    --patch) patch=$(realpath "$2"); shift 2;;
    --out) out=$2; shift 2;;
    --base) base=$2; shift 2;;
    *) rest+=("$1"); shift;;
  esac
done
[ -n "$repo" ] && [ -n "$patch" ] && [ -n "$out" ] \
  || { echo "usage: compose/fleet-check.sh --repo DIR --patch FILE --out DIR [check flags]" >&2; exit 64; }
mkdir -p "$out"
out=$(realpath "$out")
chown 10001:10001 "$out"
certs=$dir/certs
# git refuses a repository owned by another uid unless it is a safe.directory, and patchgate's git
# calls ignore git's global configuration (a repository's or a user's git setup never steers them):
# the client container reads its own copy of the repository, owned by the container's user
exec docker run --rm --network "${stack}_fleet" \
  --label "patchgate.fleet-client=$stack" \
  ${PATCHGATE_MUTANTS:+-e "PATCHGATE_MUTANTS=$PATCHGATE_MUTANTS"} \
  -v "$repo:/work/repo:ro" -v "$patch:/work/patch.diff:ro" -v "$out:/work/out" \
  -v "$dir/public/operator-keyring.json:/etc/patchgate/operator-keyring.json:ro" \
  -v "$certs/ca.crt:/etc/patchgate/tls/ca.crt:ro" \
  -v "$certs/client.crt:/etc/patchgate/tls/client.crt:ro" \
  -v "$certs/client.key:/etc/patchgate/tls/client.key:ro" \
  "$image" sh -c 'cp -R /work/repo /tmp/repo && exec "$@"' sh \
  patchgate check \
  --repo /tmp/repo --base "$base" --patch /work/patch.diff --out /work/out \
  --signer signerd:7700 --executor dns:///tasks.executord:7701 \
  --operator-keyring /etc/patchgate/operator-keyring.json \
  --signer-tls-ca /etc/patchgate/tls/ca.crt --signer-tls-cert /etc/patchgate/tls/client.crt \
  --signer-tls-key /etc/patchgate/tls/client.key \
  --executor-tls-ca /etc/patchgate/tls/ca.crt --executor-tls-cert /etc/patchgate/tls/client.crt \
  --executor-tls-key /etc/patchgate/tls/client.key \
  "${rest[@]}"
