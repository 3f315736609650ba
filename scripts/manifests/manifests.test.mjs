// check-manifests' rules, each proven to fail when its defect is put back into a rendered overlay:
// the overlays are rendered once, and each test injects one defect into a copy.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cloudIdentityProblems } from './cloud-identity.mjs';
import { connectivityProblems, gatewayConfigOf } from './connectivity.mjs';
import { namespaceProblems } from './namespaces.mjs';
import {
  autoscalerMetricProblems,
  autoscalerProblems,
  capacityTargets,
  configRolloutProblems,
  disruptionProblems,
  edgeBodyLimit,
  entryPointProblems,
  natsMemoryProblems,
  natsProbeProblems,
  operationProblems,
  probeProblems,
  productionEntryProblems,
  quantityBytes,
  secretProblems,
  spreadProblems,
} from './operations.mjs';
import { natsExporterProblems, natsStorageProblems } from './nats-storage.mjs';
import { findRenderer, render, renderComponent } from './render.mjs';
import { schemaProblems } from './schemas.mjs';
import { shutdownProblems } from './shutdown.mjs';

const root = join(import.meta.dirname, '..', '..');
const overlaysDir = join(root, 'deploy', 'overlays');
const renderer = findRenderer();
/** @type {Record<string, object[]>} */
const rendered = {};
/** The components no overlay carries, each rendered onto what an operator adds it to (as check-manifests does). */
/** @type {Record<string, object[]>} */
const standalone = {};
const MIB_16 = 16 * 1024 * 1024;

/** A copy of an overlay's rendered objects, and a finder of one object in it. */
function copyOf(overlay) {
  const objects = structuredClone(rendered[overlay] ?? standalone[overlay]);
  const find = (kind, name) => {
    const found = objects.find((object) => object.kind === kind && object.metadata?.name === name);
    if (!found) throw new Error(`${overlay} renders no ${kind} ${name}`);
    return found;
  };
  return { objects, find };
}

