/**
 * Vertex AI's model URLs: POST {base_url}/v1/projects/{project}/locations/{region}/publishers/
 * {publisher}/models/{model}:{method}, where base_url is the region's endpoint
 * (`https://{region}-aiplatform.googleapis.com`, or `https://aiplatform.googleapis.com` for the
 * `global` location; the catalog derives it from the region) and publisher says whose model it
 * is (`google` for Gemini, `anthropic` for Claude).
 */
import type { Upstream } from '@gateway/catalog';
import { upstreamUrl } from '../upstream-http.js';

/** The URL of one method of a publisher's model at the upstream's project and region. */
export function vertexModelUrl(upstream: Upstream, publisher: 'google' | 'anthropic', method: string): URL {
  // The catalog loader requires both for the vertex providers.
  const project = upstream.project ?? '';
  const region = upstream.region ?? '';
  return upstreamUrl(upstream.base_url ?? '', 'v1', `projects/${project}/locations/${region}/publishers/${publisher}/models/${upstream.model}:${method}`);
}
