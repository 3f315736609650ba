/**
 * The `Authorization: Bearer` header both Vertex adapters send: a token of the credential the
 * catalog's api_key_env variable names (google-credentials.ts). A model without one never runs
 * (the catalog turns it on only when the variable is set), so its absence is a misconfiguration.
 */
import type { ProviderContext } from '../provider.js';
import { UpstreamError } from '../upstream-error.js';
import type { GoogleCredentials } from './google-credentials.js';

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
