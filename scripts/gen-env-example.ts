/**
 * Writes every `.env.example` from the services' config schemas (their descriptions and
 * defaults): each service's own, and the repository's, which lists every variable once. Variables
 * no schema reads (provider keys, which the catalog names; the scripts' own) are the text below.
 *
 *   pnpm gen-env            writes the files
 *   pnpm gen-env --check    writes nothing; lists the files that differ and exits 1 if any does
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type EnvExampleSection, renderEnvExample, type TObject, undescribedVariables } from '@gateway/config';
import { AuthConfigSchema } from '../services/auth/src/config.js';
import { BatchConfigSchema } from '../services/batch/src/config.js';
import { CacheConfigSchema } from '../services/cache/src/config.js';
import { EdgeConfigSchema } from '../services/edge/src/config.js';
import { ExecutorConfigSchema } from '../services/executor/src/config.js';
import { GuardConfigSchema } from '../services/guard/src/config.js';
import { McpConfigSchema } from '../services/mcp/src/config.js';
import { MeteringConfigSchema } from '../services/metering/src/config.js';
import { RequestLogConfigSchema } from '../services/request-log/src/config.js';
import { RouterConfigSchema } from '../services/router/src/config.js';

const PROVIDERS = [
  ['OPENAI_API_KEY', 'OpenAI (gpt-4o, gpt-4.1, o3-mini, ...).'],
  ['ANTHROPIC_API_KEY', 'Anthropic (anthropic/claude-...).'],
  ['GROQ_API_KEY', 'Groq (groq/...).'],
  ['TOGETHER_API_KEY', 'Together (together/...).'],
  ['MISTRAL_API_KEY', 'Mistral (mistral/...).'],
  ['DEEPSEEK_API_KEY', 'DeepSeek (deepseek/...).'],
  ['GEMINI_API_KEY', 'Google Gemini (google/gemini-...).'],
  ['AWS_BEARER_TOKEN_BEDROCK', 'Amazon Bedrock API key (bedrock/claude-...).'],
] as const;

/** Lines setting every provider key, `prefix` before each (`# ` to leave them commented out). */
const providerKeys = (prefix: string, comments: boolean) =>
  PROVIDERS.flatMap(([name, what]) => [...(comments ? [`# ${what}`] : []), `${prefix}${name}=`]).join('\n');

const SERVICES: Array<[string, TObject, Omit<EnvExampleSection, 'schemas'>?]> = [
  ['edge', EdgeConfigSchema],
  ['auth', AuthConfigSchema],
  [
    'router',
    RouterConfigSchema,
    {
      text: `# Provider keys: a model is switched on only while its key variable is set and non-empty. The router
# only checks that they are set (the executor uses them); simulated models are always on.
${providerKeys('# ', false)}`,
    },
  ],
  [
    'executor',
    ExecutorConfigSchema,
    {
      text: `
# Provider keys: a non-simulated catalog model is on only when the variable its upstream.api_key_env
# names is set and non-empty; the key is sent upstream as \`Authorization: Bearer <key>\` and never logged.
${providerKeys('', false)}`,
    },
  ],
  ['metering', MeteringConfigSchema],
  ['request-log', RequestLogConfigSchema],
  ['mcp', McpConfigSchema],
  ['guard', GuardConfigSchema],
  ['cache', CacheConfigSchema],
  ['batch', BatchConfigSchema],
];

/** Variables more than one service reads: listed once, first, in the repository's file. */
const SHARED = [
  'LOG_LEVEL',
  'REDIS_URL',
  'REDIS_WAIT_REPLICAS',
  'NATS_URL',
  'USAGE_STREAM',
  'USAGE_STREAM_REPLICAS',
  'USAGE_STREAM_MAX_AGE_HOURS',
  'USAGE_STREAM_MAX_BYTES',
  'CATALOG_PATH',
];
/** The service whose schema describes a shared variable in the repository's file. */
const SHARED_FROM = [AuthConfigSchema, EdgeConfigSchema, RouterConfigSchema];

