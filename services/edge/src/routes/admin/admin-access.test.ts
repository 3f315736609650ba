/**
 * Roles on the admin API through fastify's inject(), on the real edge app, with auth's
 * AdminAccessService and AuthService faked through their own client interfaces (tokens kept in
 * memory): a viewer reads but changes nothing, an admin token's calls carry its principal as the
 * actor auth records, a revoked token stops working within the 1 s cache, /admin/v1/me and
 * /admin/v1/audit answer as documented, and the admin API exists only with some credential.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTOR_METADATA, GatewayError } from '@gateway/grpc';
import type { AdminAccessServiceClient, AuditEntryOutput, AuthServiceClient, KeyInfoOutput } from '@gateway/proto';
import { fakeGrpcClient, injectAs, type ReceivedCall, testEdge } from '../../testing/test-edge.js';

const STATIC_TOKEN = 'static-admin-token-for-tests-0123456789';
const VIEWER = `bra-${'v'.repeat(40)}`;
const ADMIN = `bra-${'a'.repeat(40)}`;
const DOOMED = `bra-${'d'.repeat(40)}`;
const KEY: KeyInfoOutput = { key_id: 'key_0123456789abcdef', plan: 'PLAN_PRO', name: 'ci', created_at_ms: 1_700_000_000_000 };

/** Calls auth received: method and the actor metadata they carried. */
const calls: Array<{ method: string; actor: string | undefined; request: unknown }> = [];

const record = ({ method, request, metadata }: ReceivedCall) => {
  calls.push({ method, actor: metadata.get(ACTOR_METADATA)[0] as string | undefined, request });
};

/** auth's admin tokens, in memory: secret -> token. */
const tokens = new Map([
  [VIEWER, { token_id: 'adt_viewer0000000000', role: 'ADMIN_ROLE_VIEWER', revoked: false }],
  [ADMIN, { token_id: 'adt_admin00000000000', role: 'ADMIN_ROLE_ADMIN', revoked: false }],
  [DOOMED, { token_id: 'adt_doomed0000000000', role: 'ADMIN_ROLE_ADMIN', revoked: false }],
]);
let authDown = false;

const ENTRY: AuditEntryOutput = {
  id: '1700000000000-0',
  at_ms: 1_700_000_000_000,
  actor: { subject: 'adt_admin00000000000', role: 'admin', via: 'admin_token' },
  action: 'key.update',
  target_id: KEY.key_id,
  before_json: JSON.stringify({ name: 'old' }),
  after_json: JSON.stringify({ name: 'new' }),
  request_id: 'req-1',
};

function fakeAdminAccess(): AdminAccessServiceClient {
  return fakeGrpcClient<AdminAccessServiceClient>(
    {
      CheckAdminToken: (request: Record<string, unknown>) => {
        if (authDown) return GatewayError.of('auth_unavailable', 'The admin token store is unavailable.', { retryable: true });
        const token = tokens.get(String(request.secret));
        return token && !token.revoked ? { valid: true, token_id: token.token_id, role: token.role } : { valid: false };
      },
      CreateAdminToken: (request: Record<string, unknown>) => ({
        token: { token_id: 'adt_new0000000000000', name: request.name, role: request.role, created_at_ms: 1_700_000_000_000, created_by: 'x' },
        secret: `bra-${'n'.repeat(40)}`,
      }),
      ListAdminTokens: { tokens: [{ token_id: 'adt_admin00000000000', role: 'ADMIN_ROLE_ADMIN' }] },
      RevokeAdminToken: (request: Record<string, unknown>) => ({ token_id: request.token_id, role: 'ADMIN_ROLE_VIEWER', revoked: true }),
      ListAuditEntries: { entries: [ENTRY], next_cursor: '1700000000000-0' },
    },
    record,
  );
}

function fakeAuth(): AuthServiceClient {
  return fakeGrpcClient<AuthServiceClient>(
    { ListKeys: { keys: [KEY] }, GetKey: KEY, CreateKey: { key: KEY, secret: 'br-secret' }, UpdateKey: KEY, RevokeKey: { ...KEY, revoked: true } },
    record,
  );
}

function edge(env: Record<string, string>): Promise<FastifyInstance> {
  return testEdge(env, { auth: fakeAuth(), adminAccess: fakeAdminAccess() });
}

