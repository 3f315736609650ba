#!/usr/bin/env bash
# The project's whole test run, as CI runs it (.ci/run) and as a developer runs it:
# installs pnpm when missing, installs and builds the workspace, makes sure Redis and NATS answer
# (scripts/dependencies.sh: reuses running ones, else starts its own), checks the deployment
# manifests, then `pnpm test` (vitest: unit, integration and e2e projects).
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

manifests_status=0
gateway_log "node scripts/check-manifests.mjs"
node scripts/check-manifests.mjs || manifests_status=$?

tests_status=0
gateway_log "pnpm test (REDIS_URL=$REDIS_URL NATS_URL=$NATS_URL)"
pnpm test || tests_status=$?

if ((tests_status == 0 && manifests_status != 0)); then
  gateway_fail "the tests passed but the manifests check failed"
  exit "$manifests_status"
fi
exit "$tests_status"
