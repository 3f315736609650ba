/**
 * The adapter for Gemini models on Google Vertex AI: POST .../publishers/google/models/{model}:
 * generateContent, or :streamGenerateContent?alt=sse for streams (vertex-url.ts), with an OAuth
 * access token as `Authorization: Bearer` (google-credentials.ts). The body, the answers and the
 * google.rpc.Status errors are the Gemini API's, so the Gemini adapter's conversion, response
 * mapping and error parsing serve it unchanged (providers/gemini): this adapter adds only the
 * transport and the auth. A safety block is `content_filter` as on the Gemini API; 401
 * UNAUTHENTICATED and 403 PERMISSION_DENIED (a token or IAM role the project does not accept) are
 * the gateway's misconfiguration, 429 RESOURCE_EXHAUSTED and 503 are retryable.
 *
 * Embeddings: `:predict` on the text-embedding models under the same URL and token
 * (embeddings.ts), in place of the Gemini API's embedContent.
 */
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput } from '@gateway/proto';
import type { UpstreamRequest } from '../http-provider.js';
import { toGeminiRequest } from '../gemini/convert-request.js';
import { GeminiProvider } from '../gemini/gemini-provider.js';
import { VertexEmbeddings } from './embeddings.js';
import { onVertexAi, type VertexDependencies } from './vertex-auth.js';
import { vertexModelUrl } from './vertex-url.js';
import { VERTEX_PROVIDER } from '../provider-names.js';

/** The vertex adapter (Gemini on Vertex AI). */
export class VertexProvider extends onVertexAi(GeminiProvider) {
  override readonly name: string = VERTEX_PROVIDER;
  override readonly embeddings = new VertexEmbeddings(this);

  constructor(protected override readonly dependencies: VertexDependencies) {
    super(dependencies);
  }

  protected override requestFor(request: ChatRequestOutput, model: CatalogModel, stream: boolean): UpstreamRequest {
    const body = JSON.stringify(toGeminiRequest(request, model));
    const url = vertexModelUrl(model.upstream, 'google', stream ? 'streamGenerateContent' : 'generateContent');
    if (stream) url.searchParams.set('alt', 'sse');
    return { url, body };
  }
}
