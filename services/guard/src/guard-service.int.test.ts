/**
 * The guard over real gRPC and a real Redis, as the edge and the admin API use it: policies put,
 * validated, listed and removed; WatchPolicies pushing each change, to the edges of another
 * replica too; Check blocking, masking and flagging with the built-in checks, in enforce and
 * monitor mode; held tails on stream windows; and a check that cannot run deciding by on_error.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callUnary, createClient, GatewayError, type GatewayServer } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import {
  type CheckRequest,
  type CheckResponseOutput,
  type GuardServiceClient,
  loadGatewayGrpc,
  type Policy,
  type PolicyOutput,
  type PolicySnapshotOutput,
} from '@gateway/proto';
import { AuditLog } from '@gateway/keyspace';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl, rejectedWith } from '@gateway/testing';
import { createServer, type GuardApp } from './app.js';

const prefix = `guard-test-${randomBytes(4).toString('hex')}:`;
const logger = createLogger('guard', 'silent');
const SECRETS_KEY = randomBytes(32).toString('base64');
let redis: RedisClient;
const apps: GuardApp[] = [];
const clients: GuardServiceClient[] = [];

async function startReplica(): Promise<GuardServiceClient> {
  const app = createServer({
    redis,
    logger,
    prefix,
    auditPrefix: `${prefix}auth:`,
    secretsKey: SECRETS_KEY,
    reloadIntervalMs: 50,
    defaults: { windowTokens: 64, windowMs: 250, checkDeadlineMs: 200 },
    maxChars: 100_000,
  });
  await app.store.start();
  const port = await (app.server as GatewayServer).listen('127.0.0.1:0');
  apps.push(app);
  const client = createClient(loadGatewayGrpc().gateway.guard.v1.GuardService, `127.0.0.1:${port}`);
  clients.push(client);
  return client;
}

const CALL = { deadlineMs: 10_000, actor: { subject: 'test-admin', role: 'admin', via: 'static_token' } };
const put = (client: GuardServiceClient, policy: Policy) => callUnary<{ policy: Policy }, PolicyOutput>(client, client.PutPolicy, { policy }, CALL);
const check = (client: GuardServiceClient, request: CheckRequest) => callUnary<CheckRequest, CheckResponseOutput>(client, client.Check, request, CALL);

const CARD = '4111 1111 1111 1111';
/** Waits until the assertion holds: a change reaches the other replica within its reload interval. */
const until = (assertion: () => unknown) => vi.waitFor(assertion, { timeout: 10_000, interval: 20 });

function policy(name: string, overrides: Partial<Policy> = {}): Policy {
  return {
    name,
    enabled: true,
    mode: 'MODE_ENFORCE',
    on_error: 'ON_ERROR_ALLOW',
    attachment: { all_requests: true },
    checks: [{ name: 'card', points: ['POINT_INPUT', 'POINT_OUTPUT'], action: 'ACTION_MASK', pii: { entities: ['card'] } }],
    ...overrides,
  };
}

let a: GuardServiceClient;
let b: GuardServiceClient;

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
  a = await startReplica();
  b = await startReplica();
});

afterAll(async () => {
  for (const client of clients) client.close();
  for (const app of apps) await app.server.shutdown(0);
  await deleteMatching(redis, `${prefix}*`);
  redis.disconnect();
});

