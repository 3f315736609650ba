#!/usr/bin/env bash
# Runs the whole gateway on this machine: installs, builds, makes sure Redis, NATS and PostgreSQL
# answer (and a second Redis, bounded and evicting, for the cache's entries: CACHE_REDIS_URL, by
# default 127.0.0.1:6380), (re)starts the services in the background and waits until the edge is ready. The request
# log's service starts when PostgreSQL could be had (DATABASE_URL); GATEWAY_REQUEST_LOG=off skips it.
# So does the batch service (/v1/files, /v1/batches: its files and batches in the same PostgreSQL,
# schema batch), with a generated .run/batch-secrets-key; GATEWAY_BATCH=off skips it.
# Needs only Debian (or similar) and Node.js 20; installs pnpm, Redis, NATS and PostgreSQL when missing.
#
#   bash scripts/start.sh
#   bash scripts/start.sh --no-build     # skip pnpm install / pnpm build
#
# Configuration comes from the environment, then from .env at the root (see .env.example).
# Logs: .run/logs/<service>.log   pids: .run/pids/<service>.pid   stop: bash scripts/stop.sh
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$GATEWAY_ROOT"

BUILD=1
[[ "${1:-}" == --no-build ]] && BUILD=0

# .env fills in what the environment does not set (the environment wins); empty values are skipped
# so that a copied .env.example leaves every default alone.
if [[ -f .env ]]; then
  while IFS= read -r line || [[ -n "$line" ]]; do
    [[ "$line" =~ ^[[:space:]]*([A-Z_][A-Z0-9_]*)=(.*)$ ]] || continue
    name="${BASH_REMATCH[1]}" value="${BASH_REMATCH[2]}"
    value="${value%\"}"; value="${value#\"}"; value="${value%\'}"; value="${value#\'}"
    if [[ -n "$value" && -z "${!name+set}" ]]; then export "$name=$value"; fi
  done <.env
fi

SERVICES=(auth router executor metering mcp guard cache edge) # the edge last: it waits for the others anyway
EDGE_PORT="${EDGE_PORT:-8080}"
READY_TIMEOUT_SECONDS="${READY_TIMEOUT_SECONDS:-60}"

if ((BUILD)); then
  gateway_ensure_pnpm
  gateway_install_and_build
fi

# shellcheck source=scripts/dependencies.sh
source scripts/dependencies.sh || exit 1
# The cache's entries in a Redis of their own (never REDIS_URL's, which must not evict).
gateway_cache_redis || exit 1

# The request log, when PostgreSQL is there: its service before the edge, which then searches it.
if [[ -n "${DATABASE_URL:-}" && "${GATEWAY_REQUEST_LOG:-on}" != off ]]; then
  SERVICES=(auth router executor metering mcp guard cache request-log edge)
  export REQUEST_LOG_SERVICE_ADDR="${REQUEST_LOG_SERVICE_ADDR:-127.0.0.1:50055}"
fi
# The batch service, when PostgreSQL is there: before the edge, which then serves /v1/files and
# /v1/batches through it; its lanes send each line to this edge.
if [[ -n "${DATABASE_URL:-}" && "${GATEWAY_BATCH:-on}" != off ]]; then
  SERVICES=("${SERVICES[@]:0:${#SERVICES[@]}-1}" batch edge)
  export BATCH_SERVICE_ADDR="${BATCH_SERVICE_ADDR:-127.0.0.1:50059}"
fi

for service in "${SERVICES[@]}"; do
  if [[ ! -f "services/$service/dist/main.js" ]]; then
    gateway_fail "services/$service/dist/main.js is missing; did \`pnpm build\` succeed?"
    exit 1
  fi
done

# Exports the variable named $1: the environment's value, else the first line of .run/$2, which is
# written on the first start by the node program $3 (readable by this user only) and kept; $4 says
# what it is in the log.
use_kept_secret() {
  local variable="$1" file="$RUN_DIR/$2"
  if [[ -z "${!variable:-}" ]]; then
    if [[ ! -s "$file" ]]; then
      mkdir -p "$RUN_DIR"
      (umask 077 && node -e "$3" >"$file")
      gateway_log "generated $4 in .run/$2"
    fi
    printf -v "$variable" '%s' "$(head -n 1 "$file")"
  fi
  export "${variable?}"
}

# The bootstrap key: the environment's, else the one generated on the first start and kept.
use_kept_secret GATEWAY_BOOTSTRAP_KEY bootstrap-key '
  const { randomInt } = require("node:crypto");
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  let key = "br-";
  for (let i = 0; i < 40; i++) key += alphabet[randomInt(alphabet.length)];
  process.stdout.write(key + "\n");' 'a bootstrap API key'
