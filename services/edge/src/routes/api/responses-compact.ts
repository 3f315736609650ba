/**
 * POST /v1/responses/compact, OpenAI's compaction endpoint as Codex calls it: the body of a
 * Responses request (`model`, `input`, `instructions`, `tools`, `previous_response_id`...), the
 * answer `{id, object: "response.compaction", created_at, output, usage}` whose `output` is the
 * conversation to continue from: the user messages of the input, then one `compaction` item
 * (wire/responses-compaction.ts). The summary is the served model's, asked through POST
 * /v1/responses itself (in-process): the key's limits and budgets, routing and metering are that
 * route's, and so are its refusals, answered as they are.
 */
import type { FastifyInstance } from 'fastify';
import type { EdgeDependencies } from '../../dependencies.js';
import { invalid } from '../../errors.js';
import { inputItemsOf } from '../../wire/responses-store.js';
import { isObject, type JsonObject } from '../../wire/translated-request.js';

/** The fields of a compact request passed on to the summary's request. */
const PASSED_FIELDS = ['model', 'instructions', 'tools', 'parallel_tool_calls', 'reasoning', 'text', 'previous_response_id', 'metadata', 'user'];

/** Registers POST /v1/responses/compact. */
export function registerResponsesCompact(app: FastifyInstance, _deps: EdgeDependencies): void {
  app.post('/v1/responses/compact', async (request, reply) => {
    const body = request.body;
    if (!isObject(body)) throw invalid(null, 'The request body must be a JSON object.', 'invalid_body');
    const input = inputItemsOf(body.input);
    if (!input) throw invalid('input', "Missing required parameter: 'input' (a string or an array of input items).", 'missing_required_parameter');
    const summaryRequest: JsonObject = { input: [...input, { type: 'compaction_trigger' }], store: false, stream: false };
    for (const field of PASSED_FIELDS) if (body[field] !== undefined) summaryRequest[field] = body[field];
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    for (const name of ['authorization', 'x-api-key', 'traceparent', 'user-agent']) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const answer = await app.inject({ method: 'POST', url: '/v1/responses', headers, payload: JSON.stringify(summaryRequest) });
    for (const [name, value] of Object.entries(answer.headers)) {
      if (/^(retry-after(-ms)?|x-ratelimit-.*|x-should-retry|openai-model|openai-processing-ms)$/.test(name) && value !== undefined)
        void reply.header(name, value);
    }
    void reply.status(answer.statusCode).header('content-type', 'application/json');
    if (answer.statusCode !== 200) return answer.body;
    const response = JSON.parse(answer.body) as JsonObject;
    const compaction = (response.output as JsonObject[]).find((item) => item.type === 'compaction');
    const retained = input.filter((item) => (item.type === undefined || item.type === 'message') && item.role === 'user');
    return JSON.stringify({
      id: response.id,
      object: 'response.compaction',
      created_at: response.created_at,
      output: [...retained, ...(compaction ? [compaction] : [])],
      usage: response.usage,
      ...(response.gateway ? { gateway: response.gateway } : {}),
    });
  });
}
