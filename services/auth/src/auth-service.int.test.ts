import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callUnary, createClient, GatewayError, GrpcStatus, StreamedCalls } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import {
  loadGatewayGrpc,
  type CheckKeyRequest,
  type CheckKeyResponseOutput,
  type CreateKeyRequest,
  type CreateKeyResponseOutput,
  type GetKeyRequest,
  type KeyInfoOutput,
  type ListKeysRequest,
  type ListKeysResponseOutput,
  type RevokeKeyRequest,
  type SettleUsageRequest,
  type SettleUsageResponseOutput,
  type UpdateKeyRequest,
} from '@gateway/proto';
import { eventually, redisUrl, startTcpProxy } from '@gateway/testing';
import { ensureBootstrapKey } from './keys/bootstrap-key.js';
import { INVALID_KEY_MESSAGE, REVOKED_KEY_MESSAGE } from './quota/decision-handlers.js';
import { hashSecret } from './shared/ids.js';
import { TeamStore } from './teams/team-store.js';
import { startAuthServer } from './testing/auth-server.js';
import { connectRedis, createRedis, deleteMatching, keysMatching, parseRedisUrl, type RedisClient } from '@gateway/redis';

const logger = createLogger('auth-test', 'silent');

/** A running auth service on port 0 with its own Redis prefix, and a real client to it. */
async function startAuth(url: string, prefix: string, options: { reachable?: boolean } = {}) {
  const redis = createRedis(url, logger);
  // A cluster's client learns the slots first; commands fail until then (no offline queue).
  if (options.reachable !== false) await eventually(() => redis.status === 'ready', 'Redis to be ready', 10_000, 20);
  const { server, address, keys } = await startAuthServer(redis, prefix);
  const client = createClient(loadGatewayGrpc().gateway.auth.v1.AuthService, address);
  // Decisions over one Decide stream only: a call made while it is not open fails instead of going unary.
  const notOnTheStream = () => Promise.reject(new Error('the Decide stream is not open'));
  const decisions = new StreamedCalls<{ check_key: [CheckKeyRequest, CheckKeyResponseOutput]; settle_usage: [SettleUsageRequest, SettleUsageResponseOutput] }>({
    open: () => client.Decide(),
    streams: 1,
    unary: { check_key: notOnTheStream, settle_usage: notOnTheStream },
  });
  return {
    redis,
    keys,
    client,
    decisions,
    /** CheckKey and SettleUsage as messages on the Decide stream, once it is open. */
    streamed: {
      reserve: async (request: CheckKeyRequest) => {
        await eventually(() => decisions.openStreams === 1, 'the Decide stream to open');
        return decisions.call('check_key', request, { deadlineMs: 3_000 });
      },
      settle: async (request: SettleUsageRequest) => {
        await eventually(() => decisions.openStreams === 1, 'the Decide stream to open');
        return decisions.call('settle_usage', request, { deadlineMs: 3_000 });
      },
    },
    checkKey: (apiKey: string) =>
      callUnary<CheckKeyRequest, CheckKeyResponseOutput>(client, client.CheckKey, { api_key: apiKey, request_id: randomUUID() }, { deadlineMs: 3_000 }),
    createKey: (request: CreateKeyRequest) => callUnary<CreateKeyRequest, CreateKeyResponseOutput>(client, client.CreateKey, request, { deadlineMs: 3_000 }),
    listKeys: () => callUnary<ListKeysRequest, ListKeysResponseOutput>(client, client.ListKeys, {}, { deadlineMs: 3_000 }),
    revokeKey: (keyId: string) => callUnary<RevokeKeyRequest, KeyInfoOutput>(client, client.RevokeKey, { key_id: keyId }, { deadlineMs: 3_000 }),
    reserve: (request: CheckKeyRequest) => callUnary<CheckKeyRequest, CheckKeyResponseOutput>(client, client.CheckKey, request, { deadlineMs: 3_000 }),
    getKey: (keyId: string) => callUnary<GetKeyRequest, KeyInfoOutput>(client, client.GetKey, { key_id: keyId }, { deadlineMs: 3_000 }),
    updateKey: (request: UpdateKeyRequest) => callUnary<UpdateKeyRequest, KeyInfoOutput>(client, client.UpdateKey, request, { deadlineMs: 3_000 }),
    settle: (request: SettleUsageRequest) =>
      callUnary<SettleUsageRequest, SettleUsageResponseOutput>(client, client.SettleUsage, request, { deadlineMs: 3_000 }),
    shutdown: (graceMs: number) => server.shutdown(graceMs),
    stop: async () => {
      await decisions.close(500);
      client.close();
      await server.shutdown(1_000);
      redis.disconnect();
    },
  };
}

