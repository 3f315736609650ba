import { describe, expect, it } from 'vitest';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { COSTLY_PER_CHARACTER, HOSTILE, longConversation, MEGABYTE, prose, request, seededRandom } from './testing/hostile-texts.js';
import { textSegments } from './text-segments.js';
import {
  bytesCountedWithin,
  countPromptTokens,
  countPromptTokensAsync,
  countPromptTokensWithin,
  countPromptTokensWithinAsync,
  countTextTokens,
  countTextTokensAsync,
  LONG_RUN_CHARACTERS,
  promptTokenBounds,
  SEGMENT_BYTES,
  tokenPieces,
  tokenPiecesAsync,
  tokenPrefix,
} from './index.js';

const CODE = `export async function retry<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    try { return await work(); } catch (error) { lastError = error; await new Promise((resolve) => setTimeout(resolve, 2 ** attempt * 100)); }
  }
  throw lastError; // every attempt failed
}
`;

const record = (index: number) => ({
  id: `req_${index.toString(36)}`,
  model: 'gpt-4o-mini',
  usage: { prompt_tokens: index * 7, completion_tokens: index % 97 },
  tags: ['a', 'β', '中文'],
  ok: index % 3 === 0,
  ratio: index / 7,
});

const MULTILINGUAL = [
  '小明买了15支铅笔和4本笔记本，他应该找回多少钱？请一步一步地解释。',
  'Напишите функцию на Python, которая объединяет пересекающиеся интервалы.',
  'これはテストです。東京の天気は晴れ、気温は２３度です。',
  'مرحبا بالعالم، كيف حالك اليوم؟',
  'नमस्ते दुनिया, आज मौसम बहुत अच्छा है।',
  'Ο Σωκράτης ήταν Αθηναίος φιλόσοφος 👋🏽 — Grüße aus Köln! Ça va? 🎉🎉',
  '한국어 문장도 포함합니다. 숫자 12345와 함께.',
].join('\n');

/**
 * Speed is not checked here: the machine is shared and noisy. `pnpm bench tokens` times every text
 * below against a plain baseline in one run. These tests check results, and that the work is
 * linear by counting it (the bytes handed to the tokenizer, the size of each segment); each test's
 * timeout is its hang guard.
 */

describe('countPromptTokensWithin', { timeout: 30_000 }, () => {
  it('counts exactly as countPromptTokens up to the limit, and stops past it', () => {
    const prompt = request('The quick brown fox jumps over the lazy dog. '.repeat(50));
    const total = countPromptTokens(prompt);
    expect(total).toBeGreaterThan(500);
    expect(countPromptTokensWithin(prompt, total)).toBe(total);
    expect(countPromptTokensWithin(prompt, total + 1_000)).toBe(total);
    expect(countPromptTokensWithin(prompt, total - 1)).toBeUndefined();
    expect(countPromptTokensWithin(prompt, 5)).toBeUndefined();
  });

  it('stops within a segment of the limit: a 16 MB prompt over a small limit costs no more than a small one', () => {
    const huge = request(prose(16 * MEGABYTE, 1));
    expect(countPromptTokensWithin(huge, 1_000)).toBeUndefined();
    // The same work as for its first 64 KB, and about a thousand tokens of it.
    const read = bytesCountedWithin(huge, 1_000);
    expect(read).toBe(bytesCountedWithin(request(prose(64 * 1_024, 1)), 1_000));
    expect(read).toBeLessThan(2 * SEGMENT_BYTES);
  });
});

