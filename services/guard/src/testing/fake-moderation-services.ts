/**
 * Fake outside moderation services for the external checks' tests, each a plain HTTP/1.1 server
 * on 127.0.0.1 that speaks its service's documented wire format and checks auth as the service
 * does:
 * - OpenAI's moderation endpoint (POST /v1/moderations, `Authorization: Bearer`; a wrong key is a
 *   401 in OpenAI's error envelope, whose message quotes the key it was given, here in full);
 * - Azure AI Content Safety (text:analyze and text:shieldPrompt, api-version 2024-09-01,
 *   `Ocp-Apim-Subscription-Key`);
 * - Lakera Guard (POST /v2/guard, Bearer, breakdown and payload);
 * - Google Cloud Model Armor (sanitizeUserPrompt and sanitizeModelResponse of a template, an OAuth
 *   bearer token);
 * - Amazon Bedrock's ApplyGuardrail (fake-bedrock-guardrails.ts: SigV4 recomputed).
 * Each flags a text that contains FLAG_TRIGGER (hate, harassment, self-harm, violence) or
 * INJECTION_TRIGGER (a prompt attack), finds the e-mail addresses in it where the service finds
 * PII, and passes any other text.
 */
import { randomUUID } from 'node:crypto';
import { bearerOf, type FakeAnswer, type FakeModerationService, type FakeRequest, startFakeService } from './fake-service-server.js';

export { closedBaseUrl, type FakeModerationService, type FakeRequest } from './fake-service-server.js';

/** A text with this in it is flagged as hateful, threatening and about self-harm. */
export const FLAG_TRIGGER = 'FLAG-ME';
/** A text with this in it (any case) is a prompt attack. */
export const INJECTION_TRIGGER = 'ignore previous instructions';

/** Whether the text has the flag trigger. */
export function hasFlagTrigger(text: string): boolean {
  return text.includes(FLAG_TRIGGER);
}

/** Whether the text has the injection trigger. */
export function hasInjectionTrigger(text: string): boolean {
  return text.toLowerCase().includes(INJECTION_TRIGGER);
}

/** The e-mail addresses of a text, where they are (UTF-16 offsets). */
export function emailsOf(text: string): Array<{ text: string; start: number; end: number }> {
  return [...text.matchAll(/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g)].map((match) => ({
    text: match[0],
    start: match.index,
    end: match.index + match[0].length,
  }));
}

// --- OpenAI ---

const OPENAI_CATEGORIES = [
  'harassment',
  'harassment/threatening',
  'hate',
  'hate/threatening',
  'illicit',
  'illicit/violent',
  'self-harm',
  'self-harm/intent',
  'self-harm/instructions',
  'sexual',
  'sexual/minors',
  'violence',
  'violence/graphic',
];
const OPENAI_MODELS = new Set(['omni-moderation-latest', 'omni-moderation-2024-09-26', 'text-moderation-latest', 'text-moderation-stable']);
/** The categories FLAG_TRIGGER sets. */
export const OPENAI_FLAGGED_CATEGORIES = ['hate', 'harassment/threatening', 'self-harm/intent'];

function openAiError(status: number, message: string, type: string, code: string | null, param: string | null = null): FakeAnswer {
  return { status, body: { error: { message, type, param, code } } };
}

/** The moderation result of one input, as OpenAI's omni models give it. */
function openAiResult(text: string): object {
  const flagged = hasFlagTrigger(text);
  const categories = Object.fromEntries(OPENAI_CATEGORIES.map((category) => [category, flagged && OPENAI_FLAGGED_CATEGORIES.includes(category)]));
  const scores = Object.fromEntries(OPENAI_CATEGORIES.map((category) => [category, categories[category] ? 0.93 : 0.0001]));
  const applied = Object.fromEntries(OPENAI_CATEGORIES.map((category) => [category, ['text']]));
  return { flagged, categories, category_scores: scores, category_applied_input_types: applied };
}

/** OpenAI's moderation endpoint, accepting `apiKey`. */
export function startFakeOpenAiModeration(options: { apiKey: string }): Promise<FakeModerationService> {
  return startFakeService({
    refuseAuth(request) {
      const key = bearerOf(request.headers);
      if (key === undefined) {
        return openAiError(
          401,
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
          'invalid_request_error',
          null,
        );
      }
      if (key !== options.apiKey) {
        return openAiError(
          401,
          `Incorrect API key provided: ${key}. You can find your API key at https://platform.openai.com/account/api-keys.`,
          'invalid_request_error',
          'invalid_api_key',
        );
      }
      return undefined;
    },
    answer(request) {
      if (request.method !== 'POST' || request.path !== '/v1/moderations') {
        return openAiError(404, `Invalid URL (${request.method} ${request.path})`, 'invalid_request_error', null);
      }
      const body = request.body as { model?: unknown; input?: unknown } | undefined;
      if (typeof body !== 'object' || body === null)
        return openAiError(400, 'We could not parse the JSON body of your request.', 'invalid_request_error', null);
      const model = body.model ?? 'omni-moderation-latest';
      if (typeof model !== 'string' || !OPENAI_MODELS.has(model)) {
        return openAiError(
          400,
          `The model \`${String(model)}\` does not exist or you do not have access to it.`,
          'invalid_request_error',
          'model_not_found',
          'model',
        );
      }
      const inputs = typeof body.input === 'string' ? [body.input] : body.input;
      if (!Array.isArray(inputs) || inputs.length === 0 || inputs.some((input) => typeof input !== 'string')) {
        return openAiError(400, "'input' must be a string or a non-empty array of strings", 'invalid_request_error', null, 'input');
      }
      return { status: 200, body: { id: `modr-${randomUUID()}`, model: `${model}-fake`, results: (inputs as string[]).map(openAiResult) } };
    },
    failure: (status) => openAiError(status, 'The server had an error while processing your request. Sorry about that!', 'server_error', null),
  });
}

/** The texts OpenAI's fake was asked about, in order. */
export function openAiInputs(requests: readonly FakeRequest[]): string[] {
  return requests.flatMap((request) => (request.body as { input: string[] }).input);
}
