import { describe, expect, it } from 'vitest';
import { usageNames } from './usage-stream.js';

describe('usageNames', () => {
  it('keeps the usage.v1 subjects for the default stream and prefixes them for another', () => {
    expect(usageNames()).toEqual({ stream: 'USAGE', subject: 'usage.v1.completion', subjects: ['usage.v1.>'] });
    expect(usageNames('USAGE_STAGING')).toEqual({
      stream: 'USAGE_STAGING',
      subject: 'usage_staging.usage.v1.completion',
      subjects: ['usage_staging.usage.v1.>'],
    });
  });
});
