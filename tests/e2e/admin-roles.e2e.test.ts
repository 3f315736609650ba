/**
 * Roles and the audit trail on a running cluster (EDGE_ADMIN_TOKEN and EDGE_ADMIN_TOKENS_ENABLED):
 * the operator's static token creates a viewer and an admin token; the viewer lists keys and
 * usage but gets 403 on a change; the admin token's key changes are in the audit trail with its
 * id as the actor and the key before and after, and no entry holds any secret or secret hash; a
 * revoked token is refused within a second; auth's CLI makes a working admin token without the
 * static one.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '@gateway/redis';
import { startCluster, type Cluster } from './cluster.js';

const STATIC_TOKEN = `admin-${randomBytes(24).toString('hex')}`;
const CLI = fileURLToPath(new URL('../../services/auth/dist/cli/cli.js', import.meta.url));
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

let cluster: Cluster;
let origin: string;
let redis: RedisClient;
/** Every secret this test saw: none may be in the audit trail, nor its hash. */
const secrets: string[] = [];

beforeAll(async () => {
  cluster = await startCluster({ env: { EDGE_ADMIN_TOKEN: STATIC_TOKEN, EDGE_ADMIN_TOKENS_ENABLED: 'true' } });
  origin = new URL(cluster.baseUrl).origin;
  redis = connectRedis(cluster.redisUrl);
});

afterAll(async () => {
  await redis?.quit();
  await cluster?.stop();
});

/** An admin API answer's body, read as loosely as the assertions on it need. */
// biome-ignore lint/suspicious/noExplicitAny: each test asserts the fields it reads
type Answer = any;

/** An admin API call with `token`; resolves with the status and the JSON body. */
async function call(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Answer }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${origin}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, json: await response.json() };
}

async function createToken(role: 'admin' | 'viewer', name: string): Promise<{ id: string; secret: string }> {
  const created = await call(STATIC_TOKEN, 'POST', '/admin/v1/admin-tokens', { role, name });
  expect(created.status).toBe(201);
  expect(created.json).toMatchObject({ object: 'admin_token', role, name, revoked: false, created_by: 'static-token' });
  expect(created.json.secret).toMatch(/^bra-[A-Za-z0-9]{40}$/);
  secrets.push(created.json.secret);
  return { id: created.json.id, secret: created.json.secret };
}

