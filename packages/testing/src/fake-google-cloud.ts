/**
 * Google Cloud's side of Vertex AI for tests: token endpoints that issue OAuth access tokens the
 * way Google's do, and a gate in front of a fake upstream that accepts only those tokens, as
 * Vertex AI does. Tokens are reached through `google-auth-library` itself, never minted by a test:
 * - the metadata server of GKE and GCE (`GCE_METADATA_HOST` names it): GET
 *   /computeMetadata/v1/instance/service-accounts/default/token, refused without the
 *   `Metadata-Flavor: Google` header, answered with it;
 * - the Security Token Service of workload identity federation (POST /v1/token, the `token_url` of
 *   an external_account config): an RFC 8693 token exchange whose subject token and audience must
 *   be the ones the pool trusts;
 * - the OAuth token endpoint of service-account keys (POST /token): a JWT-bearer grant whose
 *   assertion must be signed (RS256) by the key this fake generated and carry the account's
 *   email, Google's token URL as audience and the cloud-platform scope.
 * Everything is plain HTTP/1.1 on 127.0.0.1.
 */
import { createPublicKey, createVerify, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Responder } from './fake-upstream.js';

/** The scope every token request must ask for. */
const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** The audience Google's token endpoint requires in a service account's assertion. */
const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

/** A token request the fake answered (or refused). */
export interface TokenRequest {
  readonly via: 'metadata' | 'sts' | 'jwt';
  readonly granted: boolean;
}

/** The started token endpoints. */
export interface FakeGoogleAuth {
  /** `127.0.0.1:<port>`: the value of GCE_METADATA_HOST. */
  readonly metadataHost: string;
  /** The STS token URL of a workload identity federation config. */
  readonly stsUrl: string;
  /** The OAuth token endpoint that service-account keys' grants go to here. */
  readonly tokenUrl: string;
  /** The subject token the federation pool trusts (the content of a config's credential_source file). */
  readonly subjectToken: string;
  /** The audience the federation pool has. */
  readonly audience: string;
  /** A service-account key file's JSON, of the key this fake verifies assertions with. */
  readonly serviceAccountKey: Record<string, string>;
  /** A workload identity federation (external_account) config whose subject token is read from `subjectTokenFile`. */
  externalAccountConfig(subjectTokenFile: string): Record<string, unknown>;
  /** Every token request, in order. */
  readonly tokenRequests: TokenRequest[];
  /** Whether an Authorization header carries a token this fake issued and that has not expired. */
  accepts(authorization: string | undefined): boolean;
  /** Makes every token issued so far invalid (a revoked or expired token). */
  revokeAll(): void;
  close(): Promise<void>;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (piece: string) => {
      text += piece;
    });
    request.on('end', () => resolve(text));
    request.on('error', reject);
  });
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

