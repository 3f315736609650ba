#!/usr/bin/env bash
# Makes sure Redis and NATS (with JetStream) answer, and exports REDIS_URL and NATS_URL; then
# PostgreSQL for the optional request log, exporting POSTGRES_URL and DATABASE_URL.
#
#   source scripts/dependencies.sh   # exports REDIS_URL / NATS_URL (/ POSTGRES_URL / DATABASE_URL) into your shell
#   bash scripts/dependencies.sh     # prints `export ...` lines you can eval
#
# For each of the two, in order:
#   1. REDIS_URL / NATS_URL when set and answering: used as they are.
#   2. Set to a loopback address that does not answer: a local server is started on that port
#      (so REDIS_URL=redis://127.0.0.1:6390 gets a Redis of its own on 6390).
#      Set to another host that does not answer: fall through to 3 with a warning.
#   3. Unset: the defaults 127.0.0.1:6379 / 127.0.0.1:4222 when they answer.
#   4. Otherwise a local `redis-server` / `nats-server -js` is started on the default port, with its
#      data, log and pid file under .run/ (installed first with apt-get when missing and we are
#      root; otherwise the script prints the command to run).
# PostgreSQL the same way (POSTGRES_URL, naming its maintenance database; default
# postgres://postgres@127.0.0.1:5432/postgres): one that answers is used, else a cluster of our own
# is made with Debian's initdb and pg_ctl (/usr/lib/postgresql/<version>/bin; the `postgresql`
# package) under .run/postgres/<port>, trust authentication on loopback only. The database
# `gateway` is created in it when missing, and DATABASE_URL names it unless set already. Unlike
# Redis and NATS it is optional: without it the gateway runs with no request log (a warning).
# The response cache's entries get a Redis of their own, bounded and evicting (gateway_cache_redis,
# which scripts/start.sh calls): CACHE_REDIS_URL the same way, default redis://127.0.0.1:6380, a
# server started here with --maxmemory 256mb --maxmemory-policy allkeys-lru and nothing on disk.
# Idempotent: a server this project started earlier is found by its pid file and reused.
# `bash scripts/stop.sh` stops only the servers started here, never ones that were found running.
# Sets DEPENDENCIES_STARTED to what this call started ("redis:6390 nats:4290"), for callers that
# want to stop them again (scripts/test.sh does).

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DEFAULT_REDIS_URL="redis://127.0.0.1:6379"
DEFAULT_NATS_URL="nats://127.0.0.1:4222"
DEPENDENCIES_STARTED=""

# host and port of a URL: "redis://user:pw@host:6380/0" -> "host 6380". First of a comma list.
_deps_host_port() {
  local url="${1%%,*}" default_port="$2" rest host port
  rest="${url#*://}"
  rest="${rest%%/*}"
  rest="${rest##*@}"
  if [[ "$rest" == \[*\]* ]]; then # [::1]:6379
    host="${rest%%]*}"; host="${host#[}"
    port="${rest##*]}"; port="${port#:}"
  elif [[ "$rest" == *:* ]]; then
    host="${rest%%:*}"; port="${rest##*:}"
  else
    host="$rest"; port=""
  fi
  printf '%s %s\n' "${host:-127.0.0.1}" "${port:-$default_port}"
}

_deps_is_loopback() { [[ "$1" == 127.* || "$1" == localhost || "$1" == ::1 ]]; }

# Does a Redis answer PING at this URL? Uses redis-cli when present (it understands passwords and
# TLS), otherwise speaks the protocol over bash's /dev/tcp.
_deps_redis_answers() {
  local url="$1" host port reply
  if command -v redis-cli >/dev/null 2>&1; then
    reply="$(timeout 3 redis-cli -u "$url" --no-auth-warning ping 2>/dev/null)" || true
    [[ "$reply" == PONG* ]] && return 0
  fi
  read -r host port < <(_deps_host_port "$url" 6379)
  timeout 3 bash -c '
    { exec 3<>"/dev/tcp/$1/$2"; } 2>/dev/null || exit 1
    printf "PING\r\n" >&3
    IFS= read -r line <&3 || exit 1
    [[ "$line" == +PONG* || "$line" == -NOAUTH* ]]' _ "$host" "$port" 2>/dev/null
}

