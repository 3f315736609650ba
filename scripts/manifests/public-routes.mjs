// The public entry points of a rendered overlay against the edge's own table of the paths its public
// port serves (services/edge/src/public-paths.ts, read from its build): every HTTPRoute and Ingress
// to the edge routes each path of the table and nothing outside it; MCP_OAUTH_REDIRECT_URL, where the
// MCP service sends each user back after an upstream's sign-in, is on a host the entry point serves
// and a path it routes; and an HTTPRoute's timeouts outlast the Responses WebSocket's lifetime
// (EDGE_WS_MAX_LIFETIME_MS) by a margin, so that the edge, not the route, ends the socket.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { effectiveEnvironment } from './environment.mjs';

/**
 * How long after the socket's lifetime a route must still let it run (s): the edge closes a socket
 * at its lifetime only once the response running on it is done, and that response may stream for
 * minutes (a long reasoning answer); 15 minutes of them.
 */
export const WEBSOCKET_MARGIN_SECONDS = 900;

/**
 * The edge's table of public paths, from its build (`pnpm build` writes services/edge/dist/public-paths.js).
 * @param {string} root the repository
 * @returns {Promise<{ path: string, match: 'prefix' | 'exact' }[]>}
 */
export async function publicPaths(root) {
  const path = join(root, 'services', 'edge', 'dist', 'public-paths.js');
  if (!existsSync(path)) throw new Error('services/edge/dist/public-paths.js is missing: run pnpm build first (the edge says there which paths it serves)');
  return (await import(pathToFileURL(path).href)).PUBLIC_PATHS;
}

const nameOf = (object) => object?.metadata?.name;
/** Whether a path matched as `match` ('prefix' or 'exact') covers a path (segment by segment). */
const covers = (path, match, other) => (match === 'exact' ? other === path : path === '/' || other === path || other.startsWith(`${path.replace(/\/$/, '')}/`));

/** Each entry point to the edge's public port with the paths it routes ({ path, match }) and its hosts. */
export function entryPoints(objects) {
  const points = [];
  for (const route of objects.filter((object) => object?.kind === 'HTTPRoute')) {
    const rules = (route.spec?.rules ?? []).filter((rule) => (rule.backendRefs ?? []).some((backend) => backend.name === 'edge'));
    if (rules.length === 0) continue;
    const paths = rules.flatMap((rule) =>
      (rule.matches?.length ? rule.matches : [{}]).map(({ path }) => ({
        path: path?.value ?? '/',
        match: path?.type === 'Exact' ? 'exact' : 'prefix', // PathPrefix, the default; RegularExpression is not used here
      })),
    );
    points.push({ at: `HTTPRoute ${nameOf(route)}`, paths, hosts: route.spec?.hostnames ?? [], rules });
  }
  for (const ingress of objects.filter((object) => object?.kind === 'Ingress')) {
    const rules = ingress.spec?.rules ?? [];
    const paths = rules
      .flatMap((rule) => rule.http?.paths ?? [])
      .filter((path) => path.backend?.service?.name === 'edge')
      .map((path) => ({ path: path.path ?? '/', match: path.pathType === 'Exact' ? 'exact' : 'prefix' }));
    if (paths.length === 0) continue;
    points.push({ at: `Ingress ${nameOf(ingress)}`, paths, hosts: rules.map((rule) => rule.host).filter(Boolean), rules: [] });
  }
  return points;
}

/** A Gateway API duration (`1h`, `3600s`, `1h30m`, `500ms`) in seconds. */
const durationSeconds = (duration) =>
  [...String(duration ?? '').matchAll(/(\d+)(ms|h|m|s)/g)].reduce(
    (total, [, number, unit]) => total + Number(number) * { h: 3600, m: 60, s: 1, ms: 0.001 }[unit],
    0,
  );

