#!/usr/bin/env bash
# The project's whole test run, as CI runs it (.ci/run) and as a developer runs it:
# installs pnpm when missing, installs and builds the workspace, makes sure Redis and NATS answer
# (scripts/dependencies.sh: reuses running ones, else starts its own), checks the deployment
# manifests, then `pnpm test` (vitest: unit, integration and e2e projects), then the suites that
# carry usage events again against a three-node NATS cluster (scripts/with-nats-cluster.mjs).
# Exit code: the tests' (non-zero as well when the manifests check fails).
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

# Run twice: against the single NATS above, and against a NATS cluster (below).
NATS_CLUSTER_SUITES="packages/messaging/src/durable-consumer.int.test.ts services/metering tests/e2e/cluster.e2e.test.ts tests/e2e/faults.e2e.test.ts tests/e2e/executor-pool.e2e.test.ts tests/e2e/clients.e2e.test.ts tests/e2e/conformance.e2e.test.ts"

manifests_status=0
gateway_log "node scripts/check-manifests.mjs"
node scripts/check-manifests.mjs || manifests_status=$?

tests_status=0
gateway_log "pnpm test (REDIS_URL=$REDIS_URL NATS_URL=$NATS_URL)"
pnpm test || tests_status=$?

# The suites that carry usage events, again against a three-node NATS cluster with JetStream and
# three replicas of the usage stream.
if ((tests_status == 0)); then
  gateway_log "the usage-event suites against a three-node NATS cluster"
  node scripts/with-nats-cluster.mjs pnpm exec vitest run $NATS_CLUSTER_SUITES || tests_status=$?
fi

if ((tests_status == 0 && manifests_status != 0)); then
  gateway_fail "the tests passed but the manifests check failed"
  exit "$manifests_status"
fi
exit "$tests_status"
