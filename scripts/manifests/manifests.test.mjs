// check-manifests' rules, each proven to fail when its defect is put back into a rendered overlay:
// the overlays are rendered once, and each test injects one defect into a copy.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { connectivityProblems, gatewayConfigOf } from './connectivity.mjs';
import { namespaceProblems } from './namespaces.mjs';
import { findRenderer, render } from './render.mjs';
import { schemaProblems } from './schemas.mjs';

const overlaysDir = join(import.meta.dirname, '..', '..', 'deploy', 'overlays');
const renderer = findRenderer();
/** @type {Record<string, object[]>} */
const rendered = {};

/** A copy of an overlay's rendered objects, and a finder of one object in it. */
function copyOf(overlay) {
  const objects = structuredClone(rendered[overlay]);
  const find = (kind, name) => {
    const found = objects.find((object) => object.kind === kind && object.metadata?.name === name);
    if (!found) throw new Error(`${overlay} renders no ${kind} ${name}`);
    return found;
  };
  return { objects, find };
}

describe.skipIf(!renderer)('check-manifests on rendered overlays (kubectl or kustomize on PATH)', () => {
  beforeAll(() => {
    for (const overlay of ['dev', 'prod', 'prod-cluster']) rendered[overlay] = render(renderer, join(overlaysDir, overlay));
  });

  it('passes the overlays as they are', async () => {
    for (const [overlay, objects] of Object.entries(rendered)) {
      expect(namespaceProblems(overlay, objects)).toEqual([]);
      expect(await schemaProblems(overlay, objects)).toEqual([]);
      expect(connectivityProblems(overlay, objects)).toEqual([]);
    }
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
      'prod: NetworkPolicies allow executor -> the IPv6 metadata endpoint:80',
      'prod: NetworkPolicies allow executor -> the Kubernetes API Service:443',
      'prod: NetworkPolicies allow executor -> a random pod of the namespace:8080',
    ]);
  });

  it('fails Redis on 6380 (rediss://) refused', () => {
    const { objects, find } = copyOf('prod');
    find('NetworkPolicy', 'gateway-redis-egress').spec.egress[0].ports = [{ port: 6379 }];
    expect(connectivityProblems('prod', objects)).toEqual([
      'prod: NetworkPolicies deny auth -> the internet:6380, which the gateway needs',
      'prod: NetworkPolicies deny metering -> the internet:6380, which the gateway needs',
    ]);
  });

  it('fails a NATS port in gateway-config that the policies do not open', () => {
    const { objects } = copyOf('prod');
    gatewayConfigOf(objects).data.NATS_URL = 'tls://nats.example:4223';
    // The executors reach any internet port anyway (the providers').
    expect(connectivityProblems('prod', objects)).toEqual(
      ['edge', 'router', 'metering'].map((name) => `prod: NetworkPolicies deny ${name} -> the internet:4223, which the gateway needs`),
    );
  });

  it('fails a service that cannot reach the OTLP collector', () => {
    const { objects, find } = copyOf('prod-cluster');
    find('NetworkPolicy', 'gateway-otlp-egress').spec.podSelector.matchExpressions[0].values = ['executor'];
    expect(connectivityProblems('prod-cluster', objects)).toEqual(
      ['edge', 'auth', 'router', 'metering'].flatMap((name) => [
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
});
