import { describe, expect, it } from 'vitest';
import { GatewayError } from './gateway-error.js';
import { storeCalls } from './store-failure.js';

describe('storeCalls', () => {
  const logged: string[] = [];
  const logger = { error: (_details: object, message: string) => logged.push(message) };
  let failures = 0;
  const store = storeCalls(logger, {
    name: 'team store',
    reason: 'auth_unavailable',
    message: 'The team store is unavailable.',
    refusal: (error) => (error instanceof RangeError ? GatewayError.of('invalid_request', error.message) : undefined),
    onFailure: () => {
      failures += 1;
    },
  });

  it("answers the store's value, passes a handler's own refusal, and turns the store's refusal into the caller's", async () => {
    await expect(store(async () => 42)).resolves.toBe(42);
    await expect(store(() => Promise.reject(GatewayError.of('not_found', 'No such team.')))).rejects.toMatchObject({ reason: 'not_found' });
    await expect(store(() => Promise.reject(new RangeError('A team name has 1 to 200 characters.')))).rejects.toMatchObject({
      reason: 'invalid_request',
      message: 'A team name has 1 to 200 characters.',
    });
    expect({ logged, failures }).toEqual({ logged: [], failures: 0 });
  });

  it('answers a failure as a retryable error of its reason, logged and counted, without the cause in the message', async () => {
    const failure = await store(() => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.7:6379'))).catch((error: unknown) => error);
    expect(failure).toMatchObject({ reason: 'auth_unavailable', message: 'The team store is unavailable.', retryable: true });
    expect({ logged, failures }).toEqual({ logged: ['team store unavailable'], failures: 1 });
  });
});
