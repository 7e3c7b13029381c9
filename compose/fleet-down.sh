#!/usr/bin/env bash
# Removes the swarm stack (services, secrets, overlay network), the signer's volume, any sandbox left
# by a killed replica, and the replicas' state dirs; leaves the swarm only if fleet-up.sh created it.
# Keys, certificates and the shared blob store under PATCHGATE_FLEET_DIR are kept.
# Usage: compose/fleet-down.sh
set -euo pipefail
dir=${PATCHGATE_FLEET_DIR:-/var/lib/patchgate-fleet}
stack=${PATCHGATE_STACK:-patchgate}
inst=fleet-${PATCHGATE_FLEET_INSTANCE:-default}-
failed=0
if docker stack ls --format '{{.Name}}' 2>/dev/null | grep -qx "$stack"; then
  # may report "network in use" while tasks are still stopping; the loop below finishes the job
  docker stack rm "$stack" >&2 || true
fi
deadline=$((SECONDS + 90))
while [ -n "$(docker ps -aq --filter "label=com.docker.stack.namespace=$stack")" ] \
   || docker network inspect "${stack}_fleet" >/dev/null 2>&1; do
  if [ -z "$(docker ps -aq --filter "label=com.docker.stack.namespace=$stack")" ]; then
    docker network rm "${stack}_fleet" >/dev/null 2>&1 || true
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "fleet-down: stack $stack still has containers or its network after 90s" >&2
    failed=1
    break
  fi
  sleep 1
done
docker volume rm "${stack}_signer-state" >/dev/null 2>&1 || true
# sandboxes of a replica that was killed and not restarted (a restarted one sweeps its own)
docker ps -a --filter label=patchgate.executord --format '{{.ID}} {{.Label "patchgate.executord"}}' \
  | while read -r id label; do
      case "$label" in "$inst"*) docker rm -f "$id" >/dev/null;; esac
    done
rm -rf "$dir"/executor/state-[0-9]*
if [ -e "$dir/swarm-initialized-by-patchgate" ]; then
  docker swarm leave --force >/dev/null
  docker network rm docker_gwbridge >/dev/null 2>&1 || true  # made by swarm init, not removed by leave
  rm -f "$dir/swarm-initialized-by-patchgate"
  echo "fleet-down: left the swarm fleet-up.sh had initialized" >&2
fi
exit "$failed"