describe('policies', () => {
  it('are put on one replica and read, listed and removed on another', async () => {
    const stored = await put(a, policy('cards', { description: 'No card numbers.' }));
    expect(stored).toMatchObject({ name: 'cards', enabled: true, mode: 'MODE_ENFORCE', description: 'No card numbers.' });
    expect(stored.updated_at_ms).toBeGreaterThan(0);
    expect(await callUnary(b, b.GetPolicy, { name: 'cards' }, CALL)).toMatchObject({ name: 'cards' });
    const listed = await callUnary<object, { policies: PolicyOutput[] }>(b, b.ListPolicies, {}, CALL);
    expect(listed.policies.map((policy) => policy.name)).toContain('cards');
    await callUnary(b, b.DeletePolicy, { name: 'cards' }, CALL);
    const gone = await rejectedWith(GatewayError, callUnary(a, a.GetPolicy, { name: 'cards' }, CALL));
    expect(gone.reason).toBe('not_found');
    expect((await rejectedWith(GatewayError, callUnary(a, a.DeletePolicy, { name: 'cards' }, CALL))).reason).toBe('not_found');
    // Each change is in auth's audit trail, with its actor, newest first.
    const trail = await new AuditLog(redis, { prefix: `${prefix}auth:` }).list({ target_id: 'cards' });
    expect(trail.entries.map((entry) => [entry.action, entry.actor.subject, entry.actor.via])).toEqual([
      ['policy.delete', 'test-admin', 'static_token'],
      ['policy.put', 'test-admin', 'static_token'],
    ]);
    expect(JSON.parse(trail.entries[1]!.after_json)).toMatchObject({ name: 'cards', description: 'No card numbers.' });
    expect(JSON.parse(trail.entries[0]!.before_json)).toMatchObject({ name: 'cards' });
  });

  it('refuses what cannot be applied, naming the field, and stores nothing', async () => {
    const cases: Array<[Policy, string]> = [
      [policy('Bad Name'), 'name'],
      [policy('no-checks', { checks: [] }), 'checks'],
      [policy('two-kinds', { checks: [{ name: 'x', points: ['POINT_INPUT'], action: 'ACTION_BLOCK', secrets: {}, pii: {} }] }), 'checks[0]'],
      [policy('no-points', { checks: [{ name: 'x', points: [], action: 'ACTION_BLOCK', secrets: {} }] }), 'checks[0].points'],
      [
        policy('backref', { checks: [{ name: 'x', points: ['POINT_INPUT'], action: 'ACTION_BLOCK', patterns: { patterns: ['(a)\\1'] } }] }),
        'checks[0].patterns',
      ],
      [
        policy('lookahead', { checks: [{ name: 'x', points: ['POINT_INPUT'], action: 'ACTION_BLOCK', patterns: { patterns: ['a(?=b)'] } }] }),
        'checks[0].patterns',
      ],
      [
        policy('empty-match', { checks: [{ name: 'x', points: ['POINT_INPUT'], action: 'ACTION_BLOCK', patterns: { patterns: ['a*'] } }] }),
        'checks[0].patterns',
      ],
      [
        policy('script', { checks: [{ name: 'x', points: ['POINT_INPUT'], action: 'ACTION_BLOCK', limits: { allowed_scripts: ['Klingon'] } }] }),
        'checks[0].limits',
      ],
      [policy('pii-kind', { checks: [{ name: 'x', points: ['POINT_INPUT'], action: 'ACTION_BLOCK', pii: { entities: ['shoe_size'] } }] }), 'checks[0].pii'],
      [
        policy('dup', {
          checks: [
            { name: 'x', points: ['POINT_INPUT'], action: 'ACTION_BLOCK', secrets: {} },
            { name: 'x', points: ['POINT_INPUT'], action: 'ACTION_BLOCK', secrets: {} },
          ],
        }),
        'checks[1].name',
      ],
      [policy('window', { stream_window: { tokens: 100_000 } }), 'stream_window.tokens'],
    ];
    for (const [bad, param] of cases) {
      const error = await rejectedWith(GatewayError, put(a, bad));
      expect(error.reason, `${bad.name}`).toBe('invalid_request');
      expect(error.param, `${bad.name}`).toBe(param);
    }
    const listed = await callUnary<object, { policies: PolicyOutput[] }>(a, a.ListPolicies, {}, CALL);
    expect(listed.policies.map((policy) => policy.name).filter((name) => cases.some(([bad]) => bad.name === name))).toEqual([]);
  });

  it('accepts a pattern that would backtrack catastrophically elsewhere, and runs it in linear time', async () => {
    await put(a, policy('hostile', { checks: [{ name: 'p', points: ['POINT_INPUT'], action: 'ACTION_BLOCK', patterns: { patterns: ['(a+)+$'] } }] }));
    const answer = await check(a, {
      request_id: 'r',
      point: 'POINT_INPUT',
      policies: ['hostile'],
      texts: [{ path: 'p', text: `${'a'.repeat(50_000)}!` }],
      final: true,
    });
    // `(a+)+$` cannot match before `!`: RE2 answers at once where a backtracking engine would not end.
    expect(answer.blocked).toBe(false);
    await callUnary(a, a.DeletePolicy, { name: 'hostile' }, CALL);
  });
});

