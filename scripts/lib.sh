# shellcheck shell=bash
# Helpers shared by the scripts in this folder. Sourced, never run: it defines functions and
# GATEWAY_ROOT / RUN_DIR, and changes no shell option of the caller.

GATEWAY_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Everything a local run leaves behind (logs, pid files, dependency data, the bootstrap key).
# Git-ignored.
RUN_DIR="$GATEWAY_ROOT/.run"

gateway_log() { printf '[gateway %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
gateway_fail() { printf '[gateway] error: %s\n' "$*" >&2; }

# Is the process of this pid file alive and running a command line containing $2?
# The check on the command line keeps a recycled pid from being mistaken for ours.
gateway_pid_alive() {
  local pid_file="$1" expected="$2" pid
  [[ -f "$pid_file" ]] || return 1
  pid="$(tr -dc '0-9' <"$pid_file")"
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$expected"
}

# Sends SIGTERM to the process of a pid file, waits up to $3 seconds (default 15), then SIGKILL.
# Removes the pid file. Does nothing unless the process still runs $2 (see gateway_pid_alive).
gateway_stop_pid() {
  local pid_file="$1" expected="$2" budget="${3:-15}" pid waited=0
  if ! gateway_pid_alive "$pid_file" "$expected"; then
    rm -f "$pid_file"
    return 0
  fi
  pid="$(tr -dc '0-9' <"$pid_file")"
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null && ((waited < budget * 10)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    gateway_log "pid $pid ($expected) did not stop within ${budget}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file"
}

# Makes sure pnpm is on PATH. Corepack is not used: it cannot fetch pnpm on every machine we run on.
gateway_ensure_pnpm() {
  if command -v pnpm >/dev/null 2>&1; then return 0; fi
  if ! command -v npm >/dev/null 2>&1; then
    gateway_fail "neither pnpm nor npm is installed; install Node.js 20 (which brings npm) first"
    return 1
  fi
  gateway_log "pnpm is missing; installing it: npm install -g pnpm@10"
  npm install -g pnpm@10 >&2 || {
    gateway_fail "could not install pnpm; run: npm install -g pnpm@10"
    return 1
  }
  hash -r
  command -v pnpm >/dev/null 2>&1 || {
    gateway_fail "pnpm was installed but is not on PATH (npm prefix: $(npm prefix -g)/bin)"
    return 1
  }
}

# pnpm install (frozen when a lockfile exists) and pnpm build, from the repository root.
gateway_install_and_build() {
  (
    cd "$GATEWAY_ROOT" || exit 1
    if [[ -f pnpm-lock.yaml ]]; then
      gateway_log "pnpm install --frozen-lockfile"
      pnpm install --frozen-lockfile >&2 || exit 1
    else
      gateway_log "pnpm install (no lockfile yet)"
      pnpm install >&2 || exit 1
    fi
    gateway_log "pnpm build"
    pnpm build >&2 || exit 1
  )
}
