/**
 * A Claude model served by Amazon Bedrock, end to end: the cluster's executor reaches a fake
 * Bedrock (Converse and ConverseStream, SigV4 recomputed on its side, bodies checked against the
 * AWS SDK's shapes) with credentials from AWS's own credential chain the way an EKS pod gets them
 * (IRSA: a web identity token file and a role, exchanged at a fake STS). Driven by the official
 * `openai` client (chat whole and streamed, tools) and `@anthropic-ai/sdk` through /v1/messages
 * (extended thinking whole and streamed, a tool round trip whose signed thinking goes back to
 * Bedrock unchanged, prompt caching). What a user notices: the answers, tool calls, thinking
 * blocks with their signatures, cache reads and writes in the usage, Bedrock's refusal as a 400.
 * Last, the real Claude Code CLI (`claude -p`) on the same model: it runs the Bash command the
 * model asks for, its second request brings the signed thinking back to Bedrock, and the gateway
 * meters its requests.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startFakeBedrock, startFakeSts, type FakeBedrock, type FakeSts } from '@gateway/testing';
import { signatureOf } from './anthropic-thinking-upstream.js';
import { bedrockClaude, CACHE_USAGE } from './bedrock-claude-upstream.js';
import {
  claudeCodeEnvironment,
  cliLines,
  runCli,
  startEgressTrap,
  startRecordingProxy,
  usageTotals,
  type EgressTrap,
  type RecordingProxy,
} from './cli-backend.js';
import { writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';
import { USAGE, type ScriptedTurn } from './codex-cli-upstream.js';
import { itThinks, THOUGHT } from './thinking-checks.js';

const REGION = 'us-east-1';
const ROLE_ARN = 'arn:aws:iam::123456789012:role/gateway-executor';
const SERVICE_ACCOUNT_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.gateway-executor-service-account.signature';
const OPENAI_WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
};

let bedrock: FakeBedrock;
let sts: FakeSts;
const gateway = new ClusterFixture();

beforeAll(async () => {
  // No access key of its own: it accepts only what its STS hands out.
  bedrock = await startFakeBedrock({ region: REGION, credentials: [] });
  bedrock.reply(bedrockClaude());
  sts = await startFakeSts({ roleArn: ROLE_ARN, token: SERVICE_ACCOUNT_TOKEN, onIssue: (issued) => bedrock.addCredentials(issued) });
  const tokenFile = join(gateway.directory, 'token');
  writeFileSync(tokenFile, SERVICE_ACCOUNT_TOKEN);
  const catalog = writeCatalog('bedrock-e2e', [
    `  - id: bedrock-claude
    provider: bedrock
    owned_by: anthropic
    created: 1735689600
    upstream: { model: "us.anthropic.claude-sonnet-4-20250514-v1:0", region: ${REGION}, base_url: "${bedrock.baseUrl}" }
    pricing: { input: "3.00", cached_input: "0.30", cache_write: "3.75", output: "15.00" }
    context_window: 200000
    max_output_tokens: 64000
    capabilities: { tools: true, vision: true, streaming: true, json_mode: false }
    quality_tier: premium`,
  ]);
  await gateway.start({
    env: {
      CATALOG_PATH: catalog,
      // What EKS injects for a service account bound to an IAM role, STS's endpoint aside.
      AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile,
      AWS_ROLE_ARN: ROLE_ARN,
      AWS_REGION: REGION,
      AWS_ENDPOINT_URL_STS: sts.url,
      // Nothing of the machine's own AWS setup, and no instance metadata lookups.
      AWS_CONFIG_FILE: join(gateway.directory, 'config'),
      AWS_SHARED_CREDENTIALS_FILE: join(gateway.directory, 'credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
    },
  });
}, 120_000);

afterAll(async () => {
  await gateway.stop(sts, bedrock);
});

/** The last request the fake Bedrock accepted. */
function lastBedrockRequest() {
  return bedrock.requests.at(-1)!;
}

