// The flows the gateway needs, checked against an overlay's rendered NetworkPolicies: each needed
// flow is allowed, every other way into the services and the in-cluster stores (Redis, the
// Responses Redis, the cache's Redis, NATS, PostgreSQL) is denied, the cache reaches its two Redis
// servers and nothing outside, the batch service PostgreSQL and the edges' API port alone, and the egress of the services that reach outside
// (the executors to the providers, the MCP service to upstream MCP servers, the guard to moderation
// services) is HTTPS (443) and the ports the catalog's upstreams name, stopping short of metadata
// and cluster addresses (but for the GKE metadata server, opened to the executors and the guard
// alone by components/vertex-metadata-egress).
import { parse } from 'yaml';
import { allows } from './network-policy.mjs';

const SERVICES = ['edge', 'auth', 'router', 'executor', 'metering', 'mcp', 'guard', 'cache', 'batch', 'request-log'];
/** The services only the edges call (on their gRPC port) and Prometheus scrapes (on `metrics`). */
const INTERNAL = ['auth', 'router', 'executor', 'metering', 'mcp', 'guard', 'cache', 'batch', 'request-log'];
/** The services that export spans (startTracing in their main.ts): OTLP out, with components/otlp-egress. */
const TRACING = ['edge', 'auth', 'router', 'executor', 'metering', 'mcp'];
/** Who uses each store, by its config schema: NATS_URL, REDIS_URL, RESPONSES_REDIS_URL, CACHE_REDIS_URL, DATABASE_URL. */
const CLIENTS = {
  nats: ['edge', 'router', 'executor', 'metering', 'request-log'],
  redis: ['auth', 'metering', 'mcp', 'guard', 'cache'],
  'redis-responses': ['metering'],
  'redis-cache': ['cache'],
  postgres: ['request-log', 'batch'],
};
/** Each store's client port (by its container port's name, else this). */
const STORE_PORTS = {
  nats: ['client', 4222],
  redis: ['redis', 6379],
  'redis-responses': ['redis', 6379],
  'redis-cache': ['redis', 6379],
  postgres: ['postgres', 5432],
};
const NAME = 'app.kubernetes.io/name';

/** One pod per Deployment or StatefulSet, with its template's labels and named container ports. */
function workloadPods(objects) {
  return objects
    .filter((object) => ['Deployment', 'StatefulSet'].includes(object.kind))
    .map((object, index) => ({
      name: object.metadata?.name,
      namespace: object.metadata?.namespace,
      labels: object.spec?.template?.metadata?.labels ?? {},
      ports: Object.fromEntries(
        (object.spec?.template?.spec?.containers ?? []).flatMap((container) =>
          (container.ports ?? []).filter((port) => port.name).map((port) => [port.name, port.containerPort]),
        ),
      ),
      ip: `10.244.0.${index + 10}`,
    }));
}