describe('AuthService', () => {
  const prefix = `test-${randomUUID()}:auth:`;
  let auth: Awaited<ReturnType<typeof startAuth>>;
  let inspector: RedisClient;

  beforeAll(async () => {
    const url = await redisUrl();
    auth = await startAuth(url, prefix);
    inspector = connectRedis(url);
    await eventually(() => auth.redis.status === 'ready', 'redis to be ready');
  });

  afterAll(async () => {
    await deleteMatching(inspector, `${prefix}*`);
    await inspector.quit();
    await auth.stop();
  });

  const createKey = (plan: 'PLAN_STARTER' | 'PLAN_PRO' | 'PLAN_ENTERPRISE', name = 'test', secret?: string) => auth.createKey({ plan, name, secret });

  it('allows a created key with its plan and limits', async () => {
    const created = await createKey('PLAN_STARTER', 'alice');
    expect(created.secret).toMatch(/^br-[A-Za-z0-9]{40}$/);
    expect(created.key).toMatchObject({ plan: 'PLAN_STARTER', name: 'alice', revoked: false });
    expect(created.key?.key_id).toMatch(/^key_[A-Za-z0-9]{16}$/);

    const decision = await auth.checkKey(created.secret!);
    expect(decision).toMatchObject({
      decision: 'DECISION_ALLOW',
      key_id: created.key?.key_id,
      plan: 'PLAN_STARTER',
      requests: { limit: 60, remaining: 59 },
      tokens: { limit: 100_000, remaining: 100_000 },
    });
  });

  it('reports unlimited limits for enterprise and pro limits for pro', async () => {
    const enterprise = await createKey('PLAN_ENTERPRISE');
    expect(await auth.checkKey(enterprise.secret!)).toMatchObject({
      decision: 'DECISION_ALLOW',
      plan: 'PLAN_ENTERPRISE',
      requests: { unlimited: true },
      tokens: { unlimited: true },
    });
    const pro = await createKey('PLAN_PRO');
    expect(await auth.checkKey(pro.secret!)).toMatchObject({ plan: 'PLAN_PRO', requests: { limit: 1_000 }, tokens: { limit: 2_000_000 } });
  });

  it('denies unknown, malformed and empty keys without echoing them', async () => {
    const unknown = `br-${'Z'.repeat(40)}`;
    for (const apiKey of [unknown, 'br-short', `sk-${'a'.repeat(40)}`, '', `br-${'a'.repeat(5000)}`]) {
      const decision = await auth.checkKey(apiKey);
      expect(decision.decision).toBe('DECISION_DENY_INVALID_KEY');
      expect(decision.message).toBe(INVALID_KEY_MESSAGE);
      expect(decision.deny_reason).toBe('DENY_REASON_UNKNOWN_KEY');
      expect(decision.key_id).toBeFalsy();
    }
  });

  it('denies a revoked key and lists it as revoked, never with a secret', async () => {
    const created = await createKey('PLAN_PRO', 'to-revoke');
    const keyId = created.key!.key_id!;
    const revoked = await auth.revokeKey(keyId);
    expect(revoked).toMatchObject({ key_id: keyId, revoked: true });

    const decision = await auth.checkKey(created.secret!);
    expect(decision).toMatchObject({ decision: 'DECISION_DENY_INVALID_KEY', deny_reason: 'DENY_REASON_REVOKED', message: REVOKED_KEY_MESSAGE });

    const listed = await auth.listKeys();
    expect(listed.keys.find((key) => key.key_id === keyId)).toMatchObject({ revoked: true, plan: 'PLAN_PRO', name: 'to-revoke' });
    expect(JSON.stringify(listed)).not.toContain('br-');
  });

  it('answers NOT_FOUND when revoking an unknown key id', async () => {
    const error = await auth.revokeKey('key_doesnotexist00').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ code: GrpcStatus.NOT_FOUND, reason: 'key_not_found' });
  });

  it('refuses CreateKey without a plan or with a malformed or taken secret', async () => {
    const noPlan = await auth.createKey({ name: 'x' }).catch((caught: unknown) => caught);
    expect(noPlan).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param: 'plan' });
    const badSecret = await createKey('PLAN_STARTER', 'x', 'br-short').catch((caught: unknown) => caught);
    expect(badSecret).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param: 'secret' });
    const secret = `br-${randomUUID().replaceAll('-', '')}`;
    expect((await createKey('PLAN_STARTER', 'chosen', secret)).secret).toBe(secret);
    const taken = await createKey('PLAN_PRO', 'again', secret).catch((caught: unknown) => caught);
    expect(taken).toMatchObject({ code: GrpcStatus.ALREADY_EXISTS, reason: 'key_exists' });
    expect(await auth.checkKey(secret)).toMatchObject({ decision: 'DECISION_ALLOW', plan: 'PLAN_STARTER' });
  });

  it('stores only the SHA-256 of secrets: no Redis key or value contains one', async () => {
    const secrets = [(await createKey('PLAN_STARTER')).secret!, (await createKey('PLAN_PRO')).secret!];
    await auth.checkKey(secrets[0]);
    const names = await keysMatching(inspector, `${prefix}*`);
    expect(names).toContain(`${prefix}key:${hashSecret(secrets[0])}`);
    const dump: string[] = [];
    for (const name of names) {
      const type = await inspector.type(name);
      if (type === 'hash') dump.push(name, ...Object.entries(await inspector.hgetall(name)).flat());
      else if (type === 'set') dump.push(name, ...(await inspector.smembers(name)));
      else if (type === 'zset') dump.push(name, ...(await inspector.zrange(name, 0, -1)));
      else if (type === 'stream') dump.push(name, JSON.stringify(await inspector.xrange(name, '-', '+')));
      else dump.push(name, (await inspector.get(name)) ?? '');
    }
    const text = dump.join('\n');
    for (const secret of secrets) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secret.slice(3));
    }
  });

  it('records last use at most once a minute', async () => {
    const created = await createKey('PLAN_STARTER');
    const name = `${prefix}record:{${created.key!.key_id}}`;
    expect(await inspector.hget(name, 'last_used_at_ms')).toBeNull();
    await auth.checkKey(created.secret!);
    const first = await eventually(() => inspector.hget(name, 'last_used_at_ms').then((value) => value ?? undefined), 'last use to be recorded');
    await auth.checkKey(created.secret!);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await inspector.hget(name, 'last_used_at_ms')).toBe(first);
  });

  it('ensures the bootstrap key idempotently and never revives a revoked one', async () => {
    const secret = `br-${randomUUID().replaceAll('-', '')}`;
    const first = await ensureBootstrapKey(auth.keys, secret, 'starter', logger);
    const again = await ensureBootstrapKey(auth.keys, secret, 'starter', logger);
    expect(again.key_id).toBe(first.key_id);
    expect((await auth.keys.list()).filter((key) => key.key_id === first.key_id)).toHaveLength(1);

    const upgraded = await ensureBootstrapKey(auth.keys, secret, 'pro', logger);
    expect(upgraded).toMatchObject({ key_id: first.key_id, plan: 'pro' });
    expect(await auth.checkKey(secret)).toMatchObject({ decision: 'DECISION_ALLOW', key_id: first.key_id, plan: 'PLAN_PRO' });

    await auth.keys.revoke(first.key_id);
    const afterRevoke = await ensureBootstrapKey(auth.keys, secret, 'pro', logger);
    expect(afterRevoke).toMatchObject({ key_id: first.key_id, revoked: true });
    expect((await auth.checkKey(secret)).decision).toBe('DECISION_DENY_INVALID_KEY');
  });

  it('reserves, reports the state and settles over gRPC, once', async () => {
    const created = await createKey('PLAN_STARTER');
    const reservationId = randomUUID();
    const decision = await auth.reserve({ api_key: created.secret!, request_id: 'r1', reserve_tokens: 40_000, reservation_id: reservationId });
    expect(decision).toMatchObject({
      decision: 'DECISION_ALLOW',
      reservation_id: `${created.key!.key_id}:${reservationId}`,
      requests: { remaining: 59 },
      tokens: { remaining: 60_000, reset_ms: 60_000 },
    });
    // The same reservation id again reserves nothing more.
    expect(await auth.reserve({ api_key: created.secret!, request_id: 'r1', reserve_tokens: 40_000, reservation_id: reservationId })).toMatchObject({
      requests: { remaining: 59 },
      tokens: { remaining: 60_000 },
    });
    // check_only counts nothing.
    expect(await auth.reserve({ api_key: created.secret!, check_only: true })).toMatchObject({
      decision: 'DECISION_ALLOW',
      reservation_id: '',
      requests: { remaining: 59 },
    });

    const tooMuch = await auth.reserve({ api_key: created.secret!, reserve_tokens: 70_000, reservation_id: randomUUID() });
    expect(tooMuch).toMatchObject({ decision: 'DECISION_DENY_TOKEN_LIMIT', tokens: { remaining: 60_000 } });
    expect(tooMuch.message).toMatch(/^Rate limit reached on tokens per minute: limit 100000, used 40000, requested 70000\. Please try again in (59|60)s\.$/);
    expect(tooMuch.retry_after_ms).toBeGreaterThan(58_000);
    expect(tooMuch.retry_after_ms).toBeLessThanOrEqual(60_000);

    expect(await auth.settle({ reservation_id: decision.reservation_id!, actual_tokens: 900 })).toEqual({
      outcome: 'SETTLE_OUTCOME_SETTLED',
      delta_tokens: -39_100,
      tokens_in_window: 900,
    });
    expect(await auth.settle({ reservation_id: decision.reservation_id!, actual_tokens: 900 })).toMatchObject({
      outcome: 'SETTLE_OUTCOME_ALREADY_SETTLED',
      tokens_in_window: 900,
    });
    expect(await auth.reserve({ api_key: created.secret!, reserve_tokens: 70_000, reservation_id: randomUUID() })).toMatchObject({
      decision: 'DECISION_ALLOW',
      tokens: { remaining: 29_100 },
    });

    const tooLarge = await auth.reserve({ api_key: created.secret!, reserve_tokens: 100_001 });
    expect(tooLarge).toMatchObject({ decision: 'DECISION_DENY_REQUEST_TOO_LARGE', reservation_id: '' });
    expect(tooLarge.message).toBe(
      'Request too large: it needs 100001 tokens (the prompt plus the completion budget, max_tokens), but this key allows 100000 tokens per minute. Reduce max_tokens or the prompt.',
    );

    const malformed = await auth.settle({ reservation_id: 'nope', actual_tokens: 1 }).catch((caught: unknown) => caught);
    expect(malformed).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param: 'reservation_id' });
    const enterprise = await createKey('PLAN_ENTERPRISE');
    expect(await auth.reserve({ api_key: enterprise.secret!, reserve_tokens: 10, reservation_id: randomUUID() })).toMatchObject({
      decision: 'DECISION_ALLOW',
      reservation_id: '',
      requests: { unlimited: true },
    });
  });

  it("holds a request's cost bound against the key's budget until it is settled, even for a key without rate limits", async () => {
    // Enterprise: no rate limits, so only the budget's hold needs a reservation to release.
    const created = await auth.createKey({ plan: 'PLAN_ENTERPRISE', name: 'budgeted', daily_budget_override: { micro_usd: 100 } });
    const micro = (amount: number) => String(amount * 1_000_000);
    const first = await auth.reserve({ api_key: created.secret!, reserve_tokens: 10, reservation_id: randomUUID(), cost_bound_pico_usd: micro(60) });
    expect(first).toMatchObject({ decision: 'DECISION_ALLOW', budget: { limited: true, remaining_pico_usd: 100_000_000 } });
    expect(first.reservation_id).toMatch(new RegExp(`^${created.key!.key_id}:`));
    // 40 left beside the first: a bound of 60 does not fit; 40 does, and the remaining reported is net of the first.
    const refused = await auth.reserve({ api_key: created.secret!, reserve_tokens: 10, reservation_id: randomUUID(), cost_bound_pico_usd: micro(60) });
    expect(refused).toMatchObject({ decision: 'DECISION_DENY_BUDGET', reservation_id: '', budget: { remaining_pico_usd: 40_000_000 } });
    expect(refused.message).toMatch(/budget/);
    // The first ends without usage: its hold goes, and the second fits.
    expect(await auth.settle({ reservation_id: first.reservation_id!, actual_tokens: 0 })).toMatchObject({ outcome: 'SETTLE_OUTCOME_SETTLED' });
    expect(await auth.reserve({ api_key: created.secret!, reserve_tokens: 10, reservation_id: randomUUID(), cost_bound_pico_usd: micro(60) })).toMatchObject({
      decision: 'DECISION_ALLOW',
      budget: { remaining_pico_usd: 100_000_000 },
    });
    const negative = await auth.reserve({ api_key: created.secret!, reserve_tokens: 10, cost_bound_pico_usd: -1 }).catch((caught: unknown) => caught);
    expect(negative).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param: 'cost_bound_pico_usd' });
  });

  it('creates, reads and updates keys with overrides and a routing policy', async () => {
    const created = await auth.createKey({
      plan: 'PLAN_PRO',
      name: 'tuned',
      requests_per_minute_override: { per_minute: 5 },
      tokens_per_minute_override: { unlimited: true },
      routing_policy: 'quality',
    });
    expect(created.key).toMatchObject({
      requests_per_minute_override: { per_minute: 5 },
      tokens_per_minute_override: { unlimited: true },
      routing_policy: 'quality',
      requests_per_minute: { per_minute: 5 },
      tokens_per_minute: { unlimited: true },
    });
    const keyId = created.key!.key_id!;
    expect(await auth.checkKey(created.secret!)).toMatchObject({ routing_policy: 'quality', requests: { limit: 5 }, tokens: { unlimited: true } });

    // Absent fields stay; plan_default and an empty policy remove.
    const updated = await auth.updateKey({ key_id: keyId, plan: 'PLAN_STARTER', requests_per_minute_override: { plan_default: true }, routing_policy: '' });
    expect(updated).toMatchObject({
      name: 'tuned',
      plan: 'PLAN_STARTER',
      routing_policy: '',
      requests_per_minute: { per_minute: 60 },
      tokens_per_minute_override: { unlimited: true },
    });
    expect(updated.requests_per_minute_override).toBeFalsy();
    const renamed = await auth.updateKey({ key_id: keyId, name: '' });
    expect(renamed).toMatchObject({ name: '', plan: 'PLAN_STARTER' });
    expect(await auth.getKey(keyId)).toMatchObject({ key_id: keyId, name: '', plan: 'PLAN_STARTER' });

    expect(await auth.updateKey({ key_id: keyId, requests_per_minute_override: { per_minute: 0 } }).catch((caught: unknown) => caught)).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      param: 'requests_per_minute_override',
    });
    expect(await auth.updateKey({ key_id: keyId, routing_policy: 'no spaces' }).catch((caught: unknown) => caught)).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      param: 'routing_policy',
    });
    expect(await auth.getKey('key_0000000000000000').catch((caught: unknown) => caught)).toMatchObject({ code: GrpcStatus.NOT_FOUND });
    expect(await auth.updateKey({ key_id: 'key_0000000000000000', name: 'x' }).catch((caught: unknown) => caught)).toMatchObject({
      code: GrpcStatus.NOT_FOUND,
    });
  });

  it('keeps a key’s model allow-list and refuses a model outside it, over CheckKey and the Decide stream, counting nothing', async () => {
    const created = await auth.createKey({ plan: 'PLAN_PRO', name: 'listed', allowed_models: { models: ['sim-*'] } });
    const keyId = created.key!.key_id!;
    expect(created.key?.allowed_models).toEqual({ models: ['sim-*'] });
    const request = (model: string) => ({ api_key: created.secret!, request_id: randomUUID(), reserve_tokens: 5, reservation_id: randomUUID(), model });
    const denied = await auth.reserve(request('gpt-4o'));
    expect(denied).toMatchObject({
      decision: 'DECISION_DENY_MODEL_NOT_ALLOWED',
      message: 'This API key is not allowed to use the model `gpt-4o`.',
      reservation_id: '',
      model_allow_lists: [{ models: ['sim-*'] }],
    });
    expect(await auth.streamed.reserve(request('gpt-4o'))).toMatchObject({ decision: 'DECISION_DENY_MODEL_NOT_ALLOWED' });
    // Two refusals counted nothing: the first allowed request is the minute's first.
    expect(await auth.reserve(request('sim-mini'))).toMatchObject({ decision: 'DECISION_ALLOW', requests: { limit: 1000, remaining: 999 } });
    expect(await auth.reserve(request(''))).toMatchObject({ decision: 'DECISION_ALLOW', model_allow_lists: [{ models: ['sim-*'] }] });

    expect(
      await auth.updateKey({ key_id: keyId, allowed_models: { models: ['x'] }, clear_allowed_models: true }).catch((caught: unknown) => caught),
    ).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param: 'allowed_models' });
    expect(await auth.updateKey({ key_id: keyId, allowed_models: { models: ['gpt*4'] } }).catch((caught: unknown) => caught)).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      param: 'allowed_models',
    });
    expect(await auth.updateKey({ key_id: keyId, allowed_models: { models: ['gpt-4o'] } })).toMatchObject({ allowed_models: { models: ['gpt-4o'] } });
    expect(await auth.reserve(request('gpt-4o'))).toMatchObject({ decision: 'DECISION_ALLOW' });
    const cleared = await auth.updateKey({ key_id: keyId, clear_allowed_models: true });
    expect(cleared.allowed_models).toBeFalsy();
    expect(await auth.reserve(request('claude-sonnet-4'))).toMatchObject({ decision: 'DECISION_ALLOW', model_allow_lists: [] });
  });

  it("answers catalog_fallbacks on ALLOW from the plan, or the key's override, in one Redis round trip", async () => {
    const starter = await auth.createKey({ plan: 'PLAN_STARTER', name: 'plan-default' });
    expect(starter.key).toMatchObject({ catalog_fallbacks: false });
    expect(starter.key?.catalog_fallbacks_override).toBeUndefined();
    expect(await auth.checkKey(starter.secret!)).toMatchObject({ decision: 'DECISION_ALLOW', catalog_fallbacks: false });
    const enterprise = await auth.createKey({ plan: 'PLAN_ENTERPRISE', name: 'plan-on' });
    expect(enterprise.key).toMatchObject({ catalog_fallbacks: true });
    expect(await auth.checkKey(enterprise.secret!)).toMatchObject({ decision: 'DECISION_ALLOW', catalog_fallbacks: true });

    const on = await auth.createKey({ plan: 'PLAN_PRO', name: 'override-on', catalog_fallbacks_override: true });
    expect(on.key).toMatchObject({ catalog_fallbacks_override: true, catalog_fallbacks: true });
    const keyId = on.key!.key_id!;
    const sent = vi.spyOn(auth.redis, 'sendCommand');
    try {
      expect(await auth.checkKey(on.secret!)).toMatchObject({ decision: 'DECISION_ALLOW', plan: 'PLAN_PRO', catalog_fallbacks: true });
      // One script call: EVALSHA, or EVAL the first time a node meets the script (a cluster's).
      expect(sent.mock.calls.map(([command]) => (command as { name: string }).name)).toEqual([expect.stringMatching(/^eval(sha)?$/)]);
    } finally {
      sent.mockRestore();
    }

    // An override of false beats a plan that says true; the plan changes under it, it stays.
    const off = await auth.updateKey({ key_id: keyId, plan: 'PLAN_ENTERPRISE', catalog_fallbacks_override: false });
    expect(off).toMatchObject({ plan: 'PLAN_ENTERPRISE', catalog_fallbacks_override: false, catalog_fallbacks: false });
    expect(await auth.checkKey(on.secret!)).toMatchObject({ decision: 'DECISION_ALLOW', catalog_fallbacks: false });
    // Absent: unchanged.
    expect(await auth.updateKey({ key_id: keyId, name: 'renamed' })).toMatchObject({ catalog_fallbacks_override: false, catalog_fallbacks: false });

    // Back to the plan's (enterprise: on).
    const cleared = await auth.updateKey({ key_id: keyId, catalog_fallbacks_plan_default: true });
    expect(cleared.catalog_fallbacks_override).toBeUndefined();
    expect(cleared.catalog_fallbacks).toBe(true);
    expect(await auth.getKey(keyId)).toMatchObject({ catalog_fallbacks: true });
    expect(await auth.checkKey(on.secret!)).toMatchObject({ decision: 'DECISION_ALLOW', catalog_fallbacks: true });

    expect(
      await auth.updateKey({ key_id: keyId, catalog_fallbacks_override: true, catalog_fallbacks_plan_default: true }).catch((caught: unknown) => caught),
    ).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param: 'catalog_fallbacks_override' });
  });

  it("returns the key's and its team's MCP tool allow-lists with a decision asked for them, and follows each change at once", async () => {
    const team = await new TeamStore(auth.redis, { prefix }).create({ name: 'tools', allowed_mcp_tools: ['github', 'docs__search'] });
    const created = await auth.createKey({ plan: 'PLAN_PRO', team_id: team.team_id, allowed_mcp_tools: { tools: ['github__get_*'] } });
    const keyId = created.key!.key_id!;
    expect(created.key?.allowed_mcp_tools).toEqual({ tools: ['github__get_*'] });
    const decide = (mcp: boolean) => auth.reserve({ api_key: created.secret!, request_id: randomUUID(), check_only: true, mcp });
    expect(await decide(true)).toMatchObject({
      decision: 'DECISION_ALLOW',
      mcp_tool_allow_lists: [{ tools: ['github__get_*'] }, { tools: ['github', 'docs__search'] }],
    });
    // Not read for any other request.
    expect((await decide(false)).mcp_tool_allow_lists).toEqual([]);
    const cleared = await auth.updateKey({ key_id: keyId, clear_allowed_mcp_tools: true });
    expect(cleared.allowed_mcp_tools).toBeUndefined();
    expect((await decide(true)).mcp_tool_allow_lists).toEqual([{ tools: ['github', 'docs__search'] }]);
    await auth.updateKey({ key_id: keyId, allowed_mcp_tools: { tools: [] } });
    expect((await decide(true)).mcp_tool_allow_lists).toEqual([{ tools: [] }, { tools: ['github', 'docs__search'] }]);
    expect(await auth.updateKey({ key_id: keyId, allowed_mcp_tools: { tools: ['git*hub'] } }).catch((caught: unknown) => caught)).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      param: 'allowed_mcp_tools',
    });
  });

  it('decides over the Decide stream exactly as over CheckKey and SettleUsage, on the same counters', async () => {
    const created = await createKey('PLAN_STARTER');
    const secret = created.secret!;
    const streamedAllow = await auth.streamed.reserve({ api_key: secret, request_id: 's1', reserve_tokens: 40_000, reservation_id: randomUUID() });
    const unaryAllow = await auth.reserve({ api_key: secret, request_id: 'u1', reserve_tokens: 10, reservation_id: randomUUID() });
    expect(streamedAllow).toMatchObject({
      decision: 'DECISION_ALLOW',
      key_id: created.key!.key_id,
      plan: 'PLAN_STARTER',
      catalog_fallbacks: unaryAllow.catalog_fallbacks,
      requests: { limit: 60, remaining: 59 },
      tokens: { remaining: 60_000 },
    });
    expect(unaryAllow).toMatchObject({ decision: 'DECISION_ALLOW', requests: { remaining: 58 }, tokens: { remaining: 59_990 } });
    expect(Object.keys(streamedAllow).sort()).toEqual(Object.keys(unaryAllow).sort());

    // A denial with its retry-after is payload on both paths.
    const streamedTooMuch = await auth.streamed.reserve({ api_key: secret, reserve_tokens: 70_000, reservation_id: randomUUID() });
    const unaryTooMuch = await auth.reserve({ api_key: secret, reserve_tokens: 70_000, reservation_id: randomUUID() });
    for (const denial of [streamedTooMuch, unaryTooMuch]) {
      expect(denial).toMatchObject({ decision: 'DECISION_DENY_TOKEN_LIMIT', tokens: { remaining: 59_990 } });
      expect(denial.message).toMatch(/^Rate limit reached on tokens per minute: limit 100000, used 40010, requested 70000\. Please try again in (59|60)s\.$/);
      expect(denial.retry_after_ms).toBeGreaterThan(58_000);
      expect(denial.retry_after_ms).toBeLessThanOrEqual(60_000);
    }

    // The requests per minute run out over the stream (calls in flight together), then both paths deny.
    const burst = await Promise.all(
      Array.from({ length: 60 }, () => auth.streamed.reserve({ api_key: secret, reserve_tokens: 1, reservation_id: randomUUID() })),
    );
    expect(burst.filter((decision) => decision.decision === 'DECISION_ALLOW')).toHaveLength(58);
    for (const denial of [
      await auth.streamed.reserve({ api_key: secret, reserve_tokens: 1, reservation_id: randomUUID() }),
      await auth.reserve({ api_key: secret, reserve_tokens: 1, reservation_id: randomUUID() }),
    ]) {
      expect(denial).toMatchObject({ decision: 'DECISION_DENY_REQUEST_LIMIT', requests: { limit: 60, remaining: 0 } });
      expect(denial.retry_after_ms).toBeGreaterThan(0);
      expect(denial.retry_after_ms).toBeLessThanOrEqual(60_000);
    }

    expect(await auth.streamed.reserve({ api_key: `br-${'x'.repeat(40)}` })).toEqual(await auth.reserve({ api_key: `br-${'x'.repeat(40)}` }));
    expect(await auth.streamed.settle({ reservation_id: streamedAllow.reservation_id!, actual_tokens: 900 })).toEqual({
      outcome: 'SETTLE_OUTCOME_SETTLED',
      delta_tokens: -39_100,
      tokens_in_window: 910 + 58,
    });
    expect(await auth.streamed.settle({ reservation_id: streamedAllow.reservation_id!, actual_tokens: 900 })).toMatchObject({
      outcome: 'SETTLE_OUTCOME_ALREADY_SETTLED',
    });
    const malformed = await auth.streamed.settle({ reservation_id: 'nope', actual_tokens: 1 }).catch((caught: unknown) => caught);
    expect(malformed).toBeInstanceOf(GatewayError);
    expect(malformed).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'invalid_request', param: 'reservation_id' });
  });

  it('ends its Decide streams on shutdown without waiting out its grace', async () => {
    const leaving = await startAuth(await redisUrl(), prefix);
    try {
      const created = await createKey('PLAN_PRO');
      expect(await leaving.streamed.reserve({ api_key: created.secret!, reserve_tokens: 1, reservation_id: randomUUID() })).toMatchObject({
        decision: 'DECISION_ALLOW',
      });
      // A grace far longer than the test may take: a shutdown that waited for the open stream to
      // end by itself would wait it out and fail the bound (or time the test out).
      const started = Date.now();
      await leaving.shutdown(120_000);
      expect(Date.now() - started).toBeLessThan(15_000);
      await eventually(() => leaving.decisions.openStreams === 0, 'the caller to see its stream end');
    } finally {
      await leaving.stop();
    }
  });

  it('answers UNAVAILABLE quickly, never a decision, when Redis is unreachable', async () => {
    const down = await startAuth('redis://127.0.0.1:1', `test-${randomUUID()}:auth:`, { reachable: false });
    try {
      // Quickly = before the call's 3 s deadline: a call that waited on Redis would end with
      // DEADLINE_EXCEEDED, not UNAVAILABLE.
      const error = await down.checkKey(`br-${'a'.repeat(40)}`).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GatewayError);
      expect(error).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'auth_unavailable', message: 'The key service cannot decide right now.' });
      // The same over the Decide stream: a failure to decide, never a decision.
      const streamed = await down.streamed.reserve({ api_key: `br-${'a'.repeat(40)}`, reserve_tokens: 1 }).catch((caught: unknown) => caught);
      expect(streamed).toBeInstanceOf(GatewayError);
      expect(streamed).toMatchObject({
        code: GrpcStatus.UNAVAILABLE,
        reason: 'auth_unavailable',
        message: 'The key service cannot decide right now.',
        retryable: true,
      });
      // A malformed key needs no lookup, so it is still denied.
      expect((await down.checkKey('nope')).decision).toBe('DECISION_DENY_INVALID_KEY');
    } finally {
      await down.stop();
    }
  });

  // Through a TCP proxy to one server; a cluster's failover has a drill of its own.
  it.skipIf(parseRedisUrl(process.env.REDIS_URL ?? 'redis://x').cluster)('recovers by itself when Redis comes back', async () => {
    const target = new URL(await redisUrl());
    const proxy = await startTcpProxy(0, target.hostname, Number(target.port));
    const flaky = await startAuth(`redis://127.0.0.1:${proxy.port}`, prefix);
    try {
      await eventually(() => flaky.redis.status === 'ready', 'redis through the proxy to be ready');
      const created = await createKey('PLAN_STARTER');
      expect((await flaky.checkKey(created.secret!)).decision).toBe('DECISION_ALLOW');

      await proxy.close();
      const error = await flaky.checkKey(created.secret!).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: GrpcStatus.UNAVAILABLE });

      const reopened = await startTcpProxy(proxy.port, target.hostname, Number(target.port));
      try {
        const decision = await eventually(() => flaky.checkKey(created.secret!).catch(() => undefined), 'CheckKey to answer again', 10_000, 100);
        expect(decision).toMatchObject({ decision: 'DECISION_ALLOW', key_id: created.key?.key_id });
      } finally {
        await flaky.stop();
        await reopened.close();
      }
    } finally {
      await proxy.close();
    }
  });
});
