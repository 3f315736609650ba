import { describe, expect, it } from 'vitest';
import { prometheus } from '@gateway/observability';
import { GenAiMetrics, planName, type CompletionObservation } from './genai-metrics.js';

const completion: CompletionObservation = {
  requestModel: 'auto',
  responseModel: 'gpt-mini',
  routedModel: 'gpt-large',
  provider: 'openai-compatible',
  plan: 'pro',
  keyId: 'key_AAAAAAAAAAAAAAAA',
  stream: true,
  errorType: '',
  durationSeconds: 1.5,
  firstTokenSeconds: 0.5,
  inputTokens: 100,
  outputTokens: 11,
  costUsd: 0.25,
};

describe('GenAiMetrics', () => {
  it('records a completion under the GenAI names, with time per output token and the fallback', async () => {
    const registry = new prometheus.Registry();
    const metrics = new GenAiMetrics(registry);
    metrics.observe(completion);
    metrics.observe(completion);
    const text = await registry.metrics();
    expect(text).toContain(
      'gen_ai_client_operation_duration_seconds_count{gen_ai_operation_name="chat",gen_ai_provider_name="openai-compatible",gen_ai_request_model="auto",gen_ai_response_model="gpt-mini",plan="pro",stream="true",error_type=""} 2',
    );
    expect(text).toContain(
      'gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_provider_name="openai-compatible",gen_ai_request_model="auto",gen_ai_response_model="gpt-mini",plan="pro",stream="true",gen_ai_token_type="output"} 22',
    );
    // (1.5 - 0.5) s over the 10 tokens after the first.
    expect(text).toContain(
      'gen_ai_server_time_per_output_token_seconds_sum{gen_ai_operation_name="chat",gen_ai_provider_name="openai-compatible",gen_ai_request_model="auto",gen_ai_response_model="gpt-mini",plan="pro",stream="true"} 0.2',
    );
    expect(text).toContain('gateway_fallbacks_total{gen_ai_request_model="gpt-large",gen_ai_response_model="gpt-mini"} 2');
    expect(text).toContain(
      'gateway_cost_usd_total{gen_ai_operation_name="chat",gen_ai_provider_name="openai-compatible",gen_ai_request_model="auto",gen_ai_response_model="gpt-mini",plan="pro",stream="true"} 0.5',
    );
  });

  it('labels spend by key id only where the operator opted in, and never anything else by it', async () => {
    const plain = new prometheus.Registry();
    new GenAiMetrics(plain).observe(completion);
    expect(await plain.metrics()).not.toContain('key_');
    const opted = new prometheus.Registry();
    new GenAiMetrics(opted, { keyId: true }).observe(completion);
    const lines = (await opted.metrics()).split('\n').filter((line) => line.includes('key_AAAAAAAAAAAAAAAA'));
    expect(lines.length).toBe(1);
    expect(lines[0]).toMatch(/^gateway_cost_usd_total\{.*key_id="key_AAAAAAAAAAAAAAAA"\} 0\.25$/);
  });

  it('counts completions in flight until each is over, once', async () => {
    const registry = new prometheus.Registry();
    const metrics = new GenAiMetrics(registry);
    const first = metrics.started();
    const second = metrics.started();
    first();
    first();
    expect(await registry.metrics()).toContain('gateway_completions_in_flight 1');
    second();
    expect(await registry.metrics()).toContain('gateway_completions_in_flight 0');
  });

  it('names plans as the metrics show them', () => {
    expect(planName('PLAN_ENTERPRISE')).toBe('enterprise');
    expect(planName(undefined)).toBe('unknown');
  });
});