# The admin token (admin API and web console).
use_kept_secret EDGE_ADMIN_TOKEN admin-token 'process.stdout.write(require("node:crypto").randomBytes(32).toString("base64url") + "\n")' 'an admin token'
# The key the MCP service encrypts upstream MCP servers' headers with.
use_kept_secret MCP_SECRETS_KEY mcp-secrets-key 'process.stdout.write(require("node:crypto").randomBytes(32).toString("base64") + "\n")' 'the MCP secrets key'
# The edge serves /mcp through the MCP service started here.
export MCP_SERVICE_ADDR="${MCP_SERVICE_ADDR:-127.0.0.1:50057}"
# The key the guard encrypts outside checks' credentials (moderation API keys) with.
use_kept_secret GUARD_SECRETS_KEY guard-secrets-key 'process.stdout.write(require("node:crypto").randomBytes(32).toString("base64") + "\n")' 'the guard secrets key'
# The edge checks prompts, answers and tool calls through the guard started here (its policies:
# /admin/v1/policies).
export GUARD_SERVICE_ADDR="${GUARD_SERVICE_ADDR:-127.0.0.1:50056}"
# The edge looks cacheable requests up in the cache started here (its settings: /admin/v1/cache).
export CACHE_SERVICE_ADDR="${CACHE_SERVICE_ADDR:-127.0.0.1:50058}"
if [[ " ${SERVICES[*]} " == *" batch "* ]]; then
  # The key the batch service seals the owners' keys with while their batches run (kept: a batch
  # still running after a restart needs the same one), and the edge its lanes send the lines to.
  use_kept_secret BATCH_SECRETS_KEY batch-secrets-key 'process.stdout.write(require("node:crypto").randomBytes(32).toString("base64") + "\n")' 'the batch secrets key'
  export BATCH_EDGE_URL="${BATCH_EDGE_URL:-http://127.0.0.1:$EDGE_PORT}"
fi
# Per-key OAuth to upstream MCP servers: the callback is this edge's (its tokens sealed with a key
# derived from MCP_SECRETS_KEY unless MCP_CREDENTIALS_KEY is set).
export MCP_OAUTH_REDIRECT_URL="${MCP_OAUTH_REDIRECT_URL:-http://127.0.0.1:$EDGE_PORT/mcp/oauth/callback}"
export GATEWAY_BOOTSTRAP_PLAN="${GATEWAY_BOOTSTRAP_PLAN:-pro}"
export EDGE_PORT LOG_LEVEL="${LOG_LEVEL:-info}"

# Restart cleanly: whatever an earlier start left running goes first.
bash scripts/stop.sh --services

mkdir -p "$RUN_DIR/logs" "$RUN_DIR/pids"
for service in "${SERVICES[@]}"; do
  log_file="$RUN_DIR/logs/$service.log"
  printf '\n=== %s: starting %s ===\n' "$(date -u +%FT%TZ)" "$service" >>"$log_file"
  # A session of its own: Ctrl-C on this script or closing the terminal does not reach it.
  setsid nohup node "services/$service/dist/main.js" </dev/null >>"$log_file" 2>&1 &
  echo "$!" >"$RUN_DIR/pids/$service.pid"
  gateway_log "started $service (pid $!, log .run/logs/$service.log)"
done

# The last N lines a log got since this start (logs are appended across starts).
last_run_of_log() {
  awk '/^=== .*: starting / { n = 0 } { lines[n++] = $0 } END { for (i = (n > max ? n - max : 0); i < n; i++) print lines[i] }' max="$2" "$1"
}

# HTTP GET with a 2-5 s budget: "status body" on stdout. curl when installed, else Node's fetch
# (a minimal Debian has no curl).
http_get() {
  local url="$1" key="${2:-}"
  if command -v curl >/dev/null 2>&1; then
    curl -s --max-time 5 -w '\n%{http_code}' ${key:+-H "Authorization: Bearer $key"} "$url" 2>/dev/null |
      awk '{ lines[NR] = $0 } END { printf "%s ", lines[NR]; for (i = 1; i < NR; i++) print lines[i] }'
  else
    node -e '
      const [url, key] = process.argv.slice(1);
      fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {}, signal: AbortSignal.timeout(5000) })
        .then(async (response) => process.stdout.write(`${response.status} ${await response.text()}`), () => process.stdout.write("000 "));' "$url" "$key"
  fi
}

