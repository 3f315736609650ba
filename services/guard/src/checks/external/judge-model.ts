/**
 * A catalog model as the judge: a safety classifier (Llama Guard 3 or any model that follows its
 * prompt) asked through an OpenAI-compatible chat completions endpoint, POST
 * {base_url}/chat/completions with `Authorization: Bearer <credential>`. base_url is typically
 * the gateway itself and the credential a gateway key of the policy's owner, so each judgement is
 * metered, limited and billed to that key like any request.
 *
 * One call a text (at most PARALLEL_CALLS at once), temperature 0, not streamed, at most
 * settings.max_tokens tokens, with Llama Guard 3's prompt about the text (judge-prompt.ts). The
 * answer, in settings.format:
 * - `llama_guard` (the default): a first line `safe` or `unsafe`, then a comma list of codes
 *   (`S1,S10`), each an `unsafe_<code>` finding (`unsafe_s1`);
 * - `json`: `{"flagged":bool,"categories":[...]}`, each category an `unsafe_<category>` finding.
 * An unsafe answer that names no category is an `unsafe` finding, whatever settings.categories
 * says; named ones count only when settings.categories (codes or names) has them. An answer of
 * neither shape is an `upstream_error`: the service is not acting as a judge.
 */
import type { Finding } from '../scanner.js';
import type { ExternalAdapter, ExternalDependencies, ExternalScanner, ExternalSpec } from './external-adapter.js';
import { ExternalCheckError } from './external-check-error.js';
import { endpointOf, malformed, mapLimited, postJson } from './external-http.js';
import { categoryFinding, entityName, orderedFindings } from './findings.js';
import { categoryCode, JSON_SYSTEM_PROMPT, judgedRole, LLAMA_GUARD_CATEGORIES, llamaGuardPrompt } from './judge-prompt.js';

const SERVICE = 'judge_model';
/** Calls under way at once for one scan: each is a model's completion, heavier than a moderation call. */
const PARALLEL_CALLS = 4;
const DEFAULT_MAX_TOKENS = 20;
const MAX_MAX_TOKENS = 4096;
const FORMATS = ['llama_guard', 'json'] as const;
/** What a category named in an answer must look like, as an entity, to be one. */
const ENTITY = /^[a-z0-9_]{1,48}$/;

type Format = (typeof FORMATS)[number];

/** The answer's shape (the fields read). */
interface ChatCompletion {
  choices?: Array<{ message?: { content?: unknown } }>;
}