describe('admin roles, with a static token and admin tokens kept by auth', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await edge({ EDGE_ADMIN_TOKEN: STATIC_TOKEN, EDGE_ADMIN_TOKENS_ENABLED: 'true' });
  });
  afterAll(() => app.close());

  const call = (token: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) => injectAs(app, token, method, url, body);

  it('lets a viewer read keys, the audit trail and who it is', async () => {
    expect((await call(VIEWER, 'GET', '/admin/v1/keys')).json()).toMatchObject({ object: 'list', data: [{ id: KEY.key_id }] });
    expect((await call(VIEWER, 'GET', `/admin/v1/keys/${KEY.key_id}`)).statusCode).toBe(200);
    expect((await call(VIEWER, 'GET', '/admin/v1/me')).json()).toEqual({
      object: 'admin.principal',
      subject: 'adt_viewer0000000000',
      role: 'viewer',
      via: 'admin_token',
      name: null,
      expires_at: null,
    });
    const audit = await call(VIEWER, 'GET', `/admin/v1/audit?target_id=${KEY.key_id}&limit=10`);
    expect(audit.json()).toEqual({
      object: 'list',
      data: [
        {
          object: 'audit_entry',
          id: ENTRY.id,
          created_at_ms: ENTRY.at_ms,
          actor: ENTRY.actor,
          action: 'key.update',
          target_id: KEY.key_id,
          before: { name: 'old' },
          after: { name: 'new' },
          request_id: 'req-1',
        },
      ],
      has_more: true,
      next_cursor: '1700000000000-0',
    });
    expect(calls.findLast((made) => made.method === 'ListAuditEntries')?.request).toMatchObject({ limit: 10, target_id: KEY.key_id });
  });

  it('refuses every change to a viewer with 403 admin_role_required, and the admin token list', async () => {
    const changes = [
      call(VIEWER, 'POST', '/admin/v1/keys', { plan: 'pro' }),
      call(VIEWER, 'PATCH', `/admin/v1/keys/${KEY.key_id}`, { name: 'x' }),
      call(VIEWER, 'DELETE', `/admin/v1/keys/${KEY.key_id}`),
      call(VIEWER, 'POST', '/admin/v1/admin-tokens', { role: 'admin' }),
      call(VIEWER, 'DELETE', '/admin/v1/admin-tokens/adt_admin00000000000'),
      call(VIEWER, 'GET', '/admin/v1/admin-tokens'),
    ];
    const before = calls.length;
    for (const response of await Promise.all(changes)) {
      expect(response.statusCode).toBe(403);
      expect(response.json().error).toMatchObject({ code: 'admin_role_required', type: 'permission_error' });
    }
    // Only the token checks reached auth: no change, no list.
    expect(calls.slice(before).every((made) => made.method === 'CheckAdminToken')).toBe(true);
  });

  it("sends an admin token's principal as the actor of its changes", async () => {
    const created = await call(ADMIN, 'POST', '/admin/v1/keys', { plan: 'pro', name: 'ci' });
    expect(created.statusCode).toBe(201);
    expect(calls.findLast((made) => made.method === 'CreateKey')?.actor).toBe('admin admin_token adt_admin00000000000');
    expect((await call(STATIC_TOKEN, 'DELETE', `/admin/v1/keys/${KEY.key_id}`)).statusCode).toBe(200);
    expect(calls.findLast((made) => made.method === 'RevokeKey')?.actor).toBe('admin static_token static-token');
  });

  it('creates, lists and revokes admin tokens for an admin', async () => {
    const created = await call(ADMIN, 'POST', '/admin/v1/admin-tokens', { role: 'viewer', name: 'grafana' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ object: 'admin_token', id: 'adt_new0000000000000', role: 'viewer', name: 'grafana', secret: /^bra-/ });
    expect(calls.findLast((made) => made.method === 'CreateAdminToken')).toMatchObject({
      request: { role: 'ADMIN_ROLE_VIEWER', name: 'grafana' },
      actor: 'admin admin_token adt_admin00000000000',
    });
    expect((await call(ADMIN, 'GET', '/admin/v1/admin-tokens')).json()).toMatchObject({
      object: 'list',
      data: [{ id: 'adt_admin00000000000', role: 'admin' }],
    });
    expect((await call(ADMIN, 'DELETE', '/admin/v1/admin-tokens/adt_viewer0000000000')).json()).toMatchObject({ revoked: true });
    const refused = await call(ADMIN, 'POST', '/admin/v1/admin-tokens', { role: 'owner' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.message).toBe("'role' must be one of admin, viewer.");
    expect((await call(ADMIN, 'GET', '/admin/v1/audit?limit=0')).statusCode).toBe(400);
  });

  it('answers the static token as the bootstrap admin', async () => {
    expect((await call(STATIC_TOKEN, 'GET', '/admin/v1/me')).json()).toEqual({
      object: 'admin.principal',
      subject: 'static-token',
      role: 'admin',
      via: 'static_token',
      name: null,
      expires_at: null,
    });
  });

  it('stops a revoked token within the 1 s cache: 401 invalid_admin_token once it expired', async () => {
    expect((await call(DOOMED, 'GET', '/admin/v1/me')).statusCode).toBe(200);
    tokens.get(DOOMED)!.revoked = true;
    const checks = () => calls.filter((made) => made.method === 'CheckAdminToken' && (made.request as { secret: string }).secret === DOOMED).length;
    const asked = checks();
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const refused = await call(DOOMED, 'GET', '/admin/v1/keys');
    expect(checks()).toBe(asked + 1);
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error).toMatchObject({ code: 'invalid_admin_token', type: 'authentication_error' });
  });

  it('refuses an unknown admin token with 401, and answers 503 when auth cannot check one', async () => {
    const unknown = await call(`bra-${'u'.repeat(40)}`, 'GET', '/admin/v1/keys');
    expect(unknown.statusCode).toBe(401);
    authDown = true;
    try {
      const down = await call(`bra-${'z'.repeat(40)}`, 'GET', '/admin/v1/keys');
      expect(down.statusCode).toBe(503);
      expect(down.json().error.code).toBe('auth_unavailable');
      // The static token needs no auth.
      expect((await call(STATIC_TOKEN, 'GET', '/admin/v1/me')).statusCode).toBe(200);
    } finally {
      authDown = false;
    }
  });
});

describe('which credentials open the admin API', () => {
  it('is a plain 404 with neither a static token nor admin tokens', async () => {
    const app = await edge({});
    const response = await injectAs(app, ADMIN, 'GET', '/admin/v1/me');
    expect(response.statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/console' })).statusCode).toBe(404);
    await app.close();
  });

  it('takes admin tokens alone when only EDGE_ADMIN_TOKENS_ENABLED is set', async () => {
    const app = await edge({ EDGE_ADMIN_TOKENS_ENABLED: 'true' });
    const me = await injectAs(app, ADMIN, 'GET', '/admin/v1/me');
    expect(me.json()).toMatchObject({ subject: 'adt_admin00000000000', role: 'admin' });
    const other = await injectAs(app, STATIC_TOKEN, 'GET', '/admin/v1/me');
    expect(other.statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/console' })).statusCode).not.toBe(404);
    await app.close();
  });
});
