#!/usr/bin/env bash
# Deploys the swarm stack (compose/stack.yml): signerd + PATCHGATE_EXECUTOR_REPLICAS executord replicas
# on the attachable overlay network <stack>_fleet, and waits until every task is running and healthy.
# Runs `docker swarm init` when this engine is not in a swarm yet (and records that in
# $PATCHGATE_FLEET_DIR/swarm-initialized-by-patchgate, so fleet-down.sh leaves only a swarm it made).
# Builds the images and prepares keys/certificates when they are missing. Images are local only:
# the stack is deployed with --resolve-image never (one node, or the image loaded on every node).
# Env: PATCHGATE_FLEET_DIR (default /var/lib/patchgate-fleet), PATCHGATE_STACK (default patchgate),
# PATCHGATE_EXECUTOR_REPLICAS (default 2).
# Usage: compose/fleet-up.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PATCHGATE_FLEET_DIR=${PATCHGATE_FLEET_DIR:-/var/lib/patchgate-fleet}
export PATCHGATE_EXECUTOR_REPLICAS=${PATCHGATE_EXECUTOR_REPLICAS:-2}
stack=${PATCHGATE_STACK:-patchgate}
image=${PATCHGATE_IMAGE:-patchgate/patchgate:local}
docker image inspect "$image" >/dev/null 2>&1 || "$here/build-images.sh"
[ -e "$PATCHGATE_FLEET_DIR/certs/ca.crt" ] || "$here/prepare.sh" "$PATCHGATE_FLEET_DIR" >/dev/null

if [ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != active ]; then
  addr=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for(i=1;i<NF;i++) if($i=="src"){print $(i+1); exit}}' || true)
  docker swarm init ${addr:+--advertise-addr "$addr"} >/dev/null
  touch "$PATCHGATE_FLEET_DIR/swarm-initialized-by-patchgate"
  echo "fleet-up: swarm initialized on this engine" >&2
fi
docker stack deploy --resolve-image never -c "$here/stack.yml" "$stack" >&2

want=$((PATCHGATE_EXECUTOR_REPLICAS + 1))
deadline=$((SECONDS + ${PATCHGATE_UP_TIMEOUT:-180}))
healthy() {
  docker ps -q --filter "label=com.docker.stack.namespace=$stack" --filter health=healthy | wc -l
}
until [ "$(healthy)" -ge "$want" ]; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "fleet-up: $(healthy)/$want tasks healthy after ${PATCHGATE_UP_TIMEOUT:-180}s" >&2
    docker stack ps --no-trunc "$stack" >&2 || true
    exit 1
  fi
  sleep 1
done
echo "network:  ${stack}_fleet"
echo "signer:   signerd:7700"
echo "executor: dns:///tasks.executord:7701  ($PATCHGATE_EXECUTOR_REPLICAS replicas)"
echo "# run a check: compose/fleet-check.sh --repo REPO --base REV --patch FILE --out OUT [check flags]"