describe('admin roles and the audit trail', () => {
  let viewer: { id: string; secret: string };
  let admin: { id: string; secret: string };
  let keyId: string;

  it('a viewer token lists keys and usage, says who it is, and gets 403 on a change', async () => {
    viewer = await createToken('viewer', 'dashboards');
    expect((await call(viewer.secret, 'GET', '/admin/v1/me')).json).toEqual({
      object: 'admin.principal',
      subject: viewer.id,
      role: 'viewer',
      via: 'admin_token',
      name: null,
      expires_at: null,
    });
    const keys = await call(viewer.secret, 'GET', '/admin/v1/keys');
    expect(keys.status).toBe(200);
    expect(keys.json.object).toBe('list');
    const start = Math.floor(Date.now() / 1000) - 86_400;
    const usage = await call(viewer.secret, 'GET', `/admin/v1/usage?start=${start}&group_by=key`);
    expect(usage.status).toBe(200);
    expect(usage.json.object).toBe('page');

    const refused = await call(viewer.secret, 'POST', '/admin/v1/keys', { plan: 'pro', name: 'not allowed' });
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatchObject({ code: 'admin_role_required', type: 'permission_error' });
    expect((await call(viewer.secret, 'POST', '/admin/v1/admin-tokens', { role: 'admin' })).status).toBe(403);
    expect((await call(viewer.secret, 'GET', '/admin/v1/admin-tokens')).status).toBe(403);
    // The refused creation made nothing.
    const after = await call(STATIC_TOKEN, 'GET', '/admin/v1/keys');
    expect(after.json.data.some((key: { name: string }) => key.name === 'not allowed')).toBe(false);
  });

  it("records an admin token's key changes with its id as the actor and the key before and after", async () => {
    admin = await createToken('admin', 'ops');
    const created = await call(admin.secret, 'POST', '/admin/v1/keys', { plan: 'starter', name: 'audited' });
    expect(created.status).toBe(201);
    keyId = created.json.id;
    secrets.push(created.json.secret);
    expect((await call(admin.secret, 'PATCH', `/admin/v1/keys/${keyId}`, { plan: 'pro', name: 'audited-2' })).status).toBe(200);
    expect((await call(admin.secret, 'DELETE', `/admin/v1/keys/${keyId}`)).status).toBe(200);

    // A viewer may read the trail.
    const audit = await call(viewer.secret, 'GET', `/admin/v1/audit?target_id=${keyId}`);
    expect(audit.status).toBe(200);
    const entries = audit.json.data as Array<{ action: string; actor: unknown; before: Answer; after: Answer; request_id: string | null }>;
    expect(entries.map((entry) => entry.action)).toEqual(['key.revoke', 'key.update', 'key.create']);
    for (const entry of entries) {
      expect(entry.actor).toEqual({ subject: admin.id, role: 'admin', via: 'admin_token' });
      expect(entry.request_id).toBeTruthy();
    }
    const [revoke, update, create] = entries;
    expect(create!.before).toBeNull();
    expect(create!.after).toMatchObject({ key_id: keyId, name: 'audited', plan: 'PLAN_STARTER' });
    expect(update!.before).toMatchObject({ name: 'audited', plan: 'PLAN_STARTER' });
    expect(update!.after).toMatchObject({ name: 'audited-2', plan: 'PLAN_PRO' });
    expect(revoke!.before).toMatchObject({ revoked: false });
    expect(revoke!.after).toMatchObject({ revoked: true });

    const byActor = await call(STATIC_TOKEN, 'GET', `/admin/v1/audit?actor=${admin.id}&limit=2`);
    expect(byActor.json.data).toHaveLength(2);
    expect(byActor.json.has_more).toBe(true);
    const next = await call(STATIC_TOKEN, 'GET', `/admin/v1/audit?actor=${admin.id}&limit=2&cursor=${byActor.json.next_cursor}`);
    expect(next.json.data.map((entry: { action: string }) => entry.action)).toEqual(['key.create']);
  });

  it('records the admin tokens created by the static token', async () => {
    const audit = await call(STATIC_TOKEN, 'GET', `/admin/v1/audit?target_id=${viewer.id}`);
    expect(audit.json.data).toEqual([
      expect.objectContaining({
        action: 'admin_token.create',
        actor: { subject: 'static-token', role: 'admin', via: 'static_token' },
        before: null,
        after: expect.objectContaining({ token_id: viewer.id, role: 'ADMIN_ROLE_VIEWER', revoked: false }),
      }),
    ]);
  });

  it('refuses a revoked token within a second', async () => {
    const revoked = await call(admin.secret, 'DELETE', `/admin/v1/admin-tokens/${viewer.id}`);
    expect(revoked.json).toMatchObject({ id: viewer.id, revoked: true });
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const refused = await call(viewer.secret, 'GET', '/admin/v1/keys');
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe('invalid_admin_token');
  });

  it("auth's CLI makes an admin token that works without the static one", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'create-admin-token', '--role', 'admin', '--name', 'bootstrap', '--json'], {
      env: { ...process.env, REDIS_URL: cluster.redisUrl },
    });
    const created = JSON.parse(stdout) as { token_id: string; secret: string };
    secrets.push(created.secret);
    expect((await call(created.secret, 'GET', '/admin/v1/me')).json).toMatchObject({ subject: created.token_id, role: 'admin' });
    const audit = await call(created.secret, 'GET', `/admin/v1/audit?target_id=${created.token_id}`);
    expect(audit.json.data[0]).toMatchObject({ action: 'admin_token.create', actor: { subject: 'cli', via: 'cli' } });
  });

  it('holds no secret and no secret hash in any audit entry', async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(4);
    const entries = JSON.stringify(await redis.xrange('auth:audit', '-', '+'));
    expect(entries).toContain(keyId);
    for (const secret of secrets) {
      expect(entries).not.toContain(secret);
      expect(entries).not.toContain(sha256(secret));
    }
  });
});
