import { describe, expect, it } from 'vitest';
import { usageNames, usageStreamSettings } from './usage-stream.js';

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

describe('usageStreamSettings', () => {
  it("takes the names, replicas and limits from a consumer's config, the age in hours turned to ms", () => {
    expect(
      usageStreamSettings({ USAGE_STREAM: 'USAGE_STAGING', USAGE_STREAM_REPLICAS: 3, USAGE_STREAM_MAX_AGE_HOURS: 2, USAGE_STREAM_MAX_BYTES: 1024 }),
    ).toEqual({
      stream: 'USAGE_STAGING',
      subject: 'usage_staging.usage.v1.completion',
      subjects: ['usage_staging.usage.v1.>'],
      replicas: 3,
      maxAgeMs: 7_200_000,
      maxBytes: 1024,
    });
  });
});
