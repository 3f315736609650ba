/**
 * The AdminAccessService and the audit trail over real gRPC and Redis: admin tokens created,
 * checked, listed and revoked; stored only hashed (no Redis key or value holds a secret); every
 * change (keys, admin tokens) recorded with its actor, request id and public facts before and
 * after, never a secret or a secret's hash; the trail read newest first, filtered and paged.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CallActor, type CallOptions, callUnary, createClient, GrpcStatus, type GatewayServer } from '@gateway/grpc';
import {
  type AdminTokenInfoOutput,
  type CheckAdminTokenRequest,
  type CheckAdminTokenResponseOutput,
  type CreateAdminTokenRequest,
  type CreateAdminTokenResponseOutput,
  type CreateKeyRequest,
  type CreateKeyResponseOutput,
  type KeyInfoOutput,
  type ListAdminTokensResponseOutput,
  type ListAuditEntriesRequest,
  type ListAuditEntriesResponseOutput,
  loadGatewayGrpc,
  type RevokeAdminTokenRequest,
  type RevokeKeyRequest,
  type UpdateKeyRequest,
} from '@gateway/proto';
import { connectRedis, deleteMatching, keysMatching, type RedisClient } from '@gateway/redis';
import { eventually, redisUrl } from '@gateway/testing';
import { startAuthServer } from '../testing/auth-server.js';
import { AuditLog } from '@gateway/keyspace';
import { hashSecret } from '../shared/ids.js';

const ADMIN: CallActor = { subject: 'static-token', role: 'admin', via: 'static_token' };

/** Every value stored under `prefix`, whatever its type, as text; with the key names. */
async function everythingStored(redis: RedisClient, prefix: string): Promise<string> {
  const parts: string[] = [];
  for (const name of await keysMatching(redis, `${prefix}*`)) {
    parts.push(name);
    const type = await redis.type(name);
    if (type === 'string') parts.push((await redis.get(name)) ?? '');
    if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(name)));
    if (type === 'set') parts.push(JSON.stringify(await redis.smembers(name)));
    if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(name, '-', '+')));
  }
  return parts.join('\n');
}

