#!/usr/bin/env bash
# Starts signerd and executord with compose and waits until both report healthy (gRPC health check).
# Builds the images and prepares keys/certificates first when they are missing.
# Env: PATCHGATE_FLEET_DIR (default /var/lib/patchgate-fleet), PATCHGATE_COMPOSE_PROJECT (default
# patchgate), PATCHGATE_SIGNER_PORT / PATCHGATE_EXECUTOR_PORT (127.0.0.1 ports, default 7700 / 7701).
# Usage: compose/up.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=compose/compose.sh
. "$here/compose.sh"
export PATCHGATE_FLEET_DIR=${PATCHGATE_FLEET_DIR:-/var/lib/patchgate-fleet}
project=${PATCHGATE_COMPOSE_PROJECT:-patchgate}
image=${PATCHGATE_IMAGE:-patchgate/patchgate:local}
docker image inspect "$image" >/dev/null 2>&1 || "$here/build-images.sh"
[ -e "$PATCHGATE_FLEET_DIR/certs/ca.crt" ] || "$here/prepare.sh" "$PATCHGATE_FLEET_DIR" >/dev/null
cmd=$(compose_cmd)
$cmd -f "$here/docker-compose.yml" -p "$project" up -d

health() { docker inspect -f '{{.State.Health.Status}}' "$1" 2>/dev/null || echo missing; }
deadline=$((SECONDS + ${PATCHGATE_UP_TIMEOUT:-120}))
for svc in signerd executord; do
  id=$($cmd -f "$here/docker-compose.yml" -p "$project" ps -q "$svc")
  until [ "$(health "$id")" = healthy ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "up: $svc is $(health "$id") after ${PATCHGATE_UP_TIMEOUT:-120}s; its log:" >&2
      docker logs --tail 30 "$id" >&2 || true
      exit 1
    fi
    sleep 1
  done
done
port() { $cmd -f "$here/docker-compose.yml" -p "$project" port "$1" "$2" | tail -n1; }
signer=$(port signerd 7700)
executor=$(port executord 7701)
certs=$PATCHGATE_FLEET_DIR/certs
echo "signer:   $signer"
echo "executor: $executor"
cat <<EOT
# patchgate check through these services (as root: the client key is uid 10001's):
#   patchgate check --repo REPO --base REV --patch FILE \\
#     --signer $signer --executor $executor \\
#     --operator-keyring $PATCHGATE_FLEET_DIR/public/operator-keyring.json \\
#     --signer-tls-ca $certs/ca.crt --signer-tls-cert $certs/client.crt --signer-tls-key $certs/client.key \\
#     --executor-tls-ca $certs/ca.crt --executor-tls-cert $certs/client.crt --executor-tls-key $certs/client.key
EOT
