import { describe, expect, it } from 'vitest';
import { DeploymentBreaker, type BreakerOptions } from './deployment-breaker.js';

const OPTIONS: BreakerOptions = { consecutiveFailures: 3, errorRate: 0.5, window: 10, minimumCalls: 6, openMs: 1_000, maxOpenMs: 3_000, probes: 1 };

function setup(options: Partial<BreakerOptions> = {}) {
  let now = 0;
  const breaker = new DeploymentBreaker({ ...OPTIONS, ...options }, () => now);
  let changes = 0;
  breaker.onChange(() => {
    changes += 1;
  });
  return {
    breaker,
    advance: (ms: number) => {
      now += ms;
    },
    changes: () => changes,
  };
}

/** One call through the breaker: acquire, then report. */
function call(breaker: DeploymentBreaker, ok: boolean): boolean {
  if (!breaker.tryAcquire()) return false;
  if (ok) breaker.success();
  else breaker.failure();
  return true;
}

describe('DeploymentBreaker', () => {
  it('opens after consecutive failures, refuses while open, probes once after the wait, and closes on a good probe', () => {
    const { breaker, advance, changes } = setup();
    call(breaker, false);
    call(breaker, false);
    expect(breaker.state).toBe('healthy');
    call(breaker, false);
    expect(breaker.state).toBe('open');
    expect(breaker.retryAfterMs).toBe(1_000);
    expect(breaker.tryAcquire()).toBe(false);
    advance(1_000);
    expect(breaker.state).toBe('probing');
    expect(breaker.tryAcquire()).toBe(true);
    // One probe at a time: a second request is refused until the first says how it went.
    expect(breaker.tryAcquire()).toBe(false);
    breaker.success();
    expect(breaker.state).toBe('healthy');
    expect(changes()).toBe(2);
    breaker.dispose();
  });

  it('opens again for twice as long after a failed probe, up to the maximum', () => {
    const { breaker, advance } = setup();
    for (let i = 0; i < 3; i += 1) call(breaker, false);
    for (const expected of [2_000, 3_000, 3_000]) {
      advance(breaker.retryAfterMs);
      expect(call(breaker, false)).toBe(true);
      expect(breaker.retryAfterMs).toBe(expected);
    }
    breaker.dispose();
  });

  it('opens on an error rate over the threshold even when failures are not consecutive', () => {
    const { breaker } = setup({ consecutiveFailures: 100 });
    for (const ok of [true, false, true, false, false, true, false]) call(breaker, ok);
    expect(breaker.state).toBe('open');
    breaker.dispose();
  });

  it('stays closed when failures are rare', () => {
    const { breaker } = setup({ consecutiveFailures: 100 });
    for (let i = 0; i < 50; i += 1) call(breaker, i % 5 !== 0);
    expect(breaker.state).toBe('healthy');
  });

  it("holds the deployment out for exactly a rate limit's retry hint, then takes requests again", () => {
    const { breaker, advance } = setup();
    breaker.hold(2_500);
    expect(breaker.state).toBe('open');
    expect(breaker.retryAfterMs).toBe(2_500);
    expect(breaker.tryAcquire()).toBe(false);
    advance(2_500);
    expect(breaker.tryAcquire()).toBe(true);
    breaker.success();
    expect(breaker.state).toBe('healthy');
    breaker.dispose();
  });

  it('keeps probing when a probe ends without a verdict (cancelled)', () => {
    const { breaker, advance } = setup();
    for (let i = 0; i < 3; i += 1) call(breaker, false);
    advance(1_000);
    expect(breaker.tryAcquire()).toBe(true);
    breaker.release();
    expect(breaker.state).toBe('probing');
    expect(breaker.tryAcquire()).toBe(true);
    breaker.dispose();
  });
});
