#!/usr/bin/env bash
# Ensure a Docker engine for the integration tests, and stop only what this script started.
#   scripts/docker.sh start    if /var/run/docker.sock answers, do nothing (and record that);
#                              else install Debian's docker.io when dockerd is absent, start dockerd
#                              in the background (pid file + log under the state dir), wait for it.
#   scripts/docker.sh stop     stop the dockerd this script started (by its pid), wait for it to exit.
#   scripts/docker.sh status   say whether the engine answers and who started it.
# State dir: $PATCHGATE_DOCKER_STATE (default /tmp/patchgate-docker). Runs unattended (CI, root, no stdin).
set -euo pipefail
state=${PATCHGATE_DOCKER_STATE:-/tmp/patchgate-docker}
sock=/var/run/docker.sock
pidfile=$state/dockerd.pid
logfile=$state/dockerd.log
wait_s=${PATCHGATE_DOCKER_WAIT:-60}

answers() { docker -H "unix://$sock" version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  curl -fsS --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1; }

start() {
  mkdir -p "$state"
  if answers; then
    [ -f "$pidfile" ] || echo "external" > "$state/owner"
    echo "docker.sh: engine already answers on $sock; not starting one" >&2
    return 0
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    echo "docker.sh: dockerd absent; installing docker.io" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update </dev/null
    apt-get install -y --no-install-recommends docker.io </dev/null
  fi
  echo "docker.sh: starting dockerd (log $logfile)" >&2
  nohup dockerd --pidfile "$state/dockerd.own.pid" -H "unix://$sock" >"$logfile" 2>&1 </dev/null &
  echo $! > "$pidfile"
  echo "script" > "$state/owner"
  for _ in $(seq 1 "$wait_s"); do
    if answers; then echo "docker.sh: engine up" >&2; return 0; fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "docker.sh: dockerd exited; see $logfile" >&2; tail -20 "$logfile" >&2; rm -f "$pidfile"; return 1
    fi
    sleep 1
  done
  echo "docker.sh: engine did not answer within ${wait_s}s; see $logfile" >&2
  return 1
}

stop() {
  if [ ! -f "$pidfile" ]; then
    echo "docker.sh: no dockerd started by this script; nothing to stop" >&2
    return 0
  fi
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  fi
  rm -f "$pidfile" "$state/owner"
  echo "docker.sh: stopped dockerd $pid" >&2
}

status() {
  if answers; then echo "engine: up ($sock)"; else echo "engine: down"; fi
  if [ -f "$pidfile" ]; then echo "started by docker.sh: pid $(cat "$pidfile")"; else echo "started by docker.sh: no"; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 64 ;;
esac
