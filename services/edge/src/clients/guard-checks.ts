/**
 * The edge's calls to the guard service (gateway.guard.v1.GuardService): Check on the request path,
 * one unary call per point of a request a policy covers, with the deadline its policies allow. A
 * decision (block, mask, flag) is the answer; a rejection means the guard could not check, and the
 * caller applies each policy's on_error (guardrails/request-guard.ts). The policies' CRUD calls are
 * the admin API's (routes/admin/admin-policies.ts); their push is guardrails/policy-view.ts.
 */
import { callUnary, type CallOptions } from '@gateway/grpc';
import type { CheckRequest, CheckResponseOutput, GuardServiceClient } from '@gateway/proto';

/** Checks the texts of one point against the named policies; rejects with the GatewayError of a guard that could not answer in time. */
export function checkTexts(client: GuardServiceClient, request: CheckRequest, options: CallOptions): Promise<CheckResponseOutput> {
  return callUnary<CheckRequest, CheckResponseOutput>(client, client.Check, request, options);
}
