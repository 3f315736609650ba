/**
 * The guard's built-in checks (services/guard/src/checks/): the CPU one Check call costs the guard
 * for a typical prompt (about 2 KB of chat: a system message, a question with a card number, an
 * e-mail and an API key in it), each kind of check alone and all of them together, beside a call
 * that names no policy (the runner alone). The check runner is called in process, so the figures
 * are the checks' own, without gRPC; best of five runs of 2,000 calls each.
 */
import type { CheckRequestOutput } from '@gateway/proto';
import { SecretCipher } from '@gateway/redis';
import { type CompiledPolicy, runCheck } from '../services/guard/src/checks/check-runner.js';
import { createScanner } from '../services/guard/src/checks/registry.js';
import { createGuardMetrics } from '../services/guard/src/guard-metrics.js';
import type { StoredCheck, StoredPolicy } from '../services/guard/src/policies/policy.js';
import { fixed, table } from './measure.js';
import type { BenchSuite } from './run.js';

const CALLS = 2_000;
const RUNS = 5;

const PROMPT = [
  'You are a careful support assistant for an online shop. Answer briefly and politely. '.repeat(6),
  `Hello, I ordered a lamp last week and was charged twice on my card 4111 1111 1111 1111. My e-mail is jane.doe@example.com and my deploy key is sk-proj-Zq8xV3mN5bT7wK2pL9rY4cH6. ${'Can you refund the second charge and tell me when the lamp ships? '.repeat(12)}`,
];

const CHECKS: Record<string, StoredCheck> = {
  secrets: { name: 'secrets', points: ['input'], action: 'mask', kind: 'secrets' },
  pii: { name: 'pii', points: ['input'], action: 'mask', kind: 'pii', pii: { entities: ['card', 'iban', 'phone', 'email'], default_phone_region: 'US' } },
  patterns: {
    name: 'patterns',
    points: ['input'],
    action: 'flag',
    kind: 'patterns',
    patterns: { words: ['ignore previous instructions', 'system prompt', 'jailbreak'], patterns: ['ORDER-[0-9]{6}', '(?i)password\\s*[:=]'], entity: '' },
  },
  limits: { name: 'limits', points: ['input'], action: 'flag', kind: 'limits', limits: { max_chars: 100_000, allowed_scripts: ['Latin'] } },
};

function policyOf(name: string, checks: StoredCheck[]): CompiledPolicy {
  const policy: StoredPolicy = {
    name,
    description: '',
    enabled: true,
    mode: 'enforce',
    on_error: 'allow',
    attachment: { key_ids: [], team_ids: [], models: [], all_requests: true },
    checks,
    stream_window: { tokens: 0, ms: 0 },
    restore_masked: false,
    updated_at_ms: 0,
  };
  const cipher = new SecretCipher('', 'GUARD_SECRETS_KEY');
  return { policy, windowChars: 256, checks: checks.map((check) => ({ check, scanner: createScanner(check, cipher), deadlineMs: 1_000 })) };
}

/** CPU microseconds (user + system) per call of CALLS calls naming `policies`, the best of RUNS. */
async function cpuPerCall(policies: CompiledPolicy[]): Promise<number> {
  const byName = new Map(policies.map((policy) => [policy.policy.name, policy]));
  const request = {
    request_id: 'bench',
    point: 'POINT_INPUT',
    policies: policies.map((policy) => policy.policy.name),
    texts: PROMPT.map((text, index) => ({ path: `messages[${index}].content`, text })),
    final: true,
  } as CheckRequestOutput;
  const options = { policies: byName, signal: new AbortController().signal, maxChars: 1_000_000, metrics: createGuardMetrics(undefined) };
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < RUNS; run++) {
    const start = process.cpuUsage();
    for (let call = 0; call < CALLS; call++) await runCheck(request, options);
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / CALLS);
  }
  return best;
}

export const suite: BenchSuite = {
  name: 'guard-checks',
  description: 'CPU of one guard Check call per built-in check on a 2 KB prompt, and of all of them (the runner alone beside)',
  async run() {
    const none = await cpuPerCall([]);
    const rows: string[][] = [['no policy named (the runner alone)', fixed(none, 1)]];
    for (const [kind, check] of Object.entries(CHECKS)) rows.push([`${kind} alone`, fixed(await cpuPerCall([policyOf(kind, [check])]), 1)]);
    rows.push(['all four in one policy', fixed(await cpuPerCall([policyOf('all', Object.values(CHECKS))]), 1)]);
    table(['Check call of a 2 KB prompt', 'µs CPU per call'], rows);
  },
};
