/**
 * A fake judge model for the judge_model check's tests: an OpenAI-compatible chat completions
 * endpoint (POST /v1/chat/completions) that checks the Bearer key as the gateway's edge does (a
 * missing or wrong key is a 401 in OpenAI's error envelope, code `missing_api_key` or
 * `invalid_api_key`; a model outside its catalog a 404 `model_not_found`) and answers as Llama
 * Guard 3 does: `unsafe\nS1` when the user message has FLAG_TRIGGER in it, `safe` otherwise; or,
 * asked for JSON by a system message, `{"flagged":true,"categories":["S1"]}` and
 * `{"flagged":false,"categories":[]}`. Like the other fakes it can be slow or fail, and it can be
 * told to answer something else (a model that is not a judge).
 */
import { randomUUID } from 'node:crypto';
import { bearerOf, type FakeAnswer, type FakeModerationService, startFakeService } from './fake-service-server.js';
import { hasFlagTrigger } from './moderation-triggers.js';

/** The judge model the fake serves by default. */
export const FAKE_JUDGE_MODEL = 'llama-guard-3-8b';

/** A started fake judge: its baseUrl is the check's base_url (`http://127.0.0.1:<port>/v1`). */
export interface FakeJudgeModel extends FakeModerationService {
  /** From now on, every completion's content is `content` (until recover()). */
  answerWith(content: string): void;
}

function openAiError(status: number, message: string, code: string | null, param: string | null = null): FakeAnswer {
  return { status, body: { error: { message, type: 'invalid_request_error', param, code } } };
}

interface ChatMessage {
  role: string;
  content: string;
}

function isMessages(value: unknown): value is ChatMessage[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((message) => typeof (message as ChatMessage)?.role === 'string' && typeof (message as ChatMessage).content === 'string')
  );
}

/** What the fake judge says of `messages`. */
function judgement(messages: readonly ChatMessage[]): string {
  const unsafe = messages.some((message) => message.role === 'user' && hasFlagTrigger(message.content));
  if (messages.some((message) => message.role === 'system' && message.content.includes('JSON'))) {
    return JSON.stringify({ flagged: unsafe, categories: unsafe ? ['S1'] : [] });
  }
  return unsafe ? 'unsafe\nS1' : 'safe';
}

/** A chat completion whose message is `content`, as an OpenAI-compatible server gives it. */
function completion(model: string, content: string): object {
  return {
    id: `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 200, completion_tokens: 3, total_tokens: 203 },
  };
}

/** Starts a fake judge accepting `apiKey`, serving `models` (FAKE_JUDGE_MODEL by default). */
export async function startFakeJudgeModel(options: { apiKey: string; models?: readonly string[] }): Promise<FakeJudgeModel> {
  const models = new Set(options.models ?? [FAKE_JUDGE_MODEL]);
  let override: string | undefined;
  const service = await startFakeService({
    refuseAuth(request) {
      const key = bearerOf(request.headers);
      if (key === undefined) {
        return openAiError(
          401,
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
          'missing_api_key',
        );
      }
      return key === options.apiKey
        ? undefined
        : openAiError(401, 'Incorrect API key provided. You can find your API key in your gateway account.', 'invalid_api_key');
    },
    answer(request) {
      if (request.method !== 'POST' || request.path !== '/v1/chat/completions')
        return openAiError(404, `Invalid URL (${request.method} ${request.path})`, null);
      const body = request.body as { model?: unknown; messages?: unknown; stream?: unknown } | undefined;
      if (typeof body !== 'object' || body === null) return openAiError(400, 'We could not parse the JSON body of your request.', null);
      if (typeof body.model !== 'string' || !models.has(body.model)) {
        return openAiError(404, `The model \`${String(body.model)}\` does not exist or you do not have access to it.`, 'model_not_found', 'model');
      }
      if (!isMessages(body.messages)) return openAiError(400, "'messages' must be a non-empty array of {role, content}", null, 'messages');
      if (body.stream === true) return openAiError(400, 'The fake judge does not stream.', null, 'stream');
      return { status: 200, body: completion(body.model, override ?? judgement(body.messages)) };
    },
    failure: (status) => ({
      status,
      body: { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } },
    }),
  });
  return {
    ...service,
    baseUrl: `${service.baseUrl}/v1`,
    answerWith(content) {
      override = content;
    },
    recover() {
      override = undefined;
      service.recover();
    },
  };
}
