/**
 * The real Codex CLI (`codex exec`, the gateway as its only model provider on the Responses wire)
 * on a Claude model that a cloud serves: `bedrock-claude` at the fake Bedrock (SigV4 recomputed
 * on its side with the access key the executor found in the AWS_* variables; ConverseStream in
 * AWS's event-stream framing) and `vertex-claude` at a fake Vertex AI (`vertex-anthropic`:
 * streamRawPredict, on a token the fake metadata server issued through google-auth-library). Each
 * cloud plays the scripted model of codex-cli-upstream.ts in its own wire: its first answer calls
 * Codex's shell tool, its second checks that the command's output came back and answers with a
 * marker. What a user notices: Codex ran the command (the file is there), printed the answer, and
 * the gateway metered its requests for the key.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeBedrock, startFakeGoogleAuth, vertexGate, type FakeBedrock, type FakeGoogleAuth, type Responder } from '@gateway/testing';
import { bedrockClaude } from './bedrock-claude-upstream.js';
import { awsKeysEnv, metadataServerEnv } from './cloud-credentials.js';
import { startCliBackend, type CliBackend } from './cli-backend.js';
import { anthropicMessagesModel, type ScriptOptions } from './codex-cli-upstream.js';
import { expectCodexRunsTheShellTool } from './codex-exec.js';

const REGION = 'us-east-1';
const AWS = { accessKeyId: 'AKIAGATEWAYCODEX0001', secretAccessKey: 'fake-secret-access-key-for-codex-on-bedrock' };

/** A catalog entry of Claude Sonnet 4.5 served by `provider` at `upstream`, at the regional price of Bedrock and Vertex AI. */
function claudeEntry(id: string, provider: string, upstream: string): string {
  return `  - id: ${id}
    provider: ${provider}
    owned_by: anthropic
    created: 1735689600
    upstream: ${upstream}
    pricing: { input: "3.30", cached_input: "0.33", cache_write: "4.125", output: "16.50" }
    context_window: 200000
    max_output_tokens: 64000
    capabilities: { tools: true, vision: true, streaming: true, json_mode: false }
    quality_tier: premium`;
}

let bedrock: FakeBedrock;
let google: FakeGoogleAuth;
let backend: CliBackend;
let directory: string;
const temporary: string[] = [];

beforeAll(async () => {
  bedrock = await startFakeBedrock({ region: REGION, credentials: [AWS] });
  google = await startFakeGoogleAuth();
  directory = mkdtempSync(join(tmpdir(), 'codex-clouds-'));
  temporary.push(directory);
  backend = await startCliBackend('codex-clouds', {
    entries: (upstreamBaseUrl) => [
      claudeEntry('bedrock-claude', 'bedrock', `{ model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", region: ${REGION}, base_url: "${bedrock.baseUrl}" }`),
      // The fake upstream of the CLI backend, behind Vertex AI's gate, is the Vertex endpoint.
      claudeEntry(
        'vertex-claude',
        'vertex-anthropic',
        `{ model: "claude-sonnet-4-5@20250929", project: acme-prod-ml, region: us-east5, base_url: "${new URL(upstreamBaseUrl).origin}", api_key_env: VERTEX_CREDENTIALS }`,
      ),
    ],
    env: {
      ...awsKeysEnv(AWS, REGION, directory),
      ...metadataServerEnv(google, 'VERTEX_CREDENTIALS', directory),
    },
  });
}, 120_000);

afterAll(async () => {
  await backend?.close();
  await Promise.all([bedrock?.close(), google?.close()]);
  for (const path of temporary) rmSync(path, { recursive: true, force: true });
});

/** The scripted Claude model behind Vertex AI: rawPredict / streamRawPredict, checked as Vertex does, then the Messages script. */
function vertexMessagesModel(options: ScriptOptions): Responder {
  const messages = anthropicMessagesModel(options);
  return vertexGate(google, (request, response) => messages({ ...request, path: '/v1/messages' }, response));
}

/** Answers 404: the fake upstream is not the model while Bedrock plays it. */
const notTheModel: Responder = (_request, response) => {
  response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"Bedrock plays the model in this test"}}');
};

describe('the Codex CLI on a Claude model a cloud serves', () => {
  it('runs the shell command a Bedrock-served Claude asks for and prints its answer, streamed from ConverseStream, metered for the key', async () => {
    const firstBedrockRequest = bedrock.requests.length;
    await expectCodexRunsTheShellTool(
      backend,
      temporary,
      'bedrock-claude',
      (options) => {
        // Bedrock plays the script; the CLI backend's fake upstream is not asked.
        bedrock.reply(bedrockClaude(options));
        return notTheModel;
      },
      {
        check: (_task, report) =>
          expect(
            bedrock.requests.slice(firstBedrockRequest).map((request) => request.operation),
            report,
          ).toEqual(['converse-stream', 'converse-stream']),
        reportLines: () => [
          `--- bedrock requests\n${bedrock.requests.map((request) => `${request.operation} ${JSON.stringify(request.body).slice(0, 2_000)}`).join('\n')}`,
          `--- bedrock refusals\n${bedrock.refusals.join('\n')}`,
        ],
      },
    );
  });

  it('does the same with a Vertex-served Claude, streamed from streamRawPredict on a metadata-server token', async () => {
    await expectCodexRunsTheShellTool(backend, temporary, 'vertex-claude', vertexMessagesModel, {
      check: (task, report) =>
        expect(
          backend.upstream.requests.slice(task.firstUpstreamRequest).map((request) => request.path),
          report,
        ).toEqual(
          Array.from(
            { length: 2 },
            () => '/v1/projects/acme-prod-ml/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict',
          ),
        ),
    });
  });
});