/** The namespace the collector is reached in, as the OTLP policy names it; undefined without the policy. */
function collectorNamespace(policies) {
  const policy = policies.find((object) => object.metadata?.name === 'gateway-otlp-egress');
  if (!policy) return undefined;
  const peers = (policy.spec?.egress ?? []).flatMap((rule) => rule.to ?? []);
  return peers.map((peer) => peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name']).find(Boolean) ?? 'monitoring';
}

/** The pods and addresses the flows are checked between: the overlay's own pods and stand-ins for the rest of the world. */
function endpoints(objects, policies) {
  const pods = workloadPods(objects);
  const namespace = pods.find((pod) => pod.name === 'edge')?.namespace;
  const outsiders = [
    { name: 'prometheus', namespace: 'monitoring', labels: { [NAME]: 'prometheus' }, ports: {}, ip: '10.244.1.2' },
    { name: 'a random pod of the namespace', namespace, labels: { [NAME]: 'random' }, ports: { http: 8080 }, ip: '10.244.1.4' },
    { name: 'a pod named edge in another namespace', namespace: 'default', labels: { [NAME]: 'edge' }, ports: {}, ip: '10.244.1.5' },
    { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' }, ports: { dns: 53 }, ip: '10.244.1.6' },
    { name: 'the internet', ip: '203.0.113.10' },
    { name: 'the metadata endpoint', ip: '169.254.169.254' },
    { name: 'the GKE metadata server', ip: '169.254.169.252' },
    { name: 'the IPv6 metadata endpoint', ip: 'fd00:ec2::254' },
    { name: 'the Kubernetes API Service', ip: '10.96.0.1' },
  ];
  const otlp = collectorNamespace(policies);
  if (otlp) outsiders.push({ name: 'the OTLP collector', namespace: otlp, labels: { [NAME]: 'opentelemetry-collector' }, ports: {}, ip: '10.244.1.3' });
  return [...pods, ...outsiders];
}

/**
 * The gateway's ConfigMap among rendered objects: `gateway-config`, or generated with its content's
 * hash (`gateway-config-<hash>`, what kustomize's configMapGenerator names it).
 */
export function gatewayConfigOf(objects) {
  return objects.find((object) => object?.kind === 'ConfigMap' && /^gateway-config(-[a-z0-9]{10})?$/.test(object.metadata?.name ?? ''));
}

/**
 * The ports of the URLs a gateway-config variable lists (comma-separated, `scheme://[user@]host:port`)
 * together with the defaults the README's examples use.
 */
function configuredPorts(objects, variable, defaults) {
  const config = gatewayConfigOf(objects);
  const ports = String(config?.data?.[variable] ?? '')
    .split(',')
    .map((url) => /:(\d+)\/?$/.exec(url.trim())?.[1])
    .filter(Boolean)
    .map(Number);
  return [...new Set([...defaults, ...ports])];
}

/**
 * Whether components/vertex-metadata-egress is in: the executors (and the guard, for Model Armor)
 * then reach the GKE metadata server, for tokens through GKE's Workload Identity Federation.
 */
function metadataOpened(policies) {
  return policies.some((object) => object.metadata?.name === 'gateway-vertex-metadata-egress');
}

/** The GKE metadata server's flows: 169.254.169.254:80 (Dataplane V2) and 169.254.169.252:988. */
function gkeMetadataFlows(at, source) {
  return [
    [source, at('the metadata endpoint'), 80],
    [source, at('the GKE metadata server'), 988],
  ];
}

/** A store's client port on its pod. */
const storePort = (store) => store.ports?.[STORE_PORTS[store.name][0]] ?? STORE_PORTS[store.name][1];

/**
 * The ports of the catalog's upstreams (its rendered ConfigMap's `base_url`s: 443 for https, 80 for
 * http, or the URL's own): the executors must reach each, and nothing else outside.
 */
function catalogPorts(objects) {
  const catalog = objects.find((object) => object?.kind === 'ConfigMap' && /^gateway-catalog(-[a-z0-9]{10})?$/.test(object.metadata?.name ?? ''));
  const ports = new Set([443]);
  for (const text of Object.values(catalog?.data ?? {})) {
    let parsed;
    try {
      parsed = parse(String(text));
    } catch {
      continue;
    }
    const visit = (value) => {
      if (Array.isArray(value)) value.forEach(visit);
      else if (value && typeof value === 'object')
        for (const [key, inner] of Object.entries(value)) {
          if (key === 'base_url' && typeof inner === 'string' && URL.canParse(inner)) {
            const url = new URL(inner);
            ports.add(Number(url.port || (url.protocol === 'http:' ? 80 : 443)));
          } else visit(inner);
        }
    };
    visit(parsed);
  }
  return [...ports];
}

/** The flows that must be allowed: [source, destination, port, protocol?]. */
function neededFlows(at, { redisPorts, cacheRedisPorts, natsPorts, upstreamPorts, metadata }) {
  const flows = [];
  const service = (name) => at(name);
  for (const name of INTERNAL) flows.push([service('edge'), service(name), service(name)?.ports?.grpc]);
  for (const name of SERVICES) {
    flows.push([at('prometheus'), service(name), service(name)?.ports?.metrics]);
    flows.push([service(name), at('kube-dns'), 53, 'UDP'], [service(name), at('kube-dns'), 53, 'TCP']);
  }
  if (at('the OTLP collector'))
    for (const name of TRACING) flows.push([service(name), at('the OTLP collector'), 4317], [service(name), at('the OTLP collector'), 4318]);
  // Each store wherever it is: outside (the operator's, on its ports) and, when the overlay runs it, in the cluster.
  for (const name of CLIENTS.nats) for (const port of natsPorts) flows.push([service(name), at('the internet'), port]);
  for (const name of CLIENTS.redis) for (const port of redisPorts) flows.push([service(name), at('the internet'), port]);
  // The cache's entries' Redis: the ports of CACHE_REDIS_URL beyond those it reaches REDIS_URL's on.
  for (const port of cacheRedisPorts.filter((port) => !redisPorts.includes(port))) flows.push([service('cache'), at('the internet'), port]);
  for (const name of CLIENTS.postgres) flows.push([service(name), at('the internet'), 5432]);
  for (const [store, clients] of Object.entries(CLIENTS))
    if (at(store)) for (const name of clients) flows.push([service(name), at(store), storePort(at(store))]);
  flows.push([at('the internet'), service('edge'), service('edge')?.ports?.http]);
  flows.push([at('a random pod of the namespace'), service('edge'), service('edge')?.ports?.http]);
  for (const port of upstreamPorts) flows.push([service('executor'), at('the internet'), port]);
  flows.push([service('mcp'), at('the internet'), 443]);
  flows.push([service('guard'), at('the internet'), 443]);
  // A judge_model check pointed at the gateway itself, its calls metered to the policy owner's key.
  flows.push([service('guard'), service('edge'), service('edge')?.ports?.http]);
  // Each batch line, sent to the edges' API with its owner's key (BATCH_EDGE_URL).
  flows.push([service('batch'), service('edge'), service('edge')?.ports?.http]);
  if (metadata) flows.push(...gkeMetadataFlows(at, service('executor')), ...gkeMetadataFlows(at, service('guard')));
  return flows.filter(present);
}

/** The flows that must be denied, beyond the matrix into the services. */
function forbiddenFlows(at, { metadata, upstreamPorts }) {
  const executor = at('executor');
  const flows = [
    // The metadata endpoint only to the executors and the guard, only on its ports, only with the component.
    ...(metadata ? [] : [...gkeMetadataFlows(at, executor), ...gkeMetadataFlows(at, at('guard'))]),
    ...['edge', 'auth', 'router', 'metering', 'mcp', 'cache', 'batch', 'request-log'].flatMap((name) => gkeMetadataFlows(at, at(name))),
    [executor, at('the metadata endpoint'), 443],
    [executor, at('the IPv6 metadata endpoint'), 80],
    [executor, at('the Kubernetes API Service'), 443],
    [executor, at('a random pod of the namespace'), 8080],
    [at('mcp'), at('the metadata endpoint'), 443],
    [at('mcp'), at('the Kubernetes API Service'), 443],
    [at('mcp'), at('a random pod of the namespace'), 8080],
    [at('guard'), at('the metadata endpoint'), 443],
    [at('guard'), at('the IPv6 metadata endpoint'), 80],
    [at('guard'), at('the Kubernetes API Service'), 443],
    [at('guard'), at('a random pod of the namespace'), 8080],
    // The cache reaches its two Redis servers and nothing else: no HTTPS, no metadata, no pod.
    [at('cache'), at('the internet'), 443],
    [at('cache'), at('the IPv6 metadata endpoint'), 80],
    [at('cache'), at('the Kubernetes API Service'), 443],
    [at('cache'), at('a random pod of the namespace'), 8080],
    // The batch service reaches PostgreSQL and the edges' API port only: no HTTPS out, no metadata, no other pod.
    [at('batch'), at('the internet'), 443],
    [at('batch'), at('the internet'), 8080],
    [at('batch'), at('the IPv6 metadata endpoint'), 80],
    [at('batch'), at('the Kubernetes API Service'), 443],
    [at('batch'), at('a random pod of the namespace'), 8080],
    [at('auth'), at('the internet'), 443],
    [at('router'), at('the internet'), 443],
    [at('request-log'), at('the internet'), 443],
    [at('edge'), at('the internet'), 443],
    // Out to the internet on HTTPS and the catalog's ports only: no plain HTTP, SSH or SMTP by the way.
    ...[22, 25, 80, 8080].filter((port) => !upstreamPorts.includes(port)).map((port) => [executor, at('the internet'), port]),
    ...[22, 25, 80, 8080].map((port) => [at('mcp'), at('the internet'), port]),
    ...[22, 25, 80, 8080].map((port) => [at('guard'), at('the internet'), port]),
  ];
  // Each in-cluster store: its clients only (the matrix below), never a random pod of the namespace.
  for (const store of Object.keys(CLIENTS)) if (at(store)) flows.push([at('a random pod of the namespace'), at(store), storePort(at(store))]);
  return flows.filter(present);
}

/** Whether both ends of a flow are in the overlay (the request log only with components/request-log). */
const present = ([source, destination]) => Boolean(source && destination);

const describe = ([source, destination, port, protocol = 'TCP']) => `${source.name} -> ${destination.name}:${port}${protocol === 'TCP' ? '' : `/${protocol}`}`;

/**
 * The connectivity problems of an overlay's rendered objects; none when it has no NetworkPolicy.
 * @param {string} label the overlay, for the messages
 * @param {object[]} objects the rendered objects
 * @returns {string[]}
 */
export function connectivityProblems(label, objects) {
  const policies = objects.filter((object) => object?.kind === 'NetworkPolicy');
  if (policies.length === 0) return [];
  const all = endpoints(objects, policies);
  const at = (name) => all.find((endpoint) => endpoint.name === name);
  const problems = [];
  const missing = SERVICES.filter((name) => name !== 'request-log' && !at(name));
  if (missing.length > 0) return [`${label}: no workload for ${missing.join(', ')}: connectivity not checked`];
  const verdict = (flow) => allows(policies, { source: flow[0], destination: flow[1], port: flow[2], protocol: flow[3] ?? 'TCP' });
  // Redis on 6379 and 6380 (rediss://, deploy/README.md's gateway-redis and gateway-cache-redis),
  // NATS on 4222, and the ports gateway-config names.
  const ports = {
    redisPorts: configuredPorts(objects, 'REDIS_URL', [6379, 6380]),
    cacheRedisPorts: configuredPorts(objects, 'CACHE_REDIS_URL', [6379, 6380]),
    natsPorts: configuredPorts(objects, 'NATS_URL', [4222]),
    upstreamPorts: catalogPorts(objects),
  };
  const metadata = metadataOpened(policies);
  for (const flow of neededFlows(at, { ...ports, metadata }))
    if (flow[2] === undefined || !verdict(flow)) problems.push(`${label}: NetworkPolicies deny ${describe(flow)}, which the gateway needs`);
  for (const flow of forbiddenFlows(at, { metadata, upstreamPorts: ports.upstreamPorts }))
    if (verdict(flow)) problems.push(`${label}: NetworkPolicies allow ${describe(flow)}`);
  // Into each in-cluster store: its clients on its client port; any other gateway service, on any port, is denied.
  for (const [store, clients] of Object.entries(CLIENTS)) {
    const destination = at(store);
    if (!destination) continue;
    for (const source of SERVICES.filter((name) => !clients.includes(name))
      .map(at)
      .filter(Boolean))
      for (const port of new Set([storePort(destination), ...Object.values(destination.ports)]))
        if (verdict([source, destination, port])) problems.push(`${label}: NetworkPolicies allow ${describe([source, destination, port])}`);
  }
  // Into the internal services: the edges on the gRPC port and Prometheus on `metrics`, nothing
  // else; into the edges: anyone on the API port, Prometheus on `metrics`, nothing else (an admin
  // listener stays private).
  for (const name of SERVICES) {
    const destination = at(name);
    if (!destination) continue;
    for (const [portName, port] of Object.entries(destination.ports))
      for (const source of all.filter((endpoint) => endpoint !== destination)) {
        const expected =
          (source.name === 'prometheus' && portName === 'metrics') || (name === 'edge' ? portName === 'http' : source.name === 'edge' && portName === 'grpc');
        if (!expected && verdict([source, destination, port])) problems.push(`${label}: NetworkPolicies allow ${describe([source, destination, port])}`);
      }
  }
  return problems;
}
