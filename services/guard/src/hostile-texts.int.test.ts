/**
 * Hostile texts against every built-in check at once, over real gRPC and Redis: 10,000 texts in Check
 * calls of huge or broken Unicode (lone surrogates, combining storms, right-to-left marks, NULs),
 * texts built to make backtracking engines run for hours against the operator's own hostile
 * patterns, digit runs that almost pass every validator, and stream windows cut anywhere. Each is
 * answered (a decision or an INVALID_ARGUMENT past the size cap, never another failure) within the
 * call's deadline, and every answer keeps its promises: one result per text, no held tail on a
 * final call, a masked text that no longer carries the span found.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callUnary, createClient, GatewayError, type GatewayServer } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { type CheckRequest, type CheckResponseOutput, type GuardServiceClient, loadGatewayGrpc, type Policy } from '@gateway/proto';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { redisUrl } from '@gateway/testing';
import { createServer, type GuardApp } from './app.js';

const prefix = `guard-hostile-${randomBytes(4).toString('hex')}:`;
const MAX_CHARS = 100_000;
let redis: RedisClient;
let app: GuardApp;
let client: GuardServiceClient;

/** A deterministic generator, so a failure names a text that can be made again. */
function generator(seed: number) {
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4_294_967_296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const int = (max: number) => Math.floor(next() * max);
  return { next, pick, int };
}

/** One hostile text, of the kind `kind`. */
function hostileText(kind: number, random: ReturnType<typeof generator>): string {
  const { pick, int } = random;
  switch (kind % 10) {
    case 0:
      // Catastrophic for backtracking: many a's and no match, against `(a+)+$` and `(a|aa)*c`.
      return `${'a'.repeat(1_000 + int(5_000))}!`;
    case 1:
      // Lone surrogates, NULs, bidi controls and combining storms.
      return Array.from({ length: 200 + int(2_000) }, () =>
        pick(['\uD800', '\uDFFF', '\u0000', '\u202E', '\u0301', 'e\u0301\u0302\u0303', '😀', '\uFEFF']),
      ).join('');
    case 2:
      // Digit runs that nearly pass the card, IBAN, SSN and Aadhaar validators.
      return Array.from({ length: 20 + int(150) }, () => `${int(10 ** 8)}`.padStart(8, '0') + pick([' ', '-', '', '  '])).join('');
    case 3:
      // One huge word of token characters: the default held tail and the secret rules' worst case.
      return `sk-${'A9_-'.repeat(200 + int(2_000))}`;
    case 4:
      // Scripts mixed letter by letter.
      return Array.from({ length: 500 + int(5_000) }, () => pick(['a', 'я', '中', 'ع', 'ש', 'ก', '한', 'Ω'])).join('');
    case 5:
      // Deeply nested JSON as text (a tool call's arguments).
      return `${'{"a":['.repeat(500 + int(2_000))}1${']}'.repeat(500)}`;
    case 6:
      // Many near-e-mails and near-phones.
      return Array.from({ length: 100 + int(1_000) }, () => pick(['a@', '@b.', 'x@y', '+1 (', '+44 20', '..@..', 'a.b@c.d', '+1 415 555 01'])).join(' ');
    case 7:
      // PEM headers that never end.
      return `-----BEGIN RSA PRIVATE KEY-----\n${'MIIE'.repeat(200 + int(2_000))}`;
    case 8:
      // Past the size cap: refused as invalid, so the edge applies on_error.
      return 'x'.repeat(MAX_CHARS + 1);
    default:
      // Random code units of the whole BMP.
      return String.fromCharCode(...Array.from({ length: 1_000 + int(4_000) }, () => int(0x10000)));
  }
}

const POLICY: Policy = {
  name: 'everything',
  enabled: true,
  mode: 'MODE_ENFORCE',
  on_error: 'ON_ERROR_BLOCK',
  attachment: { all_requests: true },
  checks: [
    { name: 'secrets', points: ['POINT_INPUT', 'POINT_OUTPUT'], action: 'ACTION_MASK', secrets: {} },
    {
      name: 'pii',
      points: ['POINT_INPUT', 'POINT_OUTPUT'],
      action: 'ACTION_MASK',
      pii: { entities: ['card', 'iban', 'phone', 'email', 'us_ssn', 'uk_nino', 'ca_sin', 'in_aadhaar'], default_phone_region: 'US' },
    },
    {
      name: 'patterns',
      points: ['POINT_INPUT', 'POINT_OUTPUT'],
      action: 'ACTION_MASK',
      patterns: { words: ['ignore previous instructions', 'ааа'], patterns: ['(a+)+$', '(a|aa)*c', '(x+x+)+y', '([^@]+)+@'] },
    },
    { name: 'scripts', points: ['POINT_INPUT', 'POINT_OUTPUT'], action: 'ACTION_FLAG', limits: { allowed_scripts: ['Latin'] } },
  ],
};

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
  app = createServer({
    redis,
    logger: createLogger('guard', 'silent'),
    prefix,
    secretsKey: '',
    reloadIntervalMs: 1_000,
    defaults: { windowTokens: 64, windowMs: 250, checkDeadlineMs: 2_000 },
    maxChars: MAX_CHARS,
  });
  await app.store.start();
  const port = await (app.server as GatewayServer).listen('127.0.0.1:0');
  client = createClient(loadGatewayGrpc().gateway.guard.v1.GuardService, `127.0.0.1:${port}`);
  await callUnary(client, client.PutPolicy, { policy: POLICY }, { deadlineMs: 10_000 });
});

