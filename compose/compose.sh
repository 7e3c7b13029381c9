#!/usr/bin/env bash
# Runs the compose CLI that exists: `docker compose` (v2 plugin) if present, else `docker-compose`,
# installing Debian's docker-compose (noninteractive) when neither is there. Sourced by up.sh/down.sh;
# run directly it passes its arguments through: compose/compose.sh ps
set -euo pipefail

compose_cmd() {
  if docker compose version >/dev/null 2>&1; then
    echo "docker compose"
  else
    if ! command -v docker-compose >/dev/null; then
      echo "compose: installing docker-compose" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null </dev/null
    fi
    echo "docker-compose"
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  here=$(cd "$(dirname "$0")" && pwd)
  # shellcheck disable=SC2046
  exec $(compose_cmd) -f "$here/docker-compose.yml" -p "${PATCHGATE_COMPOSE_PROJECT:-patchgate}" "$@"
fi
