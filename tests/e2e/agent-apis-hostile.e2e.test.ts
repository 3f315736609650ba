/**
 * Hostile bodies on the coding agents' APIs: OpenAI's Responses API and Anthropic's Messages API
 * (and its token count), each sent hundreds of mutated requests (wrong types, unknown item, block
 * and tool types, broken tool calls, truncated JSON). Every answer must be what that API's clients
 * can read: never a 5xx or a hang, every error in the API's own envelope (OpenAI's
 * `{"error":{"message","type","param","code"}}`, Anthropic's `{"type":"error","error":{"type","message"}}`),
 * every 200 stream ended by the API's own last event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './cluster.js';

const CATALOG = new URL('./fixtures/conformance-catalog.yaml', import.meta.url).pathname;
const MODELS = ['sim-full', 'auto'];

/** Values that land where a field is expected. */
const VALUES: unknown[] = [null, true, false, 0, -1, 1e308, 2.5, '', 'x', 'auto', [], {}, [null], { a: 1 }, 'x'.repeat(3000), '\u0000\ud800', { type: 'x' }];

/** A deterministic stream of numbers in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

/** How one API's bodies are bent, and how its answers are read. */
interface HostileApi {
  path: string;
  /** A valid body of the API. */
  base(model: unknown): Record<string, unknown>;
  /** Top-level fields a mutation may replace. */
  fields: readonly string[];
  /** Items, messages, blocks and tools a mutation may add. */
  additions(pick: <T>(list: readonly T[]) => T): Array<[field: string, value: unknown]>;
  /** Whether a parsed error body is in the API's envelope. */
  envelope(parsed: unknown): boolean;
  /** Whether a 200 stream's text ends as the API ends a stream. */
  streamEnded(text: string): boolean;
  headers: Record<string, string>;
}

const RESPONSES: Omit<HostileApi, 'headers'> = {
  path: '/v1/responses',
  base: (model) => ({ model, input: 'hi' }),
  fields: [
    'model',
    'input',
    'instructions',
    'tools',
    'tool_choice',
    'parallel_tool_calls',
    'max_output_tokens',
    'temperature',
    'top_p',
    'text',
    'reasoning',
    'metadata',
    'stream',
    'store',
    'previous_response_id',
    'include',
    'user',
    'truncation',
    'background',
    'conversation',
  ],
  additions: (pick) => [
    [
      'input',
      pick([
        {
          role: pick(['user', 'assistant', 'system', 'developer', 'tool', 'x']),
          content: pick([...VALUES, [{ type: 'input_text', text: 'a' }], [{ type: 'x' }]]),
        },
        { type: 'message', role: 'user', content: [{ type: pick(['input_text', 'input_image', 'output_text', 'input_file', 'x']), text: pick(VALUES) }] },
        { type: 'function_call', call_id: pick(['c1', '', null]), name: pick(['f', '', null]), arguments: pick(['{}', 'not json', null]) },
        { type: 'function_call_output', call_id: pick(['c1', '', null]), output: pick(VALUES) },
        { type: 'reasoning', summary: pick(VALUES) },
        { type: 'item_reference', id: pick(['msg_1', null]) },
        { type: pick(['custom_tool_call', 'web_search_call', 'x', null]) },
      ]),
    ],
    [
      'tools',
      pick([
        { type: 'function', name: pick(['f', '', 'a b', 'x'.repeat(70)]), parameters: pick([...VALUES, { type: 'object', properties: {} }]) },
        { type: 'namespace', name: pick(['ns', '', null]), tools: pick([...VALUES, [{ type: 'function', name: 'g' }]]) },
        { type: pick(['web_search', 'file_search', 'code_interpreter', 'local_shell']) },
        { type: 'custom', name: pick(['apply_patch', '']), format: pick(VALUES) },
        pick(VALUES),
      ]),
    ],
  ],
  envelope: (parsed) => {
    const error = (parsed as { error?: Record<string, unknown> }).error;
    return error !== undefined && Object.keys(error).sort().join(',') === 'code,message,param,type';
  },
  streamEnded: (text) => /event: response\.(completed|incomplete|failed)\n/.test(text.slice(-20_000)) || /event: error\n/.test(text),
};

