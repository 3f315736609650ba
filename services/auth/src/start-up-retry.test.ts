import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { startUpRetry } from './start-up-retry.js';

/** A logger that keeps its warnings (fields and message) instead of writing them. */
function recordingLogger() {
  const warnings: Array<{ attempt: number; error: string; message: string }> = [];
  const logger = createLogger('auth-test', 'warn', {
    hooks: {
      logMethod(args) {
        const [fields, message] = args as unknown as [{ attempt: number; err: { message: string } }, string];
        warnings.push({ attempt: fields.attempt, error: fields.err.message, message });
      },
    },
  });
  return { logger, warnings };
}

/** A step that fails `failures` times, then resolves with 'done'; counts its calls. */
function failingStep(failures: number) {
  const step = {
    calls: 0,
    run: async () => {
      step.calls += 1;
      if (step.calls <= failures) throw new Error(`Redis is down (${step.calls})`);
      return 'done';
    },
  };
  return step;
}

describe('startUpRetry', () => {
  it('retries a failing step until it succeeds, pausing one step longer after each failure up to the most, and warns of each failure', async () => {
    const { logger, warnings } = recordingLogger();
    const policy = startUpRetry(logger, { stepMs: 10, maxMs: 25, message: 'step failed; retrying' });
    const pauses: number[] = [];
    policy.onRetry(({ delay }) => pauses.push(delay));
    const step = failingStep(4);
    const started = performance.now();
    expect(await policy.execute(step.run)).toBe('done');
    expect(performance.now() - started).toBeGreaterThanOrEqual(10 + 20 + 25 + 25 - 4);
    expect(step.calls).toBe(5);
    expect(pauses).toEqual([10, 20, 25, 25]);
    expect(warnings).toEqual([1, 2, 3, 4].map((attempt) => ({ attempt, error: `Redis is down (${attempt})`, message: 'step failed; retrying' })));
  });

  it('never gives up while the step keeps failing', async () => {
    const { logger, warnings } = recordingLogger();
    const step = failingStep(40);
    expect(await startUpRetry(logger, { stepMs: 1, maxMs: 1, message: 'step failed; retrying' }).execute(step.run)).toBe('done');
    expect(step.calls).toBe(41);
    expect(warnings.map((warning) => warning.attempt)).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
  });
});
