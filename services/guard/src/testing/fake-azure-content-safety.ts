/**
 * A fake Azure AI Content Safety for the azure_content_safety check's tests: text:analyze (the
 * four harm categories with their severities, blocklists) and text:shieldPrompt (prompt attacks),
 * api-version 2024-09-01, the key in `Ocp-Apim-Subscription-Key` (a wrong one is a 401 in Azure's
 * error envelope), texts over 10,000 characters refused as the service refuses them.
 */
import { hasFlagTrigger, hasInjectionTrigger } from './moderation-triggers.js';
import { type FakeAnswer, type FakeModerationService, startFakeService } from './fake-service-server.js';

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
