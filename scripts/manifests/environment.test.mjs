// What each service runs with in each rendered overlay (environment.mjs) and what the public entry
// points route (public-routes.mjs): the overlays as they are pass, and each defect an operator would
// hit, put back into a copy of a rendered overlay, fails with what is wrong.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { configSchemas, effectiveEnvironment, environmentProblems, hostsOf } from './environment.mjs';
import { publicPaths, publicRouteProblems } from './public-routes.mjs';
import { natsUserProblems } from './nats-users.mjs';
import { findRenderer, render, renderComponent } from './render.mjs';

const root = join(import.meta.dirname, '..', '..');
const renderer = findRenderer();
const OVERLAYS = ['dev', 'prod', 'prod-cluster'];
/** @type {Record<string, object[]>} */
const rendered = {};
let schemas;
let table;

/** A copy of a rendered set, and a finder of one object in it. */
function copyOf(name) {
  const objects = structuredClone(rendered[name]);
  const find = (kind, objectName) => {
    const found = objects.find((object) => object.kind === kind && object.metadata?.name === objectName);
    if (!found) throw new Error(`${name} renders no ${kind} ${objectName}`);
    return found;
  };
  return { objects, find };
}
const containerOf = (deployment) => deployment.spec.template.spec.containers[0];
const problemsOf = (name, objects) => [...environmentProblems(name, objects, schemas), ...publicRouteProblems(name, objects, table, schemas.edge)];

describe('addresses', () => {
  it('names the hosts of every form the services read', () => {
    expect(hostsOf('nats://nats-0.nats:4222,nats://user:secret@nats-1.nats:4222')).toEqual(['nats-0.nats', 'nats-1.nats']);
    expect(hostsOf('dns:///auth-headless:50051')).toEqual(['auth-headless']);
    expect(hostsOf('rediss://:password@redis.example.com:6380/0')).toEqual(['redis.example.com']);
    expect(hostsOf('metering:50054')).toEqual(['metering']);
    expect(hostsOf('postgres://[::1]:5432/gateway')).toEqual(['::1']);
    expect(hostsOf('')).toEqual([]);
  });
});

