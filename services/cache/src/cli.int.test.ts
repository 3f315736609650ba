/**
 * The cache's CLI (dist/cli.js, as an operator runs it) against a real Redis: settings it puts are
 * read by a running replica's state and audited with the actor `cli`, a purge moves the team's
 * generation on, and a wrong command line or setting is refused with the reason and a non-zero
 * exit.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog } from '@gateway/keyspace';
import { createLogger } from '@gateway/logger';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { eventually, redisUrl, runScript, type ScriptResult } from '@gateway/testing';
import { CacheState } from './cache-state.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const prefix = `cache-cli-test-${randomBytes(4).toString('hex')}:`;
const TEAM = 'team_CCCCCCCCCCCCCCCC';
let redis: RedisClient;
let url: string;
let replica: CacheState;

function cli(...args: string[]): Promise<ScriptResult> {
  return runScript(CLI, args, { PATH: process.env.PATH ?? '', REDIS_URL: url, CACHE_REDIS_PREFIX: prefix, CACHE_AUDIT_PREFIX: `${prefix}auth:` });
}

beforeAll(async () => {
  url = await redisUrl();
  redis = connectRedis(url);
  replica = new CacheState(redis, { prefix, intervalMs: 50, logger: createLogger('cache', 'silent') });
  await replica.start();
});

afterAll(async () => {
  replica.stop();
  await deleteMatching(redis, `${prefix}*`);
  redis.disconnect();
});

// Each test starts the CLI up to six times, each run a few seconds on a loaded machine.
describe('the cache CLI', { timeout: 120_000 }, () => {
  it('puts, lists and deletes settings that a running replica applies, each audited as the CLI', async () => {
    const put = await cli('settings', 'put', `team:${TEAM}`, '--enabled', 'on', '--ttl-seconds', '120', '--scope', 'shared:lab', '--json');
    expect(put.code, put.stderr).toBe(0);
    expect(JSON.parse(put.stdout)).toMatchObject({ target: `team:${TEAM}`, enabled: true, ttl_seconds: 120, scope: 'shared:lab', updated_by: 'cli' });
    await eventually(
      () => replica.settings().some((settings) => settings.target === `team:${TEAM}` && settings.enabled === true),
      'the replica to read the settings',
    );
    const listed = await cli('settings', 'list');
    expect(listed.stdout).toContain(`team:${TEAM}\tenabled=true ttl_seconds=120 scope=shared:lab`);
    expect((await cli('settings', 'delete', `team:${TEAM}`)).stdout).toContain(`deleted team:${TEAM}`);
    await eventually(() => !replica.settings().some((settings) => settings.target === `team:${TEAM}`), 'the replica to drop the settings');
    const trail = await new AuditLog(redis, { prefix: `${prefix}auth:` }).list({ target_id: `team:${TEAM}` });
    expect(trail.entries.map((entry) => [entry.action, entry.actor.via])).toEqual([
      ['cache.settings.delete', 'cli'],
      ['cache.settings.put', 'cli'],
    ]);
  });

  it("purges a team's scope", async () => {
    const before = replica.generation(`scope:team:${TEAM}`);
    const purged = await cli('purge', '--team', TEAM);
    expect(purged.code, purged.stderr).toBe(0);
    expect(purged.stdout).toContain(`purged scope:team:${TEAM}`);
    await eventually(() => replica.generation(`scope:team:${TEAM}`) === before + 1, 'the generation to move on');
  });

  it('refuses a wrong command line or setting with the reason and a non-zero exit', async () => {
    const unknown = await cli('settings', 'rename', 'global');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command');
    const onOff = await cli('settings', 'put', 'global', '--enabled', 'yes');
    expect([onOff.code, onOff.stderr.split('\n')[0]]).toEqual([2, '--enabled is on or off']);
    const range = await cli('settings', 'put', 'global', '--hit-cost-ratio', '2');
    expect(range.code).toBe(1);
    expect(range.stderr).toContain('`hit_cost_ratio` must be a number from 0 to 1.');
    const two = await cli('purge', '--team', TEAM, '--all');
    expect(two.code).toBe(1);
    expect(two.stderr).toContain('exactly one');
    expect((await cli('settings', 'get', 'global')).code).toBe(2);
  });
});
