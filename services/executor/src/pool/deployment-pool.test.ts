import { describe, expect, it } from 'vitest';
import { DEFAULT_BREAKER } from '../app.js';
import { openAiCompatibleModel, TEST_KEY_ENV } from '@gateway/testing';
import { DeploymentPool } from './deployment-pool.js';

const model = openAiCompatibleModel('http://primary.test/v1', {
  deployments: [
    { model: 'gpt-4o-mini', base_url: 'http://second.test/v1', api_key_env: TEST_KEY_ENV },
    { model: 'gpt-4o-mini', base_url: 'http://switched-off.test/v1', api_key_env: 'UNSET_VARIABLE' },
  ],
});

function poolOf() {
  return new DeploymentPool([model], { [TEST_KEY_ENV]: 'sk-test' }, { ...DEFAULT_BREAKER, consecutiveFailures: 1 }, () => 0);
}

describe('DeploymentPool', () => {
  it('serves the deployments whose key is set, each reading its own upstream', () => {
    const pool = poolOf();
    expect(pool.deploymentsOf(model.id).map((deployment) => [deployment.id, deployment.model.upstream.base_url])).toEqual([
      ['0:http://primary.test', 'http://primary.test/v1'],
      ['1:http://second.test', 'http://second.test/v1'],
    ]);
  });

  it("serves a deployment of another provider through that provider, at its own prices, and the rest at the model's", () => {
    const azurePricing = { input_micro_usd_per_mtok: 2_750_000, cached_input_micro_usd_per_mtok: 1_375_000, output_micro_usd_per_mtok: 11_000_000 };
    const clouds = openAiCompatibleModel('http://primary.test/v1', {
      deployments: [
        { model: 'gpt-4o-mini', base_url: 'http://second.test/v1', api_key_env: TEST_KEY_ENV },
        {
          provider: 'azure',
          model: 'gpt-4o-mini',
          base_url: 'http://azure.test',
          deployment: 'mini',
          api_version: '2024-10-21',
          api_key_env: 'AZURE_KEY',
          pricing: azurePricing,
        },
      ],
    });
    const pool = new DeploymentPool([clouds], { [TEST_KEY_ENV]: 'sk-test', AZURE_KEY: 'azure-key' }, DEFAULT_BREAKER, () => 0);
    expect(pool.deploymentsOf(clouds.id).map(({ model: served }) => [served.provider, served.pricing, served.upstream])).toEqual([
      ['openai-compatible', clouds.pricing, clouds.upstream],
      ['openai-compatible', clouds.pricing, { model: 'gpt-4o-mini', base_url: 'http://second.test/v1', api_key_env: TEST_KEY_ENV }],
      ['azure', azurePricing, { model: 'gpt-4o-mini', base_url: 'http://azure.test', deployment: 'mini', api_version: '2024-10-21', api_key_env: 'AZURE_KEY' }],
    ]);
    pool.dispose();
  });

  it('sends more requests to the faster deployment, and spreads by outstanding requests', () => {
    const pool = poolOf();
    const [primary, second] = pool.deploymentsOf(model.id);
    primary!.observeLatency(400);
    second!.observeLatency(100);
    const picks = Array.from({ length: 4 }, () => pool.pick(model.id)!);
    // 100 ms x (n + 1) stays below 400 ms for the first three outstanding requests.
    expect(picks.map((deployment) => deployment.id)).toEqual(['1:http://second.test', '1:http://second.test', '1:http://second.test', '0:http://primary.test']);
  });

  it('tries a deployment that was slow once again after a while without requests, and keeps it if it is fast now', () => {
    let now = 1_000_000;
    const pool = new DeploymentPool([model], { [TEST_KEY_ENV]: 'sk-test' }, DEFAULT_BREAKER, () => now);
    const [primary, second] = pool.deploymentsOf(model.id);
    const served = () => {
      const deployment = pool.pick(model.id)!;
      deployment.outstanding -= 1;
      deployment.breaker.success();
      return deployment;
    };
    second!.observeLatency(1_000);
    primary!.observeLatency(100);
    // One request at a time, the fast primary answering in 100 ms: the second gets none at first...
    const picks: string[] = [];
    for (let second = 0; second < 60; second += 1) {
      now += 1_000;
      const deployment = served();
      picks.push(deployment.id);
      deployment.observeLatency(deployment === primary ? 100 : 50);
    }
    expect(picks.slice(0, 10).every((id) => id === primary!.id)).toBe(true);
    // ...until its one slow figure has faded below the primary's; measured at 50 ms, it takes most
    // of the traffic from then on (the primary, now idle, is tried again now and then).
    const firstRetry = picks.indexOf(second!.id);
    expect(firstRetry).toBeGreaterThan(10);
    expect(firstRetry).toBeLessThan(45);
    const after = picks.slice(firstRetry);
    expect(after.filter((id) => id === second!.id).length).toBeGreaterThanOrEqual(after.length * 0.8);
    pool.dispose();
  });

  it('skips a deployment whose breaker is open, avoids ones that failed this request, and reports health', () => {
    const pool = poolOf();
    const [primary, second] = pool.deploymentsOf(model.id);
    primary!.breaker.tryAcquire();
    primary!.breaker.failure();
    expect(pool.pick(model.id)).toBe(second);
    second!.outstanding = 0;
    expect(pool.pick(model.id, new Set([second!]))).toBe(second);
    expect(pool.health()).toEqual([
      { model_id: model.id, deployment_id: '0:http://primary.test', state: 'DEPLOYMENT_STATE_OPEN', retry_after_ms: DEFAULT_BREAKER.openMs },
      { model_id: model.id, deployment_id: '1:http://second.test', state: 'DEPLOYMENT_STATE_HEALTHY' },
    ]);
    second!.breaker.tryAcquire();
    second!.breaker.failure();
    expect(pool.pick(model.id)).toBeUndefined();
    expect(pool.retryAfterMs(model.id)).toBeGreaterThan(0);
    pool.dispose();
  });

  it('serves a reloaded catalog: an unchanged model keeps its breakers, a changed one is rebuilt, a new one served, a removed one gone', () => {
    const pool = poolOf();
    const [primary] = pool.deploymentsOf(model.id);
    primary!.breaker.tryAcquire();
    primary!.breaker.failure();
    const inFlight = pool.pick(model.id)!;
    let changes = 0;
    pool.onChange(() => {
      changes += 1;
    });
    const added = openAiCompatibleModel('http://added.test/v1', { id: 'added-model' });
    pool.replaceModels([model, added]);
    expect(changes).toBe(1);
    expect(pool.deploymentsOf(model.id)[0]).toBe(primary);
    expect(pool.deploymentsOf(model.id)[0]!.breaker.state).toBe('open');
    expect(pool.pick('added-model')?.model.upstream.base_url).toBe('http://added.test/v1');

    const moved = openAiCompatibleModel('http://moved.test/v1');
    pool.replaceModels([moved]);
    expect(pool.has('added-model')).toBe(false);
    expect(pool.deploymentsOf(model.id).map((deployment) => [deployment.id, deployment.breaker.state])).toEqual([['0:http://moved.test', 'healthy']]);
    // The request picked before the reload still holds its deployment and finishes there.
    expect(inFlight.model.upstream.base_url).toBe('http://second.test/v1');
    inFlight.breaker.success();
    pool.dispose();
  });
});