describe('WatchPolicies', () => {
  it('pushes the enabled policies at once and after every change, from either replica', async () => {
    const snapshots: PolicySnapshotOutput[] = [];
    const watch = b.WatchPolicies({}, { deadline: Date.now() + 60_000 });
    watch.on('data', (snapshot: PolicySnapshotOutput) => snapshots.push(snapshot));
    watch.on('error', () => undefined);
    await until(() => expect(snapshots.length).toBeGreaterThan(0));
    await put(a, policy('watched', { stream_window: { tokens: 16 } }));
    await until(() => expect(snapshots.at(-1)?.policies.map((summary) => summary.name)).toContain('watched'));
    const summary = snapshots.at(-1)!.policies.find((candidate) => candidate.name === 'watched')!;
    expect(summary).toMatchObject({
      points: ['POINT_INPUT', 'POINT_OUTPUT'],
      stream_window: { tokens: 16, ms: 250 },
      on_error: 'ON_ERROR_ALLOW',
      deadline_ms: 200,
    });
    const before = snapshots.at(-1)!.version ?? 0;
    await put(a, policy('watched', { enabled: false }));
    await until(() => expect(snapshots.at(-1)?.policies.map((candidate) => candidate.name)).not.toContain('watched'));
    expect(snapshots.at(-1)!.version).toBeGreaterThan(before);
    watch.cancel();
    await callUnary(a, a.DeletePolicy, { name: 'watched' }, CALL);
  });
});

