#!/usr/bin/env node
/**
 * Manages API keys from a shell, through the same key store as the service:
 *   node dist/cli/cli.js create-key --plan starter|pro|enterprise [--name n] [--secret br-...] [--team team_...] [limits] [--json]
 *   node dist/cli/cli.js list [--json]
 *   node dist/cli/cli.js get <key_id>
 *   node dist/cli/cli.js update <key_id> [--plan p] [--name n] [limits]
 *   node dist/cli/cli.js revoke <key_id>
 *   node dist/cli/cli.js create-admin-token --role admin|viewer [--name n] [--json]
 *   node dist/cli/cli.js list-admin-tokens [--json]
 *   node dist/cli/cli.js revoke-admin-token <token_id>
 *   node dist/cli/cli.js create-team --name n [--requests-per-minute N] [--tokens-per-minute N]
 *                                [--daily-budget-usd X] [--monthly-budget-usd X] [--allowed-models a,b*] [--log-bodies on|off] [--json]
 *   node dist/cli/cli.js list-teams [--json]
 *   node dist/cli/cli.js help (or --help, -h)
 * where [limits] is [--requests-per-minute N|unlimited|plan] [--tokens-per-minute N|unlimited|plan]
 * [--routing-policy P] [--catalog-fallbacks on|off|plan] [--daily-budget-usd X|unlimited|plan]
 * [--monthly-budget-usd X|unlimited|plan] [--allowed-models ID,PREFIX*,...|all] [--log-bodies on|off] ("plan" removes an
 * override; an empty policy removes the policy; "all" removes the allow-list, '' allows no model).
 * Reads REDIS_URL (default redis://127.0.0.1:6379), AUTH_REDIS_PREFIX (default auth:), AUTH_PLANS_PATH
 * and AUTH_AUDIT_RETENTION_DAYS. A secret is printed once, by create-key or create-admin-token (an
 * admin token bootstraps the admin API without EDGE_ADMIN_TOKEN). Every change is recorded in the
 * audit trail with the actor `cli`.
 *
 * One piece: one program's command line, its usage, its flags and the commands that read them; the
 * stores it drives are the service's own modules, loaded only by a command that needs Redis.
 */
import { parseArgs } from 'node:util';
// Only what parsing the command line and printing the usage need is imported here; Redis, the
// config schema and the stores are imported once a command runs (runOnRedis below), the plans'
// YAML parser only by the commands that record a key's limits, so that `--help` and a mistaken
// command line answer at once and a command loads no gRPC or tracing runtime: scripts and tests
// start the CLI many times over (`pnpm bench cli-start` holds its start to a few of Node's own).
import { ADMIN_ROLE_NAMES, isAdminRoleName } from '../admin-access/admin-roles.js';
import type { AdminTokenStore, StoredAdminToken } from '../admin-access/admin-token-store.js';
import { AuditLog, CLI_ACTOR } from '@gateway/keyspace';
import { toAdminTokenInfo } from '../admin-access/admin-token-message.js';
import { isWellFormedSecret } from '../keys/key-secret.js';
import { toKeyInfo } from '../keys/key-message.js';
import type { KeyStore } from '../keys/key-store.js';
import type { KeyChanges, StoredKey } from '../keys/stored-key.js';
import { isPlanName, loadPlans, PLAN_NAMES, type PlanName } from '../quota/plans.js';
import { type BudgetLimit, type Limit, type PlanTable, usdToBudget } from '../shared/limits.js';
import { toTeam } from '../teams/team-message.js';
import type { NewTeam, TeamStore } from '../teams/team-store.js';