const MESSAGES: Omit<HostileApi, 'headers'> = {
  path: '/v1/messages',
  base: (model) => ({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }),
  fields: [
    'model',
    'max_tokens',
    'system',
    'messages',
    'tools',
    'tool_choice',
    'stop_sequences',
    'temperature',
    'top_p',
    'top_k',
    'metadata',
    'thinking',
    'stream',
    'context_management',
    'output_config',
  ],
  additions: (pick) => [
    [
      'messages',
      {
        role: pick(['user', 'assistant', 'system', 'x', null]),
        content: pick([
          ...VALUES,
          [{ type: 'text', text: pick(VALUES), cache_control: pick([{ type: 'ephemeral' }, { type: 'x' }, { type: 'ephemeral', ttl: '2h' }, null]) }],
          [{ type: 'image', source: pick([{ type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' }, { type: 'url', url: 'x' }, VALUES[1]]) }],
          [{ type: 'tool_use', id: pick(['t1', '', null]), name: pick(['f', '', null]), input: pick(VALUES) }],
          [{ type: 'tool_result', tool_use_id: pick(['t1', '', null]), content: pick(VALUES), is_error: pick(VALUES) }],
          [{ type: pick(['thinking', 'redacted_thinking', 'document', 'server_tool_use', 'x']), thinking: 'hm', signature: pick(VALUES) }],
        ]),
      },
    ],
    [
      'tools',
      pick([
        { name: pick(['f', '', 'a b', 'x'.repeat(70)]), input_schema: pick([...VALUES, { type: 'object', properties: {} }]) },
        { type: pick(['web_search_20250305', 'bash_20250124', 'text_editor_20250124', 'custom', 'x']), name: pick(['web_search', 'bash', '']) },
        pick(VALUES),
      ]),
    ],
    ['system', pick([...VALUES, [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }], [{ type: 'x' }]])],
  ],
  envelope: (parsed) => {
    const body = parsed as { type?: unknown; error?: Record<string, unknown> };
    return body.type === 'error' && typeof body.error?.type === 'string' && typeof body.error.message === 'string';
  },
  streamEnded: (text) => /event: message_stop\n/.test(text.slice(-5_000)) || /event: error\n/.test(text),
};

/**
 * `count` bodies of `api` from `seed`: a valid request bent by one to three mutations; about one
 * in twenty is cut short, so that it is not even JSON.
 */
function* hostileBodiesOf(api: Omit<HostileApi, 'headers'>, count: number, seed: number): Generator<string> {
  const random = seeded(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  for (let index = 0; index < count; index += 1) {
    const body = api.base(random() < 0.85 ? pick(MODELS) : pick(VALUES));
    const mutations = 1 + Math.floor(random() * 3);
    for (let mutation = 0; mutation < mutations; mutation += 1) {
      if (random() < 0.45) {
        body[pick(api.fields)] = pick(VALUES);
        continue;
      }
      const [field, value] = pick(api.additions(pick));
      const list = Array.isArray(body[field])
        ? (body[field] as unknown[])
        : typeof body[field] === 'string' && field === 'input'
          ? [{ role: 'user', content: body[field] }]
          : [];
      body[field] = field === 'system' ? value : [...list, value];
    }
    if (random() < 0.3) body.stream = true;
    let text = JSON.stringify(body);
    if (random() < 0.05) text = text.slice(0, Math.floor(random() * text.length));
    yield text;
  }
}

/** Sends every body a few at a time; checks each answer; returns how many had each status. */
async function sendAll(cluster: Cluster, api: HostileApi, bodies: readonly string[]): Promise<Map<number, number>> {
  const origin = cluster.baseUrl.replace(/\/v1$/, '');
  const statuses = new Map<number, number>();
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const response = await fetch(`${origin}${api.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...api.headers },
        body,
        signal: AbortSignal.timeout(15_000),
      });
      const text = await response.text();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      const shown = body.length > 300 ? `${body.slice(0, 300)}... (${body.length} characters)` : body;
      if (response.status >= 500) throw new Error(`${response.status} for ${shown}: ${text.slice(0, 500)}`);
      if (response.status !== 200 && !api.envelope(JSON.parse(text)))
        throw new Error(`an error outside ${api.path}'s envelope for ${shown}: ${text.slice(0, 500)}`);
      if (response.status === 200 && (response.headers.get('content-type') ?? '').startsWith('text/event-stream') && !api.streamEnded(text))
        throw new Error(`a stream not ended as ${api.path} ends one, for ${shown}: ...${text.slice(-300)}`);
    }
  };
  await Promise.all(Array.from({ length: 12 }, worker));
  return statuses;
}

let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster({ plan: 'enterprise', env: { CATALOG_PATH: CATALOG } });
});

afterAll(async () => {
  await cluster?.stop();
});

describe('hostile bodies on the agents’ APIs', () => {
  it('POST /v1/responses: never a 5xx or a hang, errors in OpenAI’s envelope, streams ended by their last event', async () => {
    const api = { ...RESPONSES, headers: { authorization: `Bearer ${cluster.apiKey}` } };
    const statuses = await sendAll(cluster, api, [...hostileBodiesOf(api, 500, 2024)]);
    expect(statuses.get(400)).toBeGreaterThan(100);
    expect(statuses.get(200)).toBeGreaterThan(20);
  });

  it('POST /v1/messages: never a 5xx or a hang, errors in Anthropic’s envelope, streams ended by message_stop', async () => {
    const api = { ...MESSAGES, headers: { 'x-api-key': cluster.apiKey, 'anthropic-version': '2023-06-01' } };
    const statuses = await sendAll(cluster, api, [...hostileBodiesOf(api, 500, 2025)]);
    expect(statuses.get(400)).toBeGreaterThan(100);
    expect(statuses.get(200)).toBeGreaterThan(20);
  });

  it('POST /v1/messages/count_tokens: never a 5xx or a hang, errors in Anthropic’s envelope', async () => {
    const api = { ...MESSAGES, path: '/v1/messages/count_tokens', headers: { 'x-api-key': cluster.apiKey, 'anthropic-version': '2023-06-01' } };
    const statuses = await sendAll(cluster, api, [...hostileBodiesOf(api, 300, 2026)]);
    expect(statuses.get(400)).toBeGreaterThan(50);
    expect(statuses.get(200)).toBeGreaterThan(10);
  });
});
