import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { gaxios } from 'google-auth-library';
import { startBrokenUpstream, startFakeGoogleAuth, type FakeGoogleAuth } from '@gateway/testing';
import { UpstreamError } from '../upstream-error.js';
import { APPLICATION_DEFAULT_CREDENTIALS, GoogleCredentials } from './google-credentials.js';

/** The token endpoint google-auth-library sends service-account grants to, whatever the key file says. */
const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

let auth: FakeGoogleAuth;
let directory: string;
const write = (name: string, content: unknown): string => {
  const path = join(directory, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
};
const signal = () => new AbortController().signal;

/**
 * The library's own transport, with its requests to Google's token endpoint sent to the fake's:
 * the one way to reach a service-account grant, whose URL the library fixes.
 */
function transportTo(tokenUrl: string): InstanceType<typeof gaxios.Gaxios> {
  const transporter = new gaxios.Gaxios();
  transporter.interceptors.request.add({
    resolved: async (options) => {
      if (String(options.url) === GOOGLE_TOKEN_URL) options.url = new URL(tokenUrl);
      return options;
    },
  });
  return transporter;
}

beforeAll(async () => {
  auth = await startFakeGoogleAuth();
  directory = mkdtempSync(join(tmpdir(), 'google-credentials-'));
  // No test reads gcloud's own credentials or reaches a real metadata server.
  vi.stubEnv('GOOGLE_APPLICATION_CREDENTIALS', '');
  vi.stubEnv('CLOUDSDK_CONFIG', directory);
  vi.stubEnv('GCE_METADATA_HOST', auth.metadataHost);
});
afterEach(() => {
  auth.tokenRequests.length = 0;
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await auth.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('GoogleCredentials: a service-account key', () => {
  it('gets a token by a JWT grant the token endpoint verifies against the key, and keeps it for later calls', async () => {
    const credentials = new GoogleCredentials(5_000, { transporter: transportTo(auth.tokenUrl) });
    const key = write('service-account.json', auth.serviceAccountKey);
    const token = await credentials.accessToken(key, 'acme-prod-ml', 'vertex', signal());
    expect(auth.accepts(`Bearer ${token}`)).toBe(true);
    expect(await credentials.accessToken(key, 'acme-prod-ml', 'vertex', signal())).toBe(token);
    expect(auth.tokenRequests).toEqual([{ via: 'jwt', granted: true }]);
    expect(credentials.secretsOf(key)).toEqual([token]);
  });

  it('is refused for a key the account does not have: a misconfiguration, not retried, showing no key', async () => {
    const credentials = new GoogleCredentials(5_000, { transporter: transportTo(auth.tokenUrl) });
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    const key = write('stolen.json', { ...auth.serviceAccountKey, private_key: privateKey });
    const failure = await credentials.accessToken(key, 'acme-prod-ml', 'vertex', signal()).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect(failure).toMatchObject({ kind: 'http', status: 401, retryable: false, failureClass: 'unusable' });
    expect((failure as Error).message).not.toContain('PRIVATE KEY');
    expect(auth.tokenRequests).toEqual([{ via: 'jwt', granted: false }]);
  });

  it('reports a credentials file that is missing or not JSON as a misconfiguration, quoting none of it', async () => {
    const credentials = new GoogleCredentials(5_000);
    const truncated = JSON.stringify(auth.serviceAccountKey).slice(0, 400);
    for (const [path, message] of [
      [join(directory, 'missing.json'), 'the Google credentials file cannot be read (ENOENT)'],
      [write('broken.json', truncated), 'the Google credentials file is not JSON'],
    ] as const) {
      const failure = await credentials.accessToken(path, 'acme-prod-ml', 'vertex', signal()).catch((error: unknown) => error);
      expect(failure).toMatchObject({ status: 401, retryable: false, message });
      expect(JSON.stringify(failure)).not.toContain('PRIVATE KEY');
    }
  });
});

describe('GoogleCredentials: workload identity federation', () => {
  it('exchanges the subject token at the STS the config names', async () => {
    const credentials = new GoogleCredentials(5_000);
    const config = write('federation.json', auth.externalAccountConfig(write('subject-token', auth.subjectToken)));
    const token = await credentials.accessToken(config, 'acme-prod-ml', 'vertex', signal());
    expect(auth.accepts(`Bearer ${token}`)).toBe(true);
    expect(auth.tokenRequests).toEqual([{ via: 'sts', granted: true }]);
  });

  it('is refused for a subject token the pool does not trust', async () => {
    const credentials = new GoogleCredentials(5_000);
    const config = write('federation-foreign.json', auth.externalAccountConfig(write('foreign-token', 'eyJ.someone.else')));
    expect(await credentials.accessToken(config, 'acme-prod-ml', 'vertex', signal()).catch((error: unknown) => error)).toMatchObject({
      status: 401,
      retryable: false,
    });
  });
});

describe('GoogleCredentials: the metadata server', () => {
  it('gets a token from the metadata server, which refuses a request without Metadata-Flavor', async () => {
    const credentials = new GoogleCredentials(5_000);
    const token = await credentials.accessToken(APPLICATION_DEFAULT_CREDENTIALS, 'acme-prod-ml', 'vertex-anthropic', signal());
    expect(auth.accepts(`Bearer ${token}`)).toBe(true);
    expect(auth.tokenRequests.at(-1)).toEqual({ via: 'metadata', granted: true });
    const bare = await fetch(`http://${auth.metadataHost}/computeMetadata/v1/instance/service-accounts/default/token`);
    expect(bare.status).toBe(403);
    expect(auth.tokenRequests.at(-1)).toEqual({ via: 'metadata', granted: false });
  });

  it('replaces a token near its end before using it', async () => {
    const shortLived = await startFakeGoogleAuth({ tokenLifetimeSeconds: 60 });
    vi.stubEnv('GCE_METADATA_HOST', shortLived.metadataHost);
    try {
      const credentials = new GoogleCredentials(5_000);
      const tokens = [];
      for (let call = 0; call < 3; call += 1) tokens.push(await credentials.accessToken(APPLICATION_DEFAULT_CREDENTIALS, 'acme-prod-ml', 'vertex', signal()));
      // The library refreshes a token within five minutes of its expiry: each call gets a new one.
      expect(new Set(tokens).size).toBe(3);
      expect(tokens.every((token) => shortLived.accepts(`Bearer ${token}`))).toBe(true);
    } finally {
      vi.stubEnv('GCE_METADATA_HOST', auth.metadataHost);
      await shortLived.close();
    }
  });

  it('gives up on a metadata server that never answers at the timeout, and at once when the caller goes away', async () => {
    const silent = await startBrokenUpstream('silent');
    vi.stubEnv('GCE_METADATA_HOST', new URL(silent.baseUrl).host);
    try {
      const started = performance.now();
      const timedOut = await new GoogleCredentials(300)
        .accessToken(APPLICATION_DEFAULT_CREDENTIALS, 'acme-prod-ml', 'vertex', signal())
        .catch((error: unknown) => error);
      expect(timedOut).toMatchObject({ kind: 'timeout', retryable: true, failureClass: 'unavailable' });
      expect(performance.now() - started).toBeLessThan(3_000);
      const controller = new AbortController();
      const pending = new GoogleCredentials(60_000).accessToken(APPLICATION_DEFAULT_CREDENTIALS, 'acme-prod-ml', 'vertex', controller.signal);
      controller.abort();
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    } finally {
      vi.stubEnv('GCE_METADATA_HOST', auth.metadataHost);
      await silent.close();
    }
  });
});