const USAGE = `usage:
  create-key --plan ${PLAN_NAMES.join('|')} [--name NAME] [--secret br-...] [--team TEAM_ID] [LIMITS] [--json]
  list [--json]
  get KEY_ID
  update KEY_ID [--plan ${PLAN_NAMES.join('|')}] [--name NAME] [LIMITS]
  revoke KEY_ID
  create-admin-token --role ${ADMIN_ROLE_NAMES.join('|')} [--name NAME] [--json]
  list-admin-tokens [--json]
  revoke-admin-token TOKEN_ID
  create-team --name NAME [--requests-per-minute N] [--tokens-per-minute N] [--daily-budget-usd USD]
              [--monthly-budget-usd USD] [--allowed-models MODEL,PREFIX*] [--allowed-mcp-tools TOOL,SERVER,PREFIX*]
              [--log-bodies on|off] [--json]
  list-teams [--json]
  help (or --help, -h): this text
LIMITS: [--requests-per-minute N|unlimited|plan] [--tokens-per-minute N|unlimited|plan] [--routing-policy NAME]
        [--catalog-fallbacks on|off|plan] [--daily-budget-usd USD|unlimited|plan] [--monthly-budget-usd USD|unlimited|plan]
        [--allowed-models ID,PREFIX*,...|all] [--allowed-mcp-tools SERVER__TOOL,SERVER,PREFIX*,...|all]
        [--log-bodies on|off] (the request log keeps the bodies of the key's requests, redacted)
  ("plan" goes back to the plan's limit or default; --routing-policy '' removes the policy;
   --allowed-models all lets the key use every model again, '' no model; --allowed-mcp-tools the same
   for the MCP gateway's tools)`;

/** A mistake in the command line: printed with the usage, exit code 2. */
class UsageError extends Error {}

/** What the commands work on: the stores, and the audit trail each change is recorded in. */
interface CliStores {
  keys: KeyStore;
  adminTokens: AdminTokenStore;
  audit: AuditLog;
  /** The plans, read on first use: only the commands that record a key's limits in force need them. */
  plans: () => PlanTable;
  teams: TeamStore;
}

function formatKey(key: StoredKey): string {
  const used = key.last_used_at_ms ? new Date(key.last_used_at_ms).toISOString() : 'never';
  return [key.key_id, key.plan.padEnd(10), (key.revoked ? 'revoked' : 'active').padEnd(7), new Date(key.created_at_ms).toISOString(), used, key.name].join(
    '  ',
  );
}

/** A limit flag: a positive integer, `unlimited`, or `plan` (null: remove the override). */
function limitFlag(value: string | undefined, flag: string): Limit | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'plan') return null;
  if (value === 'unlimited') return 'unlimited';
  const number = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(number) || number <= 0)
    throw new UsageError(`${flag} must be a positive integer, "unlimited" or "plan"`);
  return number;
}

/** A budget flag: a positive amount of USD, `unlimited`, or `plan` (null: remove the override). */
function budgetFlag(value: string | undefined, flag: string): BudgetLimit | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'plan') return null;
  if (value === 'unlimited') return 'unlimited';
  const budget = /^[0-9]*\.?[0-9]+$/.test(value) ? usdToBudget(Number(value)) : undefined;
  if (budget === undefined) throw new UsageError(`${flag} must be a positive amount of USD (at least 0.000001), "unlimited" or "plan"`);
  return budget;
}

/** The catalog fallbacks flag: `on`, `off`, or `plan` (null: remove the override). */
function fallbacksFlag(value: string | undefined): boolean | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'plan') return null;
  if (value === 'on' || value === 'off') return value === 'on';
  throw new UsageError('--catalog-fallbacks must be "on", "off" or "plan"');
}

/** The --log-bodies flag: `on` or `off`. */
function logBodiesFlag(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'on' || value === 'off') return value === 'on';
  throw new UsageError('--log-bodies must be "on" or "off"');
}

/** The allow-list flag: comma-separated ids and `prefix*` patterns, or `all` (null: remove the list). */
function allowedModelsFlag(value: string | undefined): string[] | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'all') return null;
  return value === '' ? [] : value.split(',').map((entry) => entry.trim());
}

