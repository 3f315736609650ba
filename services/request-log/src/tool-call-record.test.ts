import { PoisonMessageError } from '@gateway/messaging';
import { describe, expect, it } from 'vitest';
import { toolCallRecordOf, toolCallRow } from './tool-call-record.js';

const event = {
  event_id: 'e1',
  request_id: 'r1',
  received_at_ms: 1_700_000_000_000,
  key_id: 'key_A',
  server: 'web',
  tool: 'echo',
  outcome: 'ok',
  latency_ms: 12,
  guardrails: [
    { policy: 'p', check: 'cards', point: 'tool_arguments', action: 'mask', enforced: true, entity: 'card', path: 'params.arguments.text', start: 9, end: 28 },
  ],
};

describe('a tool call as a row', () => {
  it('keeps its fields and its decisions with their place, and reads back as the record', () => {
    const row = toolCallRow(event);
    expect(row).toMatchObject({ event_id: 'e1', key_id: 'key_A', team_id: '', server: 'web', tool: 'echo', outcome: 'ok', error_code: '', latency_ms: 12 });
    expect(JSON.parse(row.guardrails as string)).toEqual([
      {
        policy: 'p',
        check: 'cards',
        point: 'tool_arguments',
        action: 'mask',
        enforced: true,
        entity: 'card',
        error: '',
        path: 'params.arguments.text',
        start: 9,
        end: 28,
      },
    ]);
    expect(toolCallRecordOf(row)).toMatchObject({ event_id: 'e1', received_at_ms: 1_700_000_000_000, guardrails: [{ check: 'cards', start: 9 }] });
  });

  it.each([
    [{ event_id: '' }, 'missing_event_id'],
    [{ key_id: '' }, 'missing_key_id'],
    [{ received_at_ms: 0 }, 'missing_received_at'],
  ])('refuses %j as a poison message (%s)', (change, reason) => {
    expect(() => toolCallRow({ ...event, ...change })).toThrow(PoisonMessageError);
    expect(() => toolCallRow({ ...event, ...change })).toThrow(expect.objectContaining({ reason }));
  });
});
