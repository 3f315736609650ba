/**
 * Stored responses of the Responses API through the running cluster, with the official `openai`
 * client: a conversation of two turns chained by `previous_response_id`, whole and streamed, whose
 * second answer is the one the model gives to the whole conversation (the simulated model answers
 * a conversation deterministically, so the chat completion of the same messages is the
 * reference, and the second question alone is answered otherwise); `responses.inputItems.list`,
 * `responses.retrieve` and `responses.delete`; another key's and unstored responses are 404s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { NotFoundError } from 'openai';
import { startCluster, type Cluster } from './cluster.js';

const CATALOG = new URL('./fixtures/conformance-catalog.yaml', import.meta.url).pathname;
const ADMIN_TOKEN = 'admin-token-for-the-responses-store-tests-0123456789';
const MODEL = 'sim-full';
const FIRST = 'Tell me about rivers.';
const SECOND = 'And about lakes?';
/** Short for the tests' shared Redis; the default is 30 days. */
const TTL_SECONDS = 600;

let cluster: Cluster;
let client: OpenAI;

beforeAll(async () => {
  cluster = await startCluster({ env: { CATALOG_PATH: CATALOG, EDGE_ADMIN_TOKEN: ADMIN_TOKEN, METERING_RESPONSES_TTL_SECONDS: String(TTL_SECONDS) } });
  client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
});

afterAll(async () => {
  await cluster?.stop();
});

/** The chat completion's text of a conversation: what the model says to it. */
async function said(messages: OpenAI.Chat.ChatCompletionMessageParam[]): Promise<string> {
  const completion = await client.chat.completions.create({ model: MODEL, messages });
  return completion.choices[0]!.message.content!;
}

/** A client of a key of its own, made through the admin API. */
async function otherClient(): Promise<OpenAI> {
  const origin = cluster.baseUrl.replace(/\/v1$/, '');
  const created = await fetch(`${origin}/admin/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ plan: 'pro', name: 'responses store, another key' }),
  });
  expect(created.status).toBe(201);
  const { secret } = (await created.json()) as { secret: string };
  return new OpenAI({ baseURL: cluster.baseUrl, apiKey: secret, maxRetries: 0 });
}

/** The status of a call that must fail. */
async function statusOf(call: Promise<unknown>): Promise<number | undefined> {
  const error = await call.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return (error as InstanceType<typeof OpenAI.APIError>).status;
}

describe('stored responses with the official client', () => {
  it('continues a stored conversation with previous_response_id: the second answer is the whole conversation’s', async () => {
    const first = await client.responses.create({ model: MODEL, input: FIRST });
    expect((first as { store?: boolean }).store).toBe(true);
    const second = await client.responses.create({ model: MODEL, input: SECOND, previous_response_id: first.id });
    expect(second.previous_response_id).toBe(first.id);
    const whole = await said([
      { role: 'user', content: FIRST },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: SECOND },
    ]);
    expect(second.output_text).toBe(whole);
    // The second question alone is answered otherwise: the answer came from the first turn too.
    expect(second.output_text).not.toBe(await said([{ role: 'user', content: SECOND }]));
    // The second response's input items: the whole conversation, newest first by default.
    const items = await client.responses.inputItems.list(second.id);
    expect(items.data.map((item) => [item.type, 'role' in item ? item.role : undefined])).toEqual([
      ['message', 'user'],
      ['message', 'assistant'],
      ['message', 'user'],
    ]);
    expect(items.data[1]).toEqual(first.output[0]);
    // Listed in OpenAI's shape: a string input is the one input_text part it means.
    expect(items.data[0]).toMatchObject({ type: 'message', role: 'user', content: [{ type: 'input_text', text: SECOND }] });
    expect(items.data.every((item) => typeof item.id === 'string' && item.id.length > 0)).toBe(true);
  });

  it('continues a streamed response, streamed, the same way', async () => {
    const stream = await client.responses.create({ model: MODEL, input: FIRST, stream: true });
    let first: OpenAI.Responses.Response | undefined;
    for await (const event of stream) if (event.type === 'response.completed') first = event.response;
    expect(first?.status).toBe('completed');
    const next = await client.responses.create({ model: MODEL, input: SECOND, previous_response_id: first!.id, stream: true });
    let second: OpenAI.Responses.Response | undefined;
    for await (const event of next) if (event.type === 'response.completed') second = event.response;
    const text = second!.output.flatMap((item) => (item.type === 'message' ? item.content : [])).map((part) => (part.type === 'output_text' ? part.text : ''));
    const firstText = first!.output
      .flatMap((item) => (item.type === 'message' ? item.content : []))
      .map((part) => (part.type === 'output_text' ? part.text : ''));
    expect(text.join('')).toBe(
      await said([
        { role: 'user', content: FIRST },
        { role: 'assistant', content: firstText.join('') },
        { role: 'user', content: SECOND },
      ]),
    );
    // Stored once it completed: it reads back as the stream's last event said.
    expect(await client.responses.retrieve(first!.id)).toMatchObject({ id: first!.id, status: 'completed', output: first!.output });
  });

  it('retrieves a stored response, deletes it, and then it is a 404', async () => {
    const created = await client.responses.create({ model: MODEL, input: FIRST });
    const retrieved = await client.responses.retrieve(created.id);
    expect(retrieved).toMatchObject({ id: created.id, object: 'response', status: 'completed', model: MODEL, output: created.output, usage: created.usage });
    expect(retrieved.output_text).toBe(created.output_text);
    // Typed as void by the SDK, which resolves with the body all the same: OpenAI's deletion object.
    const deleted: unknown = await client.responses.delete(created.id);
    expect(deleted).toEqual({ id: created.id, object: 'response', deleted: true });
    expect(await statusOf(client.responses.retrieve(created.id))).toBe(404);
    expect(await statusOf(client.responses.delete(created.id))).toBe(404);
  });

  it('is a 404 for another key, which cannot continue or delete it either', async () => {
    const created = await client.responses.create({ model: MODEL, input: FIRST });
    const other = await otherClient();
    const refused = await other.responses.retrieve(created.id).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NotFoundError);
    expect((refused as InstanceType<typeof NotFoundError>).error).toMatchObject({
      type: 'invalid_request_error',
      message: `Response with id '${created.id}' not found.`,
    });
    const chained = await other.responses.create({ model: MODEL, input: SECOND, previous_response_id: created.id }).catch((error: unknown) => error);
    expect(chained).toBeInstanceOf(OpenAI.BadRequestError);
    expect((chained as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({
      code: 'previous_response_not_found',
      param: 'previous_response_id',
    });
    expect(await statusOf(other.responses.delete(created.id))).toBe(404);
    // Still the owner's.
    expect((await client.responses.retrieve(created.id)).id).toBe(created.id);
  });

  it('stores nothing with store: false', async () => {
    const created = await client.responses.create({ model: MODEL, input: FIRST, store: false });
    expect((created as { store?: boolean }).store).toBe(false);
    expect(await statusOf(client.responses.retrieve(created.id))).toBe(404);
    const chained = await client.responses.create({ model: MODEL, input: SECOND, previous_response_id: created.id }).catch((error: unknown) => error);
    expect((chained as InstanceType<typeof OpenAI.BadRequestError>).status).toBe(400);
  });
});
