/**
 * Auth: Google OAuth access tokens for Vertex AI, from the maintained `google-auth-library`
 * (GoogleAuth with the cloud-platform scope), so every credential a Google Cloud team already has
 * works as Google's own clients use it:
 * - a service-account key file (a JWT grant at its token endpoint);
 * - a workload identity federation config (`external_account`: a subject token from a file, URL
 *   or executable exchanged at the STS its `token_url` names), as on EKS, AKS or any OIDC issuer;
 * - `default`: Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS, gcloud's file,
 *   else the metadata server (GKE workload identity, GCE), reached through GCE_METADATA_HOST when
 *   that is set.
 *
 * The catalog's api_key_env variable holds which: a file path, or `default`. One GoogleAuth per
 * distinct credential, kept for the process: the library caches the token and refreshes it before
 * it expires, so a request pays a token round trip only when the cached one is near its end. The
 * project is given to GoogleAuth so it never looks it up (a metadata or gcloud call per process).
 *
 * A token that cannot be had is an UpstreamError like any upstream failure: a token endpoint that
 * refused the credential (4xx) or a credential that cannot be read is the gateway's
 * misconfiguration (401, not retryable: `upstream_rejected`); an endpoint that cannot be reached,
 * answers 5xx or does not answer within the first-byte timeout leaves the model unavailable for now
 * (retryable).
 */
import type { GoogleAuth, GoogleAuthOptions } from 'google-auth-library';
import { MadeOnce } from '../made-once.js';
import { UpstreamError } from '../upstream-error.js';

/** The OAuth scope Vertex AI accepts. */
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

/** The credential value that asks for Application Default Credentials. */
export const APPLICATION_DEFAULT_CREDENTIALS = 'default';

/** Options of the GoogleAuth clients, for a transport of the library's own (a proxy, a test's token endpoint). */
export type GoogleClientOptions = NonNullable<GoogleAuthOptions['clientOptions']>;

/** The access tokens of the process's Google credentials. */
export class GoogleCredentials {
  /** One client per credential. */
  private readonly auths = new MadeOnce<string, GoogleAuth>();
  /** The last token of each credential: an error text must never show it. */
  private readonly lastTokens = new Map<string, string>();

  /** `timeoutMs` bounds one token fetch; `clientOptions` go to every GoogleAuth client. */
  constructor(
    private readonly timeoutMs: number,
    private readonly clientOptions: GoogleClientOptions = {},
  ) {}

  /**
   * A bearer token of `credential` (a file path or `default`), cached by the library; rejects with
   * an UpstreamError of `provider`, or with the signal's reason once it is aborted.
   */
  async accessToken(credential: string, project: string, provider: string, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new UpstreamError('no Google access token within the first-byte timeout', { provider, kind: 'timeout' })),
        this.timeoutMs,
      );
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const token = await Promise.race([this.authOf(credential, project).then((auth) => auth.getAccessToken()), stopped]);
      if (typeof token !== 'string' || token === '')
        throw new UpstreamError('Google credentials gave no access token', { provider, kind: 'http', status: 401 });
      this.lastTokens.set(credential, token);
      return token;
    } catch (error) {
      signal.throwIfAborted();
      if (error instanceof UpstreamError) throw error;
      throw tokenFailure(provider, error);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  /** What an error text must never show: the credential's last token. */
  secretsOf(credential: string | undefined): string[] {
    const token = credential === undefined ? undefined : this.lastTokens.get(credential);
    return token ? [token] : [];
  }

  /**
   * The credential's client. The library is loaded at the first Vertex AI request, so that an
   * executor serving no Vertex model does not carry it.
   */
  private authOf(credential: string, project: string): Promise<GoogleAuth> {
    return this.auths.get(credential, async () => {
      const { GoogleAuth } = await import('google-auth-library');
      return new GoogleAuth({
        scopes: [CLOUD_PLATFORM_SCOPE],
        projectId: project,
        clientOptions: this.clientOptions,
        ...(credential === APPLICATION_DEFAULT_CREDENTIALS ? {} : { keyFilename: credential }),
      });
    });
  }
}

/**
 * The UpstreamError of a failed token fetch. The library's messages name files and endpoints, not
 * tokens; the token endpoint's own answer is not repeated (it may echo the assertion).
 */
function tokenFailure(provider: string, error: unknown): UpstreamError {
  const status = (error as { response?: { status?: unknown }; status?: unknown }).response?.status ?? (error as { status?: unknown }).status;
  const code = (error as { code?: unknown }).code;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new UpstreamError(`the Google token endpoint refused the credentials (${status})`, {
      provider,
      kind: 'http',
      status: 401,
      retryable: false,
      cause: error,
    });
  }
  if (typeof status === 'number' && status >= 500) {
    return new UpstreamError(`the Google token endpoint answered ${status}`, { provider, kind: 'connection', cause: error });
  }
  if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
    return new UpstreamError(`the Google credentials file cannot be read (${code})`, { provider, kind: 'http', status: 401, retryable: false, cause: error });
  }
  // Not the parser's message (the library passes it on as "Invalid JSON key file: ..."): Node's
  // quotes the text around the fault, which may be a piece of a private key.
  if (error instanceof SyntaxError || /^Invalid JSON|is not valid JSON|in JSON at position|JSON input/.test((error as Error).message ?? '')) {
    return new UpstreamError('the Google credentials file is not JSON', { provider, kind: 'http', status: 401, retryable: false });
  }
  if (/credentials|key/i.test((error as Error).message ?? '')) {
    return new UpstreamError(`the Google credentials cannot be used: ${(error as Error).message}`, {
      provider,
      kind: 'http',
      status: 401,
      retryable: false,
      cause: error,
    });
  }
  return new UpstreamError(`the Google token endpoint cannot be reached${typeof code === 'string' ? ` (${code})` : ''}`, {
    provider,
    kind: 'connection',
    cause: error,
  });
}