describe('promptTokenBounds', { timeout: 30_000 }, () => {
  it('never counts fewer tokens than the tokenizer as an upper bound, whatever the text', () => {
    const random = seededRandom(7);
    const samples = [
      prose(20_000, 3),
      CODE.repeat(20),
      MULTILINGUAL.repeat(30),
      '😀🚀👍🏽'.repeat(500),
      '<|endoftext|>'.repeat(50),
      'a'.repeat(5_000),
      Array.from({ length: 4_000 }, () => String.fromCodePoint(Math.floor(random() * 0x2ffff)))
        .join('')
        .replace(/[\ud800-\udfff]/g, ''),
    ];
    for (const text of samples) {
      const prompt = {
        ...request(text),
        messages: [
          ...(request(text).messages ?? []),
          {
            role: 'ROLE_ASSISTANT' as const,
            text: '',
            name: 'helper',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: text.slice(0, 300) } }],
          },
        ],
      };
      const exact = countPromptTokens(prompt);
      const bounds = promptTokenBounds(prompt);
      expect(bounds.upper).toBeGreaterThanOrEqual(exact);
      expect(bounds.estimate).toBeLessThanOrEqual(bounds.upper);
    }
  });

  it('counts the thinking an earlier assistant turn sends back, within its bounds', () => {
    const thought = prose(2_000, 5);
    const turn = (withThinking: boolean) => ({
      ...request('Weather?'),
      messages: [
        ...(request('Weather?').messages ?? []),
        {
          role: 'ROLE_ASSISTANT' as const,
          parts: { parts: [...(withThinking ? [{ thinking: { thinking: thought, signature: 'sig' } }] : []), { text: 'Checking.' }] },
          tool_calls: [],
        },
      ],
    });
    const added = countPromptTokens(turn(true)) - countPromptTokens(turn(false));
    expect(added).toBeGreaterThanOrEqual(countTextTokens(thought));
    const bounds = promptTokenBounds(turn(true));
    expect(bounds.upper).toBeGreaterThanOrEqual(countPromptTokens(turn(true)));
  });

  it('estimates prose, code and other scripts from bytes alone, at most a third under and twice over the exact count', () => {
    for (const text of [prose(40_000, 5), CODE.repeat(40), MULTILINGUAL.repeat(40)]) {
      const exact = countPromptTokens(request(text));
      const { estimate } = promptTokenBounds(request(text));
      expect(estimate / exact).toBeGreaterThan(0.67);
      expect(estimate / exact).toBeLessThan(2);
    }
  });
});

describe('exact counts for ordinary text', { timeout: 30_000 }, () => {
  const texts: Record<string, string> = {
    prose: prose(200_000, 2),
    code: CODE.repeat(300),
    'JSON, indented': JSON.stringify(
      Array.from({ length: 600 }, (_, index) => record(index)),
      null,
      2,
    ),
    'JSON, minified': JSON.stringify(Array.from({ length: 1_500 }, (_, index) => record(index))),
    multilingual: MULTILINGUAL.repeat(400),
    'a short message': 'hi, how are you?',
    'rules, indentation, a Thai phrase and a long identifier':
      `${'-'.repeat(80)}\n${' '.repeat(120)}{}\n${'ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรคระหว่างคำ'.repeat(4)} ${'veryLong'.repeat(20)}Identifier\n${'='.repeat(200)}\n`.repeat(
        50,
      ),
    'special tokens as text': 'Say <|endoftext|> and <|im_start|> literally.',
  };

  for (const [name, text] of Object.entries(texts)) {
    it(`equals gpt-tokenizer's count on ${name}, whole or cut into pieces`, async () => {
      const expected = countTokens(text, { disallowedSpecial: new Set() });
      expect(countTextTokens(text)).toBe(expected);
      expect(await countTextTokensAsync(text)).toBe(expected);
      const pieces = tokenPieces(text);
      expect(pieces.join('')).toBe(text);
      expect(tokenPrefix(text).tokens).toBe(expected);
      const prompt = request(text);
      expect(countPromptTokens(prompt)).toBe(expected + countPromptTokens(request('')));
    });
  }
});

/** A test's timeout: it catches a hang (a quadratic count of 1 MB takes minutes), it is no speed target. */
const HANG_GUARD_MS = (name: string) => (COSTLY_PER_CHARACTER.has(name) ? 120_000 : 30_000);

