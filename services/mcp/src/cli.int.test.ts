/**
 * The MCP CLI (dist/cli.js, as an operator runs it) against a real Redis: a server it declares is
 * served by a running replica's registry with its header opened, the header's value is never
 * printed nor stored in the clear, --keep-headers keeps them, delete removes the server, and a
 * wrong command line or server is refused with the reason and a non-zero exit.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { eventually, redisUrl, runScript, type ScriptResult } from '@gateway/testing';
import { SecretCipher } from '@gateway/redis';
import { ServerRegistry } from './server-registry.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const KEY = randomBytes(32).toString('base64');
const SECRET = `ghp_${randomBytes(12).toString('hex')}`;
const prefix = `mcp-cli-test-${randomBytes(4).toString('hex')}:`;
let redis: RedisClient;
let url: string;
let replica: ServerRegistry;

function cli(...args: string[]): Promise<ScriptResult> {
  return runScript(CLI, args, { PATH: process.env.PATH ?? '', REDIS_URL: url, MCP_REDIS_PREFIX: prefix, MCP_SECRETS_KEY: KEY });
}

beforeAll(async () => {
  url = await redisUrl();
  redis = connectRedis(url);
  replica = new ServerRegistry(redis, new SecretCipher(KEY, 'MCP_SECRETS_KEY'), { prefix, intervalMs: 100, logger: createLogger('mcp', 'silent') });
  await replica.start();
});

afterAll(async () => {
  replica.stop();
  await deleteMatching(redis, `${prefix}*`);
  redis.disconnect();
});

// Each test starts the CLI several times, each run seconds on a loaded machine (CI's Node 22 pass beside its cluster suites).
describe('the MCP CLI', { timeout: 120_000 }, () => {
  it('declares a server that a running replica serves with its header, never printing or storing the header in the clear', async () => {
    const put = await cli('put', 'github', '--url', 'https://mcp.example.test/mcp', '--header', `Authorization: Bearer ${SECRET}`, '--json');
    expect(put.code, put.stderr).toBe(0);
    expect(JSON.parse(put.stdout)).toMatchObject({ name: 'github', transport: 'streamable_http', auth: 'none', header_names: ['Authorization'] });
    await eventually(async () => replica.current.get('github')?.headers.Authorization === `Bearer ${SECRET}`, 'the replica to serve the server', 10_000, 50);

    const listed = await cli('list');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('github\tstreamable_http\thttps://mcp.example.test/mcp\tauth: none headers: Authorization');
    const shown = await cli('get', 'github', '--json');
    for (const output of [put.stdout, listed.stdout, shown.stdout]) expect(output).not.toContain(SECRET);
    expect(JSON.stringify(await redis.hgetall(`${prefix}{servers}`))).not.toContain(SECRET);
  });

  it('keeps the headers with --keep-headers, drops them without, and deletes the server', async () => {
    const kept = await cli('put', 'github', '--url', 'https://mcp.example.test/v2', '--keep-headers', '--json');
    expect(kept.code, kept.stderr).toBe(0);
    await eventually(async () => replica.current.get('github')?.url === 'https://mcp.example.test/v2', 'the new URL to be served', 10_000, 50);
    expect(replica.current.get('github')?.headers).toEqual({ Authorization: `Bearer ${SECRET}` });

    const dropped = await cli('put', 'github', '--url', 'https://mcp.example.test/v2', '--transport', 'sse', '--json');
    expect(JSON.parse(dropped.stdout)).toMatchObject({ transport: 'sse', header_names: [] });

    expect((await cli('delete', 'github')).stdout.trim()).toBe('deleted github');
    await eventually(async () => !replica.current.has('github'), 'the server to be gone', 10_000, 50);
    expect((await cli('delete', 'github')).code).toBe(2);
  });

  it('refuses a wrong command line (exit 2, with the usage) and a server the registry refuses (exit 1, naming the field)', async () => {
    const noUrl = await cli('put', 'docs');
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('put needs --url');
    const badHeader = await cli('put', 'docs', '--url', 'https://docs.example.test/mcp', '--header', 'no colon here');
    expect(badHeader.code).toBe(2);
    const unknown = await cli('rename', 'docs');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command: rename');
    const credentialsInUrl = await cli('put', 'docs', '--url', 'https://user:pass@docs.example.test/mcp');
    expect(credentialsInUrl.code).toBe(1);
    expect(credentialsInUrl.stderr).toContain('url may not carry credentials');
    expect(credentialsInUrl.stderr).not.toContain('pass@');
    const badName = await cli('put', 'Docs_Server', '--url', 'https://docs.example.test/mcp');
    expect(badName.code).toBe(1);
    expect(badName.stderr).toContain('server name');
  });
});
