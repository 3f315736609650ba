/**
 * Azure's side of the tests: a Microsoft Entra ID token endpoint and the checks Azure OpenAI makes
 * on a request, for the fake upstream to put in front of its answers.
 *
 * The token endpoint answers what @azure/identity asks (MSAL's client-credentials flow): the
 * tenant's OpenID configuration and `POST /{tenant}/oauth2/v2.0/token`, issuing an RS256 JWT for
 * the scope's resource only when the client secret is right. It listens on HTTPS, because MSAL
 * refuses an authority that is not (its certificate is self-signed, made with the `openssl` CLI;
 * the client trusts it through `tlsOptions.ca` or NODE_EXTRA_CA_CERTS=`caFile`). Azure OpenAI's
 * checks: the `api-key` header, or a bearer token that this endpoint issued (signature, audience,
 * expiry verified), and `api-version` on deployment-addressed URLs.
 */
import { execFileSync } from 'node:child_process';
import { createSign, createVerify, generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReceivedRequest, Responder } from './fake-upstream.js';

/** The audience of Azure OpenAI tokens (the scope `https://cognitiveservices.azure.com/.default`). */
export const COGNITIVE_SERVICES_AUDIENCE = 'https://cognitiveservices.azure.com';

/** The application the fake token endpoint knows. */
export interface EntraApplication {
  readonly tenantId: string;
  readonly clientId: string;
  readonly clientSecret: string;
}

/** A started fake Entra ID token endpoint. */
export interface FakeEntra {
  /** `https://127.0.0.1:<port>`: the credential's authorityHost (AZURE_AUTHORITY_HOST). */
  readonly authorityHost: string;
  /** The PEM of its self-signed certificate, and the file that holds it (for NODE_EXTRA_CA_CERTS). */
  readonly caPem: string;
  readonly caFile: string;
  /** How many tokens it issued. */
  tokensIssued: number;
  /** Whether a bearer token is one it issued, for Azure OpenAI, unexpired. */
  verify(token: string): boolean;
  /** The client id a valid token was issued to; undefined for any other token. */
  applicationOf(token: string): string | undefined;
  close(): Promise<void>;
}

function base64Url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