describe.skipIf(!renderer)('check-manifests on rendered overlays (kubectl or kustomize on PATH)', () => {
  // Rendering with kubectl kustomize takes seconds per overlay, many more on a loaded machine: the
  // hook's bound (not vitest's 10 s) only ends a renderer that hangs; a render that fails throws.
  beforeAll(() => {
    for (const overlay of ['dev', 'prod', 'prod-cluster']) rendered[overlay] = render(renderer, join(overlaysDir, overlay));
    standalone['ingress-nginx'] = renderComponent(renderer, join(root, 'deploy'), 'ingress-nginx');
    standalone['autoscale-on-concurrency'] = renderComponent(renderer, join(root, 'deploy'), 'autoscale-on-concurrency', 'overlays/prod');
    standalone['vertex-metadata-egress'] = renderComponent(renderer, join(root, 'deploy'), ['network-policy', 'vertex-metadata-egress']);
  }, 600_000);

  it('passes the overlays as they are', async () => {
    for (const [overlay, objects] of Object.entries(rendered)) {
      expect(namespaceProblems(overlay, objects)).toEqual([]);
      expect(await schemaProblems(overlay, objects)).toEqual([]);
      expect(connectivityProblems(overlay, objects)).toEqual([]);
      expect(operationProblems(root, overlay, objects)).toEqual([]);
    }
    for (const [overlay, objects] of Object.entries(rendered)) {
      expect(autoscalerProblems(overlay, objects, overlay !== 'dev')).toEqual([]);
      expect(autoscalerMetricProblems(overlay, objects, capacityTargets(root))).toEqual([]);
    }
    for (const overlay of ['prod', 'prod-cluster']) expect(productionEntryProblems(overlay, rendered[overlay])).toEqual([]);
    expect(operationProblems(root, 'ingress-nginx', standalone['ingress-nginx'])).toEqual([]);
    expect(standalone['ingress-nginx'].some((object) => object.kind === 'Ingress')).toBe(true);
    expect(rendered.prod.some((object) => object.kind === 'HTTPRoute')).toBe(true);
    const concurrency = standalone['autoscale-on-concurrency'];
    expect(autoscalerMetricProblems('autoscale-on-concurrency', concurrency, capacityTargets(root), { adapter: false })).toEqual([]);
    expect(concurrency.filter((object) => object.kind === 'HorizontalPodAutoscaler' && object.spec.metrics.length === 2)).toHaveLength(2);
  });

  it('fails a namespaced object rendered without a namespace', () => {
    const { objects, find } = copyOf('prod-cluster');
    delete find('StatefulSet', 'nats').metadata.namespace;
    expect(namespaceProblems('prod-cluster', objects)).toEqual(["prod-cluster: StatefulSet nats has no namespace (it would land in the kubectl context's)"]);
  });

  it('fails a misspelt field, in a core kind and in a CRD', async () => {
    const { find } = copyOf('prod-cluster');
    const edge = find('Deployment', 'edge');
    const container = edge.spec.template.spec.containers[0];
    container.readinesProbe = container.readinessProbe;
    delete container.readinessProbe;
    const monitor = find('PodMonitor', 'gateway');
    monitor.spec.podMetricsEndpoint = monitor.spec.podMetricsEndpoints;
    expect(await schemaProblems('prod-cluster', [edge, monitor])).toEqual([
      'prod-cluster: Deployment edge: unknown field spec.template.spec.containers[0].readinesProbe',
      'prod-cluster: PodMonitor gateway: unknown field spec.podMetricsEndpoint',
    ]);
  });

  it('fails a NetworkPolicy that no longer lets the edges reach auth', () => {
    const { objects, find } = copyOf('prod');
    const edge = find('NetworkPolicy', 'edge');
    edge.spec.egress = edge.spec.egress.filter((rule) => rule.to?.[0]?.podSelector?.matchLabels?.['app.kubernetes.io/name'] !== 'auth');
    expect(connectivityProblems('prod', objects)).toEqual(['prod: NetworkPolicies deny edge -> auth:50051, which the gateway needs']);
  });

  it('fails a NetworkPolicy that lets any pod of the namespace reach auth', () => {
    const { objects, find } = copyOf('prod');
    find('NetworkPolicy', 'auth').spec.ingress.push({ from: [{ podSelector: {} }], ports: [{ port: 'grpc' }] });
    // The other gateway pods stay out by their own egress policies; a pod no policy selects does not.
    expect(connectivityProblems('prod', objects)).toEqual(['prod: NetworkPolicies allow a random pod of the namespace -> auth:50051']);
  });

  it('fails a pod of another namespace that reaches auth by wearing the edge label', () => {
    const { objects, find } = copyOf('prod');
    find('NetworkPolicy', 'auth').spec.ingress[0].from[0].namespaceSelector = {};
    expect(connectivityProblems('prod', objects)).toContain('prod: NetworkPolicies allow a pod named edge in another namespace -> auth:50051');
  });

  it("fails the executors' egress opened to the metadata endpoint and the cluster", () => {
    const { objects, find } = copyOf('prod');
    find('NetworkPolicy', 'executor').spec.egress = [{}];
    expect(connectivityProblems('prod', objects)).toEqual([
      'prod: NetworkPolicies allow executor -> the metadata endpoint:80',
      'prod: NetworkPolicies allow executor -> the GKE metadata server:988',
      'prod: NetworkPolicies allow executor -> the metadata endpoint:443',
      'prod: NetworkPolicies allow executor -> the IPv6 metadata endpoint:80',
      'prod: NetworkPolicies allow executor -> the Kubernetes API Service:443',
      'prod: NetworkPolicies allow executor -> a random pod of the namespace:8080',
      // Open on every port: plain HTTP, SSH and mail out too, where only HTTPS (and the catalog's ports) may go.
      'prod: NetworkPolicies allow executor -> the internet:22',
      'prod: NetworkPolicies allow executor -> the internet:25',
      'prod: NetworkPolicies allow executor -> the internet:80',
      'prod: NetworkPolicies allow executor -> the internet:8080',
    ]);
  });

  it('opens the GKE metadata server to the executors and the guard alone with components/vertex-metadata-egress, and keeps it shut without', () => {
    expect(connectivityProblems('vertex', standalone['vertex-metadata-egress'])).toEqual([]);
    // The overlays as they are keep it shut (checked above, through the forbidden flows); the
    // component's flows are needed once it is in.
    const { objects, find } = copyOf('vertex-metadata-egress');
    const policy = find('NetworkPolicy', 'gateway-vertex-metadata-egress');
    policy.spec.egress = policy.spec.egress.slice(0, 1);
    expect(connectivityProblems('vertex', objects)).toEqual(
      ['executor', 'guard'].map((name) => `vertex: NetworkPolicies deny ${name} -> the GKE metadata server:988, which the gateway needs`),
    );
    policy.spec.podSelector = {
      matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'In', values: ['edge', 'auth', 'router', 'executor', 'metering', 'guard'] }],
    };
    expect(connectivityProblems('vertex', objects)).toEqual([
      ...['executor', 'guard'].map((name) => `vertex: NetworkPolicies deny ${name} -> the GKE metadata server:988, which the gateway needs`),
      ...['edge', 'auth', 'router', 'metering'].map((name) => `vertex: NetworkPolicies allow ${name} -> the metadata endpoint:80`),
    ]);
    policy.spec.egress = [{ to: [{ ipBlock: { cidr: '169.254.0.0/16' } }] }];
    policy.spec.podSelector = { matchLabels: { 'app.kubernetes.io/name': 'guard' } };
    expect(connectivityProblems('vertex', objects)).toEqual([
      'vertex: NetworkPolicies deny executor -> the metadata endpoint:80, which the gateway needs',
      'vertex: NetworkPolicies deny executor -> the GKE metadata server:988, which the gateway needs',
      'vertex: NetworkPolicies allow guard -> the metadata endpoint:443',
    ]);
  });

  it('fails Redis on 6380 (rediss://) refused', () => {
    const { objects, find } = copyOf('prod');
    find('NetworkPolicy', 'gateway-redis-egress').spec.egress[0].ports = [{ port: 6379 }];
    expect(connectivityProblems('prod', objects)).toEqual([
      'prod: NetworkPolicies deny auth -> the internet:6380, which the gateway needs',
      'prod: NetworkPolicies deny metering -> the internet:6380, which the gateway needs',
      'prod: NetworkPolicies deny mcp -> the internet:6380, which the gateway needs',
      'prod: NetworkPolicies deny guard -> the internet:6380, which the gateway needs',
      'prod: NetworkPolicies deny cache -> the internet:6380, which the gateway needs',
    ]);
  });

  it('fails a NATS port in gateway-config that the policies do not open', () => {
    const { objects } = copyOf('prod');
    gatewayConfigOf(objects).data.NATS_URL = 'tls://nats.example:4223';
    // The executors reach the internet on HTTPS alone: NATS's port is its own rule.
    expect(connectivityProblems('prod', objects)).toEqual(
      ['edge', 'router', 'executor', 'metering', 'request-log'].map(
        (name) => `prod: NetworkPolicies deny ${name} -> the internet:4223, which the gateway needs`,
      ),
    );
  });

  it('fails a service that cannot reach the OTLP collector', () => {
    const { objects, find } = copyOf('prod-cluster');
    find('NetworkPolicy', 'gateway-otlp-egress').spec.podSelector.matchExpressions[0].values = ['executor'];
    expect(connectivityProblems('prod-cluster', objects)).toEqual(
      ['edge', 'auth', 'router', 'metering', 'mcp'].flatMap((name) => [
        `prod-cluster: NetworkPolicies deny ${name} -> the OTLP collector:4317, which the gateway needs`,
        `prod-cluster: NetworkPolicies deny ${name} -> the OTLP collector:4318, which the gateway needs`,
      ]),
    );
  });

  it('fails another port of the edges (an admin listener) open beyond Prometheus', () => {
    const { objects, find } = copyOf('prod');
    find('Deployment', 'edge').spec.template.spec.containers[0].ports.push({ name: 'admin', containerPort: 8081 });
    expect(connectivityProblems('prod', objects)).toEqual([]);
    find('NetworkPolicy', 'edge').spec.ingress.push({ ports: [{ port: 'admin' }] });
    const problems = connectivityProblems('prod', objects);
    expect(problems).toContain('prod: NetworkPolicies allow the internet -> edge:8081');
    expect(problems).toContain('prod: NetworkPolicies allow a random pod of the namespace -> edge:8081');
  });

  it("fails the edges' metrics port open to anyone", () => {
    const { objects, find } = copyOf('prod');
    find('NetworkPolicy', 'edge').spec.ingress[0].ports.push({ port: 'metrics' });
    expect(connectivityProblems('prod', objects)).toContain('prod: NetworkPolicies allow a random pod of the namespace -> edge:9100');
  });

  it('fails metrics open to every pod of the monitoring namespace, not Prometheus alone', () => {
    const { objects, find } = copyOf('prod-cluster');
    delete find('NetworkPolicy', 'gateway-dns-and-metrics').spec.ingress[0].from[0].podSelector;
    expect(connectivityProblems('prod-cluster', objects)).toContain('prod-cluster: NetworkPolicies allow the OTLP collector -> auth:9101');
  });

  it("fails dev's single NATS server (a Deployment) ready on js-enabled-only", () => {
    const { objects, find } = copyOf('dev');
    find('Deployment', 'nats').spec.template.spec.containers[0].readinessProbe.httpGet.path = '/healthz?js-enabled-only=true';
    expect(natsProbeProblems('dev', objects)).toEqual([
      "dev: Deployment nats: the readinessProbe must be GET /healthz?js-server-only=true (the official chart's), not /healthz?js-enabled-only=true",
    ]);
  });

  it('fails NATS readiness on js-enabled-only, and NATS without a startup probe', () => {
    const { objects, find } = copyOf('prod-cluster');
    const nats = find('StatefulSet', 'nats').spec.template.spec.containers[0];
    nats.readinessProbe.httpGet.path = '/healthz?js-enabled-only=true';
    delete nats.startupProbe;
    expect(natsProbeProblems('prod-cluster', objects)).toEqual([
      "prod-cluster: StatefulSet nats: the startupProbe must be GET /healthz (the official chart's), not none",
      "prod-cluster: StatefulSet nats: the readinessProbe must be GET /healthz?js-server-only=true (the official chart's), not /healthz?js-enabled-only=true",
    ]);
  });

  it("fails NATS whose JetStream storage is unbounded, or bounded above its volume, or below the usage stream's max_bytes", () => {
    const dev = copyOf('dev');
    const devConfig = dev.find('ConfigMap', 'nats-config');
    devConfig.data['nats.conf'] = devConfig.data['nats.conf'].replace(/^\s*max_file_store:.*$/m, '').replace(/^\s*max_memory_store:.*$/m, '');
    expect(natsStorageProblems('dev', dev.objects)).toEqual([
      'dev: Deployment nats: jetstream has no max_file_store: JetStream would take the volume until it is full',
      'dev: Deployment nats: jetstream has no max_memory_store',
    ]);

    const cluster = copyOf('prod-cluster');
    cluster.find('StatefulSet', 'nats').spec.volumeClaimTemplates[0].spec.resources.requests.storage = '8Gi';
    expect(natsStorageProblems('prod-cluster', cluster.objects)).toEqual([
      'prod-cluster: StatefulSet nats: max_file_store (8589934592 bytes) leaves less than 10% of its 8589934592-byte volume free',
    ]);
    const config = cluster.objects.find((object) => object.kind === 'ConfigMap' && object.metadata.name.startsWith('gateway-config'));
    config.data.USAGE_STREAM_MAX_BYTES = String(9 * 1024 ** 3);
    expect(natsStorageProblems('prod-cluster', cluster.objects)).toContain(
      'prod-cluster: StatefulSet nats: USAGE_STREAM_MAX_BYTES (9663676416) does not fit its max_file_store (8589934592): JetStream refuses the usage stream',
    );
  });

  it('fails NATS without the official exporter beside it, or with an exporter no PodMonitor scrapes', () => {
    const { objects, find } = copyOf('prod-cluster');
    const monitor = find('PodMonitor', 'gateway');
    monitor.spec.selector.matchExpressions[0].values = monitor.spec.selector.matchExpressions[0].values.filter((name) => name !== 'nats');
    expect(natsExporterProblems('prod-cluster', objects)).toEqual(["prod-cluster: StatefulSet nats: no PodMonitor scrapes the NATS exporter's metrics port"]);
    const pod = find('StatefulSet', 'nats').spec.template.spec;
    pod.containers = pod.containers.filter((container) => container.name !== 'exporter');
    expect(natsExporterProblems('prod-cluster', objects)).toEqual([
      "prod-cluster: StatefulSet nats: no natsio/prometheus-nats-exporter container beside NATS: JetStream's storage is not exported",
    ]);
  });

  it('fails a gateway Deployment not spread over hosts, or spread by a selector of other pods', () => {
    const { objects, find } = copyOf('prod');
    const edge = find('Deployment', 'edge').spec.template.spec;
    edge.topologySpreadConstraints = edge.topologySpreadConstraints.filter((constraint) => constraint.topologyKey !== 'kubernetes.io/hostname');
    const [zone] = find('Deployment', 'metering').spec.template.spec.topologySpreadConstraints;
    zone.labelSelector = { matchLabels: { 'app.kubernetes.io/part-of': 'gateway' } };
    expect(spreadProblems('prod', objects)).toEqual([
      'prod: Deployment edge has no topologySpreadConstraint over kubernetes.io/hostname selecting its own pods',
      `prod: Deployment metering has no topologySpreadConstraint over ${zone.topologyKey} selecting its own pods`,
    ]);
  });

  it('fails a PodDisruptionBudget with minAvailable, or more than one pod unavailable', () => {
    const { objects, find } = copyOf('prod');
    const edge = find('PodDisruptionBudget', 'edge').spec;
    delete edge.maxUnavailable;
    edge.minAvailable = 1;
    find('PodDisruptionBudget', 'auth').spec.maxUnavailable = 2;
    expect(disruptionProblems('prod', objects)).toEqual([
      'prod: PodDisruptionBudget auth must set maxUnavailable: 1 and no minAvailable',
      'prod: PodDisruptionBudget edge must set maxUnavailable: 1 and no minAvailable',
    ]);
  });

  it('fails production without an autoscaler for auth', () => {
    const { objects } = copyOf('prod');
    const others = objects.filter((object) => !(object.kind === 'HorizontalPodAutoscaler' && object.metadata.name === 'auth'));
    expect(autoscalerProblems('prod', others, true)).toEqual(['prod: no HorizontalPodAutoscaler scales Deployment auth']);
  });

  it('fails a replica count on a Deployment an autoscaler owns', () => {
    const { objects, find } = copyOf('prod-cluster');
    find('Deployment', 'metering').spec.replicas = 2;
    expect(autoscalerProblems('prod-cluster', objects, true)).toEqual(['prod-cluster: Deployment metering sets replicas although an autoscaler owns them']);
  });

  it('fails gateway-config rendered without its hash, and a Deployment reading a stale gateway-plans', () => {
    const { objects } = copyOf('prod');
    const config = gatewayConfigOf(objects);
    const hashed = config.metadata.name;
    config.metadata.name = 'gateway-config'; // as `options: {disableNameSuffixHash: true}` renders it
    for (const object of objects)
      for (const container of object.spec?.template?.spec?.containers ?? [])
        for (const source of container.envFrom ?? []) if (source.configMapRef?.name === hashed) source.configMapRef.name = 'gateway-config';
    expect(configRolloutProblems('prod', objects)).toEqual(['prod: ConfigMap gateway-config is not generated with a hash of its content']);
    const copy = copyOf('prod');
    copy.find('Deployment', 'auth').spec.template.spec.volumes.find((volume) => volume.name === 'plans').configMap.name = 'gateway-plans-0000000000';
    const plans = copy.objects.find((object) => object.kind === 'ConfigMap' && object.metadata.name.startsWith('gateway-plans')).metadata.name;
    expect(configRolloutProblems('prod', copy.objects)).toEqual([
      `prod: Deployment auth reads ConfigMap gateway-plans-0000000000, not ${plans}`,
      `prod: auth's AUTH_PLANS_PATH (/etc/gateway/plans/plans.yaml) is not a file of the mounted ConfigMap ${plans}`,
    ]);
  });

  it("fails auth's AUTH_PLANS_PATH beside the mounted plans", () => {
    const { objects, find } = copyOf('dev');
    find('Deployment', 'auth').spec.template.spec.containers[0].env.find((variable) => variable.name === 'AUTH_PLANS_PATH').value = '/app/plans.yaml';
    expect(configRolloutProblems('dev', objects)).toEqual([
      "dev: auth's AUTH_PLANS_PATH (/app/plans.yaml) is not a file of the mounted ConfigMap gateway-plans",
    ]);
  });

  it('keeps the catalog and the plans by name in dev (live reload), and fails a subPath mount of them or reloading turned off', () => {
    const { objects, find } = copyOf('dev');
    expect(objects.filter((object) => object.kind === 'ConfigMap' && /^gateway-(catalog|plans)$/.test(object.metadata.name))).toHaveLength(2);
    const router = find('Deployment', 'router').spec.template.spec.containers[0];
    const mount = router.volumeMounts.find((candidate) => candidate.name === 'catalog');
    mount.mountPath = '/etc/gateway/catalog/catalog.yaml';
    mount.subPath = 'catalog.yaml';
    gatewayConfigOf(objects).data.CONFIG_RELOAD_INTERVAL_MS = '0';
    expect(configRolloutProblems('dev', objects)).toEqual([
      'dev: gateway-catalog and gateway-plans are kept by name for live reload, but gateway-config sets CONFIG_RELOAD_INTERVAL_MS=0',
      'dev: Deployment router mounts ConfigMap gateway-catalog with subPath, which never sees a change: mount its directory',
    ]);
    // Hashed (prod), a change rolls the pods instead: neither is a problem there.
    const prod = copyOf('prod');
    gatewayConfigOf(prod.objects).data.CONFIG_RELOAD_INTERVAL_MS = '0';
    expect(configRolloutProblems('prod', prod.objects)).toEqual([]);
  });

  it("reads the edge's body limit from its config schema, and from its rendered setting", () => {
    expect(edgeBodyLimit(root, rendered.prod)).toBe(MIB_16);
    const { objects } = copyOf('prod');
    gatewayConfigOf(objects).data.EDGE_BODY_LIMIT_BYTES = '1048576';
    expect(edgeBodyLimit(root, objects)).toBe(1048576);
  });

  it('fails an Ingress that routes /admin or the admin port, cuts streams, buffers them or limits bodies otherwise', () => {
    const { objects, find } = copyOf('ingress-nginx');
    const ingress = find('Ingress', 'edge');
    const paths = ingress.spec.rules[0].http.paths;
    paths.push({ ...structuredClone(paths[0]), path: '/admin' });
    paths.push({ ...structuredClone(paths[0]), path: '/' });
    paths.find((path) => path.path === '/healthz').backend.service.port = { name: 'admin' };
    const annotations = ingress.metadata.annotations;
    annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'] = '60';
    delete annotations['nginx.ingress.kubernetes.io/proxy-send-timeout'];
    annotations['nginx.ingress.kubernetes.io/proxy-buffering'] = 'on';
    annotations['nginx.ingress.kubernetes.io/proxy-body-size'] = '1m';
    expect(entryPointProblems('ingress-nginx', objects, MIB_16)).toEqual([
      'ingress-nginx: Ingress edge routes /healthz to the admin port',
      'ingress-nginx: Ingress edge routes /admin to the admin API or the console',
      'ingress-nginx: Ingress edge routes / to the admin API or the console',
      'ingress-nginx: Ingress edge: nginx.ingress.kubernetes.io/proxy-read-timeout must be at least 3600 (streams), not 60',
      'ingress-nginx: Ingress edge: nginx.ingress.kubernetes.io/proxy-send-timeout must be at least 3600 (streams), not undefined',
      'ingress-nginx: Ingress edge: nginx.ingress.kubernetes.io/proxy-buffering must be "off" (SSE)',
      `ingress-nginx: Ingress edge: nginx.ingress.kubernetes.io/proxy-body-size (1m) must be the edge's body limit, ${MIB_16} bytes`,
    ]);
    const copy = copyOf('ingress-nginx');
    const ingressSpec = copy.find('Ingress', 'edge').spec;
    ingressSpec.defaultBackend = ingressSpec.rules[0].http.paths[0].backend;
    expect(entryPointProblems('ingress-nginx', copy.objects, MIB_16)).toEqual(['ingress-nginx: Ingress edge routes / to the admin API or the console']);
  });

  it('fails an HTTPRoute that routes /console or the admin port, or cuts streams at 15 s', () => {
    const { objects, find } = copyOf('prod');
    const [rule] = find('HTTPRoute', 'edge').spec.rules;
    rule.matches.push({ path: { type: 'PathPrefix', value: '/console' } });
    rule.backendRefs[0].port = 8081;
    rule.timeouts = { request: '15s', backendRequest: '1h' };
    expect(entryPointProblems('prod', objects, MIB_16)).toEqual([
      'prod: HTTPRoute edge routes /console to the admin API or the console',
      'prod: HTTPRoute edge routes to the admin port',
      'prod: HTTPRoute edge: timeouts.request must be at least 3600s (streams), not 15s',
    ]);
  });
  it('fails production served through the retired ingress-nginx, or without the HTTPRoute', () => {
    const { objects } = copyOf('prod');
    const ingress = standalone['ingress-nginx'].find((object) => object.kind === 'Ingress');
    const withIngress = [...objects.filter((object) => object.kind !== 'HTTPRoute'), ingress];
    expect(productionEntryProblems('prod', withIngress)).toEqual([
      "prod: no HTTPRoute to the edge: production's entry point is components/gateway-api",
      "prod: Ingress edge: production's entry point is the HTTPRoute of components/gateway-api, not the retired ingress-nginx",
    ]);
  });

  it('fails a service without a startup probe, a probe that gives up on a busy pod, and liveness before readiness', () => {
    const { objects, find } = copyOf('prod');
    const container = (name) => find('Deployment', name).spec.template.spec.containers[0];
    delete container('auth').startupProbe;
    container('metering').startupProbe.failureThreshold = 12;
    delete container('edge').livenessProbe.timeoutSeconds;
    container('executor').livenessProbe.failureThreshold = 1;
    container('router').startupProbe.grpc.port = 9102;
    // The guard's startup probe as mcp's (2 minutes): the guard reads its policies from Redis first.
    container('guard').startupProbe.failureThreshold = 24;
    expect(probeProblems('prod', objects).sort()).toEqual(
      [
        'prod: Deployment auth has no startupProbe: liveness would judge it while it starts',
        'prod: Deployment guard: its startupProbe gives up after 120 s, but it waits for Redis before it listens: at least 300 s',
        'prod: Deployment metering: its startupProbe gives up after 60 s, but it waits for NATS before it listens: at least 300 s',
        'prod: Deployment edge: its livenessProbe waits 1 s for an answer, a loaded event loop more: at least 5',
        'prod: Deployment executor: its livenessProbe restarts it after 10 s without an answer: at least 30',
        'prod: Deployment executor: its readinessProbe (15 s) must take it out of its Service before its livenessProbe (10 s) restarts it',
        'prod: Deployment router: its startupProbe must ask what its livenessProbe asks',
      ].sort(),
    );
  });

  it("fails the executor or the router given Redis's Secret, and auth a key it does not read", () => {
    const { objects, find } = copyOf('prod');
    const envFrom = (name) => find('Deployment', name).spec.template.spec.containers[0].envFrom;
    // The earlier layout: one Secret with both URLs, to every service.
    objects.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'gateway-state', namespace: 'gateway' }, data: { REDIS_URL: '', NATS_URL: '' } });
    envFrom('executor').push({ secretRef: { name: 'gateway-state' } });
    envFrom('router').push({ secretRef: { name: 'gateway-redis' } });
    find('Deployment', 'auth').spec.template.spec.containers[0].env.push({
      name: 'EDGE_ADMIN_TOKEN',
      valueFrom: { secretKeyRef: { name: 'gateway-admin', key: 'EDGE_ADMIN_TOKEN' } },
    });
    expect(secretProblems(root, 'prod', objects).sort()).toEqual(
      [
        'prod: Deployment executor takes the Secret gateway-state, whose REDIS_URL it does not read',
        'prod: Deployment router takes the Secret gateway-redis, whose REDIS_URL it does not read',
        'prod: Deployment auth takes EDGE_ADMIN_TOKEN from the Secret gateway-admin, and does not read it',
      ].sort(),
    );
    // As shipped: Redis's password reaches auth and metering only, and the executors hold no Redis Secret.
    const shipped = copyOf('prod');
    const secretsOf = (name) =>
      shipped.find('Deployment', name).spec.template.spec.containers[0].envFrom.flatMap((source) => (source.secretRef ? [source.secretRef.name] : []));
    expect(['edge', 'auth', 'router', 'executor', 'metering'].filter((name) => secretsOf(name).includes('gateway-redis'))).toEqual(['auth', 'metering']);
    expect(secretsOf('executor')).toEqual(['gateway-provider-keys', 'gateway-nats']);
    expect(secretProblems(root, 'prod', shipped.objects)).toEqual([]);
  });

  it("gives the cache's entries' Redis Secret to the cache alone, and fails it given to another service", () => {
    const secretsOf = (objects, name) =>
      objects
        .find((object) => object.kind === 'Deployment' && object.metadata.name === name)
        .spec.template.spec.containers[0].envFrom.flatMap((source) => (source.secretRef ? [source.secretRef.name] : []));
    for (const overlay of ['prod', 'prod-cluster']) {
      const deployments = rendered[overlay].filter((object) => object.kind === 'Deployment').map((object) => object.metadata.name);
      expect(deployments.filter((name) => secretsOf(rendered[overlay], name).includes('gateway-cache-redis'))).toEqual(['cache']);
      expect(secretsOf(rendered[overlay], 'cache')).toEqual(['gateway-redis', 'gateway-cache-redis']);
    }
    const { objects, find } = copyOf('prod');
    find('Deployment', 'auth').spec.template.spec.containers[0].envFrom.push({ secretRef: { name: 'gateway-cache-redis' } });
    expect(secretProblems(root, 'prod', objects)).toEqual([
      'prod: Deployment auth takes the Secret gateway-cache-redis, whose CACHE_REDIS_URL it does not read',
    ]);
  });

  it('fails the cache probed over gRPC or on another port than its metrics port, and the edge reaching it through a ClusterIP', () => {
    const { objects, find } = copyOf('prod');
    const container = find('Deployment', 'cache').spec.template.spec.containers[0];
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(find('Service', 'cache-headless').spec.clusterIP).toBe('None');
    const config = objects.find((object) => object.kind === 'ConfigMap' && /^gateway-config-/.test(object.metadata.name));
    expect(config.data.CACHE_SERVICE_ADDR).toBe('dns:///cache-headless:50058');
    // Its startup probe asks what liveness asks (/healthz, which answers while it waits for Redis).
    container.startupProbe = { grpc: { port: 50058 }, periodSeconds: 5, timeoutSeconds: 5, failureThreshold: 24 };
    expect(operationProblems(root, 'prod', objects)).toEqual(['prod: Deployment cache: its startupProbe must ask what its livenessProbe asks']);
  });

  it('fails NATS without GOMEMLIMIT, or with one past its memory limit, and NATS not spread over zones', () => {
    expect(quantityBytes('1Gi')).toBe(1024 ** 3);
    expect(quantityBytes('512Mi')).toBe(512 * 1024 ** 2);
    const cluster = copyOf('prod-cluster');
    const server = cluster.find('StatefulSet', 'nats').spec.template.spec;
    server.containers[0].env = server.containers[0].env.filter((variable) => variable.name !== 'GOMEMLIMIT');
    server.topologySpreadConstraints = server.topologySpreadConstraints.filter((constraint) => constraint.topologyKey !== 'topology.kubernetes.io/zone');
    expect(natsMemoryProblems('prod-cluster', cluster.objects)).toEqual([
      'prod-cluster: StatefulSet nats: the NATS server has no GOMEMLIMIT (80-95% of its memory limit)',
    ]);
    expect(spreadProblems('prod-cluster', cluster.objects)).toEqual([
      'prod-cluster: StatefulSet nats has no topologySpreadConstraint over topology.kubernetes.io/zone selecting its own pods',
    ]);
    const dev = copyOf('dev');
    dev.find('Deployment', 'nats').spec.template.spec.containers[0].env.find((variable) => variable.name === 'GOMEMLIMIT').value = '512MiB';
    expect(natsMemoryProblems('dev', dev.objects)).toEqual(['dev: Deployment nats: GOMEMLIMIT 512MiB is 100% of its memory limit 512Mi: 80-95%']);
  });

  it('fails concurrency autoscalers without an adapter, without CPU, or at targets the capacity table does not give', () => {
    const targets = capacityTargets(root);
    expect(targets.get('gateway_executor_in_flight')).toBe(700);
    expect(targets.get('gateway_completions_in_flight')).toBe(10_000);
    const { objects, find } = copyOf('autoscale-on-concurrency');
    // Added to an overlay that renders no adapter: the autoscalers would never scale down.
    expect(autoscalerMetricProblems('prod', objects, targets).sort()).toEqual(
      [
        ['edge', 'gateway_completions_in_flight'],
        ['executor', 'gateway_executor_in_flight'],
      ].map(
        ([name, metric]) =>
          `prod: HorizontalPodAutoscaler ${name} reads ${metric}, which only a metrics adapter serves, and nothing here renders one (v1beta1.custom.metrics.k8s.io): without it the autoscaler never scales down`,
      ),
    );
    objects.push({ apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: 'v1beta1.custom.metrics.k8s.io' } });
    expect(autoscalerMetricProblems('prod', objects, targets)).toEqual([]);
    // The earlier, unmeasured targets; and an autoscaler left with no CPU metric.
    find('HorizontalPodAutoscaler', 'executor').spec.metrics[1].pods.target.averageValue = '100';
    const edge = find('HorizontalPodAutoscaler', 'edge').spec;
    edge.metrics = edge.metrics.filter((metric) => metric.type !== 'Resource');
    expect(autoscalerMetricProblems('prod', objects, targets).sort()).toEqual(
      [
        "prod: HorizontalPodAutoscaler executor targets gateway_executor_in_flight at 100 a pod, not the capacity table's 700",
        'prod: HorizontalPodAutoscaler edge has no CPU utilization metric, the one every cluster can read',
      ].sort(),
    );
  });

  it("fails a pod's grace period shorter than its service's delay + grace + 5 s, read from its env, gateway-config or the default, MCP's grace below its tool-call timeout and the guard's below its check deadline", () => {
    for (const [overlay, objects] of Object.entries(rendered)) expect(shutdownProblems(root, overlay, objects)).toEqual([]);
    const { objects, find } = copyOf('prod');
    const pod = (name) => find('Deployment', name).spec.template.spec;
    const env = (name) => pod(name).containers[0].env;
    // The edge's delay raised without its grace period; the executor's drain set in gateway-config.
    env('edge').find((variable) => variable.name === 'EDGE_SHUTDOWN_DELAY_MS').value = '10000';
    gatewayConfigOf(objects).data.EXECUTOR_SHUTDOWN_GRACE_MS = '400000';
    for (const container of pod('executor').containers) container.env = container.env.filter((variable) => variable.name !== 'EXECUTOR_SHUTDOWN_GRACE_MS');
    // MCP's settings dropped: its defaults (grace 60 s, no delay) within 30 s, and a tool-call timeout over its grace.
    pod('mcp').terminationGracePeriodSeconds = 30;
    gatewayConfigOf(objects).data.MCP_TOOL_CALL_TIMEOUT_MS = '120000';
    for (const container of pod('mcp').containers)
      container.env = container.env.filter((variable) => !['MCP_SHUTDOWN_GRACE_MS', 'MCP_SHUTDOWN_DELAY_MS'].includes(variable.name));
    // The guard's outside checks given a deadline of 20 s in gateway-config: its 10 s grace would cut them.
    gatewayConfigOf(objects).data.GUARD_CHECK_DEADLINE_MS = '20000';
    expect(shutdownProblems(root, 'prod', objects).sort()).toEqual(
      [
        'prod: Deployment edge container edge: terminationGracePeriodSeconds 310 is shorter than the preStop pause (0 s) + EDGE_SHUTDOWN_DELAY_MS (10000 ms) + EDGE_SHUTDOWN_GRACE_MS (300000 ms) + 5 s',
        'prod: Deployment executor container executor: terminationGracePeriodSeconds 310 is shorter than the preStop pause (0 s) + EXECUTOR_SHUTDOWN_DELAY_MS (5000 ms) + EXECUTOR_SHUTDOWN_GRACE_MS (400000 ms) + 5 s',
        'prod: Deployment mcp container mcp: terminationGracePeriodSeconds 30 is shorter than the preStop pause (0 s) + MCP_SHUTDOWN_DELAY_MS (0 ms) + MCP_SHUTDOWN_GRACE_MS (60000 ms) + 5 s',
        'prod: Deployment mcp container mcp: MCP_SHUTDOWN_GRACE_MS (60000 ms) is shorter than MCP_TOOL_CALL_TIMEOUT_MS (120000 ms)',
        'prod: Deployment guard container guard: GUARD_SHUTDOWN_GRACE_MS (10000 ms) is shorter than GUARD_CHECK_DEADLINE_MS (20000 ms)',
      ].sort(),
    );
  });

  it("gives the executors and the guard alone a cloud identity, each its own: fails another ServiceAccount annotated, another pod running as theirs or asking for Azure's token", () => {
    // The three clouds' components together on the base, as a multi-cloud overlay adds them.
    const objects = renderComponent(renderer, join(root, 'deploy'), ['aws-bedrock', 'gke-workload-identity', 'azure-workload-identity']);
    const find = (kind, name) => objects.find((object) => object.kind === kind && object.metadata?.name === name);
    expect(cloudIdentityProblems('clouds', objects)).toEqual([]);
    expect(Object.keys(find('ServiceAccount', 'executor').metadata.annotations).sort()).toEqual([
      'azure.workload.identity/client-id',
      'eks.amazonaws.com/role-arn',
      'iam.gke.io/gcp-service-account',
    ]);
    expect(find('Deployment', 'executor').spec.template.metadata.labels['azure.workload.identity/use']).toBe('true');
    // The guard: AWS (Bedrock's guardrails) and Google (Model Armor) as its own ServiceAccount; Azure's check takes a key.
    expect(Object.keys(find('ServiceAccount', 'guard').metadata.annotations).sort()).toEqual(['eks.amazonaws.com/role-arn', 'iam.gke.io/gcp-service-account']);
    expect(find('ServiceAccount', 'guard').metadata.annotations['eks.amazonaws.com/role-arn']).not.toBe(
      find('ServiceAccount', 'executor').metadata.annotations['eks.amazonaws.com/role-arn'],
    );
    expect(find('Deployment', 'guard').spec.template.spec.serviceAccountName).toBe('guard');
    for (const [defect, problem] of [
      [
        (copy) =>
          (copy.find((object) => object.kind === 'Deployment' && object.metadata?.name === 'router').spec.template.spec.serviceAccountName = 'executor'),
        'Deployment router runs as ServiceAccount executor, which holds a cloud identity',
      ],
      [
        (copy) =>
          (copy.find((object) => object.kind === 'Deployment' && object.metadata?.name === 'edge').spec.template.metadata.labels[
            'azure.workload.identity/use'
          ] = 'true'),
        'Deployment edge asks for an Azure workload identity token',
      ],
      [
        (copy) =>
          copy.push({
            apiVersion: 'v1',
            kind: 'ServiceAccount',
            metadata: { name: 'default', annotations: { 'iam.gke.io/gcp-service-account': 'gateway@p.iam.gserviceaccount.com' } },
          }),
        'ServiceAccount default carries iam.gke.io/gcp-service-account',
      ],
      [
        (copy) => delete copy.find((object) => object.kind === 'Deployment' && object.metadata?.name === 'executor').spec.template.spec.serviceAccountName,
        'Deployment executor runs as ServiceAccount default, not its own',
      ],
      [
        (copy) => (copy.find((object) => object.kind === 'Deployment' && object.metadata?.name === 'guard').spec.template.spec.serviceAccountName = 'executor'),
        'Deployment guard runs as ServiceAccount executor, not its own (guard)',
      ],
      [
        (copy) => (copy.find((object) => object.kind === 'Deployment' && object.metadata?.name === 'mcp').spec.template.spec.serviceAccountName = 'guard'),
        'Deployment mcp runs as ServiceAccount guard, which holds a cloud identity',
      ],
      [
        (copy) =>
          (copy.find((object) => object.kind === 'Deployment' && object.metadata?.name === 'guard').spec.template.metadata.labels[
            'azure.workload.identity/use'
          ] = 'true'),
        'Deployment guard asks for an Azure workload identity token',
      ],
    ]) {
      const copy = structuredClone(objects);
      defect(copy);
      // Annotating `default` also puts every pod that runs as it in the list.
      expect(cloudIdentityProblems('clouds', copy)).toContainEqual(expect.stringContaining(problem));
    }
  }, 60_000);
});