# HTTP with a body and a 5 s budget: "status body" on stdout, as http_get. $1 method, $2 URL, $3 the
# bearer token, $4 the JSON body.
http_send() {
  local method="$1" url="$2" key="$3" body="$4"
  if command -v curl >/dev/null 2>&1; then
    curl -s --max-time 5 -w '\n%{http_code}' -X "$method" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' --data-binary "$body" "$url" 2>/dev/null |
      awk '{ lines[NR] = $0 } END { printf "%s ", lines[NR]; for (i = 1; i < NR; i++) print lines[i] }'
  else
    node -e '
      const [method, url, key, body] = process.argv.slice(1);
      fetch(url, { method, body, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, signal: AbortSignal.timeout(5000) })
        .then(async (response) => process.stdout.write(`${response.status} ${await response.text()}`), () => process.stdout.write("000 "));' "$method" "$url" "$key" "$body"
  fi
}

# Bounded wait for every service's /readyz (the edge's own, the others' on their metrics ports),
# watching that every service stays alive.
ready_url="http://127.0.0.1:$EDGE_PORT/readyz"
ready_urls=("$ready_url" "http://127.0.0.1:${AUTH_METRICS_PORT:-9101}/readyz" "http://127.0.0.1:${ROUTER_METRICS_PORT:-9102}/readyz"
  "http://127.0.0.1:${EXECUTOR_METRICS_PORT:-9103}/readyz" "http://127.0.0.1:${METERING_METRICS_PORT:-9104}/readyz"
  "http://127.0.0.1:${MCP_METRICS_PORT:-9107}/readyz" "http://127.0.0.1:${GUARD_METRICS_PORT:-9106}/readyz"
  "http://127.0.0.1:${CACHE_METRICS_PORT:-9108}/readyz")
[[ " ${SERVICES[*]} " == *" request-log "* ]] && ready_urls+=("http://127.0.0.1:${REQUEST_LOG_METRICS_PORT:-9105}/readyz")
[[ " ${SERVICES[*]} " == *" batch "* ]] && ready_urls+=("http://127.0.0.1:${BATCH_METRICS_PORT:-9109}/readyz")
gateway_log "waiting up to ${READY_TIMEOUT_SECONDS}s for every service's /readyz"
deadline=$((SECONDS + READY_TIMEOUT_SECONDS))
while :; do
  for service in "${SERVICES[@]}"; do
    if ! gateway_pid_alive "$RUN_DIR/pids/$service.pid" "services/$service/dist/main.js"; then
      gateway_fail "$service exited during start-up; last lines of .run/logs/$service.log:"
      last_run_of_log "$RUN_DIR/logs/$service.log" 40 >&2
      bash scripts/stop.sh --services
      exit 1
    fi
  done
  status=200
  for url in "${ready_urls[@]}"; do
    answer="$(http_get "$url" | cut -d' ' -f1 || true)"
    if [[ "$answer" != 200 ]]; then
      status="$answer ($url)"
      break
    fi
  done
  [[ "$status" == 200 ]] && break
  if ((SECONDS >= deadline)); then
    gateway_fail "the services were not ready within ${READY_TIMEOUT_SECONDS}s (last /readyz status: ${status:-none})"
    for service in "${SERVICES[@]}"; do
      printf '\n--- last lines of .run/logs/%s.log ---\n' "$service" >&2
      last_run_of_log "$RUN_DIR/logs/$service.log" 15 >&2
    done
    gateway_fail "the services are left running for a look; stop them with: bash scripts/stop.sh"
    exit 1
  fi
  sleep 0.5
done

base_url="http://127.0.0.1:$EDGE_PORT/v1"
# With EDGE_ADMIN_PORT the console (and the admin API) listen there, and EDGE_PORT answers 404 for them.
console_port="$EDGE_PORT"
request_log="the request log is on (DATABASE_URL)"
[[ " ${SERVICES[*]} " == *" request-log "* ]] || request_log="no request log: no PostgreSQL; the latest requests only"
batches="on (the batch service, BATCH_SERVICE_ADDR=${BATCH_SERVICE_ADDR:-})"
[[ " ${SERVICES[*]} " == *" batch "* ]] || batches="off: no PostgreSQL (or GATEWAY_BATCH=off)"
if [[ -n "${EDGE_ADMIN_PORT:-}" && "$EDGE_ADMIN_PORT" != 0 ]]; then console_port="$EDGE_ADMIN_PORT"; fi
admin_url="http://127.0.0.1:$console_port/admin/v1"
# A sample guardrail policy, off: a payment card number (Luhn-checked) in a prompt or an answer is
# refused once it is turned on (the command below). Put only when there is none of that name, so
# that a policy changed or turned on survives a restart (the guard keeps policies in Redis).
sample_policy='{"description":"Refuses a prompt or an answer that carries a payment card number (Luhn-checked).","enabled":false,"mode":"enforce","attachment":{"all_requests":true},"checks":[{"name":"card","points":["input","output"],"action":"block","pii":{"entities":["card"]}}]}'
sample_policy_on="${sample_policy/\"enabled\":false/\"enabled\":true}"
policy_answer="$(http_get "$admin_url/policies/block-card-numbers" "$EDGE_ADMIN_TOKEN" || true)"
policy_state=off
if [[ "${policy_answer%% *}" == 404 ]]; then
  policy_answer="$(http_send PUT "$admin_url/policies/block-card-numbers" "$EDGE_ADMIN_TOKEN" "$sample_policy" || true)"
  if [[ "${policy_answer%% *}" == 200 ]]; then
    gateway_log "put the sample guardrail policy block-card-numbers (off)"
  else
    policy_state="not put (${policy_answer:0:200})"
    gateway_log "could not put the sample guardrail policy block-card-numbers: ${policy_answer:0:300}"
  fi
