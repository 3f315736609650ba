/**
 * Azure AI Content Safety (api-version 2024-09-01, key in `Ocp-Apim-Subscription-Key`), in one
 * of two modes:
 * - `analyze` (the default): POST {base_url}/contentsafety/text:analyze per text; each category
 *   whose severity reaches settings.threshold (4 by default, of 0-7) is a finding named after it
 *   (`hate`, `self_harm`, `sexual`, `violence`); settings.categories limits which are asked for,
 *   settings.blocklists names blocklists whose matches are `blocklist` spans;
 * - `prompt_shield`: POST {base_url}/contentsafety/text:shieldPrompt per text, as the user prompt
 *   (or, at the tool_result point, as a document: an indirect attack); an attack detected is a
 *   `prompt_injection` finding.
 * Azure takes at most MAX_CHARS characters a call, so a longer text is asked about in pieces and
 * a category found in any piece is the text's.
 */
import type { Finding } from '../scanner.js';
import type { ExternalAdapter, ExternalDependencies, ExternalScanner, ExternalSpec } from './external-adapter.js';
import { malformed, mapLimited, postJson } from './external-http.js';
import { categoryFinding, entityName, matchFindings, orderedFindings } from './findings.js';

const SERVICE = 'azure_content_safety';
const API_VERSION = '2024-09-01';
/** The most characters Azure takes in one text:analyze or text:shieldPrompt call. */
export const MAX_CHARS = 10_000;
/** Calls under way at once for one scan. */
const PARALLEL_CALLS = 8;
const DEFAULT_THRESHOLD = 4;

/** The harm categories of text:analyze. */
export const AZURE_CATEGORIES = ['Hate', 'SelfHarm', 'Sexual', 'Violence'] as const;

interface AnalyzeResponse {
  categoriesAnalysis?: Array<{ category?: unknown; severity?: unknown }>;
  blocklistsMatch?: Array<{ blocklistName?: unknown; blocklistItemText?: unknown }>;
}

interface ShieldResponse {
  userPromptAnalysis?: { attackDetected?: unknown };
  documentsAnalysis?: Array<{ attackDetected?: unknown }>;
}

/** `SelfHarm` -> `self_harm`. */
function categoryEntity(category: string): string {
  return entityName(category.replace(/([a-z])([A-Z])/g, '$1_$2'));
}