const OPTIONS = {
  plan: { type: 'string' },
  name: { type: 'string' },
  secret: { type: 'string' },
  json: { type: 'boolean' },
  'requests-per-minute': { type: 'string' },
  'tokens-per-minute': { type: 'string' },
  'routing-policy': { type: 'string' },
  'catalog-fallbacks': { type: 'string' },
  'daily-budget-usd': { type: 'string' },
  'monthly-budget-usd': { type: 'string' },
  team: { type: 'string' },
  'allowed-models': { type: 'string' },
  'allowed-mcp-tools': { type: 'string' },
  'log-bodies': { type: 'string' },
  role: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The flags of a command line, as parseArgs reads them. */
type Flags = ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof OPTIONS }>>['values'];

/** The overrides the flags set: undefined for one not given, null for one taken back to the plan's. */
type OverrideFlags = ReturnType<typeof overrideFlags>;

/** Reads the override flags, refusing a malformed one whatever the command. */
function overrideFlags(values: Flags) {
  return {
    requests_per_minute_override: limitFlag(values['requests-per-minute'], '--requests-per-minute'),
    tokens_per_minute_override: limitFlag(values['tokens-per-minute'], '--tokens-per-minute'),
    catalog_fallbacks_override: fallbacksFlag(values['catalog-fallbacks']),
    daily_budget_override: budgetFlag(values['daily-budget-usd'], '--daily-budget-usd'),
    monthly_budget_override: budgetFlag(values['monthly-budget-usd'], '--monthly-budget-usd'),
    allowed_models: allowedModelsFlag(values['allowed-models']),
    // The same list syntax: namespaced MCP tools, servers and `prefix*` patterns, or `all`.
    allowed_mcp_tools: allowedModelsFlag(values['allowed-mcp-tools']),
    log_bodies: logBodiesFlag(values['log-bodies']),
  };
}