elif [[ "${policy_answer%% *}" == 200 ]]; then
  [[ "$policy_answer" == *'"enabled":true'* ]] && policy_state=on
else
  policy_state="unknown (GET answered ${policy_answer:0:200})"
  gateway_log "could not read the guardrail policy block-card-numbers: ${policy_answer:0:300}"
fi

# The first model the gateway offers, for the examples.
model="$(http_get "$base_url/models" "$GATEWAY_BOOTSTRAP_KEY" | cut -d' ' -f2- |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{process.stdout.write(JSON.parse(s).data[0].id)}catch{}})' || true)"
model="${model:-MODEL_ID}"

cat <<EOF

The gateway is ready.

  Base URL:  $base_url
  API key:   $GATEWAY_BOOTSTRAP_KEY   (plan: $GATEWAY_BOOTSTRAP_PLAN)

  curl $base_url/chat/completions \\
    -H "Authorization: Bearer $GATEWAY_BOOTSTRAP_KEY" -H "Content-Type: application/json" \\
    -d '{"model":"$model","messages":[{"role":"user","content":"Hello!"}]}'

  // npm install openai, then in an .mjs file:
  import OpenAI from 'openai';
  const client = new OpenAI({ baseURL: '$base_url', apiKey: '$GATEWAY_BOOTSTRAP_KEY' });
  const completion = await client.chat.completions.create({ model: '$model', messages: [{ role: 'user', content: 'Hello!' }] });
  console.log(completion.choices[0].message.content);

  Embeddings (sim-embedding: the default catalog's simulated embedding model):
  curl $base_url/embeddings \\
    -H "Authorization: Bearer $GATEWAY_BOOTSTRAP_KEY" -H "Content-Type: application/json" \\
    -d '{"model":"sim-embedding","input":["Hello!","How are you?"],"dimensions":256}'
  const embedding = await client.embeddings.create({ model: 'sim-embedding', input: 'Hello!' });

  Models:   curl -H "Authorization: Bearer $GATEWAY_BOOTSTRAP_KEY" $base_url/models
  Usage:    curl -H "Authorization: Bearer $GATEWAY_BOOTSTRAP_KEY" "$base_url/usage?start=\$(( \$(date +%s) - 86400 ))&bucket=hour"
  MCP:      claude mcp add --transport http gateway http://127.0.0.1:$EDGE_PORT/mcp --header "Authorization: Bearer $GATEWAY_BOOTSTRAP_KEY"
            (declare upstream MCP servers first: PUT /admin/v1/mcp-servers/<name>, see services/mcp/README.md)
  Guardrails: the sample policy block-card-numbers ($policy_state). To turn it on (a PUT replaces the whole policy):
  curl -X PUT $admin_url/policies/block-card-numbers \\
    -H "Authorization: Bearer $EDGE_ADMIN_TOKEN" -H "Content-Type: application/json" \\
    -d '$sample_policy_on'
            then a card number is refused with 400 content_policy_violation:
  curl $base_url/chat/completions \\
    -H "Authorization: Bearer $GATEWAY_BOOTSTRAP_KEY" -H "Content-Type: application/json" \\
    -d '{"model":"$model","messages":[{"role":"user","content":"My card is 4242 4242 4242 4242"}]}'
            (every policy: curl -H "Authorization: Bearer $EDGE_ADMIN_TOKEN" $admin_url/policies)
  Console:  http://127.0.0.1:$console_port/console   (admin token: $EDGE_ADMIN_TOKEN, kept in .run/admin-token)
  Requests: curl -H "Authorization: Bearer $EDGE_ADMIN_TOKEN" "http://127.0.0.1:$console_port/admin/v1/requests?status=429&format=csv"   ($request_log)
  Batches:  curl -H "Authorization: Bearer $GATEWAY_BOOTSTRAP_KEY" $base_url/batches   ($batches)
  Logs:     .run/logs/<service>.log  (${SERVICES[*]})
  Stop:     bash scripts/stop.sh
EOF