describe('a Bedrock-served Claude model through the openai client', () => {
  it('answers a whole chat completion, signed with the credentials STS exchanged for the service account token', async () => {
    const completion = await gateway.openai.chat.completions.create({
      model: 'bedrock-claude',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello!' },
      ],
    });
    expect(completion.model).toBe('bedrock-claude');
    expect(completion.choices[0]?.message.content).toBe('Hello from Claude on Bedrock.');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: USAGE.input, completion_tokens: USAGE.output });
    expect(bedrock.refusals).toEqual([]);
    const received = lastBedrockRequest();
    expect(received).toMatchObject({ operation: 'converse', modelId: 'us.anthropic.claude-sonnet-4-20250514-v1:0', signedBy: expect.stringMatching(/^ASIA/) });
    expect(received.body.system).toEqual([{ text: 'Be brief.' }]);
    expect(received.headers['x-amz-security-token']).toBeTruthy();
    expect(sts.exchanged).toEqual([SERVICE_ACCOUNT_TOKEN]);
  });

  it('streams a chat completion from ConverseStream, with the usage last', async () => {
    const stream = await gateway.openai.chat.completions.create({
      model: 'bedrock-claude',
      messages: [{ role: 'user', content: 'Hello!' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined | null;
    const finishReasons: string[] = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.choices[0]?.finish_reason) finishReasons.push(chunk.choices[0].finish_reason);
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('Hello from Claude on Bedrock.');
    expect(finishReasons).toEqual(['stop']);
    expect(usage).toMatchObject({ prompt_tokens: USAGE.input, completion_tokens: USAGE.output });
    expect(lastBedrockRequest().operation).toBe('converse-stream');
  });

  it('calls a tool, whole and streamed, and answers with its result', async () => {
    const ask: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Weather in Oslo?' };
    const whole = await gateway.openai.chat.completions.create({ model: 'bedrock-claude', messages: [ask], tools: [OPENAI_WEATHER_TOOL] });
    expect(whole.choices[0]?.finish_reason).toBe('tool_calls');
    const call = whole.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city":"Oslo"}' });

    const stream = await gateway.openai.chat.completions.create({ model: 'bedrock-claude', messages: [ask], tools: [OPENAI_WEATHER_TOOL], stream: true });
    let streamedArguments = '';
    let streamedName = '';
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        streamedName += delta.function?.name ?? '';
        streamedArguments += delta.function?.arguments ?? '';
      }
    }
    expect([streamedName, JSON.parse(streamedArguments)]).toEqual(['get_weather', { city: 'Oslo' }]);

    const answer = await gateway.openai.chat.completions.create({
      model: 'bedrock-claude',
      tools: [OPENAI_WEATHER_TOOL],
      messages: [ask, whole.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: '3 degrees' }],
    });
    expect(answer.choices[0]?.message.content).toBe('The tool said: 3 degrees');
    expect(lastBedrockRequest().body.messages).toEqual([
      { role: 'user', content: [{ text: 'Weather in Oslo?' }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: call.id, name: 'get_weather', input: { city: 'Oslo' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: call.id, content: [{ text: '3 degrees' }] } }] },
    ]);
  });
});

