/**
 * Hostile request bodies for the end-to-end tests: a deterministic generator of mutated chat
 * requests (wrong types, unknown roles, broken tools and content parts, truncated JSON) and the
 * check every answer must pass: never a 5xx, every error in OpenAI's envelope, every stream ended
 * by `[DONE]` or an error event.
 */
// No test framework here: the benchmarks send these bodies too, outside a test run; a check that
// fails throws.

/** Values that land where a field is expected. */
const VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1e308,
  -1e308,
  2.5,
  '',
  'x',
  'auto',
  [],
  {},
  [null],
  { a: 1 },
  'x'.repeat(3000),
  [1, 'a', null],
  { role: 'user' },
  Number.MAX_SAFE_INTEGER + 2,
  '\u0000\ud800',
  { type: 'function' },
];
const FIELDS = [
  'model',
  'messages',
  'temperature',
  'top_p',
  'n',
  'stop',
  'max_tokens',
  'max_completion_tokens',
  'presence_penalty',
  'frequency_penalty',
  'seed',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'stream',
  'stream_options',
  'logprobs',
  'top_logprobs',
  'logit_bias',
  'user',
  'metadata',
  'store',
  'reasoning_effort',
  'functions',
  'function_call',
];
const MESSAGE_FIELDS = ['role', 'content', 'name', 'tool_calls', 'tool_call_id', 'refusal'];
const PARTS: unknown[] = [
  { type: 'text', text: 'Look:' },
  { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
  { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'x' } },
  { type: 'image_url', image_url: 'x' },
  { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
  { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0x' } },
  { type: 'refusal', refusal: 'no' },
  { type: 'x' },
  null,
];

/** A repeatable sequence of numbers in [0, 1] from `seed` (a linear congruential generator), and a pick from a list by it. */
function seededRandom(seed: number): { random(): number; pick<T>(list: readonly T[]): T } {
  let state = seed;
  const random = () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
  return { random, pick: (list) => list[Math.floor(random() * list.length)]! };
}

/**
 * `count` request bodies from `seed`, each a valid request on `models` bent by one to three
 * mutations; about one in twenty is cut short, so that it is not even JSON.
 */
export function* hostileBodies(count: number, models: readonly string[], seed = 12345): Generator<string> {
  const { random, pick } = seededRandom(seed);
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
        if (random() < 0.2)
          message.tool_calls = [
            {
              id: pick(['call_1', '', null]),
              type: 'function',
              function: { name: pick(['f', '', null]), arguments: pick(['{}', '{"a":1}', 'not json', '[1]', null]) },
            },
          ];
        if (!Array.isArray(body.messages)) body.messages = [];
        (body.messages as unknown[]).push(random() < 0.9 ? message : pick(VALUES));
      } else {
        body.tools = [
          {
            type: 'function',
            function: {
              name: pick(['f', '', 'a b', 'x'.repeat(70)]),
              parameters: pick([...VALUES, { type: 'object', properties: { a: { type: pick(['string', 'integer', 'x']) } } }]),
            },
          },
        ];
        if (random() < 0.5) body.tool_choice = pick(['none', 'auto', 'required', { type: 'function', function: { name: 'f' } }, { type: 'function' }]);
      }
    }
    let text = JSON.stringify(body);
    if (random() < 0.05) text = text.slice(0, Math.floor(random() * text.length));
    yield text;
  }
}

/** Values that land where an embeddings field is expected, beside VALUES. */
const EMBEDDING_VALUES: unknown[] = [
  ...VALUES,
  [[]],
  [[1, 2], []],
  [1, 2.5],
  [-1],
  [2 ** 31],
  ['a', 1],
  [[1], 'a'],
  ['a', ''],
  Array.from({ length: 2049 }, () => 'x'),
  'base64',
  'float',
  65_537,
];
const EMBEDDING_FIELDS = ['model', 'input', 'encoding_format', 'dimensions', 'user', 'stream', 'messages'];

/**
 * `count` embeddings bodies (POST /v1/embeddings) from `seed`, each a valid request on `models`
 * bent by one to three mutations of its fields (empty, mixed, fractional or negative inputs, too
 * many, bad dimensions and encodings, chat fields); about one in twenty is cut short.
 */
