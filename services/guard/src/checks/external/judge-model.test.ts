import { rejectedWith } from '@gateway/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_JUDGE_MODEL, type FakeJudgeModel, startFakeJudgeModel } from '../../testing/fake-judge-model.js';
import { closedBaseUrl, type FakeRequest } from '../../testing/fake-moderation-services.js';
import { scanContext } from '../../testing/scan-contexts.js';
import { createExternalScanner, ExternalCheckError, type ExternalSpec } from './index.js';

const GATEWAY_KEY = 'br-test-policy-owner-5c1d9e';
let fake: FakeJudgeModel;

beforeAll(async () => {
  fake = await startFakeJudgeModel({ apiKey: GATEWAY_KEY });
});
afterEach(() => {
  fake.recover();
  fake.accepted.length = 0;
});
afterAll(() => fake.close());

function spec(overrides: Partial<ExternalSpec> = {}): ExternalSpec {
  return { service: 'judge_model', baseUrl: fake.baseUrl, credential: GATEWAY_KEY, settings: { model: FAKE_JUDGE_MODEL }, deadlineMs: 0, ...overrides };
}

function settings(extra: Record<string, string>): Partial<ExternalSpec> {
  return { settings: { model: FAKE_JUDGE_MODEL, ...extra } };
}

interface SentMessage {
  role: string;
  content: string;
}

/** The messages of the call that asked about `text`. */
function messagesAbout(text: string): SentMessage[] {
  const request = fake.accepted.find((accepted) => (accepted.body as { messages: SentMessage[] }).messages.some((message) => message.content.includes(text)));
  if (!request) throw new Error(`no call asked about ${text}`);
  return (request.body as { messages: SentMessage[] }).messages;
}

const unsafe = (entity: string) => ({ entity, start: -1, end: -1 });

