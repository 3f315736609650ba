/**
 * The bedrock adapter under test against the fake Amazon Bedrock of @gateway/testing, which checks
 * every request's SigV4 signature (or its API key) as Bedrock does.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { CatalogModel } from '@gateway/catalog';
import { BEDROCK_TEST_REGION, startFakeBedrock, type BedrockReply, type FakeBedrock } from '@gateway/testing';
import { BedrockProvider } from '../providers/bedrock/bedrock-provider.js';
import type { ProviderContext } from '../providers/provider.js';
import { UpstreamPools } from '../providers/upstream-pools.js';

/** AWS credentials as the adapter's signer takes them. */
export interface TestAwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** The fake Bedrock, the pools and the adapter of a test file; set before its first test. */
export interface BedrockUnderTest {
  readonly fake: FakeBedrock;
  readonly pools: UpstreamPools;
  readonly provider: BedrockProvider;
}

/**
 * Starts the fake Bedrock in BEDROCK_TEST_REGION, accepting `credentials` (and the API key in
 * `apiKey`, when given, which the adapter then reads from its environment) and an adapter signing
 * with them, before the file's tests (the pools with short first-byte and idle timeouts); forgets
 * each test's requests and refusals after it, closes everything at the end.
 */
export function useBedrockUnderTest(credentials: TestAwsCredentials, apiKey?: { readonly variable: string; readonly value: string }): BedrockUnderTest {
  const under = {} as { fake: FakeBedrock; pools: UpstreamPools; provider: BedrockProvider };
  beforeAll(async () => {
    under.fake = await startFakeBedrock({ region: BEDROCK_TEST_REGION, credentials: [credentials], apiKeys: apiKey ? [apiKey.value] : [] });
    under.pools = new UpstreamPools({ connectMs: 1000, firstByteMs: 400, idleMs: 400 });
    const environment = apiKey ? { [apiKey.variable]: apiKey.value } : {};
    under.provider = new BedrockProvider({ pools: under.pools, environment, awsCredentials: async () => credentials });
  });
  afterEach(() => {
    under.fake.requests.length = 0;
    under.fake.refusals.length = 0;
  });
  afterAll(async () => {
    await under.pools.close(100);
    await under.fake.close();
  });
  return under;
}

/** The context of a call on `model`: a signal (a fresh one unless given) and the test request id. */
export function contextOn(model: CatalogModel, signal: AbortSignal = new AbortController().signal): ProviderContext {
  return { model, signal, requestId: 'test-request' };
}

/** The fake's answer with an AWS error: `status`, its `errorType` (x-amzn-errortype) and `message`, and any `headers`. */
export function bedrockError(status: number, errorType: string, message: string, headers?: Record<string, string>): BedrockReply {
  return { kind: 'error', status, errorType, message, ...(headers ? { headers } : {}) };
}
