#!/usr/bin/env bash
# Stops what scripts/start.sh and scripts/dependencies.sh started: the services (the request log's
# and the batch service's too), then the Redis (the cache's too), NATS and PostgreSQL servers this project started itself (their pid files
# are under .run/pids/). One that was already running when we looked is never touched: it has no
# pid file here.
#
#   bash scripts/stop.sh              # services and the dependencies we started
#   bash scripts/stop.sh --services   # services only
#   bash scripts/stop.sh --dependencies redis:6390 nats:4290 postgres:5499   # just these dependencies
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SERVICES=(edge mcp guard cache batch request-log metering executor router auth) # the edge first: it stops taking requests

# stop_ours PID_FILE PATTERN WHAT GRACE: stops the process of PID_FILE, given GRACE seconds after
# SIGTERM, while it is still PATTERN's; a pid file whose process is gone is removed.
stop_ours() {
  local pid_file="$1" pattern="$2" what="$3" grace="$4"
  [[ -f "$pid_file" ]] || return 0
  if gateway_pid_alive "$pid_file" "$pattern"; then
    gateway_log "stopping $what (pid $(cat "$pid_file"))"
    gateway_stop_pid "$pid_file" "$pattern" "$grace"
  else
    rm -f "$pid_file"
  fi
}

# Services drain in-flight streams on SIGTERM; give them a little longer than their budget.
stop_service() { stop_ours "$RUN_DIR/pids/$1.pid" "services/$1/dist/main.js" "$1" 30; }

# The edge first, so that it stops taking requests while the others still answer; then the rest
# together (each drains on its own).
stop_services() {
  local service
  stop_service edge
  for service in "${SERVICES[@]:1}"; do stop_service "$service" & done
  wait
}

# stop_dependency redis:6390 | nats:4290 | postgres:5499 (SIGTERM: PostgreSQL's smart shutdown,
# the services that used it being stopped already)
stop_dependency() {
  local kind="${1%%:*}" port="${1##*:}"
  if [[ "$kind" == postgres ]]; then
    stop_ours "$RUN_DIR/pids/$kind-$port.pid" postgres "PostgreSQL on port $port" 30
    return
  fi
  stop_ours "$RUN_DIR/pids/$kind-$port.pid" "$kind-server" "$kind-server on port $port" 10
}

stop_all_dependencies() {
  local pid_file name
  shopt -s nullglob
  for pid_file in "$RUN_DIR"/pids/redis-*.pid "$RUN_DIR"/pids/nats-*.pid "$RUN_DIR"/pids/postgres-*.pid; do
    name="$(basename "$pid_file" .pid)" # redis-6390
    stop_dependency "${name%%-*}:${name##*-}"
  done
}

case "${1:-}" in
  --services) stop_services ;;
  --dependencies) shift; for dependency in "$@"; do stop_dependency "$dependency"; done ;;
  "") stop_services; stop_all_dependencies ;;
  *) gateway_fail "usage: bash scripts/stop.sh [--services | --dependencies redis:PORT nats:PORT postgres:PORT ...]"; exit 2 ;;
esac
