import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CheckResponseOutput } from '@gateway/proto';
import type { GuardText } from './guard-context.js';
import { BUFFER_WINDOWS, type HoldBackOptions, StreamHoldBack } from './stream-hold-back.js';
import { FAKE_PLACEHOLDER, FAKE_SECRET, fakeStreamCheck } from '../testing/fake-stream-check.js';

/** A chat chunk as the executor renders it, of choice 0. */
function chunk(delta: Record<string, unknown>, finish: string | null = null): string {
  return JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'sim',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
}

/** The chunks a hold-back emitted, parsed, with their text. */
interface Emitted {
  json: string;
  text: string;
  finishing: boolean;
  chunk: { choices: Array<{ index: number; delta: Record<string, unknown> & { tool_calls?: Array<Record<string, unknown>> }; finish_reason: string | null }> };
}

function holdBack(window: { tokens: number; ms: number }, check: HoldBackOptions['check'] = fakeStreamCheck().check) {
  const emitted: Emitted[] = [];
  let blocked = 0;
  const stream = new StreamHoldBack({
    window,
    check,
    emit(json, text, finishing) {
      emitted.push({ json, text, finishing, chunk: JSON.parse(json) });
    },
    blocked() {
      blocked++;
    },
  });
  return { stream, emitted, blocked: () => blocked };
}

/** Everything emitted on one path of choice 0: `content`, `reasoning_content`, or a tool call index. */
function textOf(emitted: readonly Emitted[], path: 'content' | 'reasoning_content' | 'refusal' | number): string {
  return emitted
    .map(({ chunk: { choices } }) => {
      const delta = choices[0]?.delta ?? {};
      if (typeof path === 'number')
        return (delta.tool_calls ?? [])
          .filter((call) => call.index === path)
          .map((call) => (call.function as { arguments?: string })?.arguments ?? '')
          .join('');
      return typeof delta[path] === 'string' ? (delta[path] as string) : '';
    })
    .join('');
}

