/**
 * A guard service for tests: a real grpc-js server speaking gateway.guard.v1.GuardService, with
 * the policies in memory and Check by simple deterministic rules, so that the edge's guardrails
 * are exercised over real gRPC. It finds the card number `4111 1111 1111 1111` (entity `card`,
 * placeholder `<CARD_n>`, by a pii check) and `sk_live_` secrets (entity `secret`, `<SECRET_n>`, by a
 * secrets check); each policy
 * named in a Check applies the action of its first check covering the point, as enforced or
 * monitored. It records every Check and the actor of every change, and can be made to fail.
 */
import { createGatewayServer, GatewayError, GrpcStatus, type GatewayServer, type Metadata, unary } from '@gateway/grpc';
import {
  type CheckRequestOutput,
  type CheckResponse,
  type DeletePolicyRequestOutput,
  type GetPolicyRequestOutput,
  type GuardDecision,
  type GuardServiceHandlers,
  loadGatewayGrpc,
  type Placeholder,
  type Policy,
  type PolicyOutput,
  type PolicySnapshot,
  type PolicySummary,
  type PutPolicyRequestOutput,
} from '@gateway/proto';
import { freePort } from '@gateway/testing';

/** A WatchPolicies call as the server holds it. */
type WatchCall = Parameters<GuardServiceHandlers['WatchPolicies']>[0];

/** What each kind of check finds: a pii check the card, a secrets check the secret, any other both. */
const FINDINGS: ReadonlyArray<{ entity: string; kind: string; pattern: RegExp }> = [
  { entity: 'card', kind: 'pii', pattern: /4111[ -]?1111[ -]?1111[ -]?1111/g },
  { entity: 'secret', kind: 'secrets', pattern: /sk_live_[A-Za-z0-9]{8,}/g },
];

/** How the fake guard fails its Check calls: not at all, at once (unavailable), or by never answering in time. */
export type FakeGuardFailure = 'none' | 'unavailable' | 'slow';

/** A running fake guard. */
export interface FakeGuard {
  /** Its address, for GUARD_SERVICE_ADDR. */
  readonly address: string;
  /** Every Check received, in order. */
  readonly checks: CheckRequestOutput[];
  /** The `gateway-actor` metadata of every PutPolicy and DeletePolicy, with the policy's name. */
  readonly changes: Array<{ method: string; name: string; actor: string }>;
  /** How Check fails from now on. */
  failure: FakeGuardFailure;
  /** Stores a policy as PutPolicy would (without an actor) and pushes the new snapshot. */
  put(policy: Policy): void;
  /** Removes every policy and pushes the empty snapshot. */
  clear(): void;
  close(): Promise<void>;
}

/** The summary WatchPolicies pushes of a policy. */
function summaryOf(policy: PolicyOutput): PolicySummary {
  const points = [...new Set(policy.checks.flatMap((check) => check.points))];
  return {
    name: policy.name,
    attachment: policy.attachment,
    points,
    stream_window: { tokens: policy.stream_window?.tokens || 64, ms: policy.stream_window?.ms || 500 },
    on_error: policy.on_error,
    mode: policy.mode,
    restore_masked: policy.restore_masked,
    deadline_ms: 200,
  };
}

