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

// --- Azure AI Content Safety ---

const AZURE_API_VERSION = '2024-09-01';
const AZURE_CATEGORIES = ['Hate', 'SelfHarm', 'Sexual', 'Violence'];
/** The severities FLAG_TRIGGER gives (the others are 0). */
export const AZURE_TRIGGER_SEVERITIES: Readonly<Record<string, number>> = { Hate: 6, SelfHarm: 4, Violence: 2 };
const AZURE_MAX_CHARS = 10_000;

function azureError(status: number, code: string, message: string): FakeAnswer {
  return { status, body: { error: { code, message, details: [] } } };
}

/** The text:analyze answer of one text. */
function azureAnalysis(body: Record<string, unknown>, blocklists: Readonly<Record<string, readonly string[]>>): FakeAnswer {
  const { text, categories, blocklistNames, outputType } = body as { text?: unknown; categories?: unknown; blocklistNames?: unknown; outputType?: unknown };
  if (typeof text !== 'string') return azureError(400, 'InvalidRequestBody', 'The field text is required.');
  if (text.length > AZURE_MAX_CHARS) return azureError(400, 'InvalidRequestBody', `The text is too long: the maximum is ${AZURE_MAX_CHARS} characters.`);
  if (outputType !== undefined && outputType !== 'FourSeverityLevels' && outputType !== 'EightSeverityLevels') {
    return azureError(400, 'InvalidRequestBody', 'The outputType is not valid.');
  }
  const asked = categories === undefined ? AZURE_CATEGORIES : categories;
  if (!Array.isArray(asked) || asked.some((category) => !AZURE_CATEGORIES.includes(category as string))) {
    return azureError(400, 'InvalidRequestBody', 'The categories are not valid.');
  }
  const names = blocklistNames === undefined ? [] : blocklistNames;
  if (!Array.isArray(names)) return azureError(400, 'InvalidRequestBody', 'The blocklistNames are not valid.');
  const unknown = names.find((name) => blocklists[name as string] === undefined);
  if (unknown !== undefined) return azureError(404, 'NotFound', `The blocklist ${String(unknown)} is not found.`);
  const flagged = hasFlagTrigger(text);
  return {
    status: 200,
    body: {
      blocklistsMatch: (names as string[]).flatMap((name) =>
        (blocklists[name] ?? [])
          .filter((item) => text.toLowerCase().includes(item.toLowerCase()))
          .map((item, position) => ({ blocklistName: name, blocklistItemId: `item-${position}`, blocklistItemText: item })),
      ),
      categoriesAnalysis: (asked as string[]).map((category) => ({ category, severity: flagged ? (AZURE_TRIGGER_SEVERITIES[category] ?? 0) : 0 })),
    },
  };
}

/** The text:shieldPrompt answer. */
function azureShield(body: Record<string, unknown>): FakeAnswer {
  const { userPrompt, documents } = body as { userPrompt?: unknown; documents?: unknown };
  if (typeof userPrompt !== 'string' && !Array.isArray(documents)) return azureError(400, 'InvalidRequestBody', 'userPrompt or documents is required.');
  const docs = Array.isArray(documents) ? documents : [];
  if (docs.some((document) => typeof document !== 'string')) return azureError(400, 'InvalidRequestBody', 'The documents are not valid.');
  const total = (typeof userPrompt === 'string' ? userPrompt.length : 0) + (docs as string[]).reduce((sum, document) => sum + document.length, 0);
  if (total > AZURE_MAX_CHARS) return azureError(400, 'InvalidRequestBody', `The input is too long: the maximum is ${AZURE_MAX_CHARS} characters.`);
  return {
    status: 200,
    body: {
      userPromptAnalysis: { attackDetected: typeof userPrompt === 'string' && hasInjectionTrigger(userPrompt) },
      documentsAnalysis: (docs as string[]).map((document) => ({ attackDetected: hasInjectionTrigger(document) })),
    },
  };
}

/** Azure AI Content Safety, accepting `key`, with the given blocklists (name -> items). */
export function startFakeAzureContentSafety(options: {
  key: string;
  blocklists?: Readonly<Record<string, readonly string[]>>;
}): Promise<FakeModerationService> {
  return startFakeService({
    refuseAuth(request) {
      const key = request.headers['ocp-apim-subscription-key'];
      if (key === undefined) {
        return azureError(401, '401', 'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.');
      }
      if (key !== options.key) {
        return azureError(
          401,
          '401',
          'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
        );
      }
      return undefined;
    },
    answer(request) {
      if (request.method !== 'POST') return azureError(404, '404', 'Resource not found');
      if (request.query.get('api-version') !== AZURE_API_VERSION) {
        return azureError(404, 'UnsupportedApiVersion', `The HTTP resource does not support the API version ${request.query.get('api-version') ?? ''}.`);
      }
      if (typeof request.body !== 'object' || request.body === null) return azureError(400, 'InvalidRequestBody', 'The request body is not valid JSON.');
      const body = request.body as Record<string, unknown>;
      if (request.path === '/contentsafety/text:analyze') return azureAnalysis(body, options.blocklists ?? {});
      if (request.path === '/contentsafety/text:shieldPrompt') return azureShield(body);
      return azureError(404, '404', 'Resource not found');
    },
    failure: (status) => azureError(status, 'InternalServerError', 'An unexpected error occurred.'),
  });
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
