/**
 * The admin token source against a fake CheckAdminToken (auth's client interface): what it asks,
 * how long it trusts a positive answer, and that it never trusts a negative one.
 */
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { AdminAccessServiceClient } from '@gateway/proto';
import { adminTokenSource } from './admin-token-source.js';

const SECRET = `bra-${'s'.repeat(40)}`;
const request = { id: 'req-1' } as FastifyRequest;

/** A fake auth whose answer the test sets; counts the checks it answered. */
function fakeAuth() {
  const state = { valid: true, checks: 0 };
  const client = {
    CheckAdminToken: (_request: unknown, _metadata: unknown, _options: unknown, callback: (error: null, response: unknown) => void) => {
      state.checks++;
      setImmediate(() => callback(null, state.valid ? { valid: true, token_id: 'adt_0123456789abcdef', role: 'ADMIN_ROLE_VIEWER' } : { valid: false }));
      return { cancel() {} };
    },
  } as unknown as AdminAccessServiceClient;
  return { state, client };
}

describe('adminTokenSource', () => {
  it('resolves a live token to its id and role, and trusts that answer at most cacheMs', async () => {
    const { state, client } = fakeAuth();
    let now = 1_000_000;
    const source = adminTokenSource(client, { callOptions: () => ({ deadlineMs: 1_000 }), cacheMs: 1_000, now: () => now });
    expect(await source(SECRET, request)).toEqual({ subject: 'adt_0123456789abcdef', role: 'viewer', via: 'admin_token' });
    state.valid = false;
    now += 999;
    expect(await source(SECRET, request)).toMatchObject({ subject: 'adt_0123456789abcdef' });
    expect(state.checks).toBe(1);
    now += 1;
    expect(await source(SECRET, request)).toBeUndefined();
    expect(state.checks).toBe(2);
  });

  it('never trusts a negative answer, and asks nothing about a credential that is no admin token', async () => {
    const { state, client } = fakeAuth();
    state.valid = false;
    const source = adminTokenSource(client, { callOptions: () => ({ deadlineMs: 1_000 }) });
    expect(await source(SECRET, request)).toBeUndefined();
    state.valid = true;
    expect(await source(SECRET, request)).toMatchObject({ role: 'viewer' });
    expect(await source('some-static-token-0123456789abcdefghij', request)).toBeUndefined();
    expect(state.checks).toBe(2);
  });
});
