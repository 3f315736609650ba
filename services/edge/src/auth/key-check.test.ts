import { describe, expect, it } from 'vitest';
import { denialError } from './key-check.js';

const REVOKED = 'This API key has been revoked.';
const INVALID = 'Incorrect API key provided. You can find your API key in your gateway account.';

describe("the answer to auth's invalid-key denial", () => {
  it('tells a revoked key from an unknown one by the deny reason, whatever the message says', () => {
    const revoked = denialError({ decision: 'DECISION_DENY_INVALID_KEY', deny_reason: 'DENY_REASON_REVOKED', message: 'revoked, in other words' });
    expect(revoked).toMatchObject({ status: 401, message: REVOKED, code: 'invalid_api_key', type: 'invalid_request_error' });
    const unknown = denialError({ decision: 'DECISION_DENY_INVALID_KEY', deny_reason: 'DENY_REASON_UNKNOWN_KEY', message: REVOKED });
    expect(unknown).toMatchObject({ status: 401, message: INVALID, code: 'invalid_api_key' });
  });

  it('falls back on the message when an older auth sets no reason', () => {
    for (const deny_reason of ['DENY_REASON_UNSPECIFIED', undefined] as const) {
      expect(denialError({ decision: 'DECISION_DENY_INVALID_KEY', deny_reason, message: REVOKED }).message).toBe(REVOKED);
      expect(denialError({ decision: 'DECISION_DENY_INVALID_KEY', deny_reason, message: 'No such key.' }).message).toBe(INVALID);
    }
  });

  it('answers a decision it does not know as an invalid key', () => {
    expect(denialError({ decision: 'DECISION_UNSPECIFIED' })).toMatchObject({ status: 401, message: INVALID, code: 'invalid_api_key' });
  });
});

describe("the answer to auth's quota denials", () => {
  it('types a rate limit by the limit that refused, and a request too large as never worth retrying', () => {
    const requests = denialError({ decision: 'DECISION_DENY_REQUEST_LIMIT', retry_after_ms: 1500, message: 'Rate limit reached on requests per minute.' });
    expect(requests).toMatchObject({ status: 429, type: 'requests', code: 'rate_limit_exceeded', message: 'Rate limit reached on requests per minute.' });
    expect(requests.headers).toMatchObject({ 'retry-after': '2', 'retry-after-ms': '1500' });
    const tooLarge = denialError({ decision: 'DECISION_DENY_REQUEST_TOO_LARGE', message: 'Request too large.' });
    expect(tooLarge).toMatchObject({ status: 429, type: 'tokens', code: 'request_too_large' });
    expect(tooLarge.headers).toMatchObject({ 'x-should-retry': 'false' });
    expect(tooLarge.headers['retry-after']).toBeUndefined();
  });

  it('answers a model outside the key’s allow-list as a 403 naming the model, with no rate-limit headers', () => {
    const refused = denialError({ decision: 'DECISION_DENY_MODEL_NOT_ALLOWED', message: 'This API key is not allowed to use the model `gpt-4o`.' });
    expect(refused).toMatchObject({ status: 403, type: 'permission_error', code: 'model_not_allowed', param: 'model' });
    expect(refused.message).toContain('gpt-4o');
    expect(refused.headers['x-ratelimit-remaining-requests']).toBeUndefined();
    expect(refused.headers).toMatchObject({ 'x-should-retry': 'false' });
  });

  it('answers a spent budget as insufficient_quota', () => {
    const broke = denialError({ decision: 'DECISION_DENY_BUDGET', retry_after_ms: 0, message: '' });
    expect(broke).toMatchObject({ status: 429, type: 'insufficient_quota', code: 'insufficient_quota', message: 'You exceeded your current quota.' });
    expect(broke.headers).toMatchObject({ 'x-should-retry': 'false' });
  });
});