/** A --plan flag's value when it is a plan; a usage mistake otherwise. */
function planFlag(plan: string | undefined): PlanName {
  if (!plan || !isPlanName(plan)) throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(', ')}`);
  return plan;
}

async function createKey({ keys, audit, plans }: CliStores, values: Flags, overrides: OverrideFlags): Promise<void> {
  const plan = planFlag(values.plan);
  // Read before the change, so that plans that cannot be read fail the command before it changes anything.
  const table = plans();
  if (values.secret !== undefined && !isWellFormedSecret(values.secret))
    throw new UsageError('--secret must be "br-" followed by at least 32 letters or digits');
  // A creation has no override to take back: "plan" is the same as leaving the flag out.
  const set = Object.fromEntries(Object.entries(overrides).map(([field, value]) => [field, value ?? undefined]));
  const { key, secret } = await keys.create({
    plan,
    name: values.name ?? '',
    secret: values.secret,
    routing_policy: values['routing-policy'],
    ...(values.team ? { team_id: values.team } : {}),
    ...set,
  });
  await audit.record({ actor: CLI_ACTOR, action: 'key.create', target_id: key.key_id, after: toKeyInfo(key, table) });
  if (values.json) process.stdout.write(`${JSON.stringify({ key_id: key.key_id, plan: key.plan, name: key.name, secret })}\n`);
  else process.stdout.write(`key_id: ${key.key_id}\nplan:   ${key.plan}\nsecret: ${secret}\n(the secret is shown only this once)\n`);
}

/** The changes an update's flags ask for. */
function keyChanges(values: Flags, overrides: OverrideFlags): KeyChanges {
  const changes: KeyChanges = {};
  if (values.plan !== undefined) changes.plan = planFlag(values.plan);
  if (values.name !== undefined) changes.name = values.name;
  if (values['routing-policy'] !== undefined) changes.routing_policy = values['routing-policy'];
  for (const [field, value] of Object.entries(overrides)) if (value !== undefined) Object.assign(changes, { [field]: value });
  if (Object.keys(changes).length === 0) throw new UsageError('update needs at least one change');
  return changes;
}

/** Prints a key, or says that no key has the id (exit code 1). */
function printKey(key: StoredKey | undefined, keyId: string | undefined, print: (key: StoredKey) => string): void {
  if (key) process.stdout.write(`${print(key)}\n`);
  else {
    process.stderr.write(`no key has the id ${keyId}\n`);
    process.exitCode = 1;
  }
}

/** The one key id a command takes. */
function oneKeyId(command: string, rest: string[]): string {
  if (rest.length !== 1) throw new UsageError(`${command} takes exactly one key id`);
  return rest[0]!;
}

/** A team's limit flag: a positive number (or amount of USD), or absent; a team has no plan to go back to. */
function teamFlag<T>(value: T | null | undefined, flag: string): Exclude<T, 'unlimited'> | undefined {
  if (value === null || value === 'unlimited') throw new UsageError(`${flag} of a team must be a positive number (leave it out for none)`);
  return value as Exclude<T, 'unlimited'> | undefined;
}

async function createTeam({ teams, audit }: CliStores, values: Flags, overrides: OverrideFlags): Promise<void> {
  if (!values.name) throw new UsageError('create-team needs --name');
  const team: NewTeam = { name: values.name };
  const limits = {
    requests_per_minute: teamFlag(overrides.requests_per_minute_override, '--requests-per-minute'),
    tokens_per_minute: teamFlag(overrides.tokens_per_minute_override, '--tokens-per-minute'),
    daily_budget: teamFlag(overrides.daily_budget_override, '--daily-budget-usd'),
    monthly_budget: teamFlag(overrides.monthly_budget_override, '--monthly-budget-usd'),
    log_bodies: overrides.log_bodies,
  };
  for (const [field, value] of Object.entries(limits)) if (value !== undefined) Object.assign(team, { [field]: value });
  if (values['allowed-models'] !== undefined)
    team.allowed_models = values['allowed-models']
      .split(',')
      .map((model) => model.trim())
      .filter(Boolean);
  if (values['allowed-mcp-tools'] !== undefined)
    team.allowed_mcp_tools = values['allowed-mcp-tools']
      .split(',')
      .map((tool) => tool.trim())
      .filter(Boolean);
  const stored = await teams.create(team);
  await audit.record({ actor: CLI_ACTOR, action: 'team.create', target_id: stored.team_id, after: toTeam(stored) });
  process.stdout.write(values.json ? `${JSON.stringify(stored)}\n` : `team_id: ${stored.team_id}\nname:    ${stored.name}\n`);
}

/** Applies a change to a key and records it: `before` and `after` are the key's public facts. */
async function changeKey(stores: CliStores, keyId: string, action: 'key.update' | 'key.revoke', change: () => Promise<StoredKey | undefined>) {
  const plans = stores.plans();
  const before = await stores.keys.get(keyId);
  const after = await change();
  if (before && after) {
    const info = (key: StoredKey) => toKeyInfo(key, plans);
    await stores.audit.record({ actor: CLI_ACTOR, action, target_id: keyId, before: info(before), after: info(after) });
  }
  return after;
}

function formatAdminToken(token: StoredAdminToken): string {
  return [token.token_id, token.role.padEnd(6), (token.revoked ? 'revoked' : 'active').padEnd(7), new Date(token.created_at_ms).toISOString(), token.name].join(
    '  ',
  );
}

async function createAdminToken({ adminTokens, audit }: CliStores, values: Flags): Promise<void> {
  const role = values.role;
  if (!role || !isAdminRoleName(role)) throw new UsageError(`--role must be one of ${ADMIN_ROLE_NAMES.join(', ')}`);
  const { token, secret } = await adminTokens.create({ role, name: values.name ?? '', createdBy: CLI_ACTOR.subject });
  await audit.record({ actor: CLI_ACTOR, action: 'admin_token.create', target_id: token.token_id, after: toAdminTokenInfo(token) });
  if (values.json) process.stdout.write(`${JSON.stringify({ token_id: token.token_id, role, name: token.name, secret })}\n`);
  else process.stdout.write(`token_id: ${token.token_id}\nrole:     ${role}\nsecret:   ${secret}\n(the secret is shown only this once)\n`);
}

async function revokeAdminToken({ adminTokens, audit }: CliStores, tokenId: string): Promise<void> {
  const before = await adminTokens.get(tokenId);
  const revoked = await adminTokens.revoke(tokenId);
  if (!before || !revoked) {
    process.stderr.write(`no admin token has the id ${tokenId}\n`);
    process.exitCode = 1;
    return;
  }
  const action = { actor: CLI_ACTOR, action: 'admin_token.revoke', target_id: tokenId };
  await audit.record({ ...action, before: toAdminTokenInfo(before), after: toAdminTokenInfo(revoked) });
  process.stdout.write(`revoked ${tokenId}\n`);
}

/** The one id a command takes. */
function oneId(command: string, rest: string[]): string {
  if (rest.length !== 1) throw new UsageError(`${command} takes exactly one id`);
  return rest[0]!;
}

async function runAdminTokenCommand(stores: CliStores, command: string, values: Flags, rest: string[]): Promise<void> {
  if (command === 'create-admin-token') return createAdminToken(stores, values);
  if (command === 'revoke-admin-token') return revokeAdminToken(stores, oneId(command, rest));
  const all = await stores.adminTokens.list();
  if (values.json) process.stdout.write(`${JSON.stringify(all)}\n`);
  else process.stdout.write(all.length ? `${all.map(formatAdminToken).join('\n')}\n` : 'no admin tokens\n');
}

/** A command line as read: the command, its other positionals, its flags and the overrides they set. */
interface CommandLine {
  command: string;
  rest: string[];
  values: Flags;
  overrides: OverrideFlags;
}

/** The commands that work on Redis. */
const COMMANDS = new Set([
  'create-key',
  'list',
  'get',
  'update',
  'revoke',
  'create-admin-token',
  'list-admin-tokens',
  'revoke-admin-token',
  'create-team',
  'list-teams',
]);

/**
 * Reads a command line: undefined when it asks for the usage; every mistake seen without Redis (an
 * unknown flag or command, a malformed limit) is a UsageError before anything connects.
 */
function readCommandLine(argv: string[]): CommandLine | undefined {
  let parsed: { values: Flags; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    // An unknown flag or a missing value is a usage mistake, not a failure.
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === 'help') return undefined;
  if (!command || !COMMANDS.has(command)) throw new UsageError(command ? `unknown command "${command}"` : 'a command is required');
  return { command, rest, values, overrides: overrideFlags(values) };
}

async function run({ command, rest, values, overrides }: CommandLine, stores: CliStores): Promise<void> {
  const { keys } = stores;
  switch (command) {
    case 'create-key':
      return createKey(stores, values, overrides);
    case 'create-admin-token':
    case 'list-admin-tokens':
    case 'revoke-admin-token':
      return runAdminTokenCommand(stores, command, values, rest);
    case 'list': {
      const all = await keys.list();
      if (values.json) process.stdout.write(`${JSON.stringify(all)}\n`);
      else process.stdout.write(all.length ? `${all.map(formatKey).join('\n')}\n` : 'no keys\n');
      return;
    }
    case 'get': {
      const keyId = oneKeyId(command, rest);
      return printKey(await keys.get(keyId), keyId, (key) => JSON.stringify(key));
    }
    case 'update': {
      const keyId = oneKeyId(command, rest);
      const changes = keyChanges(values, overrides);
      return printKey(await changeKey(stores, keyId, 'key.update', () => keys.update(keyId, changes)), keyId, (key) => JSON.stringify(key));
    }
    case 'revoke': {
      const keyId = oneKeyId(command, rest);
      return printKey(await changeKey(stores, keyId, 'key.revoke', () => keys.revoke(keyId)), keyId, (key) => `revoked ${key.key_id}`);
    }
    case 'create-team':
      return createTeam(stores, values, overrides);
    case 'list-teams': {
      const all = await stores.teams.list();
      if (values.json) process.stdout.write(`${JSON.stringify(all)}\n`);
      else
        process.stdout.write(
          all.length ? `${all.map((team) => [team.team_id, String(team.live_keys).padStart(5), team.name].join('  ')).join('\n')}\n` : 'no teams\n',
        );
      return;
    }
    default:
      throw new UsageError(command ? `unknown command "${command}"` : 'a command is required');
  }
}

/**
 * Runs a command on Redis with the CLI's settings (auth's own Redis variables, read through the
 * same schema machinery as the services), importing Redis, the config schema and the stores only now.
 */
async function runOnRedis(commandLine: CommandLine): Promise<void> {
  const [{ loadConfig, redisVariables, Type }, { createRedis, REDIS_URL_PATTERN }, { createLogger }, { AuthConfigSchema }, stores] = await Promise.all([
    import('@gateway/config'),
    import('@gateway/redis'),
    import('@gateway/logger'),
    import('../config.js'),
    Promise.all([import('../admin-access/admin-token-store.js'), import('../keys/key-store.js'), import('../teams/team-store.js')]),
  ]);
  const [{ AdminTokenStore }, { KeyStore }, { TeamStore }] = stores;
  const config = loadConfig(
    Type.Object({
      ...redisVariables(REDIS_URL_PATTERN),
      AUTH_REDIS_PREFIX: AuthConfigSchema.properties.AUTH_REDIS_PREFIX,
      AUTH_PLANS_PATH: AuthConfigSchema.properties.AUTH_PLANS_PATH,
      AUTH_AUDIT_RETENTION_DAYS: AuthConfigSchema.properties.AUTH_AUDIT_RETENTION_DAYS,
    }),
    process.env,
  );
  const redis = createRedis(config.REDIS_URL, createLogger('auth-cli', 'silent'), { lazyConnect: true });
  try {
    await redis.connect();
    const prefix = config.AUTH_REDIS_PREFIX;
    let plans: PlanTable | undefined;
    await run(commandLine, {
      keys: new KeyStore(redis, { prefix, replicas: config.REDIS_WAIT_REPLICAS }),
      adminTokens: new AdminTokenStore(redis, { prefix, replicas: config.REDIS_WAIT_REPLICAS }),
      audit: new AuditLog(redis, { prefix, retentionDays: config.AUTH_AUDIT_RETENTION_DAYS }),
      plans: () => {
        plans ??= loadPlans(config.AUTH_PLANS_PATH);
        return plans;
      },
      teams: new TeamStore(redis, { prefix }),
    });
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

/** The exit code of a failed command, its message written to stderr. */
async function reportFailure(error: unknown): Promise<number> {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message}\n${USAGE}\n`);
    return 2;
  }
  // Loaded already when a command ran (and so could throw them).
  const { KeyExistsError, KeyInputError, TeamNotFoundError } = await import('../shared/input-error.js');
  if (error instanceof KeyInputError) {
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
  if (error instanceof TeamNotFoundError) {
    process.stderr.write('no team has this id\n');
    return 1;
  }
  if (error instanceof KeyExistsError) {
    process.stderr.write('a key with this secret already exists\n');
    return 1;
  }
  process.stderr.write(`failed: ${(error as Error).message}\n`);
  return 1;
}

try {
  const commandLine = readCommandLine(process.argv.slice(2));
  if (commandLine) await runOnRedis(commandLine);
  else process.stdout.write(`${USAGE}\n`);
} catch (error) {
  process.exitCode = await reportFailure(error);
}
