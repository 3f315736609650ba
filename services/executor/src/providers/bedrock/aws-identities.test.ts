import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseCatalog, type CatalogModel } from '@gateway/catalog';
import { BEDROCK_TEST_REGION, providerFixture, startFakeBedrock, startFakeSts, type FakeBedrock, type FakeSts } from '@gateway/testing';
import { simpleRequest } from '../../testing/provider-calls.js';
import { contextOn } from '../../testing/bedrock-under-test.js';
import { UpstreamError } from '../upstream-error.js';
import { UpstreamPools } from '../upstream-pools.js';
import { BedrockProvider } from './bedrock-provider.js';

// Account A: its Bedrock accepts only the role's temporary credentials, assumed at STS with A's
// source keys. Account B: its Bedrock accepts B's long-lived keys. Each Bedrock also knows the other
// account's keys, so that a request signed with the wrong account's key would be accepted there and
// show up in `signedBy` instead of passing unnoticed as a refusal.
const SOURCE_A = { accessKeyId: 'AKIAACCOUNTASOURCE01', secretAccessKey: 'account-a-source-secret-0123456789abcdefgh' };
const KEYS_B = { accessKeyId: 'AKIAACCOUNTBKEYS0001', secretAccessKey: 'account-b-secret-0123456789abcdefghijklmn' };
const ROLE_A = 'arn:aws:iam::111111111111:role/bedrock-invoker';
const EXTERNAL_ID = 'acme-llm-gateway';
const ENVIRONMENT = {
  ACCOUNT_A_ACCESS_KEY_ID: SOURCE_A.accessKeyId,
  ACCOUNT_A_SECRET_ACCESS_KEY: SOURCE_A.secretAccessKey,
  ACCOUNT_B_ACCESS_KEY_ID: KEYS_B.accessKeyId,
  ACCOUNT_B_SECRET_ACCESS_KEY: KEYS_B.secretAccessKey,
};
const CONVERSE = { kind: 'converse', body: JSON.parse(providerFixture('bedrock', 'converse.json')) as object } as const;

let accountA: FakeBedrock;
let accountB: FakeBedrock;
let sts: FakeSts;
let pools: UpstreamPools;
let home: string;
const savedEnvironment: Record<string, string | undefined> = {};

/** The model of a catalog with its upstream in account A (the role) and a deployment in account B (keys), one served model per deployment. */
function deploymentsOf(keyBVariable = 'ACCOUNT_B_SECRET_ACCESS_KEY'): CatalogModel[] {
  const catalog = parseCatalog(
    [
      'models:',
      '  - id: bedrock/claude',
      '    provider: bedrock',
      '    owned_by: anthropic',
      '    created: 1',
      '    upstream:',
      '      model: "us.anthropic.claude-sonnet-4-20250514-v1:0"',
      `      region: ${BEDROCK_TEST_REGION}`,
      `      base_url: "${accountA.baseUrl}"`,
      `      aws_credentials: { role_arn: "${ROLE_A}", external_id: ${EXTERNAL_ID}, session_name: gateway-a, access_key_id_env: ACCOUNT_A_ACCESS_KEY_ID, secret_access_key_env: ACCOUNT_A_SECRET_ACCESS_KEY }`,
      '    deployments:',
      `      - { base_url: "${accountB.baseUrl}", aws_credentials: { access_key_id_env: ACCOUNT_B_ACCESS_KEY_ID, secret_access_key_env: ${keyBVariable} } }`,
      '    pricing: { input: "3.00", output: "15.00" }',
      '    context_window: 200000',
      '    max_output_tokens: 64000',
      '    capabilities: { tools: true, vision: true, streaming: true, json_mode: false }',
      '    quality_tier: premium',
    ].join('\n'),
    'accounts.yaml',
  );
  const model = catalog.byId.get('bedrock/claude')!;
  // As the deployment pool serves them: the catalog entry with each deployment's upstream.
  return [model.upstream, ...(model.deployments ?? [])].map((upstream) => ({ ...model, upstream }));
}

