/**
 * Hostile request bodies for the end-to-end tests: a deterministic generator of mutated chat
 * requests (wrong types, unknown roles, broken tools and content parts, truncated JSON) and the
 * check every answer must pass: never a 5xx, every error in OpenAI's envelope, every stream ended
 * by `[DONE]` or an error event.
 */
import { expect } from 'vitest';

/** Values that land where a field is expected. */
const VALUES: unknown[] = [null, true, false, 0, -1, 1e308, -1e308, 2.5, '', 'x', 'auto', [], {}, [null], { a: 1 }, 'x'.repeat(3000), [1, 'a', null], { role: 'user' }, Number.MAX_SAFE_INTEGER + 2, '\u0000\ud800', { type: 'function' }];
const FIELDS = ['model', 'messages', 'temperature', 'top_p', 'n', 'stop', 'max_tokens', 'max_completion_tokens', 'presence_penalty', 'frequency_penalty', 'seed', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'stream', 'stream_options', 'logprobs', 'top_logprobs', 'logit_bias', 'user', 'metadata', 'store', 'reasoning_effort', 'functions', 'function_call'];
const MESSAGE_FIELDS = ['role', 'content', 'name', 'tool_calls', 'tool_call_id', 'refusal'];
const PARTS: unknown[] = [{ type: 'text', text: 'Look:' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }, { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'x' } }, { type: 'image_url', image_url: 'x' }, { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }, { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0x' } }, { type: 'refusal', refusal: 'no' }, { type: 'x' }, null];

/**
 * `count` request bodies from `seed`, each a valid request on `models` bent by one to three
 * mutations; about one in twenty is cut short, so that it is not even JSON.
 */
export function* hostileBodies(count: number, models: readonly string[], seed = 12345): Generator<string> {
  let state = seed;
  const random = () => { state = (state * 1103515245 + 12345) & 0x7fffffff; return state / 0x7fffffff; };
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  for (let index = 0; index < count; index += 1) {
    const body: Record<string, unknown> = { model: random() < 0.8 ? pick(models) : pick(VALUES), messages: [{ role: 'user', content: 'hi' }] };
    const mutations = 1 + Math.floor(random() * 3);
    for (let mutation = 0; mutation < mutations; mutation += 1) {
      const roll = random();
      if (roll < 0.45) body[pick(FIELDS)] = pick(VALUES);
      else if (roll < 0.8) {
        const message: Record<string, unknown> = { role: pick(['user', 'assistant', 'tool', 'system', 'developer', 'function', 'x']) };
        message[pick(MESSAGE_FIELDS)] = pick(VALUES);
        if (random() < 0.5) message.content = random() < 0.5 ? pick(VALUES) : [pick(PARTS), pick(PARTS)];
        if (random() < 0.2) message.tool_calls = [{ id: pick(['call_1', '', null]), type: 'function', function: { name: pick(['f', '', null]), arguments: pick(['{}', '{"a":1}', 'not json', '[1]', null]) } }];
        if (!Array.isArray(body.messages)) body.messages = [];
        (body.messages as unknown[]).push(random() < 0.9 ? message : pick(VALUES));
      } else {
        body.tools = [{ type: 'function', function: { name: pick(['f', '', 'a b', 'x'.repeat(70)]), parameters: pick([...VALUES, { type: 'object', properties: { a: { type: pick(['string', 'integer', 'x']) } } }]) } }];
        if (random() < 0.5) body.tool_choice = pick(['none', 'auto', 'required', { type: 'function', function: { name: 'f' } }, { type: 'function' }]);
      }
    }
    let text = JSON.stringify(body);
    if (random() < 0.05) text = text.slice(0, Math.floor(random() * text.length));
    yield text;
  }
}

/**
 * Sends every body (a few at a time) and checks each answer: no 5xx, errors in the OpenAI envelope,
 * a 200 stream ended by `[DONE]` or an error event. Returns how many answers had each status.
 */
export async function sendHostileBodies(bodies: readonly string[], post: (body: string) => Promise<Response>, concurrency = 12): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const response = await post(body);
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      const text = await response.text();
      if (response.status >= 500) throw new Error(`${response.status} for ${body}: ${text}`);
      if (response.status !== 200) {
        const parsed = JSON.parse(text) as { error: Record<string, unknown> };
        expect(Object.keys(parsed.error).sort(), body).toEqual(['code', 'message', 'param', 'type']);
      } else if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        expect(text.trimEnd().endsWith('data: [DONE]') || text.includes('data: {"error"'), body).toBe(true);
      }
    }
  }));
  return statuses;
}