/** `text` cut into pieces of `size` characters. */
function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let at = 0; at < text.length; at += size) out.push(text.slice(at, at + size));
  return out;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the stream hold-back', () => {
  it('masks a secret split across chunks and windows: no emitted chunk, nor all of them together, holds it', async () => {
    const fake = fakeStreamCheck('mask');
    const { stream, emitted } = holdBack({ tokens: 4, ms: 10_000 }, fake.check);
    const answer = `Here is the key: ${FAKE_SECRET} and a second ${FAKE_SECRET}, done.`;
    await stream.push(chunk({ role: 'assistant', content: '' }));
    // Chunks arrive one by one, each after the check before it answered.
    for (const part of pieces(answer, 3)) {
      await stream.push(chunk({ content: part }));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await stream.push(chunk({}, 'stop'));
    await stream.finish();
    for (const { json } of emitted) expect(json).not.toContain(FAKE_SECRET);
    const text = textOf(emitted, 'content');
    expect(text).not.toContain(FAKE_SECRET);
    expect(text).toBe(answer.split(FAKE_SECRET).join(FAKE_PLACEHOLDER));
    // Windows of 16 characters: several checks, the window's edge inside the secret, held back.
    expect(fake.calls.length).toBeGreaterThan(3);
    expect(fake.calls.some((call) => call.response.texts.some((result) => (result.held_chars ?? 0) > 0))).toBe(true);
    expect(fake.calls.at(-1)?.final).toBe(true);
    // The role first, the finish last.
    expect(emitted[0]!.chunk.choices[0]!.delta.role).toBe('assistant');
    expect(emitted.at(-1)!.chunk.choices[0]!.finish_reason).toBe('stop');
    expect(emitted.filter((entry) => entry.finishing).length).toBe(1);
  });

  it('masks a secret inside a tool call’s streamed arguments, each call its own text, in order after the content', async () => {
    const fake = fakeStreamCheck('mask');
    const { stream, emitted } = holdBack({ tokens: 3, ms: 10_000 }, fake.check);
    const args = JSON.stringify({ key: FAKE_SECRET, region: 'eu' });
    await stream.push(chunk({ role: 'assistant', content: 'Calling AKIA' }));
    await stream.push(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'store', arguments: '' } }] }));
    for (const part of pieces(args, 5)) await stream.push(chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] }));
    await stream.push(chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'other', arguments: '{"a":1}' } }] }));
    await stream.push(chunk({}, 'tool_calls'));
    await stream.finish();
    for (const { json } of emitted) expect(json).not.toContain(FAKE_SECRET);
    // The content's held "AKIA" was no secret: it leaves, before the first call.
    expect(textOf(emitted, 'content')).toBe('Calling AKIA');
    expect(textOf(emitted, 0)).toBe(args.replace(FAKE_SECRET, FAKE_PLACEHOLDER));
    expect(textOf(emitted, 1)).toBe('{"a":1}');
    expect(fake.calls.flatMap((call) => call.texts.map((text) => text.path))).toContain('choices[0].delta.tool_calls[0].function.arguments');
    // Order: all content, then call 0 (its header first), then call 1, then the finish.
    const kinds = emitted.flatMap(({ chunk: { choices } }) => {
      const delta = choices[0]?.delta ?? {};
      const out: string[] = [];
      if (delta.content) out.push('content');
      for (const call of delta.tool_calls ?? []) out.push(call.id ? `head${call.index}` : `args${call.index}`);
      if (choices[0]?.finish_reason) out.push('finish');
      return out;
    });
    const squeezed = kinds.filter((kind, at) => kind !== kinds[at - 1]);
    expect(squeezed).toEqual(['content', 'head0', 'args0', 'head1', 'finish']);
  });

  it('checks thinking text too, and keeps it before the content', async () => {
    const fake = fakeStreamCheck('mask');
    const { stream, emitted } = holdBack({ tokens: 2, ms: 10_000 }, fake.check);
    for (const part of pieces(`thinking of ${FAKE_SECRET}`, 4)) await stream.push(chunk({ reasoning_content: part }));
    await stream.push(chunk({ content: 'The answer.' }));
    await stream.push(chunk({}, 'stop'));
    await stream.finish();
    expect(textOf(emitted, 'reasoning_content')).toBe(`thinking of ${FAKE_PLACEHOLDER}`);
    expect(textOf(emitted, 'content')).toBe('The answer.');
    const firstContent = emitted.findIndex((entry) => entry.chunk.choices[0]?.delta.content);
    const lastThinking = emitted.findLastIndex((entry) => entry.chunk.choices[0]?.delta.reasoning_content);
    expect(lastThinking).toBeLessThan(firstContent);
    expect(fake.calls.flatMap((call) => call.texts.map((text) => text.path))).toContain('choices[0].delta.reasoning_content');
  });

  it('ends a blocked answer with content_filter: nothing after it, and the upstream to be cancelled', async () => {
    const fake = fakeStreamCheck('block');
    const { stream, emitted, blocked } = holdBack({ tokens: 4, ms: 10_000 }, fake.check);
    await stream.push(chunk({ role: 'assistant', content: '' }));
    const answer = `Some harmless text first, then ${FAKE_SECRET} and more text that never leaves.`;
    for (const part of pieces(answer, 4)) await stream.push(chunk({ content: part }));
    await stream.push(chunk({}, 'stop'));
    await stream.finish();
    expect(blocked()).toBe(1);
    expect(stream.ended).toBe(true);
    const last = emitted.at(-1)!;
    expect(last.chunk.choices[0]!.finish_reason).toBe('content_filter');
    expect(last.finishing).toBe(true);
    expect(emitted.filter((entry) => entry.chunk.choices[0]?.finish_reason).length).toBe(1);
    for (const { json } of emitted) expect(json).not.toContain(FAKE_SECRET);
    const text = textOf(emitted, 'content');
    expect(text.length).toBeGreaterThan(0);
    expect(answer.startsWith(text)).toBe(true);
    expect(text).not.toContain('never');
  });

  it('releases text when the upstream pauses, after the window’s milliseconds', async () => {
    vi.useFakeTimers();
    const fake = fakeStreamCheck('mask');
    const { stream, emitted } = holdBack({ tokens: 1000, ms: 200 }, fake.check);
    await stream.push(chunk({ content: 'Hello, ' }));
    await stream.push(chunk({ content: 'world' }));
    expect(textOf(emitted, 'content')).toBe('');
    await vi.advanceTimersByTimeAsync(199);
    expect(fake.calls.length).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(fake.calls.map((call) => call.final)).toEqual([false]);
    expect(textOf(emitted, 'content')).toBe('Hello, world');
    // A tail that could start a secret waits for what follows, not for the timer again.
    await stream.push(chunk({ content: ' and AKIA' }));
    await vi.advanceTimersByTimeAsync(200);
    expect(textOf(emitted, 'content')).toBe('Hello, world and ');
    await vi.advanceTimersByTimeAsync(1000);
    expect(fake.calls.length).toBe(2);
    await stream.push(chunk({}, 'stop'));
    await stream.finish();
    expect(textOf(emitted, 'content')).toBe('Hello, world and AKIA');
  });

  it('lets no text out before its check answered, keeps one check in flight, and holds the upstream back past its buffer', async () => {
    const pending: Array<{ texts: readonly GuardText[]; final: boolean; resolve: (response: CheckResponseOutput) => void }> = [];
    let inFlight = 0;
    let mostInFlight = 0;
    const check = (texts: readonly GuardText[], final: boolean) => {
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      return new Promise<CheckResponseOutput>((resolve) =>
        pending.push({
          texts,
          final,
          resolve: (response) => {
            inFlight--;
            resolve(response);
          },
        }),
      );
    };
    const pass = (texts: readonly GuardText[]): CheckResponseOutput => ({
      blocked: false,
      texts: texts.map(({ text }) => ({ text, held_chars: 0 })),
      decisions: [],
      placeholders: [],
    });
    const { stream, emitted } = holdBack({ tokens: 1, ms: 10_000 }, check);
    await stream.push(chunk({ content: 'abcd' }));
    expect(pending.length).toBe(1);
    expect(emitted.length).toBe(0);
    // Up to BUFFER_WINDOWS windows wait behind the check without holding the upstream back.
    for (let index = 0; index < BUFFER_WINDOWS; index++) await stream.push(chunk({ content: 'efgh' }));
    let accepted = false;
    const over = stream.push(chunk({ content: 'ijkl' })).then(() => {
      accepted = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(accepted).toBe(false);
    expect(emitted.length).toBe(0);
    pending[0]!.resolve(pass(pending[0]!.texts));
    await over;
    expect(accepted).toBe(true);
    expect(textOf(emitted, 'content')).toBe('abcd');
    expect(pending.length).toBe(2);
    expect(pending[1]!.texts[0]!.text).toBe(`${'efgh'.repeat(BUFFER_WINDOWS)}ijkl`);
    const finished = stream.finish();
    pending[1]!.resolve(pass(pending[1]!.texts));
    await finished;
    expect(textOf(emitted, 'content')).toBe(`abcd${'efgh'.repeat(BUFFER_WINDOWS)}ijkl`);
    expect(mostInFlight).toBe(1);
  });

  it('takes a check that rejects as a block: nothing unchecked leaves', async () => {
    const { stream, emitted, blocked } = holdBack({ tokens: 1, ms: 10_000 }, () => Promise.reject(new Error('guard down')));
    await stream.push(chunk({ content: 'secret-ish' }));
    await stream.finish();
    expect(blocked()).toBe(1);
    expect(textOf(emitted, 'content')).toBe('');
    expect(emitted.at(-1)!.chunk.choices[0]!.finish_reason).toBe('content_filter');
  });

  it('passes chunks whose text the check leaves unchanged as they came, byte for byte', async () => {
    const { stream, emitted } = holdBack({ tokens: 1, ms: 10_000 });
    const sent = [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Rivers' }), chunk({ content: ' flow.' }), chunk({}, 'stop')];
    for (const json of sent) await stream.push(json);
    await stream.finish();
    expect(emitted.map((entry) => entry.json)).toEqual(sent);
  });
});
