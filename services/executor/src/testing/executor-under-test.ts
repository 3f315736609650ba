/**
 * The executor's server under test, built as the pool tests build it: a catalog of the test's
 * models, the test key set, upstream pools with the test's timeouts and, when the test tunes the
 * breaker, a deployment pool of its own; started before the file's tests and closed after them,
 * with the fake upstreams the test started for it.
 */
import { afterAll, beforeAll } from 'vitest';
import type { CatalogModel } from '@gateway/catalog';
import type { GatewayServer } from '@gateway/grpc';
import type { prometheus } from '@gateway/observability';
import type { ExecutorServiceClient } from '@gateway/proto';
import { catalogOf, TEST_KEY, TEST_KEY_ENV } from '@gateway/testing';
import { DEFAULT_BREAKER } from '../app.js';
import type { BreakerOptions } from '../pool/deployment-breaker.js';
import { DeploymentPool } from '../pool/deployment-pool.js';
import type { RetryOptions } from '../pool/run-with-fallbacks.js';
import { UpstreamPools, type UpstreamTimeouts } from '../providers/upstream-pools.js';
import { startExecutor } from './executor-calls.js';

/** An upstream (a model's, or another deployment of it) at `baseUrl`, keyed with the test key. */
export function upstreamAt(baseUrl: string, model = 'gpt-4o-mini'): CatalogModel['upstream'] {
  return { model, base_url: baseUrl, api_key_env: TEST_KEY_ENV };
}

/** What a test's executor is built from. */
export interface ExecutorSetup {
  /** The catalog's models. */
  readonly models: CatalogModel[];
  /** The upstream pools' timeouts. */
  readonly timeouts: UpstreamTimeouts;
  /** Variables set besides the test key (TEST_KEY in TEST_KEY_ENV). */
  readonly environment?: Readonly<Record<string, string>>;
  /** The breaker of a deployment pool of the test's own (over DEFAULT_BREAKER); without it, the server builds its pool from the catalog. */
  readonly breaker?: Partial<BreakerOptions>;
  readonly retry?: RetryOptions;
  readonly registry?: prometheus.Registry;
  /** What else the test started for the executor (its fake upstreams), closed after it. */
  readonly started?: ReadonlyArray<{ close(): Promise<unknown> }>;
}

/** The running executor: a client of it, and its deployment pool when the test built one. */
export interface ExecutorUnderTest {
  client: ExecutorServiceClient;
  deployments: DeploymentPool;
}

/** Starts the executor `setup` describes (setup may start the upstreams it needs) before the file's tests; closes it after them. */
export function useExecutor(setup: () => ExecutorSetup | Promise<ExecutorSetup>): ExecutorUnderTest {
  const under = {} as ExecutorUnderTest;
  let server: GatewayServer;
  let pools: UpstreamPools;
  let started: ReadonlyArray<{ close(): Promise<unknown> }> = [];
  beforeAll(async () => {
    const built = await setup();
    started = built.started ?? [];
    const catalog = catalogOf(built.models);
    const environment = { [TEST_KEY_ENV]: TEST_KEY, ...built.environment };
    pools = new UpstreamPools(built.timeouts);
    if (built.breaker) under.deployments = new DeploymentPool(catalog.models, environment, { ...DEFAULT_BREAKER, ...built.breaker });
    ({ server, client: under.client } = await startExecutor({
      catalog,
      environment,
      pools,
      deployments: under.deployments,
      retry: built.retry,
      ...(built.registry ? { registry: built.registry } : {}),
    }));
  });
  afterAll(async () => {
    under.client.close();
    await server.shutdown(1_000);
    under.deployments?.dispose();
    await pools.close(100);
    await Promise.all(started.map((upstream) => upstream.close()));
  });
  return under;
}