describe('hostile text', { timeout: 30_000 }, () => {
  for (const [name, text] of Object.entries(HOSTILE)) {
    it(
      `counts 1 MB of ${name} in linear time, the same synchronously and in time slices`,
      async () => {
        // Linear: segments of bounded size that join back to the text, each byte handed to the
        // tokenizer once (its merge is quadratic in a piece's length, not in the text's).
        const segments = [...textSegments(text)];
        expect(segments.map((segment) => segment.text).join('')).toBe(text);
        expect(Math.max(...segments.map((segment) => segment.bytes))).toBeLessThanOrEqual(SEGMENT_BYTES + 4);
        const count = countTextTokens(text);
        expect(count).toBeGreaterThan(0);

        const prompt = request(text);
        const refused = countPromptTokensWithin(prompt, 200_000);
        const total = countPromptTokens(request('')) + count;
        expect(refused).toBe(total <= 200_000 ? total : undefined);
        const read = bytesCountedWithin(prompt, 200_000);
        expect(read).toBeLessThanOrEqual(Buffer.byteLength(text) + 100);
        if (refused !== undefined) expect(read).toBeGreaterThanOrEqual(Buffer.byteLength(text));

        expect(await countTextTokensAsync(text)).toBe(count);
        expect(await countPromptTokensWithinAsync(prompt, 200_000)).toBe(refused);
      },
      HANG_GUARD_MS(name),
    );

    it(
      `cuts 1 MB of ${name} into token pieces that join back to it`,
      async () => {
        const pieces = tokenPieces(text);
        expect(pieces.join('')).toBe(text);
        expect(await tokenPiecesAsync(text)).toEqual(pieces);
      },
      HANG_GUARD_MS(name),
    );
  }

  it("stays within a token per cut of gpt-tokenizer's own count of a long run", () => {
    // Short enough for gpt-tokenizer's quadratic merge to count them whole.
    for (const text of ['A'.repeat(5_000), '😀'.repeat(2_500), '中'.repeat(5_000), ' '.repeat(5_000), `Separator:\n${'-'.repeat(5_000)}\n`]) {
      const exact = countTokens(text);
      expect(Math.abs(countTextTokens(text) - exact)).toBeLessThanOrEqual(Math.ceil(text.length / LONG_RUN_CHARACTERS));
    }
  });

  it('counts a request of 5,000 messages, and refuses it past the limit early', async () => {
    const prompt = longConversation();
    const counted = countPromptTokens(prompt);
    expect(counted).toBe(3 + prompt.messages.reduce((sum, message) => sum + 4 + countTextTokens(message.text), 0));
    expect(countPromptTokensWithin(prompt, counted)).toBe(counted);

    expect(countPromptTokensWithin(prompt, 20_000)).toBeUndefined();
    expect(bytesCountedWithin(prompt, 20_000)).toBeLessThan(bytesCountedWithin(prompt, Number.POSITIVE_INFINITY));

    expect(await countPromptTokensAsync(prompt)).toBe(counted);
    expect(await countPromptTokensWithinAsync(prompt, 20_000)).toBeUndefined();
  });
});

describe('time slices', () => {
  it('gives the event loop no turn for a small input, and turns for a big one', async () => {
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    // Under SMALL_INPUT_BYTES each, however long they take.
    await countPromptTokensWithinAsync(request('A typical prompt. '.repeat(400)), 128_000);
    await countTextTokensAsync('😀'.repeat(2_000));
    expect(turned).toBe(false);

    await countTextTokensAsync(HOSTILE['one CJK character']!);
    expect(turned).toBe(true);
  });
});

describe('tokenPrefix', () => {
  it('stops at the budget, on a whole piece, and says whether the text was complete', () => {
    const text = 'The gateway routes each request to a model. '.repeat(10);
    const all = tokenPrefix(text);
    expect(all.complete).toBe(true);
    expect(all.tokens).toBe(countTextTokens(text));
    const cut = tokenPrefix(text, 7);
    expect(cut).toEqual({ pieces: all.pieces.slice(0, 7), tokens: 7, complete: false });
    expect(countTextTokens(cut.pieces.join(''))).toBe(7);
  });

  it('keeps the tokens of a split character together, so every piece is valid text', () => {
    // U+1F9EC (DNA) is three o200k tokens: none is a whole character on its own.
    const text = '🧬 is DNA';
    const { pieces, tokens } = tokenPrefix(text);
    expect(pieces.join('')).toBe(text);
    expect(tokens).toBe(countTokens(text));
    expect(pieces.every((piece) => !piece.includes('\uFFFD'))).toBe(true);
  });
});