export function* hostileEmbeddingBodies(count: number, models: readonly string[], seed = 54321): Generator<string> {
  const { random, pick } = seededRandom(seed);
  for (let index = 0; index < count; index += 1) {
    const body: Record<string, unknown> = {
      model: random() < 0.85 ? pick(models) : pick(VALUES),
      input: pick(['hello', ['a', 'b'], [1, 2, 3], [[1], [2, 3]]]),
    };
    const mutations = 1 + Math.floor(random() * 3);
    for (let mutation = 0; mutation < mutations; mutation += 1) body[pick(EMBEDDING_FIELDS)] = pick(EMBEDDING_VALUES);
    let text = JSON.stringify(body);
    if (random() < 0.05) text = text.slice(0, Math.floor(random() * text.length));
    yield text;
  }
}

/** A string of about `length` characters of random code points, lone surrogates included. */
function randomText(length: number, random: () => number): string {
  const units: number[] = [];
  for (let index = 0; index < length; index += 1) units.push(Math.floor(random() * 0x10000));
  let text = '';
  for (let index = 0; index < units.length; index += 8_192) text += String.fromCharCode(...units.slice(index, index + 8_192));
  return text;
}

/** An object nested `depth` levels deep under `key` ('[]': arrays), built without recursion. */
function nested(depth: number, key: string, leaf: unknown): unknown {
  let value: unknown = leaf;
  for (let level = 0; level < depth; level += 1) value = key === '[]' ? [value] : { type: 'object', properties: { [key]: value } };
  return value;
}

/** A JSON text nested `depth` levels deep, written as text (JSON.stringify recurses). */
function nestedText(depth: number, open: string, leaf: string, close: string): string {
  return `${open.repeat(depth)}${leaf}${close.repeat(depth)}`;
}

/**
 * Bodies that cost the gateway work rather than fail its validation: megabytes of one letter, of
 * emoji, of CJK, of random code points, of spaces; thousands of messages or tools; structures
 * nested thousands deep; huge numbers of stop sequences, logit biases, choices and tokens asked.
 * Each is built when it is taken, so a drill holds one at a time; `count` cycles through the
 * kinds (every kind is sent once `count` reaches HEAVY_BODY_KINDS).
 */
