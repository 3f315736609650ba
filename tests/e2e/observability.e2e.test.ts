/**
 * What an operator sees: after a short load (whole and streamed completions, a fallback, a bad
 * body, requests over the key's limit) every service's /metrics carries the GenAI-convention
 * histograms and the gateway's counters by model, provider and plan, never a key or key id; and
 * every panel of the Grafana dashboard in deploy/grafana queries metrics that have samples
 * matching its selectors.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedBaseUrl } from '@gateway/testing';
import { fakeModelEntry, SIM_MINI_ENTRY, startCluster, writeCatalog, type Cluster } from './cluster.js';

const KEY_VARIABLE = 'OBSERVABILITY_UPSTREAM_KEY';
const DASHBOARD = new URL('../../deploy/components/monitoring/gateway-dashboard.json', import.meta.url);

let cluster: Cluster;

beforeAll(async () => {
  const catalog = writeCatalog('observability', [SIM_MINI_ENTRY, fakeModelEntry(await refusedBaseUrl(), KEY_VARIABLE, 'unreachable')]);
  cluster = await startCluster({
    plan: 'starter',
    env: { CATALOG_PATH: catalog, [KEY_VARIABLE]: 'sk-test-observability', EXECUTOR_RETRY_BASE_DELAY_MS: '10', EXECUTOR_RETRY_MAX_DELAY_MS: '50' },
  });
});

afterAll(async () => {
  await cluster?.stop();
});

async function complete(body: Record<string, unknown>): Promise<Response> {
  const response = await fetch(`${cluster.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 8, ...body }),
  });
  await response.arrayBuffer();
  return response;
}

/** One sample line of a /metrics page. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function samples(text: string): Sample[] {
  const found: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[label[1]!] = label[2]!;
    found.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return found;
}

/** The metric selectors of a PromQL expression: name and label matchers (=, !=, =~, !~). */
function selectors(expr: string): Array<{ name: string; matchers: Array<{ label: string; op: string; value: string }> }> {
  const found = [];
  // Grouping clauses name labels, not metrics.
  const metricsOnly = expr.replace(/\b(?:by|without)\s*\([^)]*\)/g, '');
  for (const match of metricsOnly.matchAll(/\b((?:gen_ai|gateway)_[a-z0-9_]+)(?:\{([^}]*)\})?/g)) {
    const matchers = [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)].map((matcher) => ({
      label: matcher[1]!,
      op: matcher[2]!,
      value: matcher[3]!.replace(/\\(.)/g, '$1'),
    }));
    found.push({ name: match[1]!, matchers });
  }
  return found;
}

function matches(sample: Sample, matchers: Array<{ label: string; op: string; value: string }>): boolean {
  return matchers.every(({ label, op, value }) => {
    const actual = sample.labels[label] ?? '';
    if (op === '=') return actual === value;
    if (op === '!=') return actual !== value;
    const full = new RegExp(`^(?:${value})$`).test(actual);
    return op === '=~' ? full : !full;
  });
}