# Does a NATS server with JetStream answer at this URL? Reads the INFO line the server sends first
# (it carries "jetstream":true when JetStream is on), then checks it answers PING with PONG.
_deps_nats_answers() {
  local url="$1" host port
  read -r host port < <(_deps_host_port "$url" 4222)
  timeout 3 bash -c '
    { exec 3<>"/dev/tcp/$1/$2"; } 2>/dev/null || exit 1
    IFS= read -r info <&3 || exit 1
    [[ "$info" == INFO* ]] || exit 1
    if [[ "$info" != *"\"jetstream\":true"* ]]; then
      echo "[gateway] NATS at $1:$2 answers but JetStream is off (start it with -js)" >&2
      exit 2
    fi
    # A server that requires auth would answer CONNECT {} with -ERR; INFO is enough then.
    [[ "$info" == *"\"auth_required\":true"* ]] && exit 0
    printf "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n" >&3
    IFS= read -r line <&3 || exit 1
    [[ "$line" == PONG* ]]' _ "$host" "$port"
}

# Path of a server binary, looking in sbin too (Debian puts nats-server in /usr/sbin).
_deps_binary() {
  local name="$1" dir
  if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
  for dir in /usr/sbin /usr/local/sbin /usr/bin /usr/local/bin; do
    [[ -x "$dir/$name" ]] && { echo "$dir/$name"; return 0; }
  done
  return 1
}

# Installs the Debian package of a missing server when we are root and have apt-get.
_deps_install() {
  local binary="$1" package="$2"
  _deps_binary "$binary" >/dev/null && return 0
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    gateway_log "$binary is missing; installing it: apt-get install -y $package"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y "$package" ||
      { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "$package"; }; } >&2 ||
      { gateway_fail "apt-get install -y $package failed"; return 1; }
    _deps_binary "$binary" >/dev/null && return 0
  fi
  gateway_fail "$binary is not installed. Install it, then run this again:"
  gateway_fail "  sudo apt-get update && sudo apt-get install -y $package"
  gateway_fail "or point ${3} at a running server."
  return 1
}

