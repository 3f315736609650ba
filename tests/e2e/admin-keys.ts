/** Keys made through an edge's admin API, as the tests that need a key of their own make them. */
import { expect } from 'vitest';

/** A key the admin API created: its public id and its secret. */
export interface CreatedKey {
  id: string;
  secret: string;
}

/** Creates a key with `body` through the admin API at `origin` (the edge's, without /v1), as `adminToken`; expects a 201. */
export async function createKey(origin: string, adminToken: string, body: Record<string, unknown>): Promise<CreatedKey> {
  const response = await fetch(`${origin}/admin/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as CreatedKey;
}

/** Creates a team named `name` through the admin API at `origin`, as `adminToken`; expects a 201 and resolves its id. */
export async function createTeam(origin: string, adminToken: string, name: string): Promise<string> {
  const response = await fetch(`${origin}/admin/v1/teams`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { id: string }).id;
}
