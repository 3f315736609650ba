import { rejectedWith } from '@gateway/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closedBaseUrl, type FakeModerationService, openAiInputs, startFakeOpenAiModeration } from '../../testing/fake-moderation-services.js';
import { scanContext } from '../../testing/scan-contexts.js';
import { createExternalScanner, ExternalCheckError, type ExternalSpec } from './index.js';

const API_KEY = 'sk-test-moderation-8f3a1c';
let fake: FakeModerationService;

beforeAll(async () => {
  fake = await startFakeOpenAiModeration({ apiKey: API_KEY });
});
afterEach(() => {
  fake.recover();
  fake.accepted.length = 0;
});
afterAll(() => fake.close());

function spec(overrides: Partial<ExternalSpec> = {}): ExternalSpec {
  return { service: 'openai_moderation', baseUrl: fake.baseUrl, credential: API_KEY, settings: {}, deadlineMs: 0, ...overrides };
}

describe('openai_moderation', () => {
  it('flags each true category of a flagged text and passes a clean one', async () => {
    const findings = await createExternalScanner(spec()).scan(['What a lovely day.', 'I will FLAG-ME you'], scanContext());
    expect(findings).toEqual([
      [],
      [
        { entity: 'flagged_harassment_threatening', start: -1, end: -1 },
        { entity: 'flagged_hate', start: -1, end: -1 },
        { entity: 'flagged_self_harm_intent', start: -1, end: -1 },
      ],
    ]);
    expect(fake.accepted).toHaveLength(1);
    expect(fake.accepted[0]!.body).toEqual({ model: 'omni-moderation-latest', input: ['What a lovely day.', 'I will FLAG-ME you'] });
  });

  it('counts only the categories the check names, in either spelling', async () => {
    const scanner = createExternalScanner(spec({ settings: { categories: 'hate, self_harm/intent', model: 'omni-moderation-2024-09-26' } }));
    expect(await scanner.scan(['FLAG-ME'], scanContext())).toEqual([
      [
        { entity: 'flagged_hate', start: -1, end: -1 },
        { entity: 'flagged_self_harm_intent', start: -1, end: -1 },
      ],
    ]);
    expect((fake.accepted[0]!.body as { model: string }).model).toBe('omni-moderation-2024-09-26');
  });

  it('asks about many texts in batches and keeps their order, sending no empty text', async () => {
    const texts = Array.from({ length: 70 }, (_, index) => (index === 0 ? '' : index % 23 === 0 ? `text ${index} FLAG-ME` : `text ${index}`));
    const findings = await createExternalScanner(spec({ settings: { categories: 'hate' } })).scan(texts, scanContext());
    expect(findings.map((list, index) => (list.length > 0 ? index : -1)).filter((index) => index >= 0)).toEqual([23, 46, 69]);
    expect(fake.accepted.length).toBeGreaterThan(1);
    expect(openAiInputs(fake.accepted).sort()).toEqual(texts.slice(1).sort());
  });

  it('refuses with upstream_error on a wrong key, without repeating the key OpenAI quotes', async () => {
    const wrong = 'sk-test-wrong-key-77d2e0';
    const error = await rejectedWith(ExternalCheckError, createExternalScanner(spec({ credential: wrong })).scan(['hello'], scanContext()));
    expect(error.reason).toBe('upstream_error');
    expect(error.message).toBe('openai_moderation: answered 401 (invalid_api_key)');
    expect(error.message).not.toContain(wrong);
  });

  it('gives upstream_error when the service fails and unavailable when it is overloaded', async () => {
    fake.fail(500);
    const failed = await rejectedWith(ExternalCheckError, createExternalScanner(spec()).scan(['hello'], scanContext()));
    expect([failed.reason, failed.message]).toEqual(['upstream_error', 'openai_moderation: answered 500 (server_error)']);
    fake.fail(503);
    const overloaded = await rejectedWith(ExternalCheckError, createExternalScanner(spec()).scan(['hello'], scanContext()));
    expect(overloaded.reason).toBe('unavailable');
  });

  it('gives deadline_exceeded when the answer comes after the context signal ends, or after the check deadline', async () => {
    fake.slow(20_000);
    const late = await rejectedWith(ExternalCheckError, createExternalScanner(spec()).scan(['hello'], scanContext({ signal: AbortSignal.timeout(100) })));
    expect(late.reason).toBe('deadline_exceeded');
    const own = await rejectedWith(ExternalCheckError, createExternalScanner(spec({ deadlineMs: 100 })).scan(['hello'], scanContext()));
    expect(own.reason).toBe('deadline_exceeded');
  });

  it('gives unavailable when nothing listens at its endpoint', async () => {
    const error = await rejectedWith(ExternalCheckError, createExternalScanner(spec({ baseUrl: await closedBaseUrl() })).scan(['hello'], scanContext()));
    expect(error.reason).toBe('unavailable');
    expect(error.message).toBe('openai_moderation: cannot be reached (ECONNREFUSED)');
  });

  it('does not call the service for texts that are all empty', async () => {
    expect(await createExternalScanner(spec()).scan(['', ''], scanContext())).toEqual([[], []]);
    expect(fake.accepted).toHaveLength(0);
  });
});