describe.skipIf(!renderer)('each service in each rendered overlay has what it reads (kubectl or kustomize on PATH)', () => {
  beforeAll(async () => {
    for (const overlay of OVERLAYS) rendered[overlay] = render(renderer, join(root, 'deploy', 'overlays', overlay));
    rendered['ingress-nginx'] = renderComponent(renderer, join(root, 'deploy'), 'ingress-nginx', 'overlays/dev');
    schemas = await configSchemas(root);
    table = await publicPaths(root);
  }, 120_000);

  it('passes the overlays as they are', () => {
    for (const overlay of OVERLAYS) expect(problemsOf(overlay, rendered[overlay])).toEqual([]);
    expect(publicRouteProblems('ingress-nginx', rendered['ingress-nginx'], table, schemas.edge)).toEqual([]);
  });

  it('knows all ten services', () => {
    for (const overlay of OVERLAYS)
      expect(
        rendered[overlay]
          .filter((object) => object.kind === 'Deployment' && object.metadata.name in schemas)
          .map((object) => object.metadata.name)
          .sort(),
      ).toEqual(['auth', 'batch', 'cache', 'edge', 'executor', 'guard', 'mcp', 'metering', 'request-log', 'router']);
  });

  it("fails prod when the request log does not get gateway-nats: the ConfigMap's nats://nats:4222 is no Service there", () => {
    const { objects, find } = copyOf('prod');
    const container = containerOf(find('Deployment', 'request-log'));
    container.envFrom = container.envFrom.filter((source) => source.secretRef?.name !== 'gateway-nats');
    expect(problemsOf('prod', objects)).toEqual([
      'prod: Deployment request-log reads NATS_URL=nats://nats:4222 (from the ConfigMap gateway-config): no Service nats in the overlay',
    ]);
  });

  it('resolves the effective environment in the kubelet order: later envFrom sources win, env wins over all', () => {
    const { objects, find } = copyOf('prod');
    const { environment } = effectiveEnvironment(objects, containerOf(find('Deployment', 'metering')), 'prod');
    expect(environment.get('NATS_URL')).toMatchObject({ from: 'Secret gateway-nats', operator: true });
    expect(environment.get('REDIS_URL')).toMatchObject({ from: 'Secret gateway-redis', operator: true });
    expect(environment.get('CATALOG_PATH')).toMatchObject({ from: 'env', value: '/etc/gateway/catalog/catalog.yaml' });
  });

  it('fails a Secret that the overlay does not render and the operator is not told to create, and a key it lacks', () => {
    const { objects, find } = copyOf('prod');
    containerOf(find('Deployment', 'mcp')).envFrom.push({ secretRef: { name: 'gateway-mcp-upstreams' } });
    containerOf(find('Deployment', 'auth')).env.push({ name: 'REDIS_URL', valueFrom: { secretKeyRef: { name: 'gateway-redis', key: 'url' } } });
    expect(problemsOf('prod', objects)).toEqual([
      'prod: Deployment auth takes REDIS_URL from the key url of the Secret gateway-redis, which has no such key',
      'prod: Deployment mcp takes the Secret gateway-mcp-upstreams, which the overlay does not render and deploy/README.md does not have the operator create',
    ]);
  });

  it('fails a required variable that nothing sets: the request log without its database', () => {
    const { objects, find } = copyOf('dev');
    const container = containerOf(find('Deployment', 'request-log'));
    container.envFrom = container.envFrom.filter((source) => !source.secretRef);
    expect(problemsOf('dev', objects)).toEqual(['dev: Deployment request-log reads DATABASE_URL, which is required and which nothing sets']);
  });

  it("fails a store the overlay does not run, and a schema's default that points to the pod itself", () => {
    const { objects, find } = copyOf('dev');
    objects.splice(objects.indexOf(find('Service', 'redis-responses')), 1);
    containerOf(find('Deployment', 'edge')).env.push({ name: 'NATS_URL', value: '' });
    const config = objects.find((object) => object.kind === 'ConfigMap' && /^gateway-config-/.test(object.metadata.name));
    delete config.data.ROUTER_SERVICE_ADDR;
    expect(problemsOf('dev', objects)).toEqual([
      "dev: Deployment edge reads ROUTER_SERVICE_ADDR=127.0.0.1:50052 (the schema's default): the pod itself in the overlay",
      'dev: Deployment metering reads RESPONSES_REDIS_URL=redis://redis-responses:6379 (from the ConfigMap gateway-config): no Service redis-responses in the overlay',
    ]);
  });

  it("fails the cache's entries in the state Redis, in an unbounded Redis, or nowhere in prod", () => {
    const { objects, find } = copyOf('dev');
    const config = objects.find((object) => object.kind === 'ConfigMap' && /^gateway-config-/.test(object.metadata.name));
    expect(config.data.CACHE_REDIS_URL).toBe('redis://redis-cache:6379');
    config.data.CACHE_REDIS_URL = 'redis://redis:6379';
    expect(problemsOf('dev', objects)).toEqual([
      "dev: Deployment cache: CACHE_REDIS_URL (redis://redis:6379) is REDIS_URL's Redis: the cache's entries need a bounded, evicting Redis of their own",
      "dev: Deployment cache: CACHE_REDIS_URL names Deployment redis, whose Redis is not bounded and evicting (--maxmemory 200mb, --maxmemory-policy noeviction): it grows until it refuses the cache's stores",
    ]);
    config.data.CACHE_REDIS_URL = 'redis://redis-cache:6379';
    const redis = containerOf(find('Deployment', 'redis-cache'));
    redis.args = redis.args.map((argument) => (argument === 'allkeys-lru' ? 'noeviction' : argument));
    expect(problemsOf('dev', objects)).toEqual([
      "dev: Deployment cache: CACHE_REDIS_URL names Deployment redis-cache, whose Redis is not bounded and evicting (--maxmemory 256mb, --maxmemory-policy noeviction): it grows until it refuses the cache's stores",
    ]);
    // prod without the Secret gateway-cache-redis: the schema's default, this machine's 6380.
    const prod = copyOf('prod');
    const cache = containerOf(prod.find('Deployment', 'cache'));
    cache.envFrom = cache.envFrom.filter((source) => source.secretRef?.name !== 'gateway-cache-redis');
    expect(problemsOf('prod', prod.objects)).toEqual([
      "prod: Deployment cache reads CACHE_REDIS_URL=redis://127.0.0.1:6380 (the schema's default): the pod itself in the overlay",
    ]);
  });

  it("takes a NATS cluster's pods by their headless Service, and fails them without it", () => {
    const { objects, find } = copyOf('prod-cluster');
    expect(environmentProblems('prod-cluster', objects, schemas)).toEqual([]);
    objects.splice(objects.indexOf(find('Service', 'nats')), 1);
    expect(environmentProblems('prod-cluster', objects, schemas)).toEqual(
      ['edge', 'executor', 'metering', 'request-log', 'router'].map(
        (user) =>
          `prod-cluster: Deployment ${user} reads NATS_URL=${[0, 1, 2].map((pod) => `tls://${user}:$(NATS_PASSWORD)@nats-${pod}.nats:4222`).join(',')} (from the env): no Service nats in the overlay`,
      ),
    );
  });
});

