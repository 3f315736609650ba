import { describe, expect, it } from 'vitest';
import { loadCatalog } from '@gateway/catalog';
import type { CatalogSnapshot, DeploymentHealthReportOutput } from '@gateway/proto';
import { CatalogState } from './catalog-state.js';
import { DeploymentHealth } from './deployment-health.js';

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

function report(
  replicaId: string,
  states: Record<string, Array<'DEPLOYMENT_STATE_HEALTHY' | 'DEPLOYMENT_STATE_PROBING' | 'DEPLOYMENT_STATE_OPEN'>>,
  options: { ttlMs?: number; retryAfterMs?: number; draining?: boolean } = {},
): DeploymentHealthReportOutput {
  return {
    replica_id: replicaId,
    sent_at_ms: 0,
    ttl_ms: options.ttlMs ?? 6_000,
    draining: options.draining ?? false,
    deployments: Object.entries(states).flatMap(([modelId, deployments]) =>
      deployments.map((state, index) => ({
        model_id: modelId,
        deployment_id: `${index}:http://upstream-${index}`,
        state,
        ...(state === 'DEPLOYMENT_STATE_OPEN' ? { retry_after_ms: options.retryAfterMs ?? 5_000 } : {}),
      })),
    ),
  };
}

function setup() {
  const state = new CatalogState(loadCatalog(), {});
  const clock = manualClock();
  const health = new DeploymentHealth(state, clock.now);
  const snapshots: CatalogSnapshot[] = [];
  state.subscribe((snapshot) => snapshots.push(snapshot));
  return { state, clock, health, snapshots };
}

/**
 * A replica's report holding sim-pro's deployment open (with `timing`), checked to take sim-pro
 * out; then the clock `laterMs` on and the health updated.
 */
function openedThenLater(timing: { retryAfterMs: number; ttlMs: number }, laterMs: number) {
  const tested = setup();
  tested.health.apply(report('a', { 'sim-pro': ['DEPLOYMENT_STATE_OPEN'] }, timing));
  expect(tested.state.isAvailable('sim-pro')).toBe(false);
  tested.clock.advance(laterMs);
  tested.health.update();
  return tested;
}

describe('DeploymentHealth', () => {
  it('marks a model unavailable only when no replica has a usable deployment, and pushes it with a retry-after', () => {
    const { state, health, snapshots } = setup();
    health.apply(report('a', { 'sim-pro': ['DEPLOYMENT_STATE_OPEN'] }, { retryAfterMs: 4_000 }));
    health.apply(report('b', { 'sim-pro': ['DEPLOYMENT_STATE_HEALTHY'] }));
    expect(state.isAvailable('sim-pro')).toBe(true);
    health.apply(report('b', { 'sim-pro': ['DEPLOYMENT_STATE_OPEN', 'DEPLOYMENT_STATE_OPEN'] }, { retryAfterMs: 2_500 }));
    expect(state.isAvailable('sim-pro')).toBe(false);
    const pushed = snapshots.at(-1)?.models?.find((model) => model.id === 'sim-pro');
    expect(pushed?.available).toBe(false);
    // The earliest of the replicas' waits (2.5 s, not 4 s), as of the snapshot.
    expect(pushed?.retry_after_ms).toBeGreaterThan(2_000);
    expect(pushed?.retry_after_ms).toBeLessThanOrEqual(2_500);
    expect(state.isAvailable('sim-mini')).toBe(true);
    health.apply(report('a', { 'sim-pro': ['DEPLOYMENT_STATE_PROBING'] }));
    expect(state.isAvailable('sim-pro')).toBe(true);
    expect(snapshots.at(-1)?.models?.find((model) => model.id === 'sim-pro')).not.toHaveProperty('retry_after_ms');
  });

  it('lets a model back once its open wait has passed, without waiting for the next report', () => {
    const { state } = openedThenLater({ retryAfterMs: 3_000, ttlMs: 60_000 }, 3_000);
    expect(state.isAvailable('sim-pro')).toBe(true);
  });

  it('forgets a replica whose report expired or that said it is draining', () => {
    const { state, health } = openedThenLater({ retryAfterMs: 30_000, ttlMs: 6_000 }, 6_000);
    expect(health.replicaCount).toBe(0);
    expect(state.isAvailable('sim-pro')).toBe(true);
    health.apply(report('b', { 'sim-pro': ['DEPLOYMENT_STATE_OPEN'] }, { retryAfterMs: 30_000 }));
    expect(state.isAvailable('sim-pro')).toBe(false);
    health.apply(report('b', {}, { draining: true }));
    expect(state.isAvailable('sim-pro')).toBe(true);
  });

  it('treats a model no replica reports as available (fails open)', () => {
    const { state, health } = setup();
    health.apply(report('a', { 'sim-mini': ['DEPLOYMENT_STATE_HEALTHY'] }));
    expect(state.enabledModels().every((model) => state.isAvailable(model.id))).toBe(true);
  });
});