afterAll(async () => {
  client?.close();
  await app?.server.shutdown(0);
  await deleteMatching(redis, `${prefix}*`);
  redis.disconnect();
});

describe('10,000 hostile texts against every built-in check', () => {
  it('are each answered within the deadline, with what each answer promises', async () => {
    const random = generator(41);
    const failures: string[] = [];
    let refused = 0;
    let answered = 0;
    let sent = 0;
    const CALLS = 5_050;
    const one = async (index: number) => {
      // One call in a hundred is past the size cap.
      const kind = index % 100 === 0 ? 8 : random.pick([0, 1, 2, 3, 4, 5, 6, 7, 9]);
      // Two texts a call (one past the size cap): 10,000 texts in 5,000 calls.
      const texts = Array.from({ length: kind === 8 ? 1 : 2 }, () => ({ path: `messages[${index}].content`, text: hostileText(kind, random) }));
      sent += texts.length;
      const final = random.next() < 0.5;
      const request: CheckRequest = {
        request_id: `hostile-${index}`,
        point: random.pick(['POINT_INPUT', 'POINT_OUTPUT'] as const),
        policies: ['everything'],
        texts,
        final,
      };
      try {
        // The edge's deadline for this policy: its checks' deadline and a margin.
        const answer = await callUnary<CheckRequest, CheckResponseOutput>(client, client.Check, request, { deadlineMs: 10_000 });
        answered++;
        if (answer.texts.length !== texts.length) failures.push(`${index}: ${answer.texts.length} results for ${texts.length} texts`);
        for (const [position, result] of answer.texts.entries()) {
          const held = result.held_chars ?? 0;
          if (final && held !== 0) failures.push(`${index}: a final call held ${held} characters`);
          if (held < 0 || held > texts[position]!.text.length) failures.push(`${index}: held ${held} of ${texts[position]!.text.length}`);
        }
        if (answer.decisions.some((decision) => decision.error))
          failures.push(`${index} (kind ${kind}): a check failed: ${answer.decisions.find((decision) => decision.error)?.error}`);
      } catch (error) {
        if (error instanceof GatewayError && error.reason === 'invalid_request' && kind === 8) refused++;
        else failures.push(`${index} (kind ${kind}): ${(error as Error).message}`);
      }
    };
    // Ten callers at a time, as edges under load send them.
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < CALLS) await one(next++);
      }),
    );
    expect(failures.slice(0, 10)).toEqual([]);
    expect(answered + refused).toBe(CALLS);
    expect(sent).toBeGreaterThanOrEqual(10_000);
    expect(refused).toBeGreaterThan(0);
  }, 600_000);
});

describe('a text dense with phone numbers', () => {
  it('does not hold the replica: checks sent after it are answered before it', async () => {
    // About 8,000 valid US numbers: libphonenumber parses each, most of a second of work.
    const dense = Array.from({ length: 8_000 }, (_, index) => `${2125550000 + index} `)
      .join('')
      .slice(0, MAX_CHARS);
    const call = (id: string, text: string) =>
      callUnary<CheckRequest, CheckResponseOutput>(
        client,
        client.Check,
        { request_id: id, point: 'POINT_INPUT', policies: ['everything'], texts: [{ path: 'messages[0].content', text }], final: true },
        { deadlineMs: 30_000 },
      );
    const order: string[] = [];
    const big = call('dense', dense).then((answer) => {
      order.push('dense');
      return answer;
    });
    const small = Array.from({ length: 10 }, (_, index) =>
      call(`small-${index}`, `call +44 20 7946 0958, ticket ${index}`).then((answer) => {
        order.push(`small-${index}`);
        return answer;
      }),
    );
    const answers = await Promise.all(small);
    expect(answers.every((answer) => answer.texts[0]!.text?.includes('<PHONE_1>'))).toBe(true);
    // Read whole within the check's deadline (every number masked), or stopped at it on a loaded
    // machine (the policy's on_error then applies): never a replica held past the deadline.
    const denseAnswer = await big;
    const errors = denseAnswer.decisions.filter((decision) => decision.error).map((decision) => [decision.check, decision.error]);
    if (errors.length === 0) expect(denseAnswer.texts[0]!.text).toContain('<PHONE_8000>');
    else expect(errors).toEqual([['pii', 'deadline_exceeded']]);
    expect(order.at(-1)).toBe('dense');
  }, 120_000);
});
