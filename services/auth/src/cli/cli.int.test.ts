import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { AdminTokenStore } from '../admin-access/admin-token-store.js';
import { AuditLog } from '@gateway/keyspace';
import { KeyStore } from '../keys/key-store.js';
import { hashSecret } from '../shared/ids.js';

const CLI = fileURLToPath(new URL('../../dist/cli/cli.js', import.meta.url));
const run = promisify(execFile);
/**
 * A CLI run that has not ended by then is killed (and fails its test with the signal) rather than
 * holding the test to its timeout: a run takes a fraction of a second, several on a loaded machine.
 */
const RUN_TIMEOUT_MS = 45_000;

// A test starts the CLI up to nine times one after another: three minutes for a test leave room
// for runs of many seconds each on a loaded machine (beside CI's cluster suites and its Node 22
// pass one took over 15 s), while a run that hangs still fails its test after RUN_TIMEOUT_MS,
// naming the signal that ended it. The tests run
// side by side (vitest's maxConcurrency, 5 at a time), as operators' runs would: each reads back
// only the keys, team and tokens it made (the one team of the file is made by one test).
describe('auth CLI (dist/cli/cli.js)', { timeout: 180_000, concurrent: true }, () => {
  const prefix = `test-${randomUUID()}:auth:`;
  let url: string;
  let inspector: RedisClient;

  /** Runs the built CLI; resolves with its output and exit code, whatever the code. */
  const cli = (...args: string[]) =>
    run(process.execPath, [CLI, ...args], { env: { ...process.env, REDIS_URL: url, AUTH_REDIS_PREFIX: prefix }, timeout: RUN_TIMEOUT_MS })
      .then(({ stdout, stderr }) => ({ stdout, stderr, code: 0 as number | null, signal: undefined as string | undefined }))
      .catch((error: { stdout: string; stderr: string; code: number | null; signal?: string }) => ({
        stdout: error.stdout,
        stderr: error.stderr,
        code: error.code,
        signal: error.signal,
      }));

  beforeAll(async () => {
    url = await redisUrl();
    inspector = connectRedis(url);
  });

  afterAll(async () => {
    await deleteMatching(inspector, `${prefix}*`);
    await inspector.quit();
  });

  it('creates a key, prints its secret once, lists it without the secret and revokes it', async () => {
    const created = await cli('create-key', '--plan', 'pro', '--name', 'ci');
    expect(created.code).toBe(0);
    const secret = /secret: (br-[A-Za-z0-9]{40})/.exec(created.stdout)?.[1];
    const keyId = /key_id: (key_[A-Za-z0-9]{16})/.exec(created.stdout)?.[1];
    expect(secret).toBeDefined();
    expect(keyId).toBeDefined();

    // The service's key store sees the key the CLI made.
    const keys = new KeyStore(inspector, { prefix });
    expect((await keys.findBySecret(secret!))?.key).toMatchObject({ key_id: keyId, plan: 'pro', name: 'ci', revoked: false });

    const listed = await cli('list');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${keyId}\\s+pro\\s+active`));
    expect(listed.stdout).not.toContain('br-');

    const revoked = await cli('revoke', keyId!);
    expect(revoked).toMatchObject({ code: 0, stdout: `revoked ${keyId}\n` });
    expect((await keys.findBySecret(secret!))?.key.revoked).toBe(true);
    expect((await cli('list')).stdout).toMatch(new RegExp(`${keyId}\\s+pro\\s+revoked`));
  });

  it('creates a team with limits and an allow-list, lists it, and creates a key in it', async () => {
    const created = await cli(
      'create-team',
      '--name',
      'research',
      '--requests-per-minute',
      '30',
      '--daily-budget-usd',
      '2.5',
      '--allowed-models',
      'sim-mini, gpt-4o*',
      '--log-bodies',
      'on',
    );
    expect(created.code).toBe(0);
    const teamId = /team_id: (team_[A-Za-z0-9]{16})/.exec(created.stdout)?.[1];
    expect(teamId).toBeDefined();
    const key = await cli('create-key', '--plan', 'pro', '--team', teamId!, '--json');
    expect(key.code).toBe(0);
    const keyId = (JSON.parse(key.stdout) as { key_id: string }).key_id;
    expect(await new KeyStore(inspector, { prefix }).get(keyId)).toMatchObject({ key_id: keyId, team_id: teamId });
    const listed = await cli('list-teams', '--json');
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({
        team_id: teamId,
        name: 'research',
        requests_per_minute: 30,
        daily_budget: 2_500_000,
        allowed_models: ['sim-mini', 'gpt-4o*'],
        log_bodies: true,
        live_keys: 1,
      }),
    ]);
    expect(await cli('create-key', '--plan', 'pro', '--team', 'team_0000000000000000')).toMatchObject({ code: 1, stderr: 'no team has this id\n' });
    expect((await cli('create-team', '--name', 'x', '--daily-budget-usd', 'unlimited')).code).toBe(2);
    expect(await cli('create-team', '--name', 'x', '--log-bodies', 'yes')).toMatchObject({ code: 2, stderr: expect.stringContaining('--log-bodies must be') });
  });

  it('creates a key with a chosen secret, storing only its hash, and refuses it twice', async () => {
    const secret = `br-${randomUUID().replaceAll('-', '')}`;
    const created = await cli('create-key', '--plan', 'enterprise', '--secret', secret, '--json');
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ plan: 'enterprise', secret });
    expect(await inspector.exists(`${prefix}key:${hashSecret(secret)}`)).toBe(1);

    const again = await cli('create-key', '--plan', 'starter', '--secret', secret);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('a key with this secret already exists\n');
  });

  it('rejects bad usage with exit code 2 and unknown key ids with 1', async () => {
    const badPlan = await cli('create-key', '--plan', 'gold');
    expect(badPlan.code).toBe(2);
    expect(badPlan.stderr).toContain('--plan must be one of starter, pro, enterprise');
    expect((await cli('frobnicate')).code).toBe(2);
    const unknown = await cli('revoke', 'key_0000000000000000');
    expect(unknown).toMatchObject({ code: 1, stderr: 'no key has the id key_0000000000000000\n' });
  });

  it("changes a key's plan, limits and routing policy, and shows it", async () => {
    const created = JSON.parse(
      (await cli('create-key', '--plan', 'starter', '--requests-per-minute', '10', '--routing-policy', 'cheapest', '--json')).stdout,
    ) as { key_id: string };
    const keys = new KeyStore(inspector, { prefix });
    expect(await keys.get(created.key_id)).toMatchObject({ plan: 'starter', requests_per_minute_override: 10, routing_policy: 'cheapest' });

    const updated = await cli(
      'update',
      created.key_id,
      '--plan',
      'pro',
      '--requests-per-minute',
      'plan',
      '--tokens-per-minute',
      'unlimited',
      '--routing-policy',
      '',
    );
    expect(updated.code).toBe(0);
    const shown = JSON.parse((await cli('get', created.key_id)).stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ key_id: created.key_id, plan: 'pro', tokens_per_minute_override: 'unlimited', routing_policy: '' });
    expect(shown).not.toHaveProperty('requests_per_minute_override');

    expect((await cli('update', created.key_id, '--requests-per-minute', '-5')).code).toBe(2);
    expect((await cli('update', created.key_id)).code).toBe(2);
    expect(await cli('update', 'key_0000000000000000', '--plan', 'pro')).toMatchObject({ code: 1, stderr: 'no key has the id key_0000000000000000\n' });
  });

  it("sets, changes and clears a key's catalog fallbacks override", async () => {
    const created = JSON.parse((await cli('create-key', '--plan', 'starter', '--catalog-fallbacks', 'on', '--json')).stdout) as { key_id: string };
    const keys = new KeyStore(inspector, { prefix });
    expect(await keys.get(created.key_id)).toMatchObject({ plan: 'starter', catalog_fallbacks_override: true });

    expect((await cli('update', created.key_id, '--catalog-fallbacks', 'off')).code).toBe(0);
    expect(JSON.parse((await cli('get', created.key_id)).stdout)).toMatchObject({ catalog_fallbacks_override: false });

    expect((await cli('update', created.key_id, '--catalog-fallbacks', 'plan')).code).toBe(0);
    expect(JSON.parse((await cli('get', created.key_id)).stdout)).not.toHaveProperty('catalog_fallbacks_override');

    const bad = await cli('update', created.key_id, '--catalog-fallbacks', 'yes');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--catalog-fallbacks must be "on", "off" or "plan"');
  });

  /** A key's allow-lists: given as a comma-separated list, `all` clears one, and "*" may end an entry only. */
  const ALLOW_LISTS = [
    { list: 'model allow-list', flag: '--allowed-models', field: 'allowed_models', created: ['sim-*', 'gpt-4o'], changed: [], refused: 'gpt*4o' },
    {
      list: 'MCP tool allow-list',
      flag: '--allowed-mcp-tools',
      field: 'allowed_mcp_tools',
      created: ['github', 'docs__search'],
      changed: ['github__get_*'],
      refused: 'git*hub',
    },
  ];

  for (const { list, flag, field, created, changed, refused } of ALLOW_LISTS)
    it(`sets, changes and clears a key's ${list}`, async () => {
      const { key_id: keyId } = JSON.parse((await cli('create-key', '--plan', 'starter', flag, created.join(','), '--json')).stdout) as { key_id: string };
      expect(JSON.parse((await cli('get', keyId)).stdout)).toMatchObject({ [field]: created });
      expect((await cli('update', keyId, flag, changed.join(','))).code).toBe(0);
      expect(JSON.parse((await cli('get', keyId)).stdout)).toMatchObject({ [field]: changed });
      expect((await cli('update', keyId, flag, 'all')).code).toBe(0);
      expect(JSON.parse((await cli('get', keyId)).stdout)).not.toHaveProperty(field);
      const bad = await cli('update', keyId, flag, refused);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('may have "*" only as its last character');
    });

  it("sets, changes and clears a key's budgets in USD", async () => {
    const created = JSON.parse(
      (await cli('create-key', '--plan', 'pro', '--daily-budget-usd', '2.5', '--monthly-budget-usd', '0.000001', '--json')).stdout,
    ) as { key_id: string };
    const keys = new KeyStore(inspector, { prefix });
    expect(await keys.get(created.key_id)).toMatchObject({ daily_budget_override: 2_500_000, monthly_budget_override: 1 });

    expect((await cli('update', created.key_id, '--daily-budget-usd', 'plan', '--monthly-budget-usd', 'unlimited')).code).toBe(0);
    const shown = JSON.parse((await cli('get', created.key_id)).stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ monthly_budget_override: 'unlimited' });
    expect(shown).not.toHaveProperty('daily_budget_override');

    // Each refused before the CLI connects to Redis; run side by side, as they change nothing.
    const refused = await Promise.all(['0', '-1', '0.0000001', 'ten', '1e3'].map((bad) => cli('update', created.key_id, `--daily-budget-usd=${bad}`)));
    for (const result of refused) {
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('--daily-budget-usd must be a positive amount of USD (at least 0.000001), "unlimited" or "plan"');
    }
    expect((await keys.get(created.key_id))?.monthly_budget_override).toBe('unlimited');
  });

  it('creates, lists and revokes an admin token, recording each change with the actor cli', async () => {
    const created = await cli('create-admin-token', '--role', 'viewer', '--name', 'grafana', '--json');
    expect(created.code).toBe(0);
    const { token_id: tokenId, secret } = JSON.parse(created.stdout) as { token_id: string; secret: string };
    expect(secret).toMatch(/^bra-[A-Za-z0-9]{40}$/);
    const tokens = new AdminTokenStore(inspector, { prefix });
    expect(await tokens.check(secret)).toMatchObject({ token_id: tokenId, role: 'viewer', created_by: 'cli' });
    expect((await cli('list-admin-tokens')).stdout).toMatch(new RegExp(`${tokenId}\\s+viewer\\s+active`));

    expect(await cli('revoke-admin-token', tokenId)).toMatchObject({ code: 0, stdout: `revoked ${tokenId}\n` });
    expect(await tokens.check(secret)).toBeUndefined();
    expect(await cli('revoke-admin-token', 'adt_0000000000000000')).toMatchObject({ code: 1 });
    expect((await cli('create-admin-token', '--role', 'owner')).code).toBe(2);

    const { entries } = await new AuditLog(inspector, { prefix }).list({ target_id: tokenId });
    expect(entries.map((entry) => [entry.action, entry.actor])).toEqual([
      ['admin_token.revoke', { subject: 'cli', role: 'admin', via: 'cli' }],
      ['admin_token.create', { subject: 'cli', role: 'admin', via: 'cli' }],
    ]);
    expect(JSON.stringify(entries)).not.toContain(secret);
  });

  it("records a key's changes with the key before and after", async () => {
    const { key_id: keyId } = JSON.parse((await cli('create-key', '--plan', 'starter', '--name', 'old', '--json')).stdout) as { key_id: string };
    await cli('update', keyId, '--name', 'new');
    const { entries } = await new AuditLog(inspector, { prefix }).list({ target_id: keyId });
    expect(entries.map((entry) => entry.action)).toEqual(['key.update', 'key.create']);
    expect(JSON.parse(entries[0]!.before_json)).toMatchObject({ key_id: keyId, name: 'old', plan: 'PLAN_STARTER' });
    expect(JSON.parse(entries[0]!.after_json)).toMatchObject({ name: 'new' });
  });

  it('prints its usage for --help, -h and help, and refuses a mistaken command line, without Redis', async () => {
    const offline = (...args: string[]) =>
      run(process.execPath, [CLI, ...args], { env: { ...process.env, REDIS_URL: 'redis://127.0.0.1:1' }, timeout: RUN_TIMEOUT_MS })
        .then(({ stdout, stderr }) => ({ stdout, stderr, code: 0 }))
        .catch((error: { stdout: string; stderr: string; code: number }) => ({ stdout: error.stdout, stderr: error.stderr, code: error.code }));
    const [help, short, word, unknown, badLimit] = await Promise.all([
      offline('--help'),
      offline('-h'),
      offline('help'),
      offline('frobnicate'),
      offline('update', 'key_0000000000000000', '--requests-per-minute', 'many'),
    ]);
    for (const result of [help, short, word]) {
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(/^usage:\n {2}create-key --plan starter\|pro\|enterprise/);
      expect(result.stdout).toContain('create-admin-token --role admin|viewer');
    }
    // Usage mistakes (exit code 2), not "failed" to reach Redis (1).
    expect(unknown).toMatchObject({ code: 2, stdout: '' });
    expect(unknown.stderr).toMatch(/^unknown command "frobnicate"\nusage:/);
    expect(badLimit).toMatchObject({ code: 2 });
    expect(badLimit.stderr).toMatch(/^--requests-per-minute must be a positive integer/);
  });

  it('fails with a message when Redis is unreachable', async () => {
    const result = await run(process.execPath, [CLI, 'list'], { env: { ...process.env, REDIS_URL: 'redis://127.0.0.1:1', AUTH_REDIS_PREFIX: prefix } }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(result).toMatchObject({ code: 1 });
    expect((result as { stderr: string }).stderr).toMatch(/^failed: /);
  });
});
