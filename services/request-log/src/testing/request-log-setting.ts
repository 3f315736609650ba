/**
 * The names, clock, catalog and registry a request-log integration test file runs its service by
 * (startTestRequestLog's dependencies, each file's own).
 */
import { randomUUID } from 'node:crypto';
import { type Catalog, loadCatalog } from '@gateway/catalog';
import { createLogger, type Logger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import type { UsageEvent } from '@gateway/proto';
import type { TestRequestLogDependencies } from './request-log-service.js';

/** A test file's names, clock, catalog and registry; see testRequestLogSetting. */
export interface TestRequestLogSetting {
  readonly id: string;
  readonly names: { stream: string; subject: string; subjects: string[] };
  readonly durableName: string;
  readonly clock: { offsetMs: number };
  readonly catalog: Catalog;
  readonly registry: prometheus.Registry;
  readonly dependencies: Pick<TestRequestLogDependencies, 'stream' | 'subject' | 'subjects' | 'durableName' | 'now' | 'registry'> & {
    catalog: Catalog;
    logger: Logger;
  };
}

/**
 * What a test file's service runs by: a usage stream, subjects and durable consumer of the file's
 * own (their names from `tag`, such as `rl`, and a random id), the default catalog, a silent logger,
 * a registry the test reads, and a clock the test moves by setting `clock.offsetMs`. Spread
 * `dependencies` into startTestRequestLog's.
 */
export function testRequestLogSetting(tag: string): TestRequestLogSetting {
  const id = randomUUID().replaceAll('-', '');
  const names = { stream: `${tag.toUpperCase()}_TEST_${id.slice(0, 20)}`, subject: `${tag}${id}.usage.v1.completion`, subjects: [`${tag}${id}.usage.v1.>`] };
  const clock = { offsetMs: 0 };
  const catalog = loadCatalog();
  const registry = new prometheus.Registry();
  const durableName = `request-log-${id}`;
  return {
    id,
    names,
    durableName,
    clock,
    catalog,
    registry,
    dependencies: {
      catalog,
      logger: createLogger(`${tag}-test`, 'silent'),
      registry,
      now: () => Date.now() + clock.offsetMs,
      ...names,
      durableName,
    },
  };
}

/**
 * A completed chat completion's usage event of `keyId` on the simulated model, received now, with
 * a new event id; `fields` add to it or change it.
 */
export function completedUsageEvent(keyId: string, fields: Partial<UsageEvent> = {}): UsageEvent {
  return {
    event_id: randomUUID(),
    key_id: keyId,
    model_id: 'sim-mini',
    requested_model: 'sim-mini',
    provider: 'simulated',
    received_at_ms: Date.now(),
    outcome: 'OUTCOME_COMPLETED',
    api: 'chat_completions',
    http_status: 200,
    ...fields,
  };
}
