/**
 * Audit of the gRPC calls that change something: `auditor.audited(handler, change)` wraps a unary
 * handler so that, once the handler applied its change, an entry is recorded with the caller's
 * actor (the `gateway-actor` metadata), the request id, the target and the public facts before and
 * after. Adding audit to a new mutating RPC is one line where its handlers are listed:
 *   CreateTeam: unary(auditor.audited(createTeam, { action: 'team.create', target: (_, team) => team.team_id ?? '', after: (team) => team }), 'CreateTeam', report),
 * `after` (and `before`) must pick public facts (a KeyInfo, never a response carrying a secret);
 * publicJson drops any field named like a secret besides.
 */
import { actorOf, type AsyncUnary, type Metadata, requestIdOf } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';
import { type AuditActor, type AuditLog, UNKNOWN_ACTOR } from '@gateway/keyspace';

/** What an audited handler reads of its call: the metadata (actor, request id). */
type Call = { metadata: Metadata };

/** How a change describes itself in the trail. */
export interface ChangeAudit<Request, Response> {
  /** `<thing>.<verb>`: `key.update`, `team.create`. */
  action: string;
  /** The id of what changed. */
  target: (request: Request, response: Response) => string;
  /** The public facts before the change, read just before it applies; absent for a creation. */
  before?: (request: Request) => Promise<unknown>;
  /** The public facts after the change. */
  after: (response: Response) => unknown;
}

/** Wraps mutating handlers so each change they apply is recorded. */
export interface Auditor {
  audited<Request, Response>(
    handler: (request: Request, call: Call) => Promise<Response>,
    change: ChangeAudit<Request, Response>,
  ): AsyncUnary<Request, Response>;
}

/** The actor a call names, or `unknown`. */
export function callActor(call: Call): AuditActor {
  return actorOf(call) ?? UNKNOWN_ACTOR;
}

/**
 * An auditor writing to `audit`. A change whose entry cannot be written (Redis failing right after
 * the change) is still answered as done, since it did apply: the failure is logged with the entry's
 * action, target and actor, and counted (gateway_auth_audit_write_failures_total).
 */
export function createAuditor(audit: AuditLog, logger: Logger, registry?: prometheus.Registry): Auditor {
  const { failures } = serviceMetrics(registry, {
    failures: metric.counter('gateway_auth_audit_write_failures_total', 'Admin changes applied whose audit entry could not be written.'),
  });
  return {
    audited: (handler, change) => async (request, call) => {
      const before = change.before ? await change.before(request) : undefined;
      const response = await handler(request, call);
      const actor = callActor(call);
      const record = { actor, action: change.action, target_id: change.target(request, response), request_id: requestIdOf(call) };
      await audit.record({ ...record, before, after: change.after(response) }).catch((error: unknown) => {
        failures.inc();
        logger.error({ err: { message: (error as Error).message }, ...record, actor: actor.subject }, 'audit entry not written');
      });
      return response;
    },
  };
}
