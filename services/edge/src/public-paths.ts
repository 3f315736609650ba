/**
 * The paths the edge's public port serves (the `public` surface, and the API part of `both`), as a
 * public entry point must route them: each a path prefix (matching the path itself and everything
 * below it, segment by segment, as a Gateway API `PathPrefix` and an Ingress `Prefix` do) or an
 * exact path. A unit test (public-paths.test.ts) compares it with the routes the edge registers, and
 * scripts/check-manifests.mjs with the paths every rendered HTTPRoute and Ingress to the edge routes
 * (through services/edge/dist/public-paths.js): a route added to the edge without a line here fails
 * the first, one missing from the manifests the second.
 */

/** One path the public port serves, and how an entry point matches it. */
export interface PublicPath {
  readonly path: string;
  readonly match: 'prefix' | 'exact';
  /** What is behind it, for the manifests' comments and the docs. */
  readonly serves: string;
}

/** What an entry point routes to the edge's public port; nothing else (the admin API and the console stay private). */
export const PUBLIC_PATHS: readonly PublicPath[] = [
  { path: '/v1', match: 'prefix', serves: 'the OpenAI- and Anthropic-compatible API (and the Responses WebSocket)' },
  { path: '/mcp', match: 'prefix', serves: 'the MCP gateway, its OAuth callback (/mcp/oauth/callback) and sign-out (/mcp/oauth/{server})' },
  { path: '/.well-known/oauth-protected-resource', match: 'prefix', serves: "the MCP gateway's protected-resource metadata (RFC 9728)" },
  { path: '/healthz', match: 'exact', serves: 'liveness, for outside monitors' },
];

/** Paths the public port serves that no entry point routes: the kubelet's readiness probe reaches the pod directly. */
export const UNROUTED_PATHS: readonly string[] = ['/readyz'];

/** Whether a public path covers a URL the edge registers (`/mcp/oauth/:server` under `/mcp`). */
export function coveredBy(entry: PublicPath, url: string): boolean {
  return entry.match === 'exact' ? url === entry.path : url === entry.path || url.startsWith(`${entry.path}/`);
}