/** Starts a fake guard on a free port. */
export async function startFakeGuard(): Promise<FakeGuard> {
  const policies = new Map<string, PolicyOutput>();
  const watchers = new Set<WatchCall>();
  let version = 0;
  const checks: CheckRequestOutput[] = [];
  const changes: FakeGuard['changes'] = [];
  const snapshot = (): PolicySnapshot => ({
    version,
    policies: [...policies.values()].filter((policy) => policy.enabled).map(summaryOf),
  });
  const push = () => {
    version++;
    for (const watcher of watchers) watcher.write(snapshot());
  };
  const store = (policy: Policy): PolicyOutput => {
    const stored = { ...policy, updated_at_ms: Date.now() } as PolicyOutput;
    policies.set(policy.name ?? '', stored);
    push();
    return stored;
  };
  const actorOf = (call: { metadata: Metadata }) => String(call.metadata.get('gateway-actor')[0] ?? '');
  const notFound = (name: string) => new GatewayError(GrpcStatus.NOT_FOUND, 'policy_not_found', `No policy named '${name}'.`);

  const fake: FakeGuard = {
    address: '',
    checks,
    changes,
    failure: 'none',
    put: (policy) => void store(policy),
    clear() {
      policies.clear();
      push();
    },
    close: async () => undefined,
  };

  const check = async (request: CheckRequestOutput): Promise<CheckResponse> => {
    checks.push(request);
    if (fake.failure === 'unavailable') throw new GatewayError(GrpcStatus.UNAVAILABLE, 'unavailable', 'The guard is down.');
    if (fake.failure === 'slow') await new Promise((resolve) => setTimeout(resolve, 5_000));
    const response: CheckResponse & { decisions: GuardDecision[]; placeholders: Placeholder[] } = {
      blocked: false,
      texts: [],
      decisions: [],
      placeholders: [],
    };
    const counters = new Map<string, number>();
    const texts = request.texts.map((text) => ({ path: text.path ?? '', text: text.text ?? '' }));
    for (const name of request.policies) {
      const policy = policies.get(name);
      const spec = policy?.checks.find((candidate) => candidate.points.includes(request.point!));
      if (!policy || !spec) continue;
      const enforced = policy.mode !== 'MODE_MONITOR';
      for (const text of texts) {
        for (const { entity, kind, pattern } of FINDINGS) {
          if ((spec.pii || spec.secrets) && !spec[kind as 'pii' | 'secrets']) continue;
          text.text = text.text.replace(pattern, (found, start: number) => {
            response.decisions.push({
              policy: name,
              check: spec.name,
              point: request.point,
              action: spec.action,
              enforced,
              entity,
              path: text.path,
              start,
              end: start + found.length,
            });
            if (!enforced) return found;
            if (spec.action === 'ACTION_BLOCK' && !response.blocked) {
              response.blocked = true;
              response.blocked_by_policy = name;
              response.blocked_by_check = spec.name;
            }
            if (spec.action !== 'ACTION_MASK') return found;
            const count = (counters.get(entity) ?? 0) + 1;
            counters.set(entity, count);
            const placeholder = `<${entity.toUpperCase()}_${count}>`;
            if (policy.restore_masked) response.placeholders.push({ placeholder, original: found });
            return placeholder;
          });
        }
      }
    }
    response.texts = texts.map((text) => ({ text: text.text, held_chars: 0 }));
    return response;
  };

  const handlers: GuardServiceHandlers = {
    Check: unary(check, 'Check'),
    PutPolicy: unary(async (request: PutPolicyRequestOutput, call) => {
      changes.push({ method: 'PutPolicy', name: request.policy?.name ?? '', actor: actorOf(call) });
      return store(request.policy as Policy);
    }, 'PutPolicy'),
    GetPolicy: unary(async (request: GetPolicyRequestOutput) => {
      const policy = policies.get(request.name ?? '');
      if (!policy) throw notFound(request.name ?? '');
      return policy;
    }, 'GetPolicy'),
    ListPolicies: unary(async () => ({ policies: [...policies.values()].sort((a, b) => (a.name ?? '').localeCompare(b.name ?? '')) }), 'ListPolicies'),
    DeletePolicy: unary(async (request: DeletePolicyRequestOutput, call) => {
      if (!policies.delete(request.name ?? '')) throw notFound(request.name ?? '');
      changes.push({ method: 'DeletePolicy', name: request.name ?? '', actor: actorOf(call) });
      push();
      return {};
    }, 'DeletePolicy'),
    WatchPolicies(call: WatchCall) {
      watchers.add(call);
      call.write(snapshot());
      call.on('cancelled', () => watchers.delete(call));
      call.on('close', () => watchers.delete(call));
    },
  };
  const server: GatewayServer = createGatewayServer([
    {
      name: 'gateway.guard.v1.GuardService',
      definition: loadGatewayGrpc().gateway.guard.v1.GuardService.service,
      handlers,
    },
  ]);
  const port = await server.listen(`127.0.0.1:${await freePort()}`);
  return Object.assign(fake, {
    address: `127.0.0.1:${port}`,
    close: async () => {
      for (const watcher of watchers) watcher.end();
      await server.shutdown(0);
    },
  });
}