const HEADINGS: Record<string, string> = {
  edge: '--- edge (HTTP, the OpenAI-compatible API) ---',
  auth: '--- auth (gRPC: API keys, plans, quotas) ---',
  router: '--- router (gRPC: model choice, pushes the catalog to the edges) ---',
  executor: '--- executor (gRPC: calls the upstream providers) ---',
  metering: '--- metering (consumes usage events from NATS, totals in Redis) ---',
  'request-log': '--- request-log (optional: consumes usage events from NATS, one row per request in PostgreSQL) ---',
  mcp: '--- mcp (gRPC: the MCP gateway, sessions to the upstream MCP servers) ---',
  guard: '--- guard (gRPC: guardrail policies in Redis, checks of prompts, answers and tool calls) ---',
  cache: "--- cache (gRPC: the response cache, entries in a bounded Redis of its own, settings and purges in REDIS_URL's) ---",
  batch: '--- batch (gRPC: the files and batches of the Files and Batch APIs in PostgreSQL, each batch run through the edge) ---',
};

/** The repository's `.env.example`: every variable once, grouped by the service that reads it. */
function repositoryExample(): string {
  const shared = new Set(SHARED);
  return renderEnvExample([
    {
      heading:
        "Every variable the gateway's services and scripts read, with its default. Copy to .env (git-ignored) and change what you need: scripts/start.sh and docker-compose.yml read .env; a variable set in the environment wins over .env. Each service reads only its own (see services/<name>/src/config.ts). Generated from the config schemas by `pnpm gen-env`.",
    },
    {
      heading: '--- all services ---',
      schemas: SHARED_FROM,
      variables: SHARED,
      text: `# An OTLP/HTTP collector (http://collector:4318): every service exports traces there, one trace per
# request from the caller's traceparent (W3C) to the upstream and metering. Unset: no traces, no cost.
# OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318`,
    },
    // start.sh reads the copied file: its own default plan, not auth's.
    ...SERVICES.map(
      ([name, schema]): EnvExampleSection => ({
        heading: HEADINGS[name],
        schemas: [schema],
        except: shared,
        values: name === 'auth' ? { GATEWAY_BOOTSTRAP_PLAN: 'pro' } : undefined,
      }),
    ),
    {
      heading:
        '--- provider keys (router and executor). A model of the catalog is on only when its key is set;\n--- the simulated models (sim-mini, sim-standard, sim-pro) are always on.',
      text: providerKeys('', true),
    },
    { heading: '--- scripts only ---\nSeconds scripts/start.sh waits for /readyz before giving up.', text: 'READY_TIMEOUT_SECONDS=60' },
  ]);
}

/** Every generated file by its path from the repository's root. */
export function envExamples(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [name, schema, extra] of SERVICES) {
    const missing = undescribedVariables(schema);
    if (missing.length > 0) throw new Error(`${name}'s config schema has no description for ${missing.join(', ')}`);
    files.set(
      `services/${name}/.env.example`,
      renderEnvExample([
        { heading: `${name}'s environment, read once by src/config.ts. Generated from its schema by \`pnpm gen-env\`.`, schemas: [schema], ...extra },
      ]),
    );
  }
  files.set('.env.example', repositoryExample());
  return files;
}

const root = fileURLToPath(new URL('..', import.meta.url));
const check = process.argv.includes('--check');
const differing: string[] = [];
for (const [path, text] of envExamples()) {
  const file = `${root}${path}`;
  let current = '';
  try {
    current = readFileSync(file, 'utf8');
  } catch {
    // A file not written yet differs.
  }
  if (current === text) continue;
  differing.push(path);
  if (!check) writeFileSync(file, text);
}
if (check && differing.length > 0) {
  process.stderr.write(`not what the config schemas generate (run pnpm gen-env): ${differing.join(', ')}\n`);
  process.exitCode = 1;
} else if (!check) process.stdout.write(differing.length ? `wrote ${differing.join(', ')}\n` : 'every .env.example is up to date\n');
