import { GatewayError } from '@gateway/grpc';
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, searchQuery } from './request-search.js';

const NOW = Date.UTC(2026, 10, 27, 12);
const refusal = (action: () => unknown) => {
  try {
    action();
  } catch (error) {
    if (error instanceof GatewayError) return { reason: error.reason, param: error.param, message: error.message };
    throw error;
  }
  throw new Error('nothing was thrown');
};

describe('the search', () => {
  it('binds every filter as a parameter, never as text of the statement', () => {
    const query = searchQuery(
      {
        key_id: "key_x' OR 1=1 --",
        model: 'gpt-4o',
        http_status: 429,
        min_cost_pico_usd: 5,
        sort: 'SORT_FIELD_COST',
        page_size: 10,
        fallback_models: [],
      } as never,
      NOW,
      30,
    );
    expect(query.text).not.toContain('OR 1=1');
    expect(query.values).toContain("key_x' OR 1=1 --");
    expect(query.text).toContain('ORDER BY cost_pico_usd DESC, received_at DESC, event_id DESC LIMIT 11');
    expect(query.values[0]).toEqual(new Date(NOW - 30 * 86_400_000));
  });

  it('reads back the cursor it wrote, for the order it was written in only', () => {
    const cursor = encodeCursor({ sort: 'SORT_FIELD_LATENCY', ascending: false, value: '1200', receivedAtMs: NOW, eventId: 'e1' });
    expect(decodeCursor(cursor, 'SORT_FIELD_LATENCY', false)).toEqual({
      sort: 'SORT_FIELD_LATENCY',
      ascending: false,
      value: '1200',
      receivedAtMs: NOW,
      eventId: 'e1',
    });
    expect(refusal(() => decodeCursor(cursor, 'SORT_FIELD_LATENCY', true))).toMatchObject({ reason: 'invalid_request', param: 'cursor' });
    expect(refusal(() => decodeCursor(cursor, 'SORT_FIELD_COST', false))).toMatchObject({ reason: 'invalid_request', param: 'cursor' });
  });

  it.each([
    ['garbage', 'not base64 json'],
    ['a list of the wrong length', Buffer.from('[1,2]').toString('base64url')],
    ['a value that is no integer', Buffer.from(JSON.stringify(['SORT_FIELD_UNSPECIFIED', 0, 'x', NOW, 'e'])).toString('base64url')],
  ])('refuses a cursor that is %s', (_what, cursor) => {
    expect(refusal(() => searchQuery({ cursor } as never, NOW, 30))).toMatchObject({ reason: 'invalid_request', param: 'cursor' });
  });

  it('refuses an end before its start and a page out of bounds', () => {
    expect(refusal(() => searchQuery({ start_ms: NOW, end_ms: NOW - 1 } as never, NOW, 30))).toMatchObject({ param: 'end' });
    expect(refusal(() => searchQuery({ page_size: 1_001 } as never, NOW, 30))).toMatchObject({ param: 'limit' });
  });
});
