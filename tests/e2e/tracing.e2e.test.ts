/**
 * Traces: with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP receiver, one `auto`
 * request that carries a W3C traceparent yields one trace spanning the edge, auth, the router, the
 * executor, its call to the upstream (whose request carries the trace on) and metering, every span
 * a descendant of the caller's, named and attributed by the GenAI semantic conventions.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type FakeUpstream, freePort, replayJson, startFakeUpstream, fixture } from '@gateway/testing';
import { fakeModelEntry, startCluster, writeCatalog, type Cluster } from './cluster.js';
import { stopInOrder } from './teardown.js';

const KEY_VARIABLE = 'TRACING_UPSTREAM_KEY';

/** One span as the OTLP/HTTP JSON encoding carries it, with its service. */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP receiver of traces in JSON, as the exporter sends them. */
async function startReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const port = await freePort();
  const server: Server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const payload = JSON.parse(body) as {
          resourceSpans?: Array<{ resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>;
        };
        for (const resourceSpans of payload.resourceSpans ?? []) {
          const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? [])
              spans.push({
                service,
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId ?? '',
                name: span.name,
                kind: span.kind,
                attributes: attributesOf(span.attributes),
              });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttribute[];
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const { key, value } of list ?? [])
    result[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ?? value.boolValue;
  return result;
}

let receiver: Awaited<ReturnType<typeof startReceiver>>;
let upstream: FakeUpstream;
let cluster: Cluster;

beforeAll(async () => {
  receiver = await startReceiver();
  upstream = await startFakeUpstream(replayJson(200, fixture('chat-completion.json')));
  // One model only, so that `auto` picks the one behind the upstream.
  const catalog = writeCatalog('tracing', [fakeModelEntry(upstream.baseUrl, KEY_VARIABLE, 'traced-model', [])]);
  cluster = await startCluster({
    env: { CATALOG_PATH: catalog, [KEY_VARIABLE]: 'sk-test-tracing', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' },
  });
});

afterAll(() => stopInOrder(cluster, upstream, receiver));

describe('one request, one trace', () => {
  it("spans the edge, auth, the router, the executor, the upstream call and metering, under the caller's span", async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const response = await fetch(`${cluster.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpanId}-01` },
      body: JSON.stringify({ model: 'auto', messages: [{ role: 'user', content: 'Say hello' }] }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { gateway: { routed_to: string } };
    expect(body.gateway.routed_to).toBe('traced-model');

    const services = ['edge', 'auth', 'router', 'executor', 'metering'];
    const spans = await eventually(
      () => {
        const found = receiver.spans.filter((span) => span.traceId === traceId);
        return services.every((service) => found.some((span) => span.service === service)) && found.some((span) => span.kind === 3) ? found : undefined;
      },
      "every service's span of the request to be exported",
      20_000,
      100,
    );

    // The edge's span is the caller's child; every other span descends from it.
    const edge = spans.find((span) => span.service === 'edge')!;
    expect(edge.parentSpanId).toBe(callerSpanId);
    expect(edge.name).toBe('chat auto');
    expect(edge.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'auto',
      'gen_ai.response.model': 'traced-model',
      'gen_ai.provider.name': 'openai-compatible',
      'gateway.routed_to': 'traced-model',
    });
    expect(Number(edge.attributes['gen_ai.usage.input_tokens'])).toBeGreaterThan(0);
    expect(Number(edge.attributes['gen_ai.usage.output_tokens'])).toBeGreaterThan(0);
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    for (const span of spans) {
      let cursor: ReceivedSpan | undefined = span;
      while (cursor && cursor !== edge) cursor = byId.get(cursor.parentSpanId);
      expect(cursor, `${span.service} ${span.name} descends from the edge's span`).toBe(edge);
    }
    expect(spans.find((span) => span.service === 'router')?.attributes).toMatchObject({ 'gateway.routed_to': 'traced-model' });
    expect(spans.find((span) => span.service === 'auth')?.attributes).toMatchObject({ 'gateway.decision': 'DECISION_ALLOW' });

    // The upstream call: a client span named by the conventions, and its traceparent sent upstream.
    const call = spans.find((span) => span.service === 'executor' && span.kind === 3)!;
    expect(call.name).toBe('chat gpt-4o-mini');
    expect(call.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai-compatible',
      'gen_ai.request.model': 'gpt-4o-mini',
      'server.address': new URL(upstream.baseUrl).host,
    });
    const sent = upstream.requests.at(-1)!.headers.traceparent;
    expect(sent).toBe(`00-${traceId}-${call.spanId}-01`);

    // Nothing secret in any span.
    expect(JSON.stringify(spans)).not.toContain(cluster.apiKey);
    expect(JSON.stringify(spans)).not.toContain('sk-test-tracing');
  }, 60_000);
});