describe.skipIf(!renderer)('the public entry points route what the edge serves (kubectl or kustomize on PATH)', () => {
  beforeAll(async () => {
    for (const overlay of ['prod', 'dev']) rendered[overlay] ??= render(renderer, join(root, 'deploy', 'overlays', overlay));
    rendered['ingress-nginx'] ??= renderComponent(renderer, join(root, 'deploy'), 'ingress-nginx', 'overlays/dev');
    schemas ??= await configSchemas(root);
    table ??= await publicPaths(root);
  }, 120_000);

  const routeOf = (objects) => objects.find((object) => object.kind === 'HTTPRoute' && object.metadata.name === 'edge');

  it('fails an HTTPRoute without /mcp, as the manifests had it', () => {
    const { objects } = copyOf('prod');
    const rule = routeOf(objects).spec.rules[0];
    rule.matches = rule.matches.filter((match) => match.path.value !== '/mcp');
    expect(publicRouteProblems('prod', objects, table, schemas.edge)).toEqual([
      "prod: HTTPRoute edge does not route /mcp (prefix), which the edge's public port serves (services/edge/src/public-paths.ts)",
      "prod: MCP_OAUTH_REDIRECT_URL's path /mcp/oauth/callback is not routed by HTTPRoute edge",
    ]);
  });

  it('fails an Ingress without the OAuth metadata, and one that routes a path the edge does not serve publicly', () => {
    const { objects } = copyOf('ingress-nginx');
    const ingress = objects.find((object) => object.kind === 'Ingress');
    const paths = ingress.spec.rules[0].http.paths;
    ingress.spec.rules[0].http.paths = [
      ...paths.filter((path) => path.path !== '/.well-known/oauth-protected-resource'),
      { ...paths[0], path: '/metrics', pathType: 'Prefix' },
    ];
    expect(publicRouteProblems('ingress-nginx', objects, table, schemas.edge)).toEqual([
      "ingress-nginx: Ingress edge does not route /.well-known/oauth-protected-resource (prefix), which the edge's public port serves (services/edge/src/public-paths.ts)",
      'ingress-nginx: Ingress edge routes /metrics (prefix), which is not a public path of the edge (services/edge/src/public-paths.ts)',
    ]);
  });

  it("fails a route timeout that races the WebSocket's lifetime, as the hour did, and follows the edge's setting", () => {
    const { objects, find } = copyOf('prod');
    routeOf(objects).spec.rules[0].timeouts = { request: '3600s', backendRequest: '1h15m' };
    expect(publicRouteProblems('prod', objects, table, schemas.edge)).toEqual([
      "prod: HTTPRoute edge: timeouts.request (3600s) must outlast the Responses WebSocket's lifetime (EDGE_WS_MAX_LIFETIME_MS, 3600 s) by 900 s",
    ]);
    containerOf(find('Deployment', 'edge')).env.push({ name: 'EDGE_WS_MAX_LIFETIME_MS', value: '7200000' });
    routeOf(objects).spec.rules[0].timeouts = { request: '2h15m', backendRequest: '2h' };
    expect(publicRouteProblems('prod', objects, table, schemas.edge)).toEqual([
      "prod: HTTPRoute edge: timeouts.backendRequest (2h) must outlast the Responses WebSocket's lifetime (EDGE_WS_MAX_LIFETIME_MS, 7200 s) by 900 s",
    ]);
  });

  it('fails MCP_OAUTH_REDIRECT_URL unset, or on a host the route does not serve', () => {
    const { objects } = copyOf('prod');
    const config = objects.find((object) => object.kind === 'ConfigMap' && /^gateway-config-/.test(object.metadata.name));
    expect(config.data.MCP_OAUTH_REDIRECT_URL).toBe(`https://${routeOf(objects).spec.hostnames[0]}/mcp/oauth/callback`);
    config.data.MCP_OAUTH_REDIRECT_URL = 'https://old.example.com/mcp/oauth/callback';
    expect(publicRouteProblems('prod', objects, table, schemas.edge)).toEqual([
      "prod: MCP_OAUTH_REDIRECT_URL's host old.example.com is not one HTTPRoute edge serves (gateway.example.com)",
    ]);
    delete config.data.MCP_OAUTH_REDIRECT_URL;
    expect(publicRouteProblems('prod', objects, table, schemas.edge)).toEqual([
      "prod: the MCP service's MCP_OAUTH_REDIRECT_URL is unset: upstream MCP servers that need OAuth are refused",
    ]);
    const dev = copyOf('dev');
    delete dev.objects.find((object) => object.kind === 'ConfigMap' && /^gateway-config-/.test(object.metadata.name)).data.MCP_OAUTH_REDIRECT_URL;
    expect(publicRouteProblems('dev', dev.objects, table, schemas.edge)).toEqual([
      "dev: the MCP service's MCP_OAUTH_REDIRECT_URL is unset: upstream MCP servers that need OAuth are refused",
    ]);
  });
});