describe('AdminAccessService and the audit trail', () => {
  const prefix = `test-${randomUUID()}:auth:`;
  let redis: RedisClient;
  let server: GatewayServer;
  let address: string;
  let access: InstanceType<ReturnType<typeof loadGatewayGrpc>['gateway']['auth']['v1']['AdminAccessService']>;
  let auth: InstanceType<ReturnType<typeof loadGatewayGrpc>['gateway']['auth']['v1']['AuthService']>;
  const options = (actor?: CallActor, requestId?: string): CallOptions => ({ deadlineMs: 3_000, actor, requestId });

  beforeAll(async () => {
    const url = await redisUrl();
    redis = connectRedis(url);
    await eventually(() => redis.status === 'ready', 'Redis to be ready', 10_000, 20);
    ({ server, address } = await startAuthServer(redis, prefix));
    const grpc = loadGatewayGrpc().gateway.auth.v1;
    access = createClient(grpc.AdminAccessService, address);
    auth = createClient(grpc.AuthService, address);
  });

  afterAll(async () => {
    access.close();
    auth.close();
    await server.shutdown(1_000);
    await deleteMatching(redis, `${prefix}*`);
    await redis.quit();
  });

  const createToken = (request: CreateAdminTokenRequest, actor: CallActor | undefined = ADMIN) =>
    callUnary<CreateAdminTokenRequest, CreateAdminTokenResponseOutput>(access, access.CreateAdminToken, request, options(actor, randomUUID()));
  const check = (secret: string) => callUnary<CheckAdminTokenRequest, CheckAdminTokenResponseOutput>(access, access.CheckAdminToken, { secret }, options());
  const revokeToken = (tokenId: string, actor: CallActor = ADMIN) =>
    callUnary<RevokeAdminTokenRequest, AdminTokenInfoOutput>(access, access.RevokeAdminToken, { token_id: tokenId }, options(actor));
  const audit = (request: ListAuditEntriesRequest = {}) =>
    callUnary<ListAuditEntriesRequest, ListAuditEntriesResponseOutput>(access, access.ListAuditEntries, request, options());

  it('creates a token whose secret resolves to its id and role until it is revoked', async () => {
    const created = await createToken({ role: 'ADMIN_ROLE_VIEWER', name: 'dashboards' });
    expect(created.secret).toMatch(/^bra-[A-Za-z0-9]{40}$/);
    const tokenId = created.token?.token_id;
    expect(tokenId).toMatch(/^adt_[A-Za-z0-9]{16}$/);
    expect(created.token).toMatchObject({ name: 'dashboards', role: 'ADMIN_ROLE_VIEWER', revoked: false, created_by: 'static-token' });
    expect(await check(created.secret!)).toEqual({ valid: true, token_id: tokenId, role: 'ADMIN_ROLE_VIEWER' });

    const listed = await callUnary<object, ListAdminTokensResponseOutput>(access, access.ListAdminTokens, {}, options());
    expect(listed.tokens.find((token) => token.token_id === tokenId)).toMatchObject({ name: 'dashboards', revoked: false });
    expect(JSON.stringify(listed)).not.toContain(created.secret);

    expect(await revokeToken(tokenId!)).toMatchObject({ token_id: tokenId, revoked: true });
    expect(await check(created.secret!)).toEqual({ valid: false });
    // A secret one letter off, an API key and garbage are no tokens: answers, not errors.
    for (const secret of [`${created.secret!.slice(0, -1)}x`, 'br-0123456789012345678901234567890123456789', '', 'bra-']) {
      expect(await check(secret)).toEqual({ valid: false });
    }
  });

  it('refuses a token without a role and the revocation of an unknown id', async () => {
    await expect(createToken({ name: 'no role' })).rejects.toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param: 'role' });
    await expect(revokeToken('adt_0000000000000000')).rejects.toMatchObject({ code: GrpcStatus.NOT_FOUND, reason: 'admin_token_not_found' });
  });

  it('stores no secret: only its SHA-256 names the index, in no value and no audit entry', async () => {
    const created = await createToken({ role: 'ADMIN_ROLE_ADMIN', name: 'ops' });
    const key = await callUnary<CreateKeyRequest, CreateKeyResponseOutput>(auth, auth.CreateKey, { plan: 'PLAN_PRO', name: 'k' }, options(ADMIN));
    await revokeToken(created.token!.token_id!);
    const stored = await everythingStored(redis, prefix);
    expect(stored).toContain(`${prefix}admin-token-secret:${hashSecret(created.secret!)}`);
    for (const secret of [created.secret!, key.secret!]) expect(stored).not.toContain(secret);

    const entries = JSON.stringify(await redis.xrange(`${prefix}audit`, '-', '+'));
    for (const secret of [created.secret!, key.secret!]) {
      expect(entries).not.toContain(secret);
      expect(entries).not.toContain(hashSecret(secret));
    }
  });

  it('records every key change with its actor, request id, and the key before and after', async () => {
    const viewerActor: CallActor = { subject: 'adt_AAAAAAAAAAAAAAAA', role: 'admin', via: 'admin_token' };
    const requestId = randomUUID();
    const created = await callUnary<CreateKeyRequest, CreateKeyResponseOutput>(
      auth,
      auth.CreateKey,
      { plan: 'PLAN_STARTER', name: 'before' },
      options(ADMIN, requestId),
    );
    const keyId = created.key!.key_id!;
    await callUnary<UpdateKeyRequest, KeyInfoOutput>(auth, auth.UpdateKey, { key_id: keyId, name: 'after', plan: 'PLAN_PRO' }, options(viewerActor));
    await callUnary<RevokeKeyRequest, KeyInfoOutput>(auth, auth.RevokeKey, { key_id: keyId }, options());

    const { entries } = await audit({ target_id: keyId });
    expect(entries.map((entry) => entry.action)).toEqual(['key.revoke', 'key.update', 'key.create']);
    const [revoke, update, create] = entries;
    expect(create).toMatchObject({ actor: ADMIN, target_id: keyId, request_id: requestId, before_json: '' });
    expect(JSON.parse(create!.after_json!)).toMatchObject({ key_id: keyId, name: 'before', plan: 'PLAN_STARTER', revoked: false });
    expect(update?.actor).toEqual(viewerActor);
    expect(JSON.parse(update!.before_json!)).toMatchObject({ name: 'before', plan: 'PLAN_STARTER' });
    expect(JSON.parse(update!.after_json!)).toMatchObject({ name: 'after', plan: 'PLAN_PRO' });
    // A call naming no actor is recorded as such, never dropped.
    expect(revoke?.actor).toEqual({ subject: 'unknown', role: 'unknown', via: 'unknown' });
    expect(JSON.parse(revoke!.before_json!)).toMatchObject({ revoked: false });
    expect(JSON.parse(revoke!.after_json!)).toMatchObject({ revoked: true });
    expect(Date.now() - revoke!.at_ms!).toBeLessThan(60_000);
    expect(JSON.stringify(entries)).not.toContain(created.secret);
  });

  it('records admin token changes, and filters by actor', async () => {
    const actor: CallActor = { subject: `sso-${randomUUID()}@example.com`, role: 'admin', via: 'sso_session' };
    const created = await createToken({ role: 'ADMIN_ROLE_VIEWER', name: 'audited' }, actor);
    const tokenId = created.token!.token_id!;
    await revokeToken(tokenId, actor);
    const { entries } = await audit({ actor_subject: actor.subject });
    expect(entries.map((entry) => [entry.action, entry.target_id])).toEqual([
      ['admin_token.revoke', tokenId],
      ['admin_token.create', tokenId],
    ]);
    expect(entries[1]!.actor).toEqual(actor);
    expect(JSON.parse(entries[0]!.before_json!)).toMatchObject({ token_id: tokenId, revoked: false, role: 'ADMIN_ROLE_VIEWER' });
    expect(JSON.parse(entries[0]!.after_json!)).toMatchObject({ token_id: tokenId, revoked: true });
  });

  it('pages through the trail newest first with a cursor, and refuses a forged cursor', async () => {
    const actor: CallActor = { subject: `pager-${randomUUID()}`, role: 'admin', via: 'static_token' };
    const ids: string[] = [];
    for (let index = 0; index < 5; index++) {
      const created = await callUnary<CreateKeyRequest, CreateKeyResponseOutput>(
        auth,
        auth.CreateKey,
        { plan: 'PLAN_STARTER', name: `p${index}` },
        options(actor),
      );
      ids.push(created.key!.key_id!);
    }
    const first = await audit({ actor_subject: actor.subject, limit: 2 });
    const second = await audit({ actor_subject: actor.subject, limit: 2, cursor: first.next_cursor });
    const third = await audit({ actor_subject: actor.subject, limit: 2, cursor: second.next_cursor });
    const seen = [...first.entries, ...second.entries, ...third.entries].map((entry) => entry.target_id);
    expect(seen).toEqual([...ids].reverse());
    expect(third.next_cursor ?? '').toBe('');
    await expect(audit({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param: 'cursor' });
  });

  it('does not read entries older than the retention', async () => {
    const log = new AuditLog(redis, { prefix, retentionDays: 1, now: () => Date.now() + 2 * 86_400_000 });
    expect((await log.list()).entries).toEqual([]);
    expect((await new AuditLog(redis, { prefix, retentionDays: 1 }).list({ limit: 1 })).entries).toHaveLength(1);
  });
});
