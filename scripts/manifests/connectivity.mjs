// The flows the gateway needs, checked against an overlay's rendered NetworkPolicies: each needed
// flow is allowed, every other way into auth, the router, the executors and metering is denied, and
// the executors' open egress stops short of metadata and cluster addresses.
import { allows } from './network-policy.mjs';

const SERVICES = ['edge', 'auth', 'router', 'executor', 'metering'];
/** The services only the edges call (on their gRPC port) and Prometheus scrapes (on `metrics`). */
const INTERNAL = ['auth', 'router', 'executor', 'metering'];
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

/** The flows that must be allowed: [source, destination, port, protocol?]. */
function neededFlows(at, { redisPorts, natsPorts }) {
  const flows = [];
  const service = (name) => at(name);
  for (const name of INTERNAL) flows.push([service('edge'), service(name), service(name)?.ports?.grpc]);
  for (const name of SERVICES) {
    flows.push([at('prometheus'), service(name), service(name)?.ports?.metrics]);
    flows.push([service(name), at('kube-dns'), 53, 'UDP'], [service(name), at('kube-dns'), 53, 'TCP']);
    if (at('the OTLP collector')) flows.push([service(name), at('the OTLP collector'), 4317], [service(name), at('the OTLP collector'), 4318]);
  }
  for (const name of ['edge', 'router', 'executor', 'metering']) {
    for (const port of natsPorts) flows.push([service(name), at('the internet'), port]);
    if (at('nats')) flows.push([service(name), at('nats'), at('nats').ports.client]);
  }
  for (const name of ['auth', 'metering']) {
    for (const port of redisPorts) flows.push([service(name), at('the internet'), port]);
    if (at('redis')) flows.push([service(name), at('redis'), at('redis').ports.redis ?? 6379]);
  }
  flows.push([at('the internet'), service('edge'), service('edge')?.ports?.http]);
  flows.push([at('a random pod of the namespace'), service('edge'), service('edge')?.ports?.http]);
  flows.push([service('executor'), at('the internet'), 443]);
  return flows;
}

/** The flows that must be denied, beyond the matrix into the internal services. */
function forbiddenFlows(at) {
  const executor = at('executor');
  const flows = [
    [executor, at('the metadata endpoint'), 80],
    [executor, at('the IPv6 metadata endpoint'), 80],
    [executor, at('the Kubernetes API Service'), 443],
    [executor, at('a random pod of the namespace'), 8080],
    [at('auth'), at('the internet'), 443],
    [at('router'), at('the internet'), 443],
  ];
  if (at('redis'))
    flows.push([at('a random pod of the namespace'), at('redis'), at('redis').ports.redis ?? 6379], [at('edge'), at('redis'), at('redis').ports.redis ?? 6379]);
  if (at('nats')) flows.push([at('a random pod of the namespace'), at('nats'), at('nats').ports.client], [at('auth'), at('nats'), at('nats').ports.client]);
  return flows;
}

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
  const missing = SERVICES.filter((name) => !at(name));
  if (missing.length > 0) return [`${label}: no workload for ${missing.join(', ')}: connectivity not checked`];
  const verdict = (flow) => allows(policies, { source: flow[0], destination: flow[1], port: flow[2], protocol: flow[3] ?? 'TCP' });
  // Redis on 6379 and 6380 (rediss://, deploy/README.md's gateway-redis), NATS on 4222, and the ports gateway-config names.
  const ports = { redisPorts: configuredPorts(objects, 'REDIS_URL', [6379, 6380]), natsPorts: configuredPorts(objects, 'NATS_URL', [4222]) };
  for (const flow of neededFlows(at, ports))
    if (flow[2] === undefined || !verdict(flow)) problems.push(`${label}: NetworkPolicies deny ${describe(flow)}, which the gateway needs`);
  for (const flow of forbiddenFlows(at)) if (verdict(flow)) problems.push(`${label}: NetworkPolicies allow ${describe(flow)}`);
  // Into the internal services: the edges on the gRPC port and Prometheus on `metrics`, nothing
  // else; into the edges: anyone on the API port, Prometheus on `metrics`, nothing else (an admin
  // listener stays private).
  for (const name of SERVICES) {
    const destination = at(name);
    for (const [portName, port] of Object.entries(destination.ports))
      for (const source of all.filter((endpoint) => endpoint !== destination)) {
        const expected =
          (source.name === 'prometheus' && portName === 'metrics') || (name === 'edge' ? portName === 'http' : source.name === 'edge' && portName === 'grpc');
        if (!expected && verdict([source, destination, port])) problems.push(`${label}: NetworkPolicies allow ${describe([source, destination, port])}`);
      }
  }
  return problems;
}
