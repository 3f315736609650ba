/**
 * OpenAI's moderation endpoint (POST /v1/moderations, `Authorization: Bearer <key>`): up to
 * BATCH texts in one call's `input`, each answered by a result whose `categories` say which of
 * OpenAI's categories it falls in. A flagged text gives a `flagged_<category>` finding per true
 * category (`self-harm/intent` -> `flagged_self_harm_intent`), limited to settings.categories when
 * that is set; the model is settings.model, omni-moderation-latest by default.
 */
import type { Finding } from '../scanner.js';
import type { ExternalAdapter, ExternalDependencies, ExternalScanner, ExternalSpec } from './external-adapter.js';
import { endpointOf, malformed, mapLimited, postJson } from './external-http.js';
import { categoryFinding, entityName } from './findings.js';

const SERVICE = 'openai_moderation';
const DEFAULT_BASE_URL = 'https://api.openai.com';
const DEFAULT_MODEL = 'omni-moderation-latest';
/** Texts per call: OpenAI takes an array as `input`; bounded so that one call stays small. */
const BATCH = 32;
/** Calls under way at once for one scan. */
const PARALLEL_CALLS = 4;

/** The categories OpenAI's moderation models report. */
export const OPENAI_MODERATION_CATEGORIES = [
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
] as const;

const KNOWN_CATEGORIES = new Set(OPENAI_MODERATION_CATEGORIES.map(entityName));

/** The answer's shape (the fields read). */
interface ModerationResponse {
  results?: Array<{ flagged?: unknown; categories?: Record<string, unknown> }>;
}

/** settings.categories as entity names; undefined when every category counts. */
function countedCategories(settings: Record<string, string>): Set<string> | undefined {
  const list = settings.categories;
  if (list === undefined) return undefined;
  return new Set(
    list
      .split(',')
      .map((category) => entityName(category))
      .filter((category) => category !== ''),
  );
}

function findingsOf(result: NonNullable<ModerationResponse['results']>[number], counted: Set<string> | undefined): Finding[] {
  if (result.flagged !== true) return [];
  return Object.entries(result.categories ?? {})
    .filter(([category, flagged]) => flagged === true && (counted === undefined || counted.has(entityName(category))))
    .map(([category]) => categoryFinding(`flagged_${entityName(category)}`))
    .sort((a, b) => a.entity.localeCompare(b.entity));
}

/** The scanner of one openai_moderation check. */
function createScanner(spec: ExternalSpec, dependencies: ExternalDependencies): ExternalScanner {
  const url = `${endpointOf(spec.baseUrl, DEFAULT_BASE_URL)}/v1/moderations`;
  const model = spec.settings.model ?? DEFAULT_MODEL;
  const counted = countedCategories(spec.settings);
  return {
    async scan(texts, context) {
      const findings: Finding[][] = texts.map(() => []);
      const asked = texts.flatMap((text, index) => (text.length > 0 ? [index] : []));
      const batches: number[][] = [];
      for (let at = 0; at < asked.length; at += BATCH) batches.push(asked.slice(at, at + BATCH));
      await mapLimited(batches, PARALLEL_CALLS, async (batch) => {
        const answer = (await postJson({
          service: SERVICE,
          url,
          headers: { authorization: `Bearer ${spec.credential}` },
          body: { model, input: batch.map((index) => texts[index]) },
          signal: context.signal,
          fetch: dependencies.fetch,
          secrets: [spec.credential],
        })) as ModerationResponse | null;
        const results = answer?.results;
        if (!Array.isArray(results) || results.length !== batch.length || results.some((result) => typeof result !== 'object' || result === null)) {
          throw malformed(SERVICE, `a result for each of the ${batch.length} inputs`);
        }
        batch.forEach((index, position) => {
          findings[index] = findingsOf(results[position]!, counted);
        });
      });
      return findings;
    },
  };
}

/** The openai_moderation adapter. */
export const openAiModeration: ExternalAdapter = {
  service: SERVICE,
  settings: ['model', 'categories'],
  requiredSettings: [],
  needsBaseUrl: false,
  needsCredential: true,
  checkSettings(spec) {
    if (spec.settings.model === '') return 'setting model is empty';
    const counted = countedCategories(spec.settings);
    if (counted === undefined) return undefined;
    if (counted.size === 0) return 'setting categories names no category';
    const unknown = [...counted].filter((category) => !KNOWN_CATEGORIES.has(category));
    if (unknown.length > 0) return `setting categories names unknown categories ${unknown.join(', ')} (known: ${OPENAI_MODERATION_CATEGORIES.join(', ')})`;
    return undefined;
  },
  create: createScanner,
};
