/**
 * The adapter for Azure OpenAI and Azure AI Foundry's OpenAI-compatible endpoints. The wire format
 * is OpenAI's, so it is the openai-compatible adapter (conversion, streaming, usage) with Azure's
 * URL shape, auth and error envelope:
 * - URL: with the catalog's `deployment`, the deployment-addressed route
 *   `{base_url}/openai/deployments/{deployment}/chat/completions?api-version={api_version}`;
 *   without it, the v1 route `{base_url}/openai/v1/chat/completions` with `model` in the body (and
 *   `api-version` only when the catalog gives one). base_url is the resource endpoint
 *   (`https://contoso.openai.azure.com`, `https://contoso.services.ai.azure.com`); one that already
 *   ends with `/openai` or `/openai/v1` is taken as well.
 * - auth: `api-key: <key>` from api_key_env, or with `auth: entra_id` a Microsoft Entra ID bearer
 *   token from @azure/identity (entra-credential.ts), api_key_env then naming the client id, or the
 *   upstream's own `azure_credential` (an application of its own, never another upstream's).
 * - errors: Azure's content-filter refusal of a prompt is answered as OpenAI's 400
 *   `content_filter` (parse-upstream-error.ts); its 429 wait (`retry-after-ms`) is honoured.
 *
 * Embeddings: OpenAI's CreateEmbeddingRequest (the openai-compatible adapter's, embeddings.ts) on
 * the same URL shape, `.../deployments/{deployment}/embeddings?api-version=` or
 * `.../openai/v1/embeddings` with `model` in the body, with the same auth and error envelope.
 */
import type { CatalogModel } from '@gateway/catalog';
import type { UpstreamRequest } from '../http-provider.js';
import { OpenAiCompatibleEmbeddings } from '../openai-compatible/embeddings.js';
import { OpenAiCompatibleProvider } from '../openai-compatible/openai-compatible-provider.js';
import type { ProviderContext } from '../provider.js';
import type { UpstreamError } from '../upstream-error.js';
import { type ErrorResponse, type HttpProviderDependencies, missingBaseUrl } from '../upstream-http.js';
import type { ChatRequestOutput } from '@gateway/proto';
import { toAzureRequest } from './convert-request.js';
import { EntraTokens, type ApplicationCredentialFactory, type CredentialFactory } from './entra-credential.js';
import { upstreamErrorFromResponse } from './parse-upstream-error.js';
import { AZURE_PROVIDER } from '../provider-names.js';

/** What the adapter needs: the HTTP adapters' dependencies, and how to build an Entra ID credential (the server chain unless given). */
export interface AzureDependencies extends HttpProviderDependencies {
  readonly azureCredential?: CredentialFactory;
  /** How to build the credential of an upstream's own azure_credential (applicationCredentials() unless given). */
  readonly azureApplicationCredential?: ApplicationCredentialFactory;
}

/** The azure adapter. */
export class AzureProvider extends OpenAiCompatibleProvider {
  override readonly name: string = AZURE_PROVIDER;
  override readonly embeddings = new OpenAiCompatibleEmbeddings(this, (upstream) => azureUrl(upstream, 'embeddings'));
  private readonly entra: EntraTokens;

  constructor(dependencies: AzureDependencies) {
    super(dependencies);
    this.entra = new EntraTokens(AZURE_PROVIDER, dependencies.azureCredential, dependencies.azureApplicationCredential);
  }

  protected override authorize(headers: Record<string, string>, key: string | undefined, context: ProviderContext): void | Promise<void> {
    // With entra_id the variable holds the identity's client id; a bearer token is what is sent.
    if (context.model.upstream.auth === 'entra_id') {
      const own = context.model.upstream.azure_credential;
      const token = own ? this.entra.applicationToken(own, this.dependencies.environment, context.signal) : this.entra.token(key, context.signal);
      return token.then((token) => {
        headers.authorization = `Bearer ${token}`;
      });
    }
    if (key) headers['api-key'] = key;
  }

  protected override errorOf(response: ErrorResponse, secrets: readonly string[]): UpstreamError {
    return upstreamErrorFromResponse(this.name, response, secrets);
  }

  protected override requestFor(request: ChatRequestOutput, model: CatalogModel, stream: boolean): UpstreamRequest {
    if (!model.upstream.base_url) throw missingBaseUrl(model);
    return { url: azureChatUrl(model.upstream), body: JSON.stringify(toAzureRequest(request, model, stream)) };
  }
}

/** The chat-completions URL of an Azure upstream (see the file's comment). */
export function azureChatUrl(upstream: CatalogModel['upstream']): URL {
  return azureUrl(upstream, 'chat/completions');
}

/** The URL of an Azure OpenAI operation (`chat/completions`, `embeddings`) for an upstream: by deployment, or the v1 route. */
export function azureUrl(upstream: CatalogModel['upstream'], operation: string): URL {
  const base = new URL(upstream.base_url ?? '');
  let path = base.pathname.replace(/\/+$/, '').replace(/\/openai(?:\/v1)?$/, '');
  path = `${path}/openai`;
  const url = new URL(base.origin);
  if (upstream.deployment !== undefined) {
    url.pathname = `${path}/deployments/${encodeURIComponent(upstream.deployment)}/${operation}`;
  } else {
    url.pathname = `${path}/v1/${operation}`;
  }
  if (upstream.api_version !== undefined) url.searchParams.set('api-version', upstream.api_version);
  return url;
}