/** A variable of the edge as it runs: its effective environment's value, else the schema's default. */
function edgeSetting(objects, edgeSchema, variable) {
  const edge = objects.find((object) => object?.kind === 'Deployment' && nameOf(object) === 'edge');
  const container = edge?.spec?.template?.spec?.containers?.[0];
  const set = container ? effectiveEnvironment(objects, container, '').environment.get(variable) : undefined;
  return set?.value ?? edgeSchema?.properties?.[variable]?.default;
}

/** MCP_OAUTH_REDIRECT_URL as the MCP service runs with it ('' when unset), and where it comes from. */
function redirectOf(objects) {
  const mcp = objects.find((object) => object?.kind === 'Deployment' && nameOf(object) === 'mcp');
  const container = mcp?.spec?.template?.spec?.containers?.[0];
  if (!container) return undefined;
  const set = effectiveEnvironment(objects, container, '').environment.get('MCP_OAUTH_REDIRECT_URL');
  return { value: set?.value ?? '', operator: Boolean(set?.operator) };
}

/**
 * The problems of an overlay's public entry points.
 * @param {string} label the overlay, for the messages
 * @param {object[]} objects the rendered objects
 * @param {{ path: string, match: string }[]} table from publicPaths()
 * @param {{ properties: Record<string, { default?: unknown }> }} edgeSchema the edge's config schema (environment.mjs's configSchemas().edge)
 * @param {{ overlay?: boolean }} options `overlay`: a whole overlay, whose MCP service must have its redirect URL even without an entry point (dev's port-forward)
 * @returns {string[]}
 */
export function publicRouteProblems(label, objects, table, edgeSchema, { overlay = true } = {}) {
  const problems = [];
  const points = entryPoints(objects);
  const lifetime = Number(edgeSetting(objects, edgeSchema, 'EDGE_WS_MAX_LIFETIME_MS')) / 1000;
  for (const point of points) {
    const at = `${label}: ${point.at}`;
    for (const entry of table)
      if (!point.paths.some((routed) => covers(routed.path, routed.match, entry.path) && (routed.match === 'prefix' || entry.match === 'exact')))
        problems.push(`${at} does not route ${entry.path} (${entry.match}), which the edge's public port serves (services/edge/src/public-paths.ts)`);
    for (const routed of point.paths)
      if (!table.some((entry) => covers(entry.path, entry.match, routed.path) && (entry.match === 'prefix' || routed.match === 'exact')))
        problems.push(`${at} routes ${routed.path} (${routed.match}), which is not a public path of the edge (services/edge/src/public-paths.ts)`);
    for (const rule of point.rules)
      for (const name of ['request', 'backendRequest'])
        if (!(durationSeconds(rule.timeouts?.[name]) >= lifetime + WEBSOCKET_MARGIN_SECONDS))
          problems.push(
            `${at}: timeouts.${name} (${rule.timeouts?.[name]}) must outlast the Responses WebSocket's lifetime (EDGE_WS_MAX_LIFETIME_MS, ${lifetime} s) by ${WEBSOCKET_MARGIN_SECONDS} s`,
          );
  }
  const redirect = redirectOf(objects);
  if (redirect && !redirect.operator && (overlay || points.length > 0)) {
    const url = /^https?:\/\/([^/:?#]+)(?::\d+)?(\/[^?#]*)$/.exec(redirect.value);
    if (!url)
      problems.push(
        `${label}: the MCP service's MCP_OAUTH_REDIRECT_URL is ${redirect.value ? `${redirect.value}, not a URL` : 'unset'}: upstream MCP servers that need OAuth are refused`,
      );
    else if (points.length > 0) {
      const [, host, path] = url;
      for (const point of points) {
        if (!point.hosts.includes(host))
          problems.push(`${label}: MCP_OAUTH_REDIRECT_URL's host ${host} is not one ${point.at} serves (${point.hosts.join(', ') || 'none'})`);
        if (!point.paths.some((routed) => covers(routed.path, routed.match, path)))
          problems.push(`${label}: MCP_OAUTH_REDIRECT_URL's path ${path} is not routed by ${point.at}`);
      }
    }
  }
  return problems;
}
