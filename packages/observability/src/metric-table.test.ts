import client from 'prom-client';
import { describe, expect, it } from 'vitest';
import { metric, serviceMetrics } from './metric-table.js';

describe('serviceMetrics', () => {
  it('registers each row of the table, a counter by label from 0 for each value given, and returns them by key', async () => {
    const registry = new client.Registry();
    const { outcomes, failures, held, seconds } = serviceMetrics(registry, {
      outcomes: metric.counterBy('gateway_test_outcomes_total', 'Outcomes.', 'outcome', ['stored', 'too_large']),
      failures: metric.counter('gateway_test_failures_total', 'Failures.'),
      held: metric.gauge('gateway_test_held', 'Held now.'),
      seconds: metric.histogram('gateway_test_seconds', 'Durations.', [0.1, 1]),
    });
    outcomes.inc({ outcome: 'stored' });
    failures.inc(2);
    held.set(3);
    seconds.observe(0.5);
    const text = await registry.metrics();
    expect(text).toContain('gateway_test_outcomes_total{outcome="stored"} 1');
    expect(text).toContain('gateway_test_outcomes_total{outcome="too_large"} 0');
    expect(text).toContain('gateway_test_failures_total 2');
    expect(text).toContain('gateway_test_held 3');
    expect(text).toContain('gateway_test_seconds_bucket{le="1"} 1');
  });

  it('exports a histogram by label from 0 for each value given, before any observation', async () => {
    const registry = new client.Registry();
    const { calls } = serviceMetrics(registry, {
      calls: metric.histogram('gateway_test_call_seconds', 'Calls.', [1], ['outcome'], ['ok', 'timeout']),
    });
    let text = await registry.metrics();
    expect(text).toContain('gateway_test_call_seconds_count{outcome="ok"} 0');
    expect(text).toContain('gateway_test_call_seconds_bucket{le="1",outcome="timeout"} 0');
    calls.observe({ outcome: 'timeout' }, 2);
    text = await registry.metrics();
    expect(text).toContain('gateway_test_call_seconds_count{outcome="timeout"} 1');
    expect(text).toContain('gateway_test_call_seconds_bucket{le="1",outcome="timeout"} 0');
  });

  it('reads a gauge given a reading at each scrape, and keeps metrics without a registry unexported', async () => {
    const registry = new client.Registry();
    let value = 1;
    serviceMetrics(registry, { read: metric.gauge('gateway_test_read', 'Read at scrape.', async () => value) });
    expect(await registry.getSingleMetricAsString('gateway_test_read')).toContain('gateway_test_read 1');
    value = Number.NaN;
    expect(await registry.getSingleMetricAsString('gateway_test_read')).toMatch(/^gateway_test_read NaN$/im);
    const { kept } = serviceMetrics(undefined, { kept: metric.counter('gateway_test_read', 'Same name, on no registry.') });
    kept.inc();
    expect((await kept.get()).values[0]?.value).toBe(1);
  });

  it('reads a counter and a counter by reason at each scrape, every reason from 0', async () => {
    const registry = new client.Registry();
    const totals = { queued: 2, dropped: { full: 1, closed: 0 } };
    serviceMetrics(registry, {
      queued: metric.count('gateway_test_queued_total', 'Queued.', () => totals.queued),
      dropped: metric.countByReason('gateway_test_dropped_total', 'Dropped.', ['full', 'closed'], () => totals.dropped),
    });
    expect(await registry.metrics()).toContain('gateway_test_queued_total 2');
    totals.queued = 5;
    totals.dropped.full = 3;
    const text = await registry.metrics();
    expect(text).toContain('gateway_test_queued_total 5');
    expect(text).toContain('gateway_test_dropped_total{reason="full"} 3');
    expect(text).toContain('gateway_test_dropped_total{reason="closed"} 0');
  });

  it('keeps a gauge by labels its owner sets (metric.gauge with label names), and one read at each scrape holding just the series read', async () => {
    const registry = new client.Registry();
    let states = [
      { model: 'm', deployment: 'a', open: 1 },
      { model: 'm', deployment: 'b', open: 0 },
    ];
    const { bytes } = serviceMetrics(registry, {
      bytes: metric.gauge('gateway_test_stream_bytes', 'Bytes by stream.', ['stream']),
      open: metric.gauge('gateway_test_open', 'Open by model and deployment.', ['model', 'deployment'], () =>
        states.map((state) => ({ labels: { model: state.model, deployment: state.deployment }, value: state.open })),
      ),
    });
    bytes.set({ stream: 'usage' }, 7);
    let text = await registry.metrics();
    expect(text).toContain('gateway_test_stream_bytes{stream="usage"} 7');
    expect(text).toContain('gateway_test_open{model="m",deployment="a"} 1');
    expect(text).toContain('gateway_test_open{model="m",deployment="b"} 0');
    bytes.remove({ stream: 'usage' });
    states = [{ model: 'm', deployment: 'b', open: 1 }];
    text = await registry.metrics();
    expect(text).not.toContain('gateway_test_stream_bytes{');
    expect(text).not.toContain('deployment="a"');
    expect(text).toContain('gateway_test_open{model="m",deployment="b"} 1');
  });

  it('reuses, shared, the metrics a registry already holds by name, where registering again would throw', async () => {
    const registry = new client.Registry();
    const table = () => ({
      requests: metric.counterBy('gateway_test_requests_total', 'Requests by route.', 'route'),
      seconds: metric.histogram('gateway_test_request_seconds', 'Durations.', [1]),
    });
    const first = serviceMetrics(registry, table(), { shared: true });
    const second = serviceMetrics(registry, table(), { shared: true });
    expect(second.requests).toBe(first.requests);
    expect(second.seconds).toBe(first.seconds);
    first.requests.inc({ route: '/a' });
    second.requests.inc({ route: '/a' });
    expect(await registry.metrics()).toContain('gateway_test_requests_total{route="/a"} 2');
    expect(() => serviceMetrics(registry, table())).toThrow(/already been registered/);
    const unshared = serviceMetrics(undefined, table(), { shared: true });
    expect(unshared.requests).not.toBe(first.requests);
  });
});
