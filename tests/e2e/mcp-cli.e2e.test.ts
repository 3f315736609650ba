/**
 * The real Claude Code and Codex CLIs use a tool of an upstream MCP server through the gateway's
 * /mcp, set up the way a team would: Claude Code with `claude mcp add --transport http <name>
 * <url> --header "Authorization: Bearer br-..."`, Codex with `[mcp_servers.<name>]` (url and
 * bearer_token_env_var) in its config.toml. Behind the gateway a scripted model asks for the MCP
 * tool (found by its name's end among the tools the CLI offers) and, given its output, answers with
 * a marker. What a user notices: the CLI printed the answer, the upstream MCP server ran the tool
 * once, and the gateway metered the tool call for the key.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash, randomBytes } from 'node:crypto';
import { connectRedis } from '@gateway/redis';
import { eventually } from '@gateway/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliLines, runCli, startCliBackend, type CliBackend, type CliRun } from './cli-backend.js';
import { chatCompletionsModel, type ScriptedTurn } from './codex-cli-upstream.js';
import { codexExec } from './codex-exec.js';
import { startMcpUpstream, type McpUpstream } from './mcp-upstreams.js';

const CLAUDE = fileURLToPath(new URL('../../node_modules/.bin/claude', import.meta.url));
const ADMIN_TOKEN = 'mcp-cli-e2e-admin-token-0123456789abcdef';
const NOTES_API_KEY = 'notes-upstream-secret-77aa';

let backend: CliBackend;
let notes: McpUpstream;
let origin: string;
const temporary: string[] = [];

function temporaryDirectory(prefix: string): string {
  const path = mkdtempSync(join(tmpdir(), prefix));
  temporary.push(path);
  return path;
}

/** Scripts the model to call the MCP tool `notes__lookup` with a marker, then answer with another once the tool's output carries it. */
function scriptToolTask(): { marker: string; answer: string; turns: ScriptedTurn[] } {
  const marker = `note-${randomBytes(5).toString('hex')}`;
  const answer = `answer-${randomBytes(5).toString('hex')}`;
  const turns: ScriptedTurn[] = [];
  backend.proxy.requests.length = 0;
  backend.upstream.respond(
    chatCompletionsModel({
      command: '',
      expectedOutput: `found ${marker}`,
      answer: `Done: ${answer}`,
      turns,
      tool: { suffix: 'notes__lookup', arguments: { text: marker } },
    }),
  );
  return { marker, answer, turns };
}