describe('metrics and the dashboard after a short load', () => {
  let scraped: Sample[];
  let pages: string;

  beforeAll(async () => {
    // Whole and streamed completions, a fallback from an unreachable model, a bad body, and then
    // more than Starter's 60 requests a minute.
    const statuses: number[] = [];
    for (let index = 0; index < 10; index += 1) statuses.push((await complete({ model: 'sim-mini' })).status);
    for (let index = 0; index < 10; index += 1)
      statuses.push((await complete({ model: 'sim-mini', stream: true, stream_options: { include_usage: true } })).status);
    for (let index = 0; index < 2; index += 1) statuses.push((await complete({ model: 'unreachable', fallbacks: true })).status);
    statuses.push((await complete({ model: 'sim-mini', temperature: 7 })).status);
    for (let round = 0; round < 6 && !statuses.includes(429); round += 1) {
      statuses.push(...(await Promise.all(Array.from({ length: 10 }, async () => (await complete({ model: 'sim-mini' })).status))));
    }
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThanOrEqual(22);
    expect(statuses).toContain(400);
    expect(statuses).toContain(429);
    // Metering meters asynchronously: give it a moment so that its counters have moved.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const urls = [
      ...(['edgeMetrics', 'authMetrics', 'routerMetrics', 'executorMetrics', 'meteringMetrics'] as const).map(
        (port) => `http://127.0.0.1:${cluster.ports[port]}/metrics`,
      ),
    ];
    const texts = await Promise.all(urls.map(async (url) => (await fetch(url)).text()));
    pages = texts.join('\n');
    scraped = samples(pages);
  }, 60_000);

  const sum = (name: string, labels: Record<string, string> = {}) =>
    scraped
      .filter((sample) => sample.name === name && Object.entries(labels).every(([label, value]) => sample.labels[label] === value))
      .reduce((total, sample) => total + sample.value, 0);

  it('counts completions in GenAI-convention histograms by model, provider, plan and stream', () => {
    const common = {
      gen_ai_operation_name: 'chat',
      gen_ai_request_model: 'sim-mini',
      gen_ai_response_model: 'sim-mini',
      gen_ai_provider_name: 'simulated',
      plan: 'starter',
    };
    expect(sum('gen_ai_client_operation_duration_seconds_count', { ...common, stream: 'true', error_type: '' })).toBe(10);
    expect(sum('gen_ai_client_operation_duration_seconds_count', { ...common, stream: 'false', error_type: '' })).toBeGreaterThanOrEqual(10);
    expect(sum('gen_ai_server_time_to_first_token_seconds_count', { ...common, stream: 'true' })).toBe(10);
    expect(sum('gen_ai_server_time_to_first_token_seconds_count', { stream: 'false' })).toBe(0);
    expect(sum('gen_ai_server_time_per_output_token_seconds_count', { ...common, stream: 'true' })).toBeGreaterThan(0);
    expect(sum('gen_ai_client_token_usage_count', { ...common, gen_ai_token_type: 'input', stream: 'true' })).toBe(10);
    expect(sum('gen_ai_client_token_usage_sum', { ...common, gen_ai_token_type: 'output' })).toBeGreaterThan(0);
    expect(sum('gateway_cost_usd_total', { ...common })).toBeGreaterThan(0);
  });

  it('counts fallbacks, errors by type and rate-limit refusals', () => {
    expect(sum('gateway_fallbacks_total', { gen_ai_request_model: 'unreachable', gen_ai_response_model: 'sim-mini' })).toBe(2);
    expect(sum('gen_ai_client_operation_duration_seconds_count', { gen_ai_request_model: 'unreachable', gen_ai_response_model: 'sim-mini' })).toBe(2);
    expect(sum('gateway_errors_total', { status: '400', type: 'invalid_request_error' })).toBe(1);
    expect(sum('gateway_errors_total', { status: '429' })).toBeGreaterThanOrEqual(1);
    expect(sum('gateway_auth_decisions_total', { decision: 'DECISION_DENY_REQUEST_LIMIT' })).toBeGreaterThanOrEqual(1);
    // Nothing is in flight once the load is over.
    expect(sum('gateway_completions_in_flight')).toBe(0);
    expect(sum('gateway_executor_in_flight')).toBe(0);
  });

  it('exports process metrics and event-loop delay from every service, and never a key or key id', () => {
    for (const service of ['edge', 'auth', 'router', 'executor', 'metering']) {
      expect(scraped.some((sample) => sample.name === 'gateway_process_cpu_seconds_total' && sample.labels.service === service)).toBe(true);
      expect(scraped.some((sample) => sample.name === 'gateway_event_loop_delay_p99_seconds' && sample.labels.service === service)).toBe(true);
    }
    expect(pages).not.toContain(cluster.apiKey);
    expect(pages).not.toContain(cluster.apiKey.slice(3));
    expect(pages).not.toMatch(/key_[A-Za-z0-9]{16}/);
  });

  it('has data for every panel of the dashboard: each metric a panel queries has samples matching its selector', () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(12);
    const without: string[] = [];
    for (const panel of dashboard.panels) {
      const used = panel.targets.flatMap((target) => selectors(target.expr));
      expect(used.length, panel.title).toBeGreaterThan(0);
      for (const selector of used) {
        if (!scraped.some((sample) => sample.name === selector.name && matches(sample, selector.matchers))) without.push(`${panel.title}: ${selector.name}`);
      }
    }
    expect(without).toEqual([]);
  });
});