# Waits up to $3 seconds for $1 (a check function) to succeed on URL $2.
_deps_wait() {
  local check="$1" url="$2" budget="${3:-20}" i
  for ((i = 0; i < budget * 5; i++)); do
    "$check" "$url" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

# _deps_start_server KIND PORT DEFAULT_PORT CHECK VARIABLE URL: makes a KIND-server (redis, nats)
# answer on loopback PORT and sets _DEPS_URL to URL. Reuses ours from an earlier run (its pid file)
# or the system's own on the default port once its package is installed; otherwise starts one with
# _deps_launch_KIND, its data, log and pid file under .run/, and records it in DEPENDENCIES_STARTED.
_deps_start_server() {
  local kind="$1" port="$2" default_port="$3" check="$4" variable="$5" url="$6" dir log_file
  local pid_file="$RUN_DIR/pids/$kind-$port.pid"
  if gateway_pid_alive "$pid_file" "$kind-server" && _deps_wait "$check" "$url" 5; then
    _DEPS_URL="$url"; return 0
  fi
  _deps_install "$kind-server" "$kind-server" "$variable" || return 1
  # The package may have started the system's own server on the default port.
  if [[ "$port" == "$default_port" ]] && "$check" "$url" 2>/dev/null; then _DEPS_URL="$url"; return 0; fi
  dir="$RUN_DIR/$kind/$port"
  log_file="$RUN_DIR/logs/$kind-$port.log"
  mkdir -p "$dir" "$RUN_DIR/pids" "$RUN_DIR/logs"
  "_deps_launch_$kind" "$(_deps_binary "$kind-server")" "$port" "$dir" "$pid_file" "$log_file" ||
    { gateway_fail "$kind-server did not start; see $log_file"; return 1; }
  if ! _deps_wait "$check" "$url" 20; then
    gateway_fail "$kind-server on port $port does not answer; last lines of $log_file:"
    tail -n 20 "$log_file" >&2 2>/dev/null
    return 1
  fi
  DEPENDENCIES_STARTED+="$kind:$port "
  _DEPS_URL="$url"
}

# _deps_launch_redis BINARY PORT DIR PID_FILE LOG_FILE: starts redis-server, daemonized, without
# persistence, with the caller's _DEPS_REDIS_ARGS (an array, empty for the state Redis) after ours.
_deps_launch_redis() {
  local binary="$1" port="$2" dir="$3" pid_file="$4" log_file="$5"
  gateway_log "starting redis-server on 127.0.0.1:$port${_DEPS_REDIS_ARGS[*]:+ ${_DEPS_REDIS_ARGS[*]}} (log: ${log_file#"$GATEWAY_ROOT"/})"
  "$binary" --port "$port" --bind 127.0.0.1 --daemonize yes --pidfile "$pid_file" \
    --logfile "$log_file" --dir "$dir" --save "" --appendonly no "${_DEPS_REDIS_ARGS[@]}" >&2
}

# _deps_launch_nats BINARY PORT DIR PID_FILE LOG_FILE: starts nats-server with JetStream, detached.
# JetStream's storage is bounded as in the deployment (max_file_store, max_memory_store): the usage
# streams reserve their USAGE_STREAM_MAX_BYTES from it (1 GiB by default, 64-256 MiB in tests).
_deps_launch_nats() {
  local binary="$1" port="$2" dir="$3" pid_file="$4" log_file="$5"
  gateway_log "starting nats-server -js on 127.0.0.1:$port (log: ${log_file#"$GATEWAY_ROOT"/})"
  printf 'listen: 127.0.0.1:%s\njetstream {\n  store_dir: "%s"\n  max_file_store: 8GB\n  max_memory_store: 256MB\n}\n' "$port" "$dir" >"$dir.conf"
  # nats-server does not daemonize itself: a new session detaches it from our terminal, and it
  # writes its own pid file (-P).
  setsid nohup "$binary" -c "$dir.conf" -l "$log_file" -P "$pid_file" \
    </dev/null >/dev/null 2>&1 &
}

_deps_start_redis() { _deps_start_server redis "$1" 6379 _deps_redis_answers REDIS_URL "redis://127.0.0.1:$1"; }

_deps_start_nats() { _deps_start_server nats "$1" 4222 _deps_nats_answers NATS_URL "nats://127.0.0.1:$1"; }

# The cache's entries' Redis on PORT: bounded (256 MB) and evicting the least recently used entry,
# as the cache requires (losing an entry loses a hit, nothing else). The array is local, so only
# this launch sees it (bash's dynamic scope reaches _deps_launch_redis).
_deps_start_cache_redis() {
  local _DEPS_REDIS_ARGS=(--maxmemory 256mb --maxmemory-policy allkeys-lru)
  _deps_start_server redis "$1" 6380 _deps_redis_answers CACHE_REDIS_URL "redis://127.0.0.1:$1"
}

# resolve KIND CHECK START DEFAULT_URL DEFAULT_PORT CURRENT_URL -> sets _DEPS_URL to the URL to use.
# (A global rather than output: the start functions must run in this shell, not a $(...) subshell,
# so that DEPENDENCIES_STARTED survives.)
_deps_resolve() {
  local kind="$1" check="$2" start="$3" default_url="$4" default_port="$5" current="$6" host port
  if [[ -n "$current" ]]; then
    if "$check" "$current"; then _DEPS_URL="$current"; return 0; fi
    read -r host port < <(_deps_host_port "$current" "$default_port")
    if _deps_is_loopback "$host"; then
      gateway_log "$kind at $current does not answer; starting one there"
      "$start" "$port"
      return
    fi
    gateway_log "warning: $kind at $current does not answer; trying $default_url"
  fi
  if "$check" "$default_url"; then _DEPS_URL="$default_url"; return 0; fi
  "$start" "$default_port"
}

DEFAULT_POSTGRES_URL="postgres://postgres@127.0.0.1:5432/postgres"

# Does a PostgreSQL accept connections at this URL? pg_isready when present, else a TCP connect.
_deps_postgres_answers() {
  local url="$1" host port
  read -r host port < <(_deps_host_port "$url" 5432)
  if _deps_binary pg_isready >/dev/null || [[ -n "$(_deps_postgres_bin)" ]]; then
    "$(_deps_binary pg_isready || echo "$(_deps_postgres_bin)/pg_isready")" -q -h "$host" -p "$port" -t 3 >/dev/null 2>&1
    return
  fi
  timeout 3 bash -c '{ exec 3<>"/dev/tcp/$1/$2"; } 2>/dev/null' _ "$host" "$port"
}

# The bin folder of the newest PostgreSQL of Debian's packages (/usr/lib/postgresql/15/bin), or nothing.
_deps_postgres_bin() {
  local dir
  dir="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)"
  [[ -n "$dir" && -x "$dir/initdb" ]] && echo "$dir"
}

# Runs a PostgreSQL tool: as the `postgres` user when we are root (initdb and postgres refuse root).
_deps_as_postgres() {
  if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# _deps_start_postgres PORT: a cluster of our own on loopback PORT (reused from an earlier run by its pid file).
_deps_start_postgres() {
  local port="$1" bin dir log_file pid_file="$RUN_DIR/pids/postgres-$1.pid"
  local url="postgres://postgres@127.0.0.1:$port/postgres"
  if gateway_pid_alive "$pid_file" postgres && _deps_wait _deps_postgres_answers "$url" 5; then
    _DEPS_URL="$url"; return 0
  fi
  bin="$(_deps_postgres_bin)"
  if [[ -z "$bin" ]]; then
    _deps_install pg_ctlcluster postgresql POSTGRES_URL || return 1
    bin="$(_deps_postgres_bin)"
    # The package may have started the system's own cluster on the default port.
    if [[ "$port" == 5432 ]] && _deps_wait _deps_postgres_answers "$url" 5; then _DEPS_URL="$url"; return 0; fi
  fi
  [[ -n "$bin" ]] || { gateway_fail "no initdb under /usr/lib/postgresql/*/bin"; return 1; }
  dir="$RUN_DIR/postgres/$port"
  log_file="$RUN_DIR/logs/postgres-$port.log"
  mkdir -p "$dir" "$RUN_DIR/pids" "$RUN_DIR/logs"
  [[ "$(id -u)" == 0 ]] && chown -R postgres "$dir" && touch "$log_file" && chown postgres "$log_file"
  if [[ ! -f "$dir/PG_VERSION" ]]; then
    gateway_log "creating a PostgreSQL cluster in ${dir#"$GATEWAY_ROOT"/}"
    _deps_as_postgres "$bin/initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 >>"$log_file" 2>&1 ||
      { gateway_fail "initdb failed; see $log_file"; return 1; }
  fi
  gateway_log "starting PostgreSQL on 127.0.0.1:$port (log: ${log_file#"$GATEWAY_ROOT"/})"
  _deps_as_postgres "$bin/pg_ctl" -D "$dir" -l "$log_file" -w -t 30 \
    -o "-p $port -c listen_addresses=127.0.0.1 -k $dir" start >/dev/null ||
    { gateway_fail "PostgreSQL did not start; see $log_file"; return 1; }
  head -n 1 "$dir/postmaster.pid" >"$pid_file"
  DEPENDENCIES_STARTED+="postgres:$port "
  _DEPS_URL="$url"
}

# Makes sure PostgreSQL answers and the database `gateway` exists; exports POSTGRES_URL and
# DATABASE_URL. Returns non-zero (the caller warns and goes on without the request log) otherwise.
_deps_postgres() {
  local server host port
  _DEPS_URL=""
  _deps_resolve PostgreSQL _deps_postgres_answers _deps_start_postgres "$DEFAULT_POSTGRES_URL" 5432 "${POSTGRES_URL:-}" || return 1
  server="$_DEPS_URL"
  export POSTGRES_URL="$server"
  if [[ -z "${DATABASE_URL:-}" ]]; then
    read -r host port < <(_deps_host_port "$server" 5432)
    if ! psql "$server" -tAc "SELECT 1 FROM pg_database WHERE datname = 'gateway'" 2>/dev/null | grep -q 1; then
      psql "$server" -qc 'CREATE DATABASE gateway' >/dev/null 2>&1 || { gateway_fail "could not create the database gateway at $server"; return 1; }
    fi
    export DATABASE_URL="${server%/*}/gateway"
  fi
}

DEFAULT_CACHE_REDIS_URL="redis://127.0.0.1:6380"

# Makes sure the cache's entries' Redis answers (CACHE_REDIS_URL, else the default, else one started
# here) and exports CACHE_REDIS_URL; adds what it started to DEPENDENCIES_STARTED. A Redis found
# running without a maxmemory or with noeviction is used with a warning: the cache reports it
# (gateway_cache_redis_bounded) and its stores fail once it is full.
gateway_cache_redis() {
  local bounds
  _DEPS_URL=""
  _deps_resolve "the cache's Redis" _deps_redis_answers _deps_start_cache_redis "$DEFAULT_CACHE_REDIS_URL" 6380 "${CACHE_REDIS_URL:-}" || return 1
  export CACHE_REDIS_URL="$_DEPS_URL"
  DEPENDENCIES_STARTED="${DEPENDENCIES_STARTED% }"
  export DEPENDENCIES_STARTED
  if command -v redis-cli >/dev/null 2>&1; then
    bounds="$(timeout 3 redis-cli -u "$CACHE_REDIS_URL" --no-auth-warning config get 'maxmemory*' 2>/dev/null | tr '\n' ' ')" || true
    if [[ "$bounds" == *"maxmemory 0 "* || "$bounds" == *noeviction* ]]; then
      gateway_log "warning: the cache's Redis at $CACHE_REDIS_URL is not bounded ($bounds): set maxmemory and maxmemory-policy allkeys-lru"
    fi
  fi
  # Its URL without credentials: a password in CACHE_REDIS_URL never reaches a log.
  local shown="$CACHE_REDIS_URL"
  [[ "$shown" == *@* ]] && shown="${shown%%://*}://${shown#*://*@}"
  gateway_log "the cache's Redis: $shown"
}

# Runs the whole procedure; returns non-zero (and says why) when either cannot be had.
gateway_dependencies() {
  local redis_url
  mkdir -p "$RUN_DIR"
  DEPENDENCIES_STARTED=""
  _DEPS_URL=""
  _deps_resolve Redis _deps_redis_answers _deps_start_redis "$DEFAULT_REDIS_URL" 6379 "${REDIS_URL:-}" || return 1
  redis_url="$_DEPS_URL"
  _DEPS_URL=""
  _deps_resolve NATS _deps_nats_answers _deps_start_nats "$DEFAULT_NATS_URL" 4222 "${NATS_URL:-}" || return 1
  export REDIS_URL="$redis_url" NATS_URL="$_DEPS_URL"
  # The request log's PostgreSQL is optional: the gateway runs without it.
  if [[ "${GATEWAY_REQUEST_LOG:-on}" != off ]] && ! _deps_postgres; then
    gateway_log "warning: no PostgreSQL: the gateway runs without the request log (set POSTGRES_URL or DATABASE_URL, or install postgresql)"
    unset DATABASE_URL POSTGRES_URL
  fi
  DEPENDENCIES_STARTED="${DEPENDENCIES_STARTED% }"
  export DEPENDENCIES_STARTED
  # The database's URL without its credentials (a password in DATABASE_URL never reaches a log).
  local database="none"
  [[ -n "${DATABASE_URL:-}" ]] && database="${DATABASE_URL%%://*}://${DATABASE_URL#*://*@}"
  [[ -n "${DATABASE_URL:-}" && "$DATABASE_URL" != *@* ]] && database="$DATABASE_URL"
  gateway_log "Redis: $REDIS_URL   NATS (JetStream): $NATS_URL   PostgreSQL: $database${DEPENDENCIES_STARTED:+   (started now: $DEPENDENCIES_STARTED)}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  # Run as a program: fail loudly, and print the variables for `eval "$(bash scripts/dependencies.sh)"`.
  set -euo pipefail
  gateway_dependencies
  printf 'export REDIS_URL=%q NATS_URL=%q\n' "$REDIS_URL" "$NATS_URL"
  if [[ -n "${DATABASE_URL:-}" ]]; then printf 'export POSTGRES_URL=%q DATABASE_URL=%q\n' "$POSTGRES_URL" "$DATABASE_URL"; fi
else
  # Sourced: leave the caller's shell options alone and hand back the status.
  gateway_dependencies
fi