describe.skipIf(!renderer)('each NATS client connects to the in-cluster NATS as its own user (kubectl or kustomize on PATH)', () => {
  beforeAll(async () => {
    for (const overlay of OVERLAYS) rendered[overlay] ??= render(renderer, join(root, 'deploy', 'overlays', overlay));
    schemas ??= await configSchemas(root);
  }, 120_000);

  it('passes dev and prod-cluster, where every client has its user, and prod-cluster needs no gateway-nats', () => {
    for (const overlay of ['dev', 'prod-cluster']) expect(natsUserProblems(overlay, rendered[overlay])).toEqual([]);
    const clients = rendered['prod-cluster'].filter(
      (object) => object.kind === 'Deployment' && /^(edge|router|executor|metering|request-log)$/.test(object.metadata.name),
    );
    expect(clients).toHaveLength(5);
    for (const client of clients) {
      expect(containerOf(client).envFrom.map((source) => source.secretRef?.name)).not.toContain('gateway-nats');
      expect(containerOf(client).env.find((variable) => variable.name === 'NATS_URL').value).toMatch(
        new RegExp(`^tls://${client.metadata.name}:\\$\\(NATS_PASSWORD\\)@nats-0\\.nats:4222,`),
      );
    }
  });

  it('fails a client of the TLS servers on plain NATS, or without their CA', () => {
    const { objects, find } = copyOf('prod-cluster');
    const edge = containerOf(find('Deployment', 'edge'));
    const url = edge.env.find((variable) => variable.name === 'NATS_URL');
    url.value = url.value.replaceAll('tls://', 'nats://');
    const metering = containerOf(find('Deployment', 'metering'));
    metering.env = metering.env.filter((variable) => variable.name !== 'NODE_EXTRA_CA_CERTS');
    expect(natsUserProblems('prod-cluster', objects)).toEqual([
      `prod-cluster: Deployment edge connects to NATS without TLS (${url.value}), which the server requires`,
      "prod-cluster: Deployment metering does not trust the NATS servers' CA (NODE_EXTRA_CA_CERTS on ca.crt of the Secret nats-tls)",
    ]);
  });

  it('fails a client left on the user-less URL (the request log before NATS in the component order), and a password of another user', () => {
    const { objects, find } = copyOf('dev');
    const requestLog = containerOf(find('Deployment', 'request-log'));
    requestLog.env = requestLog.env.filter((variable) => !variable.name.startsWith('NATS_'));
    const router = containerOf(find('Deployment', 'router'));
    router.env.find((variable) => variable.name === 'NATS_PASSWORD').valueFrom.secretKeyRef.key = 'executor';
    const server = containerOf(find('Deployment', 'nats'));
    server.env = server.env.filter((variable) => variable.name !== 'NATS_METERING_PASSWORD');
    expect(natsUserProblems('dev', objects)).toEqual([
      'dev: Deployment nats: nats.conf reads NATS_METERING_PASSWORD for the user metering, which its container does not take from the key metering of the Secret gateway-nats-users',
      'dev: Deployment request-log does not connect to NATS as its user request-log (NATS_URL from gateway-config, without a user)',
      'dev: Deployment request-log does not take NATS_PASSWORD from the key request-log of the Secret gateway-nats-users',
      'dev: Deployment router does not take NATS_PASSWORD from the key router of the Secret gateway-nats-users',
    ]);
  });

  it("fails prod-cluster without the operator's gateway-nats-users documented, and dev without its generated one", () => {
    const { objects } = copyOf('dev');
    objects.splice(
      objects.findIndex((object) => object.kind === 'Secret' && object.metadata.name.startsWith('gateway-nats-users')),
      1,
    );
    expect(environmentProblems('dev', objects, schemas)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^dev: Deployment edge takes NATS_PASSWORD from the Secret gateway-nats-users, which the overlay does not render/),
      ]),
    );
  });
});