describe('judge_model', () => {
  it("judges each text as the user's message with Llama Guard 3's prompt, and finds the category it names", async () => {
    const findings = await createExternalScanner(spec()).scan(['What a lovely day.', 'I will FLAG-ME you'], scanContext());
    expect(findings).toEqual([[], [unsafe('unsafe_s1')]]);
    expect(fake.accepted).toHaveLength(2);
    const request: FakeRequest = fake.accepted[0]!;
    expect(request.headers.authorization).toBe(`Bearer ${GATEWAY_KEY}`);
    expect(request.body).toMatchObject({ model: FAKE_JUDGE_MODEL, temperature: 0, max_tokens: 20, stream: false });
    const [prompt, ...others] = messagesAbout('I will FLAG-ME you');
    expect(others).toEqual([]);
    expect(prompt!.role).toBe('user');
    expect(prompt!.content).toContain("Task: Check if there is unsafe content in 'User' messages");
    expect(prompt!.content).toContain('S1: Violent Crimes.');
    expect(prompt!.content).toContain('S14: Code Interpreter Abuse.');
    expect(prompt!.content).toContain('<BEGIN CONVERSATION>\n\nUser: I will FLAG-ME you\n\n<END CONVERSATION>');
    expect(prompt!.content).toContain('Provide your safety assessment for ONLY THE LAST User message in the above conversation:');
  });

  it("judges the assistant's message at the answer's points and the user's at the tool arguments", async () => {
    const scanner = createExternalScanner(spec());
    await scanner.scan(['the answer'], scanContext({ point: 'output' }));
    await scanner.scan(['what the tool returned'], scanContext({ point: 'tool_result' }));
    await scanner.scan(['{"path":"/etc"}'], scanContext({ point: 'tool_arguments' }));
    expect(messagesAbout('the answer')[0]!.content).toContain('Agent: the answer\n');
    expect(messagesAbout('the answer')[0]!.content).toContain('ONLY THE LAST Agent message');
    expect(messagesAbout('what the tool returned')[0]!.content).toContain("unsafe content in 'Agent' messages");
    expect(messagesAbout('{"path":"/etc"}')[0]!.content).toContain('User: {"path":"/etc"}\n');
  });

  it('counts only the categories the check names, by code or name; an unsafe answer naming none always counts', async () => {
    fake.answerWith('unsafe\nS1, S10');
    const text = ['some text'];
    expect(await createExternalScanner(spec()).scan(text, scanContext())).toEqual([[unsafe('unsafe_s1'), unsafe('unsafe_s10')]]);
    expect(await createExternalScanner(spec(settings({ categories: 'hate' }))).scan(text, scanContext())).toEqual([[unsafe('unsafe_s10')]]);
    expect(await createExternalScanner(spec(settings({ categories: 'S10,Violent Crimes' }))).scan(text, scanContext())).toEqual([
      [unsafe('unsafe_s1'), unsafe('unsafe_s10')],
    ]);
    expect(await createExternalScanner(spec(settings({ categories: 's2' }))).scan(text, scanContext())).toEqual([[]]);
    fake.answerWith('\n\nunsafe');
    expect(await createExternalScanner(spec(settings({ categories: 's2' }))).scan(text, scanContext())).toEqual([[unsafe('unsafe')]]);
  });

  it('asks for JSON with a system prompt in the json format and reads its categories', async () => {
    const scanner = createExternalScanner(spec(settings({ format: 'json', max_tokens: '64' })));
    expect(await scanner.scan(['fine', 'FLAG-ME now'], scanContext())).toEqual([[], [unsafe('unsafe_s1')]]);
    const [system, prompt] = messagesAbout('FLAG-ME now');
    expect(system!.role).toBe('system');
    expect(system!.content).toContain('{"flagged": true or false, "categories":');
    expect(prompt!.content).toContain('User: FLAG-ME now');
    expect((fake.accepted[0]!.body as { max_tokens: number }).max_tokens).toBe(64);
    fake.answerWith('```json\n{"flagged": true, "categories": ["Hate", "S11"]}\n```');
    expect(await scanner.scan(['anything'], scanContext())).toEqual([[unsafe('unsafe_hate'), unsafe('unsafe_s11')]]);
    fake.answerWith('{"flagged": true}');
    expect(await scanner.scan(['anything'], scanContext())).toEqual([[unsafe('unsafe')]]);
    fake.answerWith('{"flagged": true, "categories": ["the message asks how to pick the lock of a neighbour\'s door at night"]}');
    expect(await scanner.scan(['anything'], scanContext())).toEqual([[unsafe('unsafe')]]);
  });

  it('refuses with upstream_error on a wrong key, without the key in the message', async () => {
    const wrong = 'br-test-wrong-key-0a9b8c';
    const error = await rejectedWith(ExternalCheckError, createExternalScanner(spec({ credential: wrong })).scan(['hello'], scanContext()));
    expect(error.reason).toBe('upstream_error');
    expect(error.message).toBe('judge_model: answered 401 (invalid_api_key)');
    expect(error.message).not.toContain(wrong);
  });

  it('refuses with upstream_error on a model the endpoint does not serve', async () => {
    const error = await rejectedWith(ExternalCheckError, createExternalScanner(spec(settings({ model: 'gpt-nope' }))).scan(['hello'], scanContext()));
    expect([error.reason, error.message]).toEqual(['upstream_error', 'judge_model: answered 404 (model_not_found)']);
  });

  it('gives upstream_error when the answer is neither safe nor unsafe, or not the JSON asked for, without repeating it', async () => {
    const text = 'tell me about the weather in Lisbon';
    fake.answerWith(`Sure! ${text}: sunny.`);
    const neither = await rejectedWith(ExternalCheckError, createExternalScanner(spec()).scan([text], scanContext()));
    expect([neither.reason, neither.message]).toEqual(['upstream_error', 'judge_model: answered neither safe nor unsafe']);
    expect(neither.message).not.toContain('Lisbon');
    fake.answerWith(`{"verdict": "${text}"`);
    const json = await rejectedWith(ExternalCheckError, createExternalScanner(spec(settings({ format: 'json' }))).scan([text], scanContext()));
    expect(json.reason).toBe('upstream_error');
    expect(json.message).not.toContain('Lisbon');
    fake.answerWith('{"flagged": "yes", "categories": []}');
    const wrongType = await rejectedWith(ExternalCheckError, createExternalScanner(spec(settings({ format: 'json' }))).scan([text], scanContext()));
    expect(wrongType.reason).toBe('upstream_error');
  });

  it('gives upstream_error when the endpoint fails and unavailable when it is overloaded', async () => {
    fake.fail(500);
    const failed = await rejectedWith(ExternalCheckError, createExternalScanner(spec()).scan(['hello'], scanContext()));
    expect([failed.reason, failed.message]).toEqual(['upstream_error', 'judge_model: answered 500 (server_error)']);
    fake.fail(429);
    const limited = await rejectedWith(ExternalCheckError, createExternalScanner(spec()).scan(['hello'], scanContext()));
    expect(limited.reason).toBe('unavailable');
  });

  it('gives deadline_exceeded when the judgement comes after the context signal ends, or after the check deadline', async () => {
    fake.slow(20_000);
    const late = await rejectedWith(ExternalCheckError, createExternalScanner(spec()).scan(['hello'], scanContext({ signal: AbortSignal.timeout(100) })));
    expect(late.reason).toBe('deadline_exceeded');
    const own = await rejectedWith(ExternalCheckError, createExternalScanner(spec({ deadlineMs: 100 })).scan(['hello'], scanContext()));
    expect(own.reason).toBe('deadline_exceeded');
  });

  it('gives unavailable when nothing listens at its endpoint', async () => {
    const error = await rejectedWith(
      ExternalCheckError,
      createExternalScanner(spec({ baseUrl: `${await closedBaseUrl()}/v1` })).scan(['hello'], scanContext()),
    );
    expect(error.reason).toBe('unavailable');
    expect(error.message).toBe('judge_model: cannot be reached (ECONNREFUSED)');
  });

  it('asks about at most four texts at once, keeps their order and skips empty ones', async () => {
    let underWay = 0;
    let most = 0;
    const counting: typeof fetch = async (input, init) => {
      underWay++;
      most = Math.max(most, underWay);
      try {
        return await fetch(input, init);
      } finally {
        underWay--;
      }
    };
    const texts = Array.from({ length: 10 }, (_, index) => (index === 0 ? '' : index % 3 === 0 ? `text ${index} FLAG-ME` : `text ${index}`));
    const findings = await createExternalScanner(spec(), { fetch: counting }).scan(texts, scanContext());
    expect(findings.map((list, index) => (list.length > 0 ? index : -1)).filter((index) => index >= 0)).toEqual([3, 6, 9]);
    expect(fake.accepted).toHaveLength(9);
    expect(most).toBe(4);
  });
});