function listOf(setting: string | undefined): string[] {
  return (setting ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** settings.categories in Azure's spelling, whatever case or underscores the check used; undefined when it is not set. */
function askedCategories(settings: Record<string, string>): { known: string[]; unknown: string[] } | undefined {
  if (settings.categories === undefined) return undefined;
  const known: string[] = [];
  const unknown: string[] = [];
  for (const item of listOf(settings.categories)) {
    const category = AZURE_CATEGORIES.find((candidate) => categoryEntity(candidate) === categoryEntity(item) || candidate.toLowerCase() === item.toLowerCase());
    if (category) known.push(category);
    else unknown.push(item);
  }
  return { known, unknown };
}

/** The text in pieces of at most MAX_CHARS, never splitting a surrogate pair. */
export function piecesOf(text: string): string[] {
  const pieces: string[] = [];
  for (let at = 0; at < text.length; ) {
    let end = Math.min(at + MAX_CHARS, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    pieces.push(text.slice(at, end));
    at = end;
  }
  return pieces;
}

/** The scanner of one azure_content_safety check. */
function createScanner(spec: ExternalSpec, dependencies: ExternalDependencies): ExternalScanner {
  const base = spec.baseUrl.replace(/\/+$/, '');
  const shield = spec.settings.mode === 'prompt_shield';
  const url = `${base}/contentsafety/text:${shield ? 'shieldPrompt' : 'analyze'}?api-version=${API_VERSION}`;
  const threshold = spec.settings.threshold === undefined ? DEFAULT_THRESHOLD : Number(spec.settings.threshold);
  const categories = askedCategories(spec.settings)?.known;
  const blocklists = listOf(spec.settings.blocklists);
  const call = (body: object, signal: AbortSignal) =>
    postJson({
      service: SERVICE,
      url,
      headers: { 'ocp-apim-subscription-key': spec.credential },
      body,
      signal,
      fetch: dependencies.fetch,
      secrets: [spec.credential],
    });

  const analyze = async (text: string, piece: string, signal: AbortSignal): Promise<Finding[]> => {
    const answer = (await call(
      {
        text: piece,
        outputType: 'FourSeverityLevels',
        ...(categories ? { categories } : {}),
        ...(blocklists.length > 0 ? { blocklistNames: blocklists, haltOnBlocklistHit: false } : {}),
      },
      signal,
    )) as AnalyzeResponse | null;
    if (!Array.isArray(answer?.categoriesAnalysis)) throw malformed(SERVICE, 'categoriesAnalysis');
    const found = answer.categoriesAnalysis
      .filter((analysis) => typeof analysis?.category === 'string' && typeof analysis.severity === 'number' && analysis.severity >= threshold)
      .map((analysis) => categoryFinding(categoryEntity(analysis.category as string)));
    for (const match of answer.blocklistsMatch ?? []) {
      if (typeof match?.blocklistItemText === 'string') found.push(...matchFindings(text, match.blocklistItemText, 'blocklist'));
    }
    return found;
  };

  const shieldPrompt = async (piece: string, asDocument: boolean, signal: AbortSignal): Promise<Finding[]> => {
    const answer = (await call(asDocument ? { userPrompt: '', documents: [piece] } : { userPrompt: piece, documents: [] }, signal)) as ShieldResponse | null;
    const attacks = [answer?.userPromptAnalysis?.attackDetected, ...(answer?.documentsAnalysis ?? []).map((analysis) => analysis?.attackDetected)];
    if (typeof answer?.userPromptAnalysis?.attackDetected !== 'boolean' && !Array.isArray(answer?.documentsAnalysis)) {
      throw malformed(SERVICE, 'userPromptAnalysis or documentsAnalysis');
    }
    return attacks.includes(true) ? [categoryFinding('prompt_injection')] : [];
  };

  return {
    async scan(texts, context) {
      const calls = texts.flatMap((text, index) => piecesOf(text).map((piece) => ({ index, piece })));
      const found = await mapLimited(calls, PARALLEL_CALLS, ({ index, piece }) =>
        shield ? shieldPrompt(piece, context.point === 'tool_result', context.signal) : analyze(texts[index]!, piece, context.signal),
      );
      const findings: Finding[][] = texts.map(() => []);
      for (const [position, { index }] of calls.entries()) findings[index]!.push(...found[position]!);
      return findings.map(orderedFindings);
    },
  };
}

/** The azure_content_safety adapter. */
export const azureContentSafety: ExternalAdapter = {
  service: SERVICE,
  settings: ['mode', 'threshold', 'categories', 'blocklists'],
  requiredSettings: [],
  needsBaseUrl: true,
  needsCredential: true,
  checkSettings(spec) {
    const { mode, threshold } = spec.settings;
    if (mode !== undefined && mode !== 'analyze' && mode !== 'prompt_shield')
      return `setting mode must be analyze or prompt_shield, not ${JSON.stringify(mode)}`;
    const shield = mode === 'prompt_shield';
    const analyzeOnly = ['threshold', 'categories', 'blocklists'].filter((setting) => spec.settings[setting] !== undefined);
    if (shield && analyzeOnly.length > 0) return `setting ${analyzeOnly.join(', ')} applies to mode analyze only`;
    if (threshold !== undefined && !/^[0-7]$/.test(threshold)) return `setting threshold must be a severity from 0 to 7, not ${JSON.stringify(threshold)}`;
    const asked = askedCategories(spec.settings);
    if (asked && asked.unknown.length > 0)
      return `setting categories names unknown categories ${asked.unknown.join(', ')} (known: ${AZURE_CATEGORIES.join(', ')})`;
    if (asked && asked.known.length === 0) return 'setting categories names no category';
    if (spec.settings.blocklists !== undefined && listOf(spec.settings.blocklists).length === 0) return 'setting blocklists names no blocklist';
    return undefined;
  },
  create: createScanner,
};