/** The tool calls of the key metered under `notes__lookup`, from the latest requests. */
async function meteredToolCalls(keyId: string): Promise<number> {
  const response = await fetch(`${origin}/admin/v1/requests?key_id=${keyId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const body = (await response.json()) as { data: { model: string; outcome: string }[] };
  return body.data.filter((entry) => entry.model === 'notes__lookup' && entry.outcome === 'completed').length;
}

/** The id of the cluster's key (its secret's index in auth's Redis). */
async function bootstrapKeyId(): Promise<string> {
  const redis = connectRedis(backend.cluster.redisUrl, { maxRetriesPerRequest: 1 });
  try {
    return (await redis.hget(`auth:key:${createHash('sha256').update(backend.cluster.apiKey).digest('hex')}`, 'key_id')) ?? '';
  } finally {
    redis.disconnect();
  }
}

beforeAll(async () => {
  notes = await startMcpUpstream({ name: 'notes', apiKey: NOTES_API_KEY, tools: { lookup: (args) => `found ${String(args.text ?? '')}` } });
  // A 30 s deadline for the edge's calls to auth and mcp, not the production 2 s: on a machine loaded
  // by a test run beside this one the agents must meet the tools, not the deadline.
  backend = await startCliBackend('mcp-cli', { entries: () => [], env: { EDGE_ADMIN_TOKEN: ADMIN_TOKEN, EDGE_CONTROL_DEADLINE_MS: '30000' }, mcp: true });
  origin = backend.cluster.baseUrl.replace(/\/v1$/, '');
  const put = await fetch(`${origin}/admin/v1/mcp-servers/notes`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: notes.url, headers: { 'x-api-key': NOTES_API_KEY } }),
  });
  expect(put.status).toBe(200);
}, 120_000);

afterAll(async () => {
  await backend?.close();
  await notes?.stop();
  for (const path of temporary) rmSync(path, { recursive: true, force: true });
});

describe('coding agents use a gateway-served MCP tool', () => {
  it('Claude Code, after `claude mcp add --transport http`, calls the tool through /mcp', async () => {
    const home = temporaryDirectory('claude-mcp-home-');
    const workdir = temporaryDirectory('claude-mcp-work-');
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      CLAUDE_CONFIG_DIR: join(home, '.claude'),
      ANTHROPIC_BASE_URL: backend.proxy.origin,
      ANTHROPIC_AUTH_TOKEN: backend.cluster.apiKey,
      ANTHROPIC_MODEL: 'fake-model',
      ANTHROPIC_SMALL_FAST_MODEL: 'fake-model',
      ANTHROPIC_DEFAULT_SONNET_MODEL: 'fake-model',
      ANTHROPIC_DEFAULT_OPUS_MODEL: 'fake-model',
      ANTHROPIC_DEFAULT_HAIKU_MODEL: 'fake-model',
      CLAUDE_CODE_SUBAGENT_MODEL: 'fake-model',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      IS_SANDBOX: '1',
      NO_PROXY: '127.0.0.1',
      // Every MCP tool offered to the model at once, not behind Claude Code's tool search.
      ENABLE_TOOL_SEARCH: 'false',
      // Claude Code connects its MCP servers beside the first turn by default: on a loaded machine
      // that turn can go to the model before the gateway's /mcp has answered, without its tools.
      // It waits for them here (up to 60 s), as the test waits for what it checks.
      MCP_CONNECTION_NONBLOCKING: 'false',
      MCP_TIMEOUT: '60000',
    };
    const added = await runCli(
      CLAUDE,
      ['mcp', 'add', '--scope', 'user', '--transport', 'http', 'gateway', `${origin}/mcp`, '--header', `Authorization: Bearer ${backend.cluster.apiKey}`],
      { cwd: workdir, env, timeoutMs: 60_000 },
    );
    expect(added.code, cliLines('claude mcp add', added).join('\n')).toBe(0);
    const { marker, answer, turns } = scriptToolTask();
    const before = notes.calls.get('lookup') ?? 0;
    const keyId = await bootstrapKeyId();
    const meteredBefore = await meteredToolCalls(keyId);

    const run: CliRun = await runCli(
      CLAUDE,
      ['-p', 'Look the note up with the gateway tool, then tell me you are done.', '--dangerously-skip-permissions', '--output-format', 'text'],
      {
        cwd: workdir,
        env,
        timeoutMs: 100_000,
      },
    );

    const offered = backend.upstream.requests.map((request) =>
      ((request.body.tools ?? []) as { function?: { name?: string } }[]).map((tool) => tool.function?.name),
    );
    const report = backend.report([
      ...cliLines('claude', run),
      `--- turns\n${JSON.stringify(turns)}`,
      `--- tools\n${JSON.stringify(offered)}`,
      `--- mcp\n${backend.cluster.logs.mcp?.join('') ?? ''}`,
    ]);
    expect(run.code, report).toBe(0);
    expect(run.stdout, report).toContain(answer);
    const conversation = turns.filter((turn) => turn.kind !== 'other');
    expect(
      conversation.map((turn) => turn.kind),
      report,
    ).toEqual(['tool-call', 'answer']);
    expect(conversation[0]!.tool, report).toBe('mcp__gateway__notes__lookup');
    expect(conversation[1]!.toolOutput, report).toContain(`found ${marker}`);
    expect(notes.calls.get('lookup'), report).toBe(before + 1);
    await eventually(async () => (await meteredToolCalls(keyId)) === meteredBefore + 1, 'the tool call to be metered', 15_000, 200);
  }, 180_000);

  it('Codex, with [mcp_servers.gateway] in its config.toml, calls the tool through /mcp', async () => {
    const { marker, answer, turns } = scriptToolTask();
    const before = notes.calls.get('lookup') ?? 0;
    const keyId = await bootstrapKeyId();
    const meteredBefore = await meteredToolCalls(keyId);

    const run = await codexExec(
      { baseUrl: backend.proxy.baseUrl, apiKey: backend.cluster.apiKey, temporary },
      'fake-model',
      'Look the note up with the gateway tool, then tell me you are done.',
      {
        extraConfig: `[mcp_servers.gateway]
url = "${origin}/mcp"
bearer_token_env_var = "GATEWAY_API_KEY"
default_tools_approval_mode = "approve"
`,
        timeoutMs: 100_000,
      },
    );

    const report = backend.report([...cliLines('codex', run), `--- turns\n${JSON.stringify(turns)}`, `--- mcp\n${backend.cluster.logs.mcp?.join('') ?? ''}`]);
    expect(run.code, report).toBe(0);
    expect(run.stdout, report).toContain(answer);
    expect(
      turns.map((turn) => turn.kind),
      report,
    ).toEqual(['tool-call', 'answer']);
    expect(turns[0]!.tool, report).toMatch(/notes__lookup$/);
    expect(turns[1]!.toolOutput, report).toContain(`found ${marker}`);
    expect(notes.calls.get('lookup'), report).toBe(before + 1);
    await eventually(async () => (await meteredToolCalls(keyId)) === meteredBefore + 1, 'the tool call to be metered', 15_000, 200);
  }, 180_000);
});