function listOf(setting: string | undefined): string[] {
  return (setting ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** settings.categories as codes; undefined when every category counts. */
function countedCodes(settings: Record<string, string>): Set<string> | undefined {
  if (settings.categories === undefined) return undefined;
  return new Set(listOf(settings.categories).flatMap((category) => categoryCode(category) ?? []));
}

/**
 * The findings of the categories an unsafe answer named, each `unsafe_<category>` once: `unsafe`
 * when it named none (that is a short name); otherwise those `counted` has (by code, or by name
 * where the model used one).
 */
function unsafeFindings(categories: readonly string[], counted: Set<string> | undefined): Finding[] {
  // A category must be a short name to become an entity: a model that rambles must not put its
  // words (or the text's) into decisions; what it named otherwise is as good as nothing.
  const named = categories.filter((category) => ENTITY.test(entityName(category)));
  if (named.length === 0) return [categoryFinding('unsafe')];
  const kept = named.filter((category) => {
    if (counted === undefined) return true;
    const code = categoryCode(category);
    return code !== undefined && counted.has(code);
  });
  return orderedFindings(kept.map((category) => categoryFinding(`unsafe_${entityName(category)}`)));
}

/** The findings of a Llama Guard answer; undefined when it is neither `safe` nor `unsafe`. */
function llamaGuardFindings(content: string, counted: Set<string> | undefined): Finding[] | undefined {
  const [verdict = '', codes = ''] = content.trim().split(/\r?\n/);
  const word = verdict.trim().toLowerCase();
  if (word === 'safe') return [];
  if (word !== 'unsafe') return undefined;
  return unsafeFindings(listOf(codes), counted);
}

/** A JSON answer's object, from a code fence when the model put it in one. */
function jsonOf(content: string): unknown {
  const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/i.exec(content.trim());
  try {
    return JSON.parse(fenced ? fenced[1]! : content);
  } catch {
    return undefined;
  }
}

/** The findings of a json answer; undefined when it is not `{"flagged":bool,"categories":[string]}`. */
function jsonFindings(content: string, counted: Set<string> | undefined): Finding[] | undefined {
  const answer = jsonOf(content) as { flagged?: unknown; categories?: unknown } | null | undefined;
  if (typeof answer !== 'object' || answer === null || typeof answer.flagged !== 'boolean') return undefined;
  const categories = answer.categories ?? [];
  if (!Array.isArray(categories) || categories.some((category) => typeof category !== 'string')) return undefined;
  if (!answer.flagged) return [];
  return unsafeFindings(categories as string[], counted);
}

/** The request body asking about `text`. */
function completionRequest(text: string, point: string, model: string, format: Format, maxTokens: number): object {
  const prompt = { role: 'user', content: llamaGuardPrompt(text, judgedRole(point)) };
  return {
    model,
    messages: format === 'json' ? [{ role: 'system', content: JSON_SYSTEM_PROMPT }, prompt] : [prompt],
    temperature: 0,
    max_tokens: maxTokens,
    stream: false,
  };
}

/** The scanner of one judge_model check. */
function createScanner(spec: ExternalSpec, dependencies: ExternalDependencies): ExternalScanner {
  const url = `${endpointOf(spec.baseUrl, '')}/chat/completions`;
  const model = spec.settings.model!;
  const format = (spec.settings.format ?? 'llama_guard') as Format;
  const maxTokens = spec.settings.max_tokens === undefined ? DEFAULT_MAX_TOKENS : Number(spec.settings.max_tokens);
  const counted = countedCodes(spec.settings);
  const findingsOf = format === 'json' ? jsonFindings : llamaGuardFindings;
  return {
    async scan(texts, context) {
      return mapLimited(texts, PARALLEL_CALLS, async (text) => {
        if (text.length === 0) return [];
        const answer = (await postJson({
          service: SERVICE,
          url,
          headers: { authorization: `Bearer ${spec.credential}` },
          body: completionRequest(text, context.point, model, format, maxTokens),
          signal: context.signal,
          fetch: dependencies.fetch,
          secrets: [spec.credential],
        })) as ChatCompletion | null;
        const content = answer?.choices?.[0]?.message?.content;
        if (typeof content !== 'string') throw malformed(SERVICE, 'choices[0].message.content');
        const findings = findingsOf(content, counted);
        if (findings === undefined) {
          // Never the answer itself: a model that does not judge may well repeat the text.
          throw new ExternalCheckError(
            'upstream_error',
            SERVICE,
            format === 'json' ? 'answered what is not the JSON asked for ({"flagged":bool,"categories":[...]})' : 'answered neither safe nor unsafe',
          );
        }
        return findings;
      });
    },
  };
}

/** The judge_model adapter. */
export const judgeModel: ExternalAdapter = {
  service: SERVICE,
  settings: ['model', 'categories', 'format', 'max_tokens'],
  requiredSettings: ['model'],
  needsBaseUrl: true,
  needsCredential: true,
  checkSettings(spec) {
    const { format, max_tokens: maxTokens, categories } = spec.settings;
    if (format !== undefined && !(FORMATS as readonly string[]).includes(format)) {
      return `setting format must be ${FORMATS.join(' or ')}, not ${JSON.stringify(format)}`;
    }
    if (maxTokens !== undefined && !(/^\d{1,4}$/.test(maxTokens) && Number(maxTokens) >= 1 && Number(maxTokens) <= MAX_MAX_TOKENS)) {
      return `setting max_tokens must be an integer from 1 to ${MAX_MAX_TOKENS}, not ${JSON.stringify(maxTokens)}`;
    }
    if (categories === undefined) return undefined;
    const listed = listOf(categories);
    if (listed.length === 0) return 'setting categories names no category';
    const unknown = listed.filter((category) => categoryCode(category) === undefined);
    if (unknown.length > 0) {
      const known = LLAMA_GUARD_CATEGORIES.map((name, index) => `S${index + 1} ${name}`).join(', ');
      return `setting categories names unknown categories ${unknown.join(', ')} (known, by code or name: ${known})`;
    }
    return undefined;
  },
  create: createScanner,
};