beforeAll(async () => {
  accountA = await startFakeBedrock({ region: BEDROCK_TEST_REGION, credentials: [KEYS_B, SOURCE_A] });
  accountB = await startFakeBedrock({ region: BEDROCK_TEST_REGION, credentials: [KEYS_B, SOURCE_A] });
  accountA.reply(() => CONVERSE);
  accountB.reply(() => CONVERSE);
  sts = await startFakeSts({
    roleArn: 'arn:aws:iam::111111111111:role/unused-web-identity',
    token: 'unused',
    region: BEDROCK_TEST_REGION,
    roles: [{ roleArn: ROLE_A, trusted: [SOURCE_A], externalId: EXTERNAL_ID }],
    onIssue: (issued) => accountA.addCredentials(issued),
  });
  pools = new UpstreamPools({ connectMs: 1000, firstByteMs: 2000, idleMs: 2000 });
  // STS is reached at the fake through AWS's own variable; no shared files or metadata of the machine.
  home = mkdtempSync(join(tmpdir(), 'aws-accounts-'));
  const variables = {
    AWS_ENDPOINT_URL_STS: sts.url,
    AWS_CONFIG_FILE: join(home, 'config'),
    AWS_SHARED_CREDENTIALS_FILE: join(home, 'credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
  };
  for (const name of [...Object.keys(process.env).filter((key) => key.startsWith('AWS_')), ...Object.keys(variables)]) {
    savedEnvironment[name] = process.env[name];
    delete process.env[name];
  }
  Object.assign(process.env, variables);
});

afterEach(() => {
  for (const fake of [accountA, accountB]) {
    fake.requests.length = 0;
    fake.refusals.length = 0;
  }
});

afterAll(async () => {
  for (const name of Object.keys(process.env)) if (name.startsWith('AWS_')) delete process.env[name];
  for (const [name, value] of Object.entries(savedEnvironment)) if (value !== undefined) process.env[name] = value;
  rmSync(home, { recursive: true, force: true });
  await pools?.close(100);
  await Promise.all([accountA?.close(), accountB?.close(), sts?.close()]);
});

describe('BedrockProvider with an AWS identity per deployment', () => {
  it('signs each deployment with its own account: a role assumed through STS for one, static keys for the other, never the other one', async () => {
    // One adapter, as one executor has, for both deployments.
    const provider = new BedrockProvider({ pools, environment: ENVIRONMENT });
    const [inA, inB] = deploymentsOf() as [CatalogModel, CatalogModel];
    for (const served of [inA, inB, inA, inB, inA]) {
      const answer = await provider.complete(simpleRequest(), contextOn(served));
      expect(answer.choices?.[0]?.message?.content).toBe('Hello! How can I help you today?');
    }

    // Account A: the role's temporary credentials with their session token, assumed once (cached
    // until they near expiry), by A's source keys, with the external id and the session name.
    expect(sts.assumed).toEqual([{ roleArn: ROLE_A, signedBy: SOURCE_A.accessKeyId, sessionName: 'gateway-a', externalId: EXTERNAL_ID }]);
    const signedInA = accountA.requests.map((request) => request.signedBy);
    expect(signedInA).toHaveLength(3);
    expect(new Set(signedInA).size).toBe(1);
    expect(signedInA[0]).toMatch(/^ASIA/);
    expect(accountA.requests.every((request) => typeof request.headers['x-amz-security-token'] === 'string')).toBe(true);
    // Account B: its own keys, no session token.
    expect(accountB.requests.map((request) => request.signedBy)).toEqual([KEYS_B.accessKeyId, KEYS_B.accessKeyId]);
    expect(accountB.requests.some((request) => request.headers['x-amz-security-token'] !== undefined)).toBe(false);
    // Neither saw the other's credentials, nor the role's source keys used directly.
    expect(signedInA).not.toContain(KEYS_B.accessKeyId);
    expect(signedInA).not.toContain(SOURCE_A.accessKeyId);
    expect(accountB.requests.map((request) => request.signedBy)).not.toContain(signedInA[0]);
    expect([...accountA.refusals, ...accountB.refusals]).toEqual([]);
  });

  it('fails a deployment whose key variable is not set as unavailable, naming the variable and sending nothing, and leaves the other deployment working', async () => {
    const provider = new BedrockProvider({ pools, environment: ENVIRONMENT });
    const [inA, inB] = deploymentsOf('ACCOUNT_B_UNSET_SECRET') as [CatalogModel, CatalogModel];
    const failure = await provider.complete(simpleRequest(), contextOn(inB)).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect(failure).toMatchObject({ retryable: false, failureClass: 'unavailable' });
    expect((failure as Error).message).toContain('ACCOUNT_B_UNSET_SECRET');
    expect(accountB.requests).toHaveLength(0);
    // No fallback to the process's chain or to account A's identity.
    await provider.complete(simpleRequest(), contextOn(inA));
    expect(accountA.requests).toHaveLength(1);
    expect(accountB.requests).toHaveLength(0);
  });

  it('refuses a role whose trust policy the source keys do not meet (a wrong external id) as a credentials failure, never signing with the source keys instead', async () => {
    const provider = new BedrockProvider({ pools, environment: ENVIRONMENT });
    const [inA] = deploymentsOf() as [CatalogModel];
    const wrongId: CatalogModel = {
      ...inA,
      upstream: { ...inA.upstream, aws_credentials: { ...inA.upstream.aws_credentials, external_id: 'not-the-external-id' } },
    };
    const failure = await provider.complete(simpleRequest(), contextOn(wrongId)).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect((failure as Error).message).toMatch(/^no AWS credentials to sign with/);
    expect((failure as Error).message).not.toContain(SOURCE_A.secretAccessKey);
    expect(accountA.requests).toHaveLength(0);
  });

  it('signs with the profile a deployment names in the shared credentials file, not the default one', async () => {
    // A file of its own: the SDK caches each shared file it read (by path) for the process.
    const credentialsFile = join(home, 'profiles');
    const before = process.env.AWS_SHARED_CREDENTIALS_FILE;
    process.env.AWS_SHARED_CREDENTIALS_FILE = credentialsFile;
    writeFileSync(
      credentialsFile,
      `[default]\naws_access_key_id = ${SOURCE_A.accessKeyId}\naws_secret_access_key = ${SOURCE_A.secretAccessKey}\n\n[account-b]\naws_access_key_id = ${KEYS_B.accessKeyId}\naws_secret_access_key = ${KEYS_B.secretAccessKey}\n`,
    );
    try {
      const provider = new BedrockProvider({ pools, environment: {} });
      const [, inB] = deploymentsOf() as [CatalogModel, CatalogModel];
      const byProfile: CatalogModel = { ...inB, upstream: { ...inB.upstream, aws_credentials: { profile: 'account-b' } } };
      await provider.complete(simpleRequest(), contextOn(byProfile));
      expect(accountB.requests.map((request) => request.signedBy)).toEqual([KEYS_B.accessKeyId]);
    } finally {
      process.env.AWS_SHARED_CREDENTIALS_FILE = before;
    }
  });
});
