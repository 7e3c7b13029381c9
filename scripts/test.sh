#!/usr/bin/env bash
# THE test command (README, and .ci/run calls exactly this). Unattended: no stdin needed, fine as root.
#   1. scripts/setup.sh                       .venv with patchgate and its dev tools
#   2. ruff check . / ruff format --check .   lint and formatting
#   3. mypy                                   --strict, packages and exclusions from pyproject.toml
#   4. pytest tests/unit                      no Docker, no sockets
#   5. scripts/docker.sh start                a Docker engine (stopped on exit if this run started it)
#   6. pytest tests/integration               real daemons over real sockets, real containers
# Every check runs even when an earlier one failed (so one run shows everything); setup and the
# Docker engine are preconditions and stop the run. "No tests collected" (pytest exit 5) is a
# failure. The last line is a one-line summary; the exit code is 0 only when every step passed.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
exec </dev/null

failed=()
passed=()

step() {  # step NAME CMD...: run, record the result, never abort
  local name=$1
  shift
  echo "==> $name: $*" >&2
  "$@"
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    passed+=("$name")
  elif [ "$rc" -eq 5 ] && [ "${1##*/}" = pytest ]; then
    echo "==> $name: no tests collected (pytest exit 5) - counted as a failure" >&2
    failed+=("$name(no tests)")
  else
    failed+=("$name(exit $rc)")
  fi
}

summary() {
  local status=PASS
  [ "${#failed[@]}" -eq 0 ] || status=FAIL
  echo "test.sh: $status - passed: ${passed[*]:-none}; failed: ${failed[*]:-none}"
  [ "$status" = PASS ]
}

if ! scripts/setup.sh; then
  failed+=("setup")
  summary
  exit 1
fi

step ruff .venv/bin/ruff check .
step format .venv/bin/ruff format --check .
step mypy .venv/bin/mypy
step unit .venv/bin/pytest tests/unit

docker_started=0
stop_docker() {  # once: before the summary, or from the trap when the run is cut short
  if [ "$docker_started" -eq 1 ]; then
    docker_started=0
    scripts/docker.sh stop || echo "test.sh: scripts/docker.sh stop failed" >&2
  fi
}
trap stop_docker EXIT

# Stop only an engine this run started: one that already answered (started by hand, by another
# run, or by an earlier docker.sh start whose pid file is still there) is left running. docker.sh
# writes a new pid into its pid file when, and only when, it starts an engine; a stale file of an
# engine that died does not make a run's own engine someone else's.
docker_pidfile=${PATCHGATE_DOCKER_STATE:-/tmp/patchgate-docker}/dockerd.pid
pid_before=$(cat "$docker_pidfile" 2>/dev/null || true)
if scripts/docker.sh start; then
  pid_after=$(cat "$docker_pidfile" 2>/dev/null || true)
  [ -n "$pid_after" ] && [ "$pid_after" != "$pid_before" ] && docker_started=1
  step integration .venv/bin/pytest tests/integration
else
  failed+=("docker-engine")
fi

# The engine is stopped before the summary, so that the summary is the last line printed (the
# trap stopped it after, and its messages came last).
stop_docker
summary
