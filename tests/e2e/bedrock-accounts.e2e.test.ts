/**
 * Two AWS accounts served by one executor: a Bedrock model in account A, reached by assuming a
 * role there (STS AssumeRole signed with A's source keys, an external id), and one in account B,
 * signed with B's long-lived keys, each from the variables its catalog entry names. Each account is
 * its own fake Bedrock recomputing SigV4 with the secrets it knows, and each also knows the other
 * account's keys, so that a request signed with the wrong account's credentials would be accepted
 * there and show up, not just be refused. Driven by the official `openai` client through the edge.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeBedrock, startFakeSts, type FakeBedrock, type FakeSts } from '@gateway/testing';
import { bedrockClaude } from './bedrock-claude-upstream.js';
import { writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';

const REGION = 'us-east-1';
const ROLE_A = 'arn:aws:iam::111111111111:role/bedrock-invoker';
const EXTERNAL_ID = 'acme-llm-gateway';
const SOURCE_A = { accessKeyId: 'AKIAE2EACCOUNTASRC01', secretAccessKey: 'e2e-account-a-source-secret-0123456789abcd' };
const KEYS_B = { accessKeyId: 'AKIAE2EACCOUNTBKEY01', secretAccessKey: 'e2e-account-b-secret-0123456789abcdefghijk' };

let accountA: FakeBedrock;
let accountB: FakeBedrock;
let sts: FakeSts;
const gateway = new ClusterFixture();

/** A Claude entry of the catalog at `baseUrl`, signing as `credentials` (a YAML flow mapping). */
function entry(id: string, baseUrl: string, credentials: string): string {
  return `  - id: ${id}
    provider: bedrock
    owned_by: anthropic
    created: 1735689600
    upstream: { model: "us.anthropic.claude-sonnet-4-20250514-v1:0", region: ${REGION}, base_url: "${baseUrl}", aws_credentials: ${credentials} }
    pricing: { input: "3.00", cached_input: "0.30", cache_write: "3.75", output: "15.00" }
    context_window: 200000
    max_output_tokens: 64000
    capabilities: { tools: true, vision: true, streaming: true, json_mode: false }
    quality_tier: premium`;
}

beforeAll(async () => {
  accountA = await startFakeBedrock({ region: REGION, credentials: [KEYS_B, SOURCE_A] });
  accountB = await startFakeBedrock({ region: REGION, credentials: [KEYS_B, SOURCE_A] });
  accountA.reply(bedrockClaude());
  accountB.reply(bedrockClaude());
  sts = await startFakeSts({
    roleArn: 'arn:aws:iam::111111111111:role/no-web-identity-here',
    token: 'unused',
    region: REGION,
    roles: [{ roleArn: ROLE_A, trusted: [SOURCE_A], externalId: EXTERNAL_ID }],
    onIssue: (issued) => accountA.addCredentials(issued),
  });
  const catalog = writeCatalog('bedrock-accounts-e2e', [
    entry(
      'claude-account-a',
      accountA.baseUrl,
      `{ role_arn: "${ROLE_A}", external_id: ${EXTERNAL_ID}, access_key_id_env: ACCOUNT_A_ACCESS_KEY_ID, secret_access_key_env: ACCOUNT_A_SECRET_ACCESS_KEY }`,
    ),
    entry('claude-account-b', accountB.baseUrl, '{ access_key_id_env: ACCOUNT_B_ACCESS_KEY_ID, secret_access_key_env: ACCOUNT_B_SECRET_ACCESS_KEY }'),
  ]);
  await gateway.start({
    env: {
      CATALOG_PATH: catalog,
      ACCOUNT_A_ACCESS_KEY_ID: SOURCE_A.accessKeyId,
      ACCOUNT_A_SECRET_ACCESS_KEY: SOURCE_A.secretAccessKey,
      ACCOUNT_B_ACCESS_KEY_ID: KEYS_B.accessKeyId,
      ACCOUNT_B_SECRET_ACCESS_KEY: KEYS_B.secretAccessKey,
      AWS_ENDPOINT_URL_STS: sts.url,
      // Nothing of the machine's own AWS setup, and no instance metadata lookups.
      AWS_CONFIG_FILE: join(gateway.directory, 'config'),
      AWS_SHARED_CREDENTIALS_FILE: join(gateway.directory, 'credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
    },
  });
}, 120_000);

afterAll(async () => {
  await gateway.stop(sts, accountA, accountB);
});

describe('Bedrock models in two AWS accounts behind one executor', () => {
  it('signs each request with its own account: the assumed role for A, the static keys for B, never the other', async () => {
    for (const model of ['claude-account-a', 'claude-account-b', 'claude-account-a', 'claude-account-b']) {
      const completion = await gateway.openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hello!' }] });
      expect(completion.choices[0]?.message.content).toBe('Hello from Claude on Bedrock.');
    }
    const signedInA = accountA.requests.map((request) => request.signedBy);
    const signedInB = accountB.requests.map((request) => request.signedBy);
    expect(signedInA).toHaveLength(2);
    expect(signedInA[0]).toMatch(/^ASIA/);
    expect(signedInA[1]).toBe(signedInA[0]);
    expect(accountA.requests.every((request) => typeof request.headers['x-amz-security-token'] === 'string')).toBe(true);
    expect(signedInB).toEqual([KEYS_B.accessKeyId, KEYS_B.accessKeyId]);
    // The role was assumed once, by A's source keys, with its external id; the executor cached it.
    expect(sts.assumed).toEqual([{ roleArn: ROLE_A, signedBy: SOURCE_A.accessKeyId, sessionName: 'llm-gateway', externalId: EXTERNAL_ID }]);
    expect(signedInA).not.toContain(KEYS_B.accessKeyId);
    expect(signedInA).not.toContain(SOURCE_A.accessKeyId);
    expect(signedInB).not.toContain(signedInA[0]);
    expect([...accountA.refusals, ...accountB.refusals]).toEqual([]);
  });
});