/** Starts the fake token endpoint on a free port of 127.0.0.1, knowing `application` and any `others` (each in its own tenant or not). */
export async function startFakeEntra(application: EntraApplication, ...others: EntraApplication[]): Promise<FakeEntra> {
  const directory = mkdtempSync(join(tmpdir(), 'fake-entra-'));
  const keyFile = join(directory, 'key.pem');
  const caFile = join(directory, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      caFile,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return startWithCertificate([application, ...others], directory, keyFile, caFile);
}

async function startWithCertificate(applications: readonly EntraApplication[], directory: string, keyFile: string, caFile: string): Promise<FakeEntra> {
  const signing = generateKeyPairSync('rsa', { modulusLength: 2048 });
  let authorityHost = '';
  const issuerOf = (tenantId: string) => `${authorityHost}/${tenantId}/v2.0`;
  const tenants = new Set(applications.map((entry) => entry.tenantId));
  const entra: FakeEntra = {
    authorityHost: '',
    caPem: readFileSync(caFile, 'utf8'),
    caFile,
    tokensIssued: 0,
    verify(token) {
      return entra.applicationOf(token) !== undefined;
    },
    applicationOf(token) {
      const [header, payload, signature] = token.split('.');
      if (!header || !payload || !signature) return undefined;
      const verifier = createVerify('RSA-SHA256');
      verifier.update(`${header}.${payload}`);
      if (!verifier.verify(signing.publicKey, Buffer.from(signature, 'base64url'))) return undefined;
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { aud?: string; exp?: number; iss?: string; appid?: string };
      const known = applications.find((entry) => entry.clientId === claims.appid && issuerOf(entry.tenantId) === claims.iss);
      return known && claims.aud === COGNITIVE_SERVICES_AUDIENCE && (claims.exp ?? 0) * 1000 > Date.now() ? known.clientId : undefined;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          rmSync(directory, { recursive: true, force: true });
          resolve();
        });
      }),
  };
  const server: Server = createServer({ key: readFileSync(keyFile), cert: readFileSync(caFile) }, (request, response) => {
    const pieces: Buffer[] = [];
    request.on('data', (piece: Buffer) => pieces.push(piece));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', authorityHost);
      const tenantId = url.pathname.split('/')[1] ?? '';
      const issuer = () => issuerOf(tenantId);
      const json = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      };
      if (request.method === 'GET' && tenants.has(tenantId) && url.pathname === `/${tenantId}/v2.0/.well-known/openid-configuration`) {
        return json(200, {
          issuer: issuer(),
          authorization_endpoint: `${authorityHost}/${tenantId}/oauth2/v2.0/authorize`,
          token_endpoint: `${authorityHost}/${tenantId}/oauth2/v2.0/token`,
          end_session_endpoint: `${authorityHost}/${tenantId}/oauth2/v2.0/logout`,
          jwks_uri: `${authorityHost}/${tenantId}/discovery/v2.0/keys`,
          response_types_supported: ['code', 'id_token', 'token'],
          token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt'],
        });
      }
      if (request.method === 'POST' && tenants.has(tenantId) && url.pathname === `/${tenantId}/oauth2/v2.0/token`) {
        const form = new URLSearchParams(Buffer.concat(pieces).toString('utf8'));
        const known = applications.find((entry) => entry.tenantId === tenantId && entry.clientId === form.get('client_id'));
        const clientId = known?.clientId ?? '';
        if (form.get('grant_type') !== 'client_credentials' || !known || form.get('client_secret') !== known.clientSecret) {
          return json(401, { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.', error_codes: [7000215] });
        }
        if (form.get('scope')?.split(' ').includes(`${COGNITIVE_SERVICES_AUDIENCE}/.default`) !== true) {
          return json(400, { error: 'invalid_scope', error_description: 'AADSTS70011: The provided value for the input parameter scope is not valid.' });
        }
        const now = Math.floor(Date.now() / 1000);
        const header = base64Url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
        const payload = base64Url(
          JSON.stringify({
            aud: COGNITIVE_SERVICES_AUDIENCE,
            iss: issuer(),
            tid: tenantId,
            appid: clientId,
            iat: now,
            nbf: now,
            exp: now + 3600,
            jti: randomUUID(),
          }),
        );
        const signer = createSign('RSA-SHA256');
        signer.update(`${header}.${payload}`);
        entra.tokensIssued += 1;
        return json(200, {
          token_type: 'Bearer',
          expires_in: 3599,
          ext_expires_in: 3599,
          access_token: `${header}.${payload}.${signer.sign(signing.privateKey).toString('base64url')}`,
        });
      }
      json(404, { error: 'not_found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  authorityHost = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  (entra as { authorityHost: string }).authorityHost = authorityHost;
  return entra;
}

/** How Azure OpenAI authenticates a request in the fake: its resource key, and/or tokens of a fake Entra. */
export interface AzureAuthCheck {
  readonly apiKey?: string;
  readonly entra?: FakeEntra;
}

function azureError(response: Parameters<Responder>[1], status: number, code: string, message: string): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ error: { code, message } }));
}

/**
 * A responder that checks a request as Azure OpenAI does before answering with `next`: the route
 * (`/openai/deployments/{name}/chat/completions` or `/embeddings` with `api-version`, or
 * `/openai/v1/chat/completions` or `/embeddings` with `model` in the body), then the `api-key` header or a bearer token the fake Entra issued.
 * Refusals are Azure's: 404 for an unknown route or a missing api-version, 401 for bad credentials.
 */
export function azureOpenAi(auth: AzureAuthCheck, next: Responder): Responder {
  return (request: ReceivedRequest, response) => {
    const url = new URL(request.path, 'http://fake');
    const deployment = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(url.pathname);
    const v1 = /^\/openai\/v1\/(chat\/completions|embeddings)$/.exec(url.pathname);
    if (deployment) {
      if (!url.searchParams.get('api-version')) return azureError(response, 404, '404', 'Resource not found');
    } else if (v1) {
      if (typeof request.body.model !== 'string' || request.body.model === '') return azureError(response, 400, 'invalid_request', 'model is required.');
    } else return azureError(response, 404, '404', 'Resource not found');
    const operation = deployment ? deployment[2] : v1?.[1];
    if (operation === 'chat/completions' && (!Array.isArray(request.body.messages) || request.body.messages.length === 0))
      return azureError(response, 400, 'invalid_request', "'messages' is a required property");
    if (operation === 'embeddings' && request.body.input === undefined) return azureError(response, 400, 'invalid_request', "'input' is a required property");
    const key = request.headers['api-key'];
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const keyOk = auth.apiKey !== undefined && key === auth.apiKey;
    const tokenOk = auth.entra !== undefined && bearer !== undefined && auth.entra.verify(bearer);
    if (!keyOk && !tokenOk) {
      return azureError(
        response,
        401,
        '401',
        'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
      );
    }
    return next(request, response);
  };
}