/** Whether a JWT is signed by `publicKeyPem` (RS256) and its claims: undefined when it is not. */
function verifiedClaims(assertion: string, publicKeyPem: string): Record<string, unknown> | undefined {
  const [header, payload, signature] = assertion.split('.');
  if (header === undefined || payload === undefined || signature === undefined) return undefined;
  const { alg } = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: string };
  if (alg !== 'RS256') return undefined;
  const verifier = createVerify('RSA-SHA256');
  verifier.update(`${header}.${payload}`);
  if (!verifier.verify(createPublicKey(publicKeyPem), Buffer.from(signature, 'base64url'))) return undefined;
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** Starts the metadata server, the STS and the OAuth token endpoint on one port. */
export async function startFakeGoogleAuth(options: { tokenLifetimeSeconds?: number } = {}): Promise<FakeGoogleAuth> {
  const lifetime = options.tokenLifetimeSeconds ?? 3599;
  const issued = new Map<string, number>();
  const tokenRequests: TokenRequest[] = [];
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const clientEmail = 'gateway-executor@acme-prod-ml.iam.gserviceaccount.com';
  const subjectToken = `eyJ.subject.${randomBytes(12).toString('hex')}`;
  const audience = '//iam.googleapis.com/projects/123456789/locations/global/workloadIdentityPools/gateway/providers/eks';

  const issue = (via: TokenRequest['via'], response: ServerResponse, headers: Record<string, string> = {}, extra: Record<string, string> = {}) => {
    const token = `ya29.fake-${via}-${randomBytes(16).toString('hex')}`;
    issued.set(token, Date.now() + lifetime * 1000);
    tokenRequests.push({ via, granted: true });
    sendJson(response, 200, { access_token: token, expires_in: lifetime, token_type: 'Bearer', ...extra }, headers);
  };
  const refuse = (via: TokenRequest['via'], response: ServerResponse, status: number, error: string, headers: Record<string, string> = {}) => {
    tokenRequests.push({ via, granted: false });
    sendJson(response, status, { error, error_description: `${error} (fake Google)` }, headers);
  };

  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://fake');
    if (request.method === 'GET' && url.pathname.startsWith('/computeMetadata/v1/')) {
      const flavor = { 'metadata-flavor': 'Google' };
      // The metadata server refuses requests without the header, so that a page fetched by a
      // redirected browser or an SSRF cannot read tokens.
      if (request.headers['metadata-flavor'] !== 'Google') return refuse('metadata', response, 403, 'missing Metadata-Flavor header', flavor);
      const path = url.pathname.slice('/computeMetadata/v1/'.length);
      if (path === 'instance/service-accounts/default/token') {
        const scopes = url.searchParams.get('scopes') ?? '';
        if (scopes !== '' && !scopes.split(',').includes(CLOUD_PLATFORM_SCOPE)) return refuse('metadata', response, 400, 'scope not granted', flavor);
        return issue('metadata', response, flavor);
      }
      if (path === 'instance' || path === 'instance/') return sendJson(response, 200, { id: 1 }, flavor);
      if (path === 'project/project-id') {
        response.writeHead(200, { 'content-type': 'application/text', ...flavor });
        return response.end('acme-prod-ml');
      }
      if (path === 'universe/universe-domain') {
        response.writeHead(200, { 'content-type': 'application/text', ...flavor });
        return response.end('googleapis.com');
      }
      return sendJson(response, 404, { error: 'not found' }, flavor);
    }
    if (request.method === 'POST' && (url.pathname === '/v1/token' || url.pathname === '/token')) {
      const form = new URLSearchParams(await readBody(request));
      if (url.pathname === '/v1/token') {
        const scopes = (form.get('scope') ?? '').split(' ');
        const valid =
          form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:token-exchange' &&
          form.get('requested_token_type') === 'urn:ietf:params:oauth:token-type:access_token' &&
          form.get('subject_token_type') === 'urn:ietf:params:oauth:token-type:jwt' &&
          form.get('audience') === audience &&
          form.get('subject_token') === subjectToken &&
          scopes.includes(CLOUD_PLATFORM_SCOPE);
        if (!valid) return refuse('sts', response, 400, 'invalid_grant');
        return issue('sts', response, {}, { issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' });
      }
      const claims =
        form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer' ? verifiedClaims(form.get('assertion') ?? '', publicKey) : undefined;
      const now = Date.now() / 1000;
      const valid =
        claims !== undefined &&
        claims.iss === clientEmail &&
        claims.aud === GOOGLE_TOKEN_URL &&
        typeof claims.exp === 'number' &&
        claims.exp > now &&
        typeof claims.scope === 'string' &&
        claims.scope.split(' ').includes(CLOUD_PLATFORM_SCOPE);
      if (!valid) return refuse('jwt', response, 400, 'invalid_grant');
      return issue('jwt', response);
    }
    sendJson(response, 404, { error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    metadataHost: `127.0.0.1:${port}`,
    stsUrl: `${origin}/v1/token`,
    tokenUrl: `${origin}/token`,
    subjectToken,
    audience,
    serviceAccountKey: {
      type: 'service_account',
      project_id: 'acme-prod-ml',
      private_key_id: randomBytes(20).toString('hex'),
      private_key: privateKey,
      client_email: clientEmail,
      client_id: '109876543210987654321',
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: `${origin}/token`,
    },
    externalAccountConfig: (subjectTokenFile) => ({
      type: 'external_account',
      audience,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      token_url: `${origin}/v1/token`,
      credential_source: { file: subjectTokenFile },
    }),
    tokenRequests,
    accepts(authorization) {
      const match = /^Bearer (\S+)$/.exec(authorization ?? '');
      const expires = match ? issued.get(match[1] as string) : undefined;
      return expires !== undefined && expires > Date.now();
    },
    revokeAll() {
      issued.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Vertex AI's answer to a request without a valid token: 401 UNAUTHENTICATED in google.rpc.Status. */
const UNAUTHENTICATED = {
  error: {
    code: 401,
    message:
      'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
    status: 'UNAUTHENTICATED',
  },
};

/** The methods each Vertex publisher serves here. */
const METHODS: Readonly<Record<string, readonly string[]>> = {
  google: ['generateContent', 'streamGenerateContent', 'predict'],
  anthropic: ['rawPredict', 'streamRawPredict'],
};

const MODEL_PATH = /^\/v1\/projects\/([a-z][a-z0-9-]{4,28}[a-z0-9])\/locations\/([a-z0-9-]+)\/publishers\/(google|anthropic)\/models\/([^/:]+):([A-Za-z]+)$/;

/**
 * A fake Vertex AI in front of `inner`: the path must be a publisher model's method
 * (…/projects/{project}/locations/{region}/publishers/{google|anthropic}/models/{model}:{method}),
 * the bearer token one `auth` issued (401 UNAUTHENTICATED otherwise), a Gemini stream must ask
 * for `alt=sse`, an embedding model's `:predict` must carry `instances`, and a Claude body must carry `anthropic_version: "vertex-2023-10-16"` and no
 * `model` (400 in Anthropic's envelope otherwise, as Vertex answers).
 */
export function vertexGate(auth: FakeGoogleAuth, inner: Responder): Responder {
  return (request, response) => {
    const url = new URL(request.path, 'http://fake');
    const match = MODEL_PATH.exec(url.pathname);
    const methods = match ? METHODS[match[3] as string] : undefined;
    if (request.method !== 'POST' || !match || !methods?.includes(match[5] as string)) {
      return sendJson(response, 404, { error: { code: 404, message: `The requested URL ${url.pathname} was not found.`, status: 'NOT_FOUND' } });
    }
    if (!auth.accepts(request.headers.authorization as string | undefined)) return sendJson(response, 401, UNAUTHENTICATED);
    if (match[5] === 'streamGenerateContent' && url.searchParams.get('alt') !== 'sse') {
      return sendJson(response, 400, { error: { code: 400, message: 'This test double streams only with alt=sse.', status: 'INVALID_ARGUMENT' } });
    }
    if (match[5] === 'predict' && !Array.isArray(request.body.instances)) {
      return sendJson(response, 400, { error: { code: 400, message: 'Invalid JSON payload: "instances" is required.', status: 'INVALID_ARGUMENT' } });
    }
    if (match[3] === 'google' && match[5] !== 'predict' && !Array.isArray(request.body.contents)) {
      return sendJson(response, 400, {
        error: { code: 400, message: '* GenerateContentRequest.contents: contents is not specified', status: 'INVALID_ARGUMENT' },
      });
    }
    if (match[3] === 'anthropic') {
      const problem =
        request.body.anthropic_version !== 'vertex-2023-10-16'
          ? 'anthropic_version: Input should be vertex-2023-10-16'
          : 'model' in request.body
            ? 'model: Extra inputs are not permitted'
            : (match[5] === 'streamRawPredict') !== (request.body.stream === true)
              ? 'stream: streamRawPredict takes stream: true, rawPredict does not'
              : undefined;
      if (problem) return sendJson(response, 400, { type: 'error', error: { type: 'invalid_request_error', message: problem } });
    }
    return inner(request, response);
  };
}
