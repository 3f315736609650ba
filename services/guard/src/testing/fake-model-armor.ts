/**
 * A fake Google Cloud Model Armor for the model_armor check's tests: sanitizeUserPrompt and
 * sanitizeModelResponse of a template (`projects/{p}/locations/{l}/templates/{t}`; an unknown one
 * is a 404), the Authorization header refused with Google's 401 UNAUTHENTICATED unless the test's
 * `accepts` takes it, and the sanitizationResult of a template that enables every filter
 * (responsible AI, prompt injection and jailbreak, sensitive data) in Model Armor's shape.
 */
import { emailsOf, hasFlagTrigger, hasInjectionTrigger } from './moderation-triggers.js';
import { type FakeAnswer, type FakeModerationService, startFakeService } from './fake-service-server.js';

function googleError(status: number, grpcStatus: string, message: string): FakeAnswer {
  return { status, body: { error: { code: status, message, status: grpcStatus } } };
}

function matchState(found: boolean): string {
  return found ? 'MATCH_FOUND' : 'NO_MATCH_FOUND';
}

/** The sanitizationResult of one text, with every filter of a template that enables them all. */
function sanitization(text: string): object {
  const flagged = hasFlagTrigger(text);
  const injection = hasInjectionTrigger(text);
  const emails = emailsOf(text);
  const codePoints = (offset: number) => String([...text.slice(0, offset)].length);
  const bytes = (offset: number) => String(Buffer.byteLength(text.slice(0, offset)));
  const executed = { executionState: 'EXECUTION_SUCCESS' };
  const filterResults = {
    rai: {
      raiFilterResult: {
        ...executed,
        matchState: matchState(flagged),
        raiFilterTypeResults: {
          sexually_explicit: { matchState: 'NO_MATCH_FOUND' },
          hate_speech: flagged ? { confidenceLevel: 'HIGH', matchState: 'MATCH_FOUND' } : { matchState: 'NO_MATCH_FOUND' },
          harassment: flagged ? { confidenceLevel: 'MEDIUM_AND_ABOVE', matchState: 'MATCH_FOUND' } : { matchState: 'NO_MATCH_FOUND' },
          dangerous: { matchState: 'NO_MATCH_FOUND' },
        },
      },
    },
    pi_and_jailbreak: { piAndJailbreakFilterResult: { ...executed, matchState: matchState(injection), ...(injection ? { confidenceLevel: 'HIGH' } : {}) } },
    csam: { csamFilterFilterResult: { ...executed, matchState: 'NO_MATCH_FOUND' } },
    malicious_uris: { maliciousUriFilterResult: { ...executed, matchState: 'NO_MATCH_FOUND' } },
    sdp: {
      sdpFilterResult: {
        inspectResult: {
          ...executed,
          matchState: matchState(emails.length > 0),
          findings: emails.map((email) => ({
            infoType: 'EMAIL_ADDRESS',
            likelihood: 'LIKELY',
            location: {
              byteRange: { start: bytes(email.start), end: bytes(email.end) },
              codepointRange: { start: codePoints(email.start), end: codePoints(email.end) },
            },
          })),
        },
      },
    },
  };
  return {
    filterMatchState: matchState(flagged || injection || emails.length > 0),
    filterResults,
    invocationResult: 'SUCCESS',
    sanitizationMetadata: {},
  };
}

/**
 * Model Armor with the templates `templates` (full names), accepting an Authorization header
 * `accepts` says is a valid token (a fixed token's, or one a fake Google token endpoint issued).
 */
export function startFakeModelArmor(options: {
  templates: readonly string[];
  accepts: (authorization: string | undefined) => boolean;
}): Promise<FakeModerationService> {
  const templates = new Set(options.templates);
  return startFakeService({
    refuseAuth: (request) =>
      options.accepts(request.headers.authorization)
        ? undefined
        : googleError(
            401,
            'UNAUTHENTICATED',
            'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
          ),
    answer(request) {
      const match = /^\/v1\/(projects\/[^/]+\/locations\/[^/]+\/templates\/[^/:]+):(sanitizeUserPrompt|sanitizeModelResponse)$/.exec(request.path);
      if (request.method !== 'POST' || !match) return googleError(404, 'NOT_FOUND', 'The requested URL was not found on this server.');
      const [, template, method] = match as unknown as [string, string, string];
      if (!templates.has(template)) return googleError(404, 'NOT_FOUND', `Template ${template} not found.`);
      const body = request.body as { userPromptData?: { text?: unknown }; modelResponseData?: { text?: unknown } } | undefined;
      const text = method === 'sanitizeUserPrompt' ? body?.userPromptData?.text : body?.modelResponseData?.text;
      if (typeof text !== 'string') {
        return googleError(
          400,
          'INVALID_ARGUMENT',
          `Invalid JSON payload: ${method === 'sanitizeUserPrompt' ? 'user_prompt_data' : 'model_response_data'}.text is required.`,
        );
      }
      return { status: 200, body: { sanitizationResult: sanitization(text) } };
    },
    failure: (status) => googleError(status, status === 503 ? 'UNAVAILABLE' : 'INTERNAL', 'Internal error encountered.'),
  });
}
