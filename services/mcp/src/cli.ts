#!/usr/bin/env node
/**
 * Declares the upstream MCP servers from a shell, through the same registry as the service (and
 * the admin API's /admin/v1/mcp-servers): every MCP replica picks a change up within
 * MCP_RELOAD_INTERVAL_MS.
 *   node dist/cli.js list [--json]
 *   node dist/cli.js get <name> [--json]
 *   node dist/cli.js put <name> --url URL [--transport streamable_http|sse] [--description TEXT]
 *                        [--header 'Name: value' ...] [--keep-headers] [--oauth] [--oauth-client-id ID]
 *                        [--oauth-client-secret SECRET] [--oauth-scopes a,b] [--json]
 *   node dist/cli.js delete <name>
 *   node dist/cli.js help (or --help, -h)
 * Reads REDIS_URL, MCP_REDIS_PREFIX and MCP_SECRETS_KEY as the service does. Headers and an OAuth
 * client secret are sealed with MCP_SECRETS_KEY and never printed: a server shows its header names.
 * `put` replaces the server's headers with those given (none: no headers) unless --keep-headers.
 */
import { parseArgs } from 'node:util';
import { runCommandLine, UsageError } from '@gateway/config';
import { GatewayError } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { connectRedis, SecretCipher } from '@gateway/redis';
import { loadMcpConfig } from './config.js';
import { ServerRegistry, type ServerInput, type StoredServer } from './server-registry.js';

const USAGE = `usage:
  cli.js list [--json]
  cli.js get <name> [--json]
  cli.js put <name> --url URL [--transport streamable_http|sse] [--description TEXT]
                    [--header 'Name: value' ...] [--keep-headers]
                    [--oauth] [--oauth-client-id ID] [--oauth-client-secret SECRET] [--oauth-scopes a,b] [--json]
  cli.js delete <name>
Reads REDIS_URL, MCP_REDIS_PREFIX and MCP_SECRETS_KEY. Header values and client secrets are stored
sealed and never printed.`;

const OPTIONS = {
  json: { type: 'boolean' },
  url: { type: 'string' },
  transport: { type: 'string' },
  description: { type: 'string' },
  header: { type: 'string', multiple: true },
  'keep-headers': { type: 'boolean' },
  oauth: { type: 'boolean' },
  'oauth-client-id': { type: 'string' },
  'oauth-client-secret': { type: 'string' },
  'oauth-scopes': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** `Name: value` lines as a header set; a line without a colon is a usage error. */
function parseHeaders(lines: readonly string[] | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of lines ?? []) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new UsageError(`--header takes 'Name: value', not "${line.slice(0, 40)}"`);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/** What `put` stores, from its flags. */
function serverInput(name: string, values: Values): ServerInput {
  if (!values.url) throw new UsageError('put needs --url');
  const transport = values.transport ?? 'streamable_http';
  if (transport !== 'streamable_http' && transport !== 'sse') throw new UsageError('--transport is streamable_http or sse');
  const oauth = values.oauth || values['oauth-client-id'] !== undefined || values['oauth-scopes'] !== undefined;
  if (values['keep-headers'] && values.header) throw new UsageError('--keep-headers and --header exclude each other');
  return {
    name,
    url: values.url,
    transport,
    auth: oauth ? 'oauth' : 'none',
    description: values.description ?? '',
    headers: values['keep-headers'] ? undefined : parseHeaders(values.header),
    ...(oauth && {
      oauth: {
        clientId: values['oauth-client-id'] ?? '',
        clientSecret: values['oauth-client-secret'] ?? '',
        scopes: (values['oauth-scopes'] ?? '').split(',').filter(Boolean),
      },
    }),
  };
}

/** A server as printed: never its sealed values. */
function shown(server: StoredServer) {
  return {
    name: server.name,
    url: server.url,
    transport: server.transport,
    auth: server.auth,
    description: server.description,
    header_names: server.header_names,
    ...(server.oauth && {
      oauth: { client_id: server.oauth.client_id, scopes: server.oauth.scopes, client_secret_set: server.oauth.client_secret_sealed !== '' },
    }),
    updated_at_ms: server.updated_at_ms,
  };
}

function line(server: StoredServer): string {
  const headers = server.header_names.length ? ` headers: ${server.header_names.join(', ')}` : '';
  return `${server.name}\t${server.transport}\t${server.url}\tauth: ${server.auth}${headers}`;
}

async function run(argv: readonly string[], print: (text: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  const [command, name, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    print(USAGE);
    return;
  }
  if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
  if (command !== 'list' && name === undefined) throw new UsageError(`${command} needs a server name`);
  if (!['list', 'get', 'put', 'delete'].includes(command)) throw new UsageError(`unknown command: ${command}`);
  const config = loadMcpConfig(process.env);
  const redis = connectRedis(config.REDIS_URL, { maxRetriesPerRequest: 1 });
  const registry = new ServerRegistry(redis, new SecretCipher(config.MCP_SECRETS_KEY, 'MCP_SECRETS_KEY'), {
    prefix: config.MCP_REDIS_PREFIX,
    intervalMs: config.MCP_RELOAD_INTERVAL_MS,
    logger: createLogger('mcp-cli', 'warn'),
  });
  try {
    if (command === 'list') {
      const servers = await registry.list();
      print(values.json ? JSON.stringify(servers.map(shown)) : servers.map(line).join('\n'));
    } else if (command === 'get') {
      const server = await registry.get(name!);
      if (!server) throw new UsageError(`no MCP server named "${name}"`);
      print(values.json ? JSON.stringify(shown(server)) : line(server));
    } else if (command === 'put') {
      const stored = await registry.put(serverInput(name!, values));
      print(values.json ? JSON.stringify(shown(stored)) : line(stored));
    } else {
      if (!(await registry.delete(name!))) throw new UsageError(`no MCP server named "${name}"`);
      print(`deleted ${name}`);
    }
  } finally {
    redis.disconnect();
  }
}

// A refusal (its validation) names the field: printed as it is.
runCommandLine(run, { usage: USAGE, speaksForItself: (error) => error instanceof GatewayError });
