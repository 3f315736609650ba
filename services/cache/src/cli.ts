#!/usr/bin/env node
/**
 * The response cache's settings and purges from a shell, through the same state as the service
 * (and the admin API's /admin/v1/cache): every cache replica, and every edge watching one, applies
 * a change within CACHE_RELOAD_INTERVAL_MS.
 *   node dist/cli.js settings list [--json]
 *   node dist/cli.js settings get <target> [--json]
 *   node dist/cli.js settings put <target> [--enabled on|off] [--ttl-seconds N] [--max-temperature X]
 *                                 [--scope team|key|shared:<group>] [--hit-cost-ratio X] [--count-hit-tokens on|off]
 *                                 [--semantic-model <embedding model id>|''] [--semantic-threshold X] [--json]
 *   node dist/cli.js settings delete <target>
 *   node dist/cli.js purge --team <team_id> | --key <key_id> | --model <model_id> | --all
 *   node dist/cli.js help (or --help, -h)
 * A target is `global`, `model:<catalog model id>`, `team:<team_id>` or `key:<key_id>`. Reads
 * REDIS_URL, CACHE_REDIS_PREFIX and CACHE_AUDIT_PREFIX as the service does; every change is
 * recorded in the audit trail with the actor `cli`.
 */
import { parseArgs } from 'node:util';
import { runCommandLine, UsageError } from '@gateway/config';
import { GatewayError } from '@gateway/grpc';
import { AuditLog, CLI_ACTOR } from '@gateway/keyspace';
import { createLogger } from '@gateway/logger';
import type { CacheSettingsOutput } from '@gateway/proto';
import { connectRedis } from '@gateway/redis';
import { CacheAdmin } from './cache-admin.js';
import { CacheState } from './cache-state.js';
import { loadCacheConfig } from './config.js';

const USAGE = `usage:
  cli.js settings list [--json]
  cli.js settings get TARGET [--json]
  cli.js settings put TARGET [--enabled on|off] [--ttl-seconds N] [--max-temperature X]
                             [--scope team|key|shared:GROUP] [--hit-cost-ratio X] [--count-hit-tokens on|off]
                             [--semantic-model EMBEDDING_MODEL_ID|''] [--semantic-threshold X] [--json]
  cli.js settings delete TARGET
  cli.js purge --team TEAM_ID | --key KEY_ID | --model MODEL_ID | --all
TARGET is global, model:MODEL_ID, team:TEAM_ID or key:KEY_ID. Reads REDIS_URL, CACHE_REDIS_PREFIX
and CACHE_AUDIT_PREFIX.`;

const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  enabled: { type: 'string' },
  'ttl-seconds': { type: 'string' },
  'max-temperature': { type: 'string' },
  scope: { type: 'string' },
  'hit-cost-ratio': { type: 'string' },
  'count-hit-tokens': { type: 'string' },
  'semantic-model': { type: 'string' },
  'semantic-threshold': { type: 'string' },
  team: { type: 'string' },
  key: { type: 'string' },
  model: { type: 'string' },
  all: { type: 'boolean' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

function onOff(value: string | undefined, flag: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value !== 'on' && value !== 'off') throw new UsageError(`--${flag} is on or off`);
  return value === 'on';
}

function number(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed)) throw new UsageError(`--${flag} takes a number, not "${value.slice(0, 40)}"`);
  return parsed;
}

/** The settings a `settings put` gives its target. */
function settingsOf(target: string, values: Values): CacheSettingsOutput {
  return {
    target,
    enabled: onOff(values.enabled, 'enabled'),
    ttl_seconds: number(values['ttl-seconds'], 'ttl-seconds'),
    max_temperature: number(values['max-temperature'], 'max-temperature'),
    scope: values.scope,
    hit_cost_ratio: number(values['hit-cost-ratio'], 'hit-cost-ratio'),
    count_hit_tokens: onOff(values['count-hit-tokens'], 'count-hit-tokens'),
    semantic_model: values['semantic-model'],
    semantic_threshold: number(values['semantic-threshold'], 'semantic-threshold'),
  };
}

function line(settings: CacheSettingsOutput): string {
  const fields = (['enabled', 'ttl_seconds', 'max_temperature', 'scope', 'hit_cost_ratio', 'count_hit_tokens', 'semantic_model', 'semantic_threshold'] as const)
    .filter((field) => settings[field] !== undefined && settings[field] !== null)
    .map((field) => `${field}=${settings[field]}`);
  return `${settings.target}\t${fields.join(' ')}`;
}

async function run(argv: readonly string[], print: (text: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  const [command, sub, target, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    print(USAGE);
    return;
  }
  if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
  if (command === 'purge' ? sub !== undefined : command !== 'settings' || !['list', 'get', 'put', 'delete'].includes(sub ?? ''))
    throw new UsageError(`unknown command: ${positionals.join(' ')}`);
  if (command === 'settings' && sub !== 'list' && target === undefined) throw new UsageError(`settings ${sub} needs a target`);
  const config = loadCacheConfig(process.env);
  const redis = connectRedis(config.REDIS_URL, { maxRetriesPerRequest: 1 });
  const logger = createLogger('cache-cli', 'warn');
  const state = new CacheState(redis, { prefix: config.CACHE_REDIS_PREFIX, intervalMs: config.CACHE_RELOAD_INTERVAL_MS, logger });
  const admin = new CacheAdmin(state, {
    logger,
    ...(config.CACHE_AUDIT_PREFIX && { audit: new AuditLog(redis, { prefix: config.CACHE_AUDIT_PREFIX, trims: false }) }),
  });
  const change = { actor: CLI_ACTOR };
  try {
    await state.refresh();
    if (command === 'purge') {
      const purge = await admin.purge({ team_id: values.team, key_id: values.key, model_id: values.model, all: values.all }, change);
      print(`purged ${purge.names.join(', ')}`);
    } else if (sub === 'list') {
      const all = state.settings();
      print(values.json ? JSON.stringify(all) : all.map(line).join('\n'));
    } else if (sub === 'get') {
      const settings = await admin.get(target!);
      if (!settings) throw new UsageError(`no cache settings for "${target}"`);
      print(values.json ? JSON.stringify(settings) : line(settings));
    } else if (sub === 'put') {
      const stored = await admin.put(settingsOf(target!, values), change);
      print(values.json ? JSON.stringify(stored) : line(stored));
    } else {
      if (!(await admin.delete(target!, change))) throw new UsageError(`no cache settings for "${target}"`);
      print(`deleted ${target}`);
    }
  } finally {
    redis.disconnect();
  }
}

// A refusal (its validation) names the field: printed as it is.
runCommandLine(run, { usage: USAGE, speaksForItself: (error) => error instanceof GatewayError });
