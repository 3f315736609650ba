// The NetworkPolicy evaluator over all ten services and every in-cluster store: components/
// network-policy and otlp-egress on overlays/dev (which runs Redis, the Responses Redis, the cache's
// Redis, NATS, PostgreSQL and the request log in the cluster), as check-manifests renders them. Each store takes
// its clients only, the executors and the MCP service go out on HTTPS and the catalog's ports only,
// and each defect put back into a copy fails with the flow it opens or shuts.
import { join } from 'node:path';
import { stringify } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { connectivityProblems } from './connectivity.mjs';
import { findRenderer, renderComponent } from './render.mjs';

const root = join(import.meta.dirname, '..', '..');
const renderer = findRenderer();
let rendered;

function copy() {
  const objects = structuredClone(rendered);
  const find = (kind, name) => {
    const found = objects.find((object) => object.kind === kind && object.metadata?.name === name);
    if (!found) throw new Error(`no ${kind} ${name}`);
    return found;
  };
  return { objects, find };
}

describe.skipIf(!renderer)('NetworkPolicies with every store in the cluster (kubectl or kustomize on PATH)', () => {
  beforeAll(() => {
    rendered = renderComponent(renderer, join(root, 'deploy'), ['network-policy', 'otlp-egress'], 'overlays/dev');
  }, 120_000);

  it('has all ten services and the five stores, and passes as it is', () => {
    const workloads = rendered.filter((object) => ['Deployment', 'StatefulSet'].includes(object.kind)).map((object) => object.metadata.name);
    expect(workloads).toEqual(
      expect.arrayContaining([
        'edge',
        'auth',
        'router',
        'executor',
        'metering',
        'mcp',
        'guard',
        'cache',
        'batch',
        'request-log',
        'redis',
        'redis-responses',
        'redis-cache',
        'nats',
        'postgres',
      ]),
    );
    expect(connectivityProblems('dev', rendered)).toEqual([]);
  });

  it('fails the redis policy without the MCP service, as it was', () => {
    const { objects, find } = copy();
    find('NetworkPolicy', 'redis').spec.ingress[0].from[0].podSelector.matchExpressions[0].values = ['auth', 'metering', 'guard', 'cache'];
    expect(connectivityProblems('dev', objects)).toEqual(['dev: NetworkPolicies deny mcp -> redis:6379, which the gateway needs']);
  });

  it('fails the redis policy and the Redis egress without the guard, whose policies are in Redis', () => {
    const { objects, find } = copy();
    find('NetworkPolicy', 'redis').spec.ingress[0].from[0].podSelector.matchExpressions[0].values = ['auth', 'metering', 'mcp', 'cache'];
    expect(connectivityProblems('dev', objects)).toEqual(['dev: NetworkPolicies deny guard -> redis:6379, which the gateway needs']);
    find('NetworkPolicy', 'gateway-redis-egress').spec.podSelector.matchExpressions[0].values = ['auth', 'metering', 'mcp', 'cache'];
    expect(connectivityProblems('dev', objects)).toEqual([
      'dev: NetworkPolicies deny guard -> the internet:6379, which the gateway needs',
      'dev: NetworkPolicies deny guard -> the internet:6380, which the gateway needs',
      'dev: NetworkPolicies deny guard -> redis:6379, which the gateway needs',
    ]);
  });

  it("fails the cache shut off from its Redis servers, its entries' Redis open to others, and the cache open to the internet", () => {
    const { objects, find } = copy();
    const egress = find('NetworkPolicy', 'gateway-redis-egress').spec.podSelector.matchExpressions[0];
    egress.values = egress.values.filter((name) => name !== 'cache');
    expect(connectivityProblems('dev', objects)).toEqual([
      'dev: NetworkPolicies deny cache -> the internet:6379, which the gateway needs',
      'dev: NetworkPolicies deny cache -> the internet:6380, which the gateway needs',
      'dev: NetworkPolicies deny cache -> redis:6379, which the gateway needs',
      'dev: NetworkPolicies deny cache -> redis-cache:6379, which the gateway needs',
    ]);
    egress.values.push('cache');
    objects.splice(objects.indexOf(find('NetworkPolicy', 'redis-cache')), 1);
    expect(connectivityProblems('dev', objects)).toEqual(
      expect.arrayContaining([
        'dev: NetworkPolicies allow a random pod of the namespace -> redis-cache:6379',
        // The Redis egress reaches any 6379: only the store's own policy keeps the others out.
        'dev: NetworkPolicies allow auth -> redis-cache:6379',
        'dev: NetworkPolicies allow guard -> redis-cache:6379',
      ]),
    );
    const open = copy();
    open.find('NetworkPolicy', 'cache').spec.egress = [{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }, { ipBlock: { cidr: '::/0' } }] }];
    expect(connectivityProblems('dev', open.objects)).toEqual([
      'dev: NetworkPolicies allow cache -> the metadata endpoint:80',
      'dev: NetworkPolicies allow cache -> the GKE metadata server:988',
      'dev: NetworkPolicies allow cache -> the internet:443',
      'dev: NetworkPolicies allow cache -> the IPv6 metadata endpoint:80',
      'dev: NetworkPolicies allow cache -> the Kubernetes API Service:443',
      'dev: NetworkPolicies allow cache -> a random pod of the namespace:8080',
    ]);
  });

  it('fails the Responses Redis and PostgreSQL open to any pod, as they were', () => {
    const { objects, find } = copy();
    for (const name of ['redis-responses', 'postgres']) objects.splice(objects.indexOf(find('NetworkPolicy', name)), 1);
    const problems = connectivityProblems('dev', objects);
    expect(problems).toEqual(
      expect.arrayContaining([
        'dev: NetworkPolicies allow a random pod of the namespace -> redis-responses:6379',
        'dev: NetworkPolicies allow a random pod of the namespace -> postgres:5432',
        // Not a client: metering's Redis egress reaches any 6379, so only the store's own policy stops it.
        'dev: NetworkPolicies allow auth -> redis-responses:6379',
        'dev: NetworkPolicies allow mcp -> redis-responses:6379',
      ]),
    );
  });

  it('fails NATS shut to the request log, and open to a service that does not use it', () => {
    const { objects, find } = copy();
    const from = find('NetworkPolicy', 'nats').spec.ingress[0].from[0].podSelector.matchExpressions[0];
    from.values = [...from.values.filter((name) => name !== 'request-log'), 'mcp'];
    expect(connectivityProblems('dev', objects)).toEqual(['dev: NetworkPolicies deny request-log -> nats:4222, which the gateway needs']);
    // mcp has no egress to 4222, so it stays out all the same: both sides must allow a flow.
    find('NetworkPolicy', 'gateway-nats-egress').spec.podSelector.matchExpressions[0].values.push('mcp');
    expect(connectivityProblems('dev', objects)).toContain('dev: NetworkPolicies allow mcp -> nats:4222');
  });

  it("fails the MCP service's egress open on every port, as it was", () => {
    const { objects, find } = copy();
    delete find('NetworkPolicy', 'mcp').spec.egress[0].ports;
    expect(connectivityProblems('dev', objects)).toEqual([22, 25, 80, 8080].map((port) => `dev: NetworkPolicies allow mcp -> the internet:${port}`));
  });

  it("fails the guard shut off from the moderation services, open on every port, or open to the cluster's addresses", () => {
    const { objects, find } = copy();
    const egress = find('NetworkPolicy', 'guard').spec.egress[0];
    egress.ports = [{ port: 80 }];
    expect(connectivityProblems('dev', objects)).toEqual([
      'dev: NetworkPolicies deny guard -> the internet:443, which the gateway needs',
      'dev: NetworkPolicies allow guard -> the internet:80',
    ]);
    delete egress.ports;
    expect(connectivityProblems('dev', objects)).toEqual([22, 25, 80, 8080].map((port) => `dev: NetworkPolicies allow guard -> the internet:${port}`));
    egress.ports = [{ port: 443 }];
    egress.to = [{ ipBlock: { cidr: '0.0.0.0/0' } }];
    expect(connectivityProblems('dev', objects)).toEqual([
      'dev: NetworkPolicies allow guard -> the metadata endpoint:443',
      'dev: NetworkPolicies allow guard -> the Kubernetes API Service:443',
    ]);
  });

  it("opens the executors to a catalog upstream's own port only once the policy declares it", () => {
    const { objects, find } = copy();
    const catalog = objects.find((object) => object.kind === 'ConfigMap' && object.metadata.name.startsWith('gateway-catalog'));
    catalog.data['catalog.yaml'] = stringify({
      models: [{ id: 'local/llama', upstream: { provider: 'openai', model: 'llama', base_url: 'http://vllm.example.com:8000/v1' } }],
    });
    expect(connectivityProblems('dev', objects)).toEqual(['dev: NetworkPolicies deny executor -> the internet:8000, which the gateway needs']);
    find('NetworkPolicy', 'executor').spec.egress[0].ports.push({ port: 8000 });
    expect(connectivityProblems('dev', objects)).toEqual([]);
  });
});
