/**
 * The enabled policies ready to run, rebuilt from each PolicySet the store reads: a policy whose
 * stored JSON did not change keeps its compiled checks (its RE2 programs, its outside clients), so
 * a change to one policy recompiles that one only. A policy that cannot be compiled here (its
 * credential sealed with another GUARD_SECRETS_KEY) is logged and left out; an edge naming it gets
 * no decision from it.
 */
import type { Logger } from '@gateway/logger';
import type { SecretCipher } from '@gateway/redis';
import type { CompiledPolicy } from '../checks/check-runner.js';
import { createScanner } from '../checks/registry.js';
import type { PolicyDefaults, StoredPolicy } from './policy.js';
import type { PolicySet } from './policy-store.js';

/** The compiled form of every enabled policy of the latest set. */
export class CompiledPolicies {
  private compiled = new Map<string, { json: string; policy: CompiledPolicy }>();
  private view: ReadonlyMap<string, CompiledPolicy> | undefined;

  constructor(
    private readonly cipher: SecretCipher,
    private readonly defaults: PolicyDefaults,
    private readonly logger: Logger,
  ) {}

  /** Compiles what changed in `set`. */
  update(set: PolicySet): void {
    const next = new Map<string, { json: string; policy: CompiledPolicy }>();
    for (const policy of set.policies.values()) {
      if (!policy.enabled) continue;
      const json = JSON.stringify(policy);
      const kept = this.compiled.get(policy.name);
      if (kept?.json === json) {
        next.set(policy.name, kept);
        continue;
      }
      try {
        next.set(policy.name, { json, policy: this.compile(policy) });
      } catch (error) {
        this.logger.error({ policy: policy.name, err: (error as Error).message }, 'a guard policy cannot be compiled; it is not applied');
      }
    }
    this.compiled = next;
    this.view = undefined;
  }

  /** By name, the same map until the next update. */
  get byName(): ReadonlyMap<string, CompiledPolicy> {
    this.view ??= new Map([...this.compiled].map(([name, entry]) => [name, entry.policy]));
    return this.view;
  }

  private compile(policy: StoredPolicy): CompiledPolicy {
    return {
      policy,
      windowChars: (policy.stream_window.tokens || this.defaults.windowTokens) * 4,
      checks: policy.checks.map((check) => ({
        check,
        scanner: createScanner(check, this.cipher),
        deadlineMs: check.external?.deadline_ms || this.defaults.checkDeadlineMs,
      })),
    };
  }
}
