/**
 * Lakera Guard (POST {base_url}/v2/guard, `Authorization: Bearer <key>`), one call per text, as
 * the one message of the interaction (a user's, or the assistant's at the output point), with
 * `breakdown` and `payload` asked for. A flagged text gives a finding per detector that detected
 * something (`prompt_attack` -> `prompt_injection`, `pii/email` -> `email`,
 * `moderated_content/hate` -> `hate`), as spans where Lakera's payload says where its match is
 * (PII, profanity, custom regexes); `prompt_injection` when it names none. settings.project_id
 * picks the project whose policy screens the text.
 */
import type { Finding } from '../scanner.js';
import type { ExternalAdapter, ExternalDependencies, ExternalScanner, ExternalSpec } from './external-adapter.js';
import { endpointOf, malformed, mapLimited, postJson } from './external-http.js';
import { categoryFinding, entityName, orderedFindings, reportedSpan } from './findings.js';

const SERVICE = 'lakera_guard';
const DEFAULT_BASE_URL = 'https://api.lakera.ai';
const PARALLEL_CALLS = 8;

interface GuardResponse {
  flagged?: unknown;
  breakdown?: Array<{ detector_type?: unknown; detected?: unknown }>;
  payload?: Array<{ start?: unknown; end?: unknown; text?: unknown; detector_type?: unknown }>;
}

/** A Lakera detector type as an entity. */
export function lakeraEntity(detectorType: string): string {
  if (detectorType === 'prompt_attack') return 'prompt_injection';
  return entityName(detectorType.split('/').at(-1) ?? detectorType);
}

function findingsOf(text: string, answer: GuardResponse): Finding[] {
  if (answer.flagged !== true) return [];
  const spans = (answer.payload ?? []).flatMap((match) =>
    typeof match?.detector_type === 'string'
      ? reportedSpan(text, match.start, match.end, lakeraEntity(match.detector_type), typeof match.text === 'string' ? match.text : undefined)
      : [],
  );
  const withSpans = new Set(spans.map((span) => span.entity));
  const categories = (answer.breakdown ?? [])
    .filter((detector) => detector?.detected === true && typeof detector.detector_type === 'string')
    .map((detector) => lakeraEntity(detector.detector_type as string))
    .filter((entity) => !withSpans.has(entity))
    .map(categoryFinding);
  const found = [...spans, ...categories];
  return orderedFindings(found.length > 0 ? found : [categoryFinding('prompt_injection')]);
}

/** The scanner of one lakera_guard check. */
function createScanner(spec: ExternalSpec, dependencies: ExternalDependencies): ExternalScanner {
  const url = `${endpointOf(spec.baseUrl, DEFAULT_BASE_URL)}/v2/guard`;
  const project = spec.settings.project_id;
  return {
    async scan(texts, context) {
      const role = context.point === 'output' ? 'assistant' : 'user';
      return mapLimited(texts, PARALLEL_CALLS, async (text) => {
        if (text.length === 0) return [];
        const answer = (await postJson({
          service: SERVICE,
          url,
          headers: { authorization: `Bearer ${spec.credential}` },
          body: { messages: [{ role, content: text }], breakdown: true, payload: true, ...(project ? { project_id: project } : {}) },
          signal: context.signal,
          fetch: dependencies.fetch,
          secrets: [spec.credential],
        })) as GuardResponse | null;
        if (typeof answer?.flagged !== 'boolean') throw malformed(SERVICE, 'flagged');
        return findingsOf(text, answer);
      });
    },
  };
}

/** The lakera_guard adapter. */
export const lakeraGuard: ExternalAdapter = {
  service: SERVICE,
  settings: ['project_id'],
  requiredSettings: [],
  needsBaseUrl: false,
  needsCredential: true,
  checkSettings(spec) {
    return spec.settings.project_id === '' ? 'setting project_id is empty' : undefined;
  },
  create: createScanner,
};
