/**
 * The `Authorization: Bearer` header both Vertex adapters send: a token of the credential the
 * catalog's api_key_env variable names (google-credentials.ts). A model without one never runs
 * (the catalog turns it on only when the variable is set), so its absence is a misconfiguration.
 * Each Vertex adapter is the adapter of the API it speaks (Gemini's, Anthropic's) with this
 * header in place of the API's key (onVertexAi).
 */
import type { HttpProvider } from '../http-provider.js';
import type { ProviderContext } from '../provider.js';
import { UpstreamError } from '../upstream-error.js';
import { providerKey, type HttpProviderDependencies } from '../upstream-http.js';
import type { GoogleCredentials } from './google-credentials.js';

/** What a Vertex adapter needs: the pools, the environment and the process's Google credentials. */
export interface VertexDependencies extends HttpProviderDependencies {
  readonly credentials: GoogleCredentials;
}

/** Adds the bearer token of `credential` to `headers`; rejects with an UpstreamError when there is none. */
export async function authorizeWithGoogle(
  credentials: GoogleCredentials,
  provider: string,
  headers: Record<string, string>,
  credential: string | undefined,
  context: ProviderContext,
): Promise<void> {
  const { project } = context.model.upstream;
  if (credential === undefined || project === undefined) {
    throw new UpstreamError(`model ${context.model.id} names no Google credentials`, { provider, kind: 'http', status: 401, retryable: false });
  }
  headers.authorization = `Bearer ${await credentials.accessToken(credential, project, provider, context.signal)}`;
}

/** The class of an HTTP adapter (abstract or not), as a mixin takes it. */
// biome-ignore lint/suspicious/noExplicitAny: a mixin's base constructor takes any arguments (TypeScript's rule for mixins).
type HttpProviderClass = abstract new (...args: any[]) => HttpProvider;

/**
 * The adapter `base` on Vertex AI: its requests authorized with the Google access token of the
 * model's credential, and the credential's secrets kept out of every error text. The subclass's
 * constructor takes VertexDependencies.
 */
export function onVertexAi<Base extends HttpProviderClass>(base: Base): Base {
  abstract class OnVertexAi extends base {
    protected override authorize(headers: Record<string, string>, credential: string | undefined, context: ProviderContext): Promise<void> {
      return authorizeWithGoogle((this.dependencies as VertexDependencies).credentials, this.name, headers, credential, context);
    }

    protected override secretsOf(context: ProviderContext): string[] {
      return (this.dependencies as VertexDependencies).credentials.secretsOf(providerKey(this.dependencies.environment, context.model));
    }
  }
  return OnVertexAi;
}
