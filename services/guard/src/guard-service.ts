/**
 * The GuardService handlers. Check runs one point of one request against the compiled policies
 * (checks/check-runner.ts); until the policies were read once it answers UNAVAILABLE, so that the
 * edge applies each policy's on_error rather than passing unchecked text as checked. PutPolicy
 * validates and stores a policy, DeletePolicy removes one, each logged and added to auth's audit
 * trail with its actor and the policy before and after (never a credential); WatchPolicies pushes the enabled policies' summaries at once and on every change
 * this replica reads, until the edge cancels.
 */
import { actorOf, GatewayError, requestIdOf, unary, WatchStreams } from '@gateway/grpc';
import { type AuditLog, UNKNOWN_ACTOR } from '@gateway/keyspace';
import type { Logger } from '@gateway/logger';
import type {
  CheckRequestOutput,
  DeletePolicyRequestOutput,
  GetPolicyRequestOutput,
  GuardServiceHandlers,
  PolicySnapshot,
  PutPolicyRequestOutput,
} from '@gateway/proto';
import type { SecretCipher } from '@gateway/redis';
import { runCheck } from './checks/check-runner.js';
import type { GuardMetrics } from './guard-metrics.js';
import type { CompiledPolicies } from './policies/compiled-policies.js';
import { type PolicyDefaults, policyOfStored, type StoredPolicy, summaryOf } from './policies/policy.js';
import type { PolicySet, PolicyStore } from './policies/policy-store.js';
import { validatePolicy } from './policies/policy-validation.js';

/** What the handlers work with. */
export interface GuardServiceOptions {
  store: PolicyStore;
  compiled: CompiledPolicies;
  cipher: SecretCipher;
  defaults: PolicyDefaults;
  maxChars: number;
  metrics: GuardMetrics;
  logger: Logger;
  /** The audit trail auth keeps, each policy change added to it; undefined: changes are only logged. */
  audit?: AuditLog;
  now?: () => number;
}

/** The snapshot WatchPolicies pushes of a set. */
export function snapshotOf(set: PolicySet, defaults: PolicyDefaults): PolicySnapshot {
  return {
    version: set.version,
    policies: [...set.policies.values()].filter((policy) => policy.enabled).map((policy) => summaryOf(policy, defaults)),
  };
}

/** The handlers, and a way to end every open watch at shutdown. */
export function createGuardService(options: GuardServiceOptions): { handlers: GuardServiceHandlers; endWatches(): void } {
  const { store, compiled, logger, metrics } = options;
  const watches = new WatchStreams<PolicySnapshot>((count) => metrics.watchers.set(count));
  const notFound = (name: string) => GatewayError.of('not_found', `No policy named '${name.slice(0, 64)}'.`, { param: 'name' });
  /**
   * A change applied: logged, and added to the audit trail with its actor and the policy before and
   * after (as the contract shows it: no credential). An entry that cannot be written leaves the
   * change applied; the failure is logged.
   */
  const recordChange = async (
    call: Parameters<typeof actorOf>[0],
    action: 'policy.put' | 'policy.delete',
    name: string,
    before?: StoredPolicy,
    after?: StoredPolicy,
  ) => {
    const actor = actorOf(call) ?? UNKNOWN_ACTOR;
    const requestId = requestIdOf(call);
    logger.info({ policy: name, action, actor: actor.subject, request_id: requestId }, 'guard policy changed');
    await options.audit
      ?.record({
        actor,
        action,
        target_id: name,
        before: before && policyOfStored(before),
        after: after && policyOfStored(after),
        request_id: requestId,
      })
      .catch((error: unknown) =>
        logger.error({ policy: name, action, actor: actor.subject, err: { message: (error as Error).message } }, 'audit entry not written'),
      );
  };

  store.onChange((set) => {
    compiled.update(set);
    metrics.policies.set(compiled.byName.size);
    // Each check's series from 0, so that rate() and the error ratio see its first check and error.
    for (const [policy, entry] of compiled.byName) {
      for (const { check } of entry.checks) {
        metrics.checks.inc({ policy, check: check.name, action: 'pass' }, 0);
        metrics.checkErrors.inc({ policy, check: check.name, reason: 'deadline_exceeded' }, 0);
      }
    }
    watches.push(snapshotOf(set, options.defaults));
  });

  async function check(
    request: CheckRequestOutput,
    call: { cancelled?: boolean; once(event: 'cancelled', listener: () => void): unknown; off(event: 'cancelled', listener: () => void): unknown },
  ) {
    if (!store.loaded) throw GatewayError.of('service_unavailable', 'The guard has not read its policies yet.');
    const controller = new AbortController();
    const cancel = () => controller.abort();
    call.once('cancelled', cancel);
    try {
      return await runCheck(request, { policies: compiled.byName, signal: controller.signal, maxChars: options.maxChars, metrics });
    } finally {
      // grpc-js reports a call cancelled once it is closed, answered or not: an answered check has nothing to stop.
      call.off('cancelled', cancel);
    }
  }

  async function putPolicy(request: PutPolicyRequestOutput, call: Parameters<typeof actorOf>[0]) {
    const name = request.policy?.name ?? '';
    const before: StoredPolicy | undefined = await store.get(name);
    const policy = validatePolicy(request.policy, { before, cipher: options.cipher, now: (options.now ?? Date.now)() });
    await store.put(policy);
    await recordChange(call, 'policy.put', policy.name, before, policy);
    return policyOfStored(policy);
  }

  return {
    handlers: {
      Check: unary(check, 'Check'),
      PutPolicy: unary(putPolicy, 'PutPolicy'),
      GetPolicy: unary(async (request: GetPolicyRequestOutput) => {
        const policy = await store.get(request.name ?? '');
        if (!policy) throw notFound(request.name ?? '');
        return policyOfStored(policy);
      }, 'GetPolicy'),
      ListPolicies: unary(async () => ({ policies: (await store.list()).map(policyOfStored) }), 'ListPolicies'),
      DeletePolicy: unary(async (request: DeletePolicyRequestOutput, call) => {
        const name = request.name ?? '';
        const before = await store.get(name);
        if (!(await store.delete(name))) throw notFound(name);
        await recordChange(call, 'policy.delete', name, before);
        return {};
      }, 'DeletePolicy'),
      // Before the first read there is nothing to push: the first change read sends it.
      WatchPolicies: (call) => watches.add(call),
    } as GuardServiceHandlers,
    endWatches: () => watches.end(),
  };
}
