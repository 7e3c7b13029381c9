#!/usr/bin/env bash
# Stops and removes the compose services, their network and the signer's named volume (audit log).
# Keys, certificates and the executor's blob store under PATCHGATE_FLEET_DIR are kept.
# Usage: compose/down.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=compose/compose.sh
. "$here/compose.sh"
export PATCHGATE_FLEET_DIR=${PATCHGATE_FLEET_DIR:-/var/lib/patchgate-fleet}
$(compose_cmd) -f "$here/docker-compose.yml" -p "${PATCHGATE_COMPOSE_PROJECT:-patchgate}" down -v --remove-orphans
