#!/usr/bin/env node
/**
 * Manages API keys from a shell, through the same key store as the service:
 *   node dist/cli.js create-key --plan starter|pro|enterprise [--name n] [--secret br-...] [--json]
 *   node dist/cli.js list [--json]
 *   node dist/cli.js revoke <key_id>
 * Reads REDIS_URL (default redis://127.0.0.1:6379) and AUTH_REDIS_PREFIX (default auth:). The secret is printed once, by create-key.
 */
import { parseArgs } from 'node:util';
import { loadConfig, Type } from '@gateway/config';
import { createLogger } from '@gateway/logger';
import { isWellFormedSecret } from './key-secret.js';
import { KeyExistsError, KeyStore, type StoredKey } from './key-store.js';
import { isPlanName, PLAN_NAMES } from './plans.js';
import { createRedis } from './redis-client.js';

const USAGE = `usage:
  create-key --plan ${PLAN_NAMES.join('|')} [--name NAME] [--secret br-...] [--json]
  list [--json]
  revoke KEY_ID`;

/** A mistake in the command line: printed with the usage, exit code 2. */
class UsageError extends Error {}

/** The CLI's one setting, read through the same schema machinery as the services. */
const CliConfigSchema = Type.Object({
  REDIS_URL: Type.String({ pattern: '^rediss?://', default: 'redis://127.0.0.1:6379' }),
  AUTH_REDIS_PREFIX: Type.String({ pattern: '^[A-Za-z0-9:_-]*$', default: 'auth:' }),
});

function formatKey(key: StoredKey): string {
  const used = key.last_used_at_ms ? new Date(key.last_used_at_ms).toISOString() : 'never';
  return [key.key_id, key.plan.padEnd(10), (key.revoked ? 'revoked' : 'active').padEnd(7), new Date(key.created_at_ms).toISOString(), used, key.name].join('  ');
}

async function run(argv: string[], keys: KeyStore): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { plan: { type: 'string' }, name: { type: 'string' }, secret: { type: 'string' }, json: { type: 'boolean' } },
  });
  const [command, ...rest] = positionals;
  switch (command) {
    case 'create-key': {
      if (!values.plan || !isPlanName(values.plan)) throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(', ')}`);
      if (values.secret !== undefined && !isWellFormedSecret(values.secret)) throw new UsageError('--secret must be "br-" followed by at least 32 letters or digits');
      const { key, secret } = await keys.create({ plan: values.plan, name: values.name ?? '', secret: values.secret });
      if (values.json) process.stdout.write(`${JSON.stringify({ key_id: key.key_id, plan: key.plan, name: key.name, secret })}\n`);
      else process.stdout.write(`key_id: ${key.key_id}\nplan:   ${key.plan}\nsecret: ${secret}\n(the secret is shown only this once)\n`);
      return;
    }
    case 'list': {
      const all = await keys.list();
      if (values.json) process.stdout.write(`${JSON.stringify(all)}\n`);
      else process.stdout.write(all.length ? `${all.map(formatKey).join('\n')}\n` : 'no keys\n');
      return;
    }
    case 'revoke': {
      if (rest.length !== 1) throw new UsageError('revoke takes exactly one key id');
      const revoked = await keys.revoke(rest[0]);
      if (!revoked) {
        process.stderr.write(`no key has the id ${rest[0]}\n`);
        process.exitCode = 1;
        return;
      }
      process.stdout.write(`revoked ${revoked.key_id}\n`);
      return;
    }
    default:
      throw new UsageError(command ? `unknown command "${command}"` : 'a command is required');
  }
}

const config = loadConfig(CliConfigSchema, process.env);
const redis = createRedis(config.REDIS_URL, createLogger('auth-cli', 'silent'), { lazyConnect: true });
try {
  await redis.connect();
  await run(process.argv.slice(2), new KeyStore(redis, { prefix: config.AUTH_REDIS_PREFIX }));
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message}\n${USAGE}\n`);
    process.exitCode = 2;
  } else if (error instanceof KeyExistsError) {
    process.stderr.write('a key with this secret already exists\n');
    process.exitCode = 1;
  } else {
    process.stderr.write(`failed: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
} finally {
  await redis.quit().catch(() => redis.disconnect());
}