describe('Check', () => {
  beforeAll(async () => {
    await put(a, policy('mask-cards', { restore_masked: true }));
    await put(a, policy('block-keys', { checks: [{ name: 'keys', points: ['POINT_INPUT', 'POINT_TOOL_ARGUMENTS'], action: 'ACTION_BLOCK', secrets: {} }] }));
    await put(
      a,
      policy('watch-words', {
        mode: 'MODE_MONITOR',
        checks: [{ name: 'words', points: ['POINT_INPUT'], action: 'ACTION_BLOCK', patterns: { words: ['project falcon'], entity: 'codename' } }],
      }),
    );
    // Applied on the other replica once its reload read them.
    await until(async () => {
      const probe = await check(b, {
        request_id: 'probe',
        point: 'POINT_INPUT',
        policies: ['mask-cards', 'block-keys', 'watch-words'],
        texts: [{ path: 'p', text: `${CARD} project falcon sk-proj-abcdefghijklmnopqrstuvwx` }],
        final: true,
      });
      expect(probe.decisions).toHaveLength(3);
    });
  });

  it('masks a card with a placeholder, the same card the same one, and gives the original back for restore_masked', async () => {
    const answer = await check(b, {
      request_id: 'req_1',
      point: 'POINT_INPUT',
      policies: ['mask-cards'],
      texts: [
        { path: 'messages[0].content', text: `Charge ${CARD} now.` },
        { path: 'messages[1].content', text: `Again ${CARD}, and 5555 5555 5555 4444.` },
      ],
      final: true,
    });
    expect(answer.blocked).toBe(false);
    expect(answer.texts.map((text) => text.text)).toEqual(['Charge <CARD_1> now.', 'Again <CARD_1>, and <CARD_2>.']);
    expect(answer.placeholders).toEqual([
      { placeholder: '<CARD_1>', original: CARD },
      { placeholder: '<CARD_2>', original: '5555 5555 5555 4444' },
    ]);
    expect(answer.decisions[0]).toMatchObject({
      policy: 'mask-cards',
      check: 'card',
      point: 'POINT_INPUT',
      action: 'ACTION_MASK',
      enforced: true,
      entity: 'card',
      path: 'messages[0].content',
      start: 7,
      end: 26,
    });
    expect(answer.decisions).toHaveLength(3);
  });

  it('blocks a secret, naming the policy and check, and records a monitor policy without acting', async () => {
    const answer = await check(b, {
      request_id: 'req_2',
      point: 'POINT_INPUT',
      policies: ['watch-words', 'block-keys'],
      texts: [{ path: 'messages[0].content', text: 'Project Falcon uses sk-proj-abcdefghijklmnopqrstuvwx as its key.' }],
      final: true,
    });
    expect(answer).toMatchObject({ blocked: true, blocked_by_policy: 'block-keys', blocked_by_check: 'keys' });
    expect(answer.decisions.map((decision) => [decision.policy, decision.action, decision.enforced, decision.entity])).toEqual([
      ['watch-words', 'ACTION_BLOCK', false, 'codename'],
      ['block-keys', 'ACTION_BLOCK', true, 'openai_api_key'],
    ]);
    // A monitor policy changes nothing: the text is as sent.
    expect(answer.texts[0]!.text).toContain('Project Falcon');
  });

  it('holds back a tail that may be the start of a card on a stream window, and decides on it with the next', async () => {
    const first = await check(b, {
      request_id: 'req_3',
      point: 'POINT_OUTPUT',
      policies: ['mask-cards'],
      texts: [{ path: 'choices[0].delta.content', text: 'Your card is 4111 1111' }],
      final: false,
    });
    // The digits are held (with the space before them, where the PII check holds that too).
    expect(first.texts[0]!.text!.trimEnd()).toBe('Your card is');
    expect(first.texts[0]!.text!.length + (first.texts[0]!.held_chars ?? 0)).toBe('Your card is 4111 1111'.length);
    expect(first.decisions).toEqual([]);
    const next = await check(b, {
      request_id: 'req_3',
      point: 'POINT_OUTPUT',
      policies: ['mask-cards'],
      texts: [{ path: 'choices[0].delta.content', text: '4111 1111 1111 1111, thanks' }],
      final: true,
    });
    expect(next.texts[0]).toMatchObject({ text: '<CARD_1>, thanks', held_chars: 0 });
  });

  it('checks only the policies named and the checks at the point', async () => {
    const answer = await check(b, {
      request_id: 'req_4',
      point: 'POINT_TOOL_RESULT',
      policies: ['mask-cards', 'block-keys', 'unknown'],
      texts: [{ path: 'result', text: `${CARD} sk-proj-abcdefghijklmnopqrstuvwx` }],
      final: true,
    });
    expect(answer).toMatchObject({ blocked: false, decisions: [] });
    expect(answer.texts[0]!.text).toBe(`${CARD} sk-proj-abcdefghijklmnopqrstuvwx`);
  });

  it('decides by on_error when an outside check cannot run: allow records the error, block blocks', async () => {
    const external = {
      name: 'moderation',
      points: ['POINT_INPUT' as const],
      action: 'ACTION_BLOCK' as const,
      external: { service: 'openai_moderation', base_url: 'http://127.0.0.1:9', credential: 'sk-test-credential-0123456789', deadline_ms: 500 },
    };
    await put(a, policy('outside-allow', { checks: [external] }));
    const stored = await put(a, policy('outside-block', { on_error: 'ON_ERROR_BLOCK', checks: [external] }));
    // The credential is stored sealed and never shown.
    expect(JSON.stringify(stored)).not.toContain('sk-test-credential');
    expect(JSON.stringify(await redis.hgetall(`${prefix}{policies}`))).not.toContain('sk-test-credential');
    expect(JSON.stringify(await redis.xrange(`${prefix}auth:audit`, '-', '+'))).not.toContain('sk-test-credential');
    await until(async () => {
      const allowed = await check(b, {
        request_id: 'req_5',
        point: 'POINT_INPUT',
        policies: ['outside-allow'],
        texts: [{ path: 'p', text: 'hello' }],
        final: true,
      });
      expect(allowed.blocked).toBe(false);
      expect(allowed.decisions).toEqual([
        expect.objectContaining({
          policy: 'outside-allow',
          action: 'ACTION_FLAG',
          error: expect.stringMatching(/unavailable|deadline_exceeded|upstream_error/),
        }),
      ]);
    });
    // Applied on the other replica once its reload read it.
    await until(async () => {
      const blocked = await check(b, {
        request_id: 'req_6',
        point: 'POINT_INPUT',
        policies: ['outside-block'],
        texts: [{ path: 'p', text: 'hello' }],
        final: true,
      });
      expect(blocked).toMatchObject({ blocked: true, blocked_by_policy: 'outside-block', blocked_by_check: 'moderation' });
    });
  });

  it('refuses a call past GUARD_MAX_TEXT_CHARS or without a point, so the edge applies on_error', async () => {
    expect(
      (
        await rejectedWith(
          GatewayError,
          check(b, { request_id: 'r', point: 'POINT_INPUT', policies: ['mask-cards'], texts: [{ path: 'p', text: 'x'.repeat(100_001) }], final: true }),
        )
      ).reason,
    ).toBe('invalid_request');
    expect((await rejectedWith(GatewayError, check(b, { request_id: 'r', policies: ['mask-cards'], texts: [], final: true }))).reason).toBe('invalid_request');
  });
});