describe('a Bedrock-served Claude model through /v1/messages (@anthropic-ai/sdk)', () => {
  itThinks(gateway, {
    name: 'Bedrock',
    model: 'bedrock-claude',
    streamedText: 'Hello from Claude on Bedrock.',
    // In Converse's additionalModelRequestFields.
    expectThinkingSent: () =>
      expect(lastBedrockRequest().body.additionalModelRequestFields).toEqual({
        thinking: { type: 'enabled', budget_tokens: 2048 },
        anthropic_beta: ['interleaved-thinking-2025-05-14'],
      }),
    answer: 'The tool said: 3 degrees',
    sentAssistantTurn: () => (lastBedrockRequest().body.messages as unknown[])[1],
    expectedAssistantTurn: (callId) => ({
      role: 'assistant',
      content: [
        { reasoningContent: { reasoningText: { text: THOUGHT, signature: signatureOf(THOUGHT) } } },
        { toolUse: { toolUseId: callId, name: 'get_weather', input: { city: 'Oslo' } } },
      ],
    }),
  });

  it("caches a prompt: cache_control becomes cachePoint blocks, and Bedrock's cache reads and writes come back in the usage", async () => {
    const message = await gateway.anthropic.messages.create({
      model: 'bedrock-claude',
      max_tokens: 1024,
      system: [{ type: 'text', text: 'A long system prompt.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(lastBedrockRequest().body.system).toEqual([{ text: 'A long system prompt.' }, { cachePoint: { type: 'default' } }]);
    expect(message.usage).toMatchObject({
      input_tokens: USAGE.input,
      cache_read_input_tokens: CACHE_USAGE.read,
      cache_creation_input_tokens: CACHE_USAGE.written,
      output_tokens: USAGE.output,
    });
    // One exchange for the whole run: the chain keeps the credentials until they near expiry.
    expect(sts.exchanged).toEqual([SERVICE_ACCOUNT_TOKEN]);
  });
});

const CLAUDE = fileURLToPath(new URL('../../node_modules/.bin/claude', import.meta.url));

describe('Claude Code (claude -p) on a Bedrock-served Claude model', () => {
  let proxy: RecordingProxy;
  let egress: EgressTrap;
  const temporary: string[] = [];
  beforeAll(async () => {
    proxy = await startRecordingProxy(gateway.cluster.baseUrl);
    egress = await startEgressTrap();
  });
  afterAll(async () => {
    await proxy?.close();
    await egress?.close();
    bedrock.reply(bedrockClaude());
    for (const path of temporary) rmSync(path, { recursive: true, force: true });
  });

  /**
   * Claude Code's environment as a team sets it (see claude-code-cli.e2e.test.ts): the gateway
   * (through the recording proxy) as its Anthropic API, the gateway key, every model it picks set
   * to the catalog model, a temporary HOME, non-essential traffic off, anything else trapped.
   */
  function claudeEnvironment(): Record<string, string> {
    const home = mkdtempSync(join(tmpdir(), 'claude-bedrock-home-'));
    temporary.push(home);
    return claudeCodeEnvironment({
      home,
      baseUrl: proxy.origin,
      apiKey: gateway.cluster.apiKey,
      keyVariable: 'ANTHROPIC_API_KEY',
      model: 'bedrock-claude',
      egress,
    });
  }

  it('runs the Bash command the model asks for, brings the signed thinking back to Bedrock, prints the answer, metered for the key', async () => {
    const since = Math.floor(Date.now() / 1000) - 3_600;
    const before = await usageTotals(gateway.cluster.baseUrl, gateway.cluster.apiKey, since);
    const fileMarker = `gateway-marker-${randomBytes(6).toString('hex')}`;
    const answerMarker = `gateway-answer-${randomBytes(6).toString('hex')}`;
    const turns: ScriptedTurn[] = [];
    bedrock.reply(
      bedrockClaude({ command: `echo ${fileMarker} > marker.txt && cat marker.txt`, expectedOutput: fileMarker, answer: `Done: ${answerMarker}`, turns }),
    );
    const firstBedrockRequest = bedrock.requests.length;
    proxy.requests.length = 0;
    const workdir = mkdtempSync(join(tmpdir(), 'claude-bedrock-work-'));
    temporary.push(workdir);

    const run = await runCli(
      CLAUDE,
      ['-p', 'Write the marker file with the Bash tool, then tell me you are done.', '--dangerously-skip-permissions', '--output-format', 'text'],
      {
        cwd: workdir,
        env: claudeEnvironment(),
        timeoutMs: 100_000,
      },
    );
    const report = [
      ...cliLines('claude', run),
      `--- scripted turns\n${JSON.stringify(turns)}`,
      `--- refusals\n${bedrock.refusals.join('\n')}`,
      `--- gateway requests\n${proxy.requests.map((request) => `${request.method} ${request.path} ${request.status ?? '-'}`).join('\n')}`,
      `--- executor\n${gateway.cluster.logs.executor.join('').slice(-4_000)}`,
    ].join('\n');

    expect(run.code, report).toBe(0);
    expect(readFileSync(join(workdir, 'marker.txt'), 'utf8').trim(), report).toBe(fileMarker);
    expect(existsSync(join(workdir, 'marker.txt'))).toBe(true);
    expect(run.stdout, report).toContain(answerMarker);
    expect(egress.attempts, report).toEqual([]);
    const conversation = turns.filter((turn) => turn.kind !== 'other');
    expect(
      conversation.map((turn) => turn.kind),
      report,
    ).toEqual(['tool-call', 'answer']);
    expect(conversation[0]!.tool).toBe('Bash');
    expect(conversation[1]!.toolOutput).toContain(fileMarker);
    // Claude Code turns thinking on; the model thought before its call, and Claude Code's next
    // request brought that signed reasoning back to Bedrock unchanged, first in the turn.
    const thought = 'I will run the command with the Bash tool.';
    expect(conversation[0]!.thinking, report).toBeDefined();
    expect(conversation[1]!.callTurnStart, report).toEqual({ reasoningContent: { reasoningText: { text: thought, signature: signatureOf(thought) } } });
    // Every generation was a POST /v1/messages the gateway answered, streamed from ConverseStream.
    const generations = proxy.requests.filter((request) => request.method === 'POST' && /^\/v1\/messages(\?|$)/.test(request.path));
    expect(generations.length, report).toBe(turns.length);
    expect(generations.map((request) => request.status)).toEqual(generations.map(() => 200));
    expect(bedrock.requests.slice(firstBedrockRequest).map((request) => request.operation)).toEqual(generations.map(() => 'converse-stream'));
    const after = await eventually(
      async () => {
        const totals = await usageTotals(gateway.cluster.baseUrl, gateway.cluster.apiKey, since);
        return totals.requests >= before.requests + generations.length && totals;
      },
      "Claude Code's requests in the key's usage",
      10_000,
      100,
    );
    expect(after.requests - before.requests).toBe(generations.length);
    expect(after.completion_tokens - before.completion_tokens).toBe(generations.length * USAGE.output);
  }, 120_000);
});
