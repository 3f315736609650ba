/**
 * Fake outside moderation services for the external checks' tests, each a plain HTTP/1.1 server
 * on 127.0.0.1 that speaks its service's documented wire format and checks auth as the service
 * does:
 * - OpenAI's moderation endpoint (POST /v1/moderations, `Authorization: Bearer`; a wrong key is a
 *   401 in OpenAI's error envelope, whose message quotes the key it was given, here in full);
 * - Azure AI Content Safety (fake-azure-content-safety.ts: text:analyze and text:shieldPrompt,
 *   api-version 2024-09-01, `Ocp-Apim-Subscription-Key`);
 * - Lakera Guard (POST /v2/guard, Bearer, breakdown and payload);
 * - Google Cloud Model Armor (fake-model-armor.ts: sanitizeUserPrompt and sanitizeModelResponse
 *   of a template, an OAuth bearer token);
 * - Amazon Bedrock's ApplyGuardrail (fake-bedrock-guardrails.ts: SigV4 recomputed).
 * Each flags a text that contains FLAG_TRIGGER (hate, harassment, self-harm, violence) or
 * INJECTION_TRIGGER (a prompt attack), finds the e-mail addresses in it where the service finds
 * PII, and passes any other text.
 */
import { randomUUID } from 'node:crypto';
import { emailsOf, hasFlagTrigger, hasInjectionTrigger } from './moderation-triggers.js';
import { bearerOf, type FakeAnswer, type FakeModerationService, type FakeRequest, startFakeService } from './fake-service-server.js';

export { emailsOf, FLAG_TRIGGER, hasFlagTrigger, hasInjectionTrigger, INJECTION_TRIGGER } from './moderation-triggers.js';
export { closedBaseUrl, type FakeModerationService, type FakeRequest } from './fake-service-server.js';
export { DENIED_TOPIC, type FakeBedrockGuardrails, startFakeBedrockGuardrails } from './fake-bedrock-guardrails.js';
export { AZURE_TRIGGER_SEVERITIES, startFakeAzureContentSafety } from './fake-azure-content-safety.js';
export { startFakeModelArmor } from './fake-model-armor.js';

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

// --- Lakera Guard ---

const LAKERA_ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/** How many code points `text` has before UTF-16 offset `offset` (Lakera counts as Python does). */
function codePointsBefore(text: string, offset: number): number {
  return [...text.slice(0, offset)].length;
}

function lakeraError(status: number, message: string): FakeAnswer {
  return { status, body: { error: message } };
}

/** Lakera Guard, accepting `apiKey`. */
export function startFakeLakeraGuard(options: { apiKey: string }): Promise<FakeModerationService> {
  return startFakeService({
    refuseAuth: (request) => (bearerOf(request.headers) === options.apiKey ? undefined : lakeraError(401, 'Unauthorized: the API key is not valid.')),
    answer(request) {
      if (request.method !== 'POST' || request.path !== '/v2/guard') return lakeraError(404, 'Not Found');
      const body = request.body as { messages?: unknown; breakdown?: unknown; payload?: unknown; project_id?: unknown } | undefined;
      const messages = body?.messages;
      if (
        !Array.isArray(messages) ||
        messages.length === 0 ||
        messages.some(
          (message) => !LAKERA_ROLES.has((message as { role?: string })?.role ?? '') || typeof (message as { content?: unknown }).content !== 'string',
        )
      ) {
        return lakeraError(400, 'messages must be a non-empty list of {role, content}');
      }
      const project = typeof body?.project_id === 'string' ? body.project_id : 'project-default';
      const screened = messages as Array<{ role: string; content: string }>;
      const detected = (test: (text: string) => boolean) => screened.some((message) => test(message.content));
      const detectors: Array<[string, boolean]> = [
        ['prompt_attack', detected(hasInjectionTrigger)],
        ['moderated_content/hate', detected(hasFlagTrigger)],
        ['pii/email', detected((text) => emailsOf(text).length > 0)],
        ['unknown_links', false],
      ];
      const payload = screened.flatMap((message, messageId) =>
        emailsOf(message.content).map((email) => ({
          start: codePointsBefore(message.content, email.start),
          end: codePointsBefore(message.content, email.end),
          text: email.text,
          detector_type: 'pii/email',
          labels: ['pii/email'],
          message_id: messageId,
        })),
      );
      return {
        status: 200,
        body: {
          flagged: detectors.some(([, hit]) => hit),
          ...(body?.payload === true ? { payload } : {}),
          ...(body?.breakdown === true
            ? {
                breakdown: detectors.map(([detectorType, hit]) => ({
                  project_id: project,
                  policy_id: 'policy-default',
                  detector_id: `detector-${detectorType.replace('/', '-')}`,
                  detector_type: detectorType,
                  detected: hit,
                  message_id: 0,
                })),
              }
            : {}),
          metadata: { request_uuid: randomUUID() },
        },
      };
    },
    failure: (status) => lakeraError(status, 'Internal Server Error'),
  });
}