export function* heavyHostileBodies(model: string, count: number, seed = 777): Generator<string> {
  let state = seed;
  const random = () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
  const MB = 1_000_000;
  const user = (content: unknown) => ({ role: 'user', content });
  const request = (fields: Record<string, unknown>) => JSON.stringify({ model, messages: [user('hi')], ...fields });
  const head = `{"model":"${model}","messages":[{"role":"user","content":"hi"}]`;
  const makers: Array<() => string> = [
    () => request({ messages: [{ role: 'system', content: 'Be brief.' }, user('A'.repeat(100_000))] }),
    () => request({ messages: [user('A'.repeat(MB))] }),
    () => request({ messages: [user('\u{1F600}'.repeat(MB / 2))] }),
    () => request({ messages: [user('\u4E2D\u6587\u5B57'.repeat(MB / 3))] }),
    () => request({ messages: [user(randomText(MB, random))] }),
    () => request({ messages: [user(' '.repeat(MB))] }),
    () => request({ messages: [user('!'.repeat(MB))] }),
    () => request({ messages: [user('1'.repeat(MB))] }),
    () => request({ messages: [user(`${'ab'.repeat(MB / 4)} ${'\u{1F600}a'.repeat(MB / 6)}`)] }),
    () =>
      request({
        messages: Array.from({ length: 5_000 }, (_, index) => (index % 2 ? { role: 'assistant', content: `answer ${index}` } : user(`question ${index}`))),
      }),
    () => request({ messages: Array.from({ length: 5_000 }, () => user('x'.repeat(200))) }),
    () => request({ messages: [user(Array.from({ length: 5_000 }, () => ({ type: 'text', text: 'part ' })))] }),
    () => request({ tools: [{ type: 'function', function: { name: 'deep', parameters: nested(2_000, 'a', { type: 'string' }) } }] }),
    () =>
      `${head},"tools":[{"type":"function","function":{"name":"deep","parameters":${nestedText(100_000, '{"type":"object","properties":{"a":', '{"type":"string"}', '}}')}}}]}`,
    () => `{"model":"${model}","messages":[{"role":"user","content":${nestedText(50_000, '[', '"x"', ']')}}]}`,
    () => nestedText(200_000, '[', '1', ']'),
    () => `{"model":"${model}","messages":${'['.repeat(500_000)}`,
    () =>
      request({
        tools: Array.from({ length: 2_000 }, (_, index) => ({
          type: 'function',
          function: { name: `tool_${index}`, description: 'd'.repeat(200), parameters: { type: 'object', properties: { a: { type: 'string' } } } },
        })),
      }),
    () => request({ stop: Array.from({ length: 100_000 }, () => 'x') }),
    () => request({ stop: ['A'.repeat(MB / 4), 'B'.repeat(MB / 4)] }),
    () => request({ logit_bias: Object.fromEntries(Array.from({ length: 100_000 }, (_, index) => [String(index), 1])) }),
    () => request({ n: 128, max_tokens: 4_096 }),
    () => request({ max_tokens: 1_000_000_000 }),
    () => request({ model: 'm'.repeat(MB) }),
    () => request({ user: 'u'.repeat(MB), metadata: Object.fromEntries(Array.from({ length: 10_000 }, (_, index) => [`k${index}`, 'v'])) }),
    () =>
      request({
        messages: [
          {
            role: 'assistant',
            content: null,
            tool_calls: Array.from({ length: 5_000 }, (_, index) => ({ id: `call_${index}`, type: 'function', function: { name: 'f', arguments: '{"a":1}' } })),
          },
          user('go on'),
        ],
      }),
    () =>
      request({
        messages: [
          user([
            { type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(4 * MB)}` } },
            { type: 'text', text: 'what is this?' },
          ]),
        ],
      }),
    () =>
      `${head},"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":${nestedText(20_000, '{"type":"object","properties":{"a":', '{"type":"string"}', '}}')}}}}`,
    () => `{"model":"${model}","messages":[{"role":"user","content":"${'\\u00e9'.repeat(MB / 6)}"}]}`,
    () => `${head}${', "x": 1'.repeat(200_000)}}`,
    () => request({ stream: true, messages: [user('B'.repeat(MB))] }),
    () => request({ stream: true, n: 64, max_tokens: 2_048 }),
  ];
  for (let index = 0; index < count; index += 1) yield makers[index % makers.length]!();
}

/**
 * `count` bodies, one at a time: hostileBodies on `models` (seed 4242), with every `heavyEvery`-th
 * one a heavy body on the first model; undefined once all are taken. Concurrent senders share one.
 */
export function hostileBodyQueue(count: number, models: readonly string[], heavyEvery: number): () => string | undefined {
  const light = hostileBodies(count, models, 4242);
  const heavy = heavyHostileBodies(models[0]!, Math.ceil(count / heavyEvery));
  let taken = 0;
  return () => {
    if (taken >= count) return undefined;
    taken += 1;
    const next = (taken % heavyEvery === 0 ? heavy : light).next();
    return next.done ? light.next().value : next.value;
  };
}

/** How many kinds of heavy body heavyHostileBodies cycles through. */
export const HEAVY_BODY_KINDS = 32;

/**
 * Checks one answer to a hostile body: no 5xx, an error in OpenAI's envelope, a 200 stream ended
 * by `[DONE]` or an error event.
 */
export function checkHostileAnswer(body: string, response: Response, text: string): void {
  const shown = body.length > 300 ? `${body.slice(0, 300)}... (${body.length} characters)` : body;
  if (response.status >= 500) throw new Error(`${response.status} for ${shown}: ${text.slice(0, 500)}`);
  if (response.status !== 200) {
    const parsed = JSON.parse(text) as { error: Record<string, unknown> };
    const keys = Object.keys(parsed.error).sort().join(',');
    if (keys !== 'code,message,param,type') throw new Error(`an error with the fields ${keys} (not code, message, param, type) for ${shown}`);
  } else if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    if (!(text.trimEnd().endsWith('data: [DONE]') || text.includes('data: {"error"')))
      throw new Error(`a stream ended by neither [DONE] nor an error event for ${shown}`);
  }
}

/**
 * Sends every body (a few at a time) and checks each answer with checkHostileAnswer. Returns how
 * many answers had each status.
 */
export async function sendHostileBodies(bodies: readonly string[], post: (body: string) => Promise<Response>, concurrency = 12): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const response = await post(body);
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        checkHostileAnswer(body, response, await response.text());
      }
    }),
  );
  return statuses;
}
