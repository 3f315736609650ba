/**
 * The adapter for Anthropic's models on Google Vertex AI: POST .../publishers/anthropic/models/
 * {model}:rawPredict, or :streamRawPredict for streams (vertex-url.ts), with an OAuth access token
 * as `Authorization: Bearer` (google-credentials.ts). The body is Anthropic's Messages body
 * without `model` (the URL names it) and with `anthropic_version: "vertex-2023-10-16"` in place
 * of the header; the answers and stream events are Anthropic's. So the Anthropic adapter's
 * conversion (thinking blocks and their signatures, cache_control breakpoints, tools) and its
 * response mapping serve it unchanged (providers/anthropic): this adapter adds only the transport
 * and the auth. Beta flags still go as the `anthropic-beta` header, which Vertex reads.
 *
 * Errors come in two envelopes: Anthropic's (`{"type":"error","error":{"type","message"}}`) from
 * the model, and Google's google.rpc.Status from Vertex itself (401 UNAUTHENTICATED, 403
 * PERMISSION_DENIED, 429 RESOURCE_EXHAUSTED for the project's quota); each is read by its own
 * provider's parser (parse-upstream-error.ts).
 */
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput } from '@gateway/proto';
import { AnthropicProvider, betaHeader } from '../anthropic/anthropic-provider.js';
import { toAnthropicRequest } from '../anthropic/convert-request.js';
import type { UpstreamRequest } from '../http-provider.js';
import type { UpstreamError } from '../upstream-error.js';
import type { ErrorResponse } from '../upstream-http.js';
import { upstreamErrorFromVertexAnthropic } from './parse-upstream-error.js';
import { onVertexAi, type VertexDependencies } from './vertex-auth.js';
import { vertexModelUrl } from './vertex-url.js';
import { VERTEX_ANTHROPIC_VERSION, type VertexAnthropicRequest } from './wire-types.js';
import { VERTEX_ANTHROPIC_PROVIDER } from '../provider-names.js';

/** The vertex-anthropic adapter (Claude on Vertex AI). */
export class VertexAnthropicProvider extends onVertexAi(AnthropicProvider) {
  override readonly name: string = VERTEX_ANTHROPIC_PROVIDER;

  constructor(protected override readonly dependencies: VertexDependencies) {
    super(dependencies);
  }

  protected override errorOf(response: ErrorResponse, secrets: readonly string[]): UpstreamError {
    return upstreamErrorFromVertexAnthropic(this.name, response, secrets);
  }

  protected override requestFor(request: ChatRequestOutput, model: CatalogModel, stream: boolean): UpstreamRequest {
    const { model: _named, ...messages } = toAnthropicRequest(request, model, stream);
    const vertexBody: VertexAnthropicRequest = { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...messages };
    const url = vertexModelUrl(model.upstream, 'anthropic', stream ? 'streamRawPredict' : 'rawPredict');
    const betas = betaHeader(model, request.anthropic_betas?.flags ?? []);
    const body = JSON.stringify(vertexBody);
    return betas === undefined ? { url, body } : { url, body, headers: betas };
  }
}
