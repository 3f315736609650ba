/**
 * Google Cloud Model Armor: POST {base_url}/v1/{template}:sanitizeUserPrompt for the input and
 * tool points, :sanitizeModelResponse for the output point, one call per text, base_url by default
 * the template's regional endpoint (https://modelarmor.<location>.rep.googleapis.com). A text
 * whose sanitizationResult.filterMatchState is MATCH_FOUND gives a finding per filter that found a
 * match: each responsible-AI category by its name (`hate_speech`, `dangerous`, `harassment`,
 * `sexually_explicit`), `prompt_injection` for the prompt injection and jailbreak filter, `csam`,
 * `malicious_uri` (a span where the URI is), `virus`, and each Sensitive Data Protection info type
 * (`email_address`, a span where its code point range says).
 *
 * Auth: the check's credential as a bearer token when it is set (a token an operator mints, or a
 * test's); otherwise Application Default Credentials through google-auth-library (the
 * cloud-platform scope; a service-account key file, workload identity federation, gcloud's file,
 * the metadata server), one client for the process so that its cached token serves every check.
 */
import type { GoogleAuth } from 'google-auth-library';
import type { Finding } from '../scanner.js';
import type { ExternalAdapter, ExternalDependencies, ExternalScanner, ExternalSpec } from './external-adapter.js';
import { ExternalCheckError } from './external-check-error.js';
import { endpointOf, malformed, mapLimited, postJson } from './external-http.js';
import { categoryFinding, codePointSpan, entityName, matchFindings, orderedFindings } from './findings.js';

const SERVICE = 'model_armor';
const PARALLEL_CALLS = 8;
const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const TEMPLATE = /^projects\/[a-z0-9-]{1,63}\/locations\/([a-z0-9-]{1,63})\/templates\/[A-Za-z0-9_-]{1,63}$/;

const MATCH = 'MATCH_FOUND';

interface FilterResult {
  raiFilterResult?: { matchState?: string; raiFilterTypeResults?: Record<string, { matchState?: string }> };
  piAndJailbreakFilterResult?: { matchState?: string };
  csamFilterFilterResult?: { matchState?: string };
  maliciousUriFilterResult?: { matchState?: string; maliciousUriMatchedItems?: Array<{ uri?: string }> };
  virusScanFilterResult?: { matchState?: string };
  sdpFilterResult?: {
    inspectResult?: { matchState?: string; findings?: Array<{ infoType?: string; location?: { codepointRange?: { start?: unknown; end?: unknown } } }> };
    deidentifyResult?: { matchState?: string; infoTypes?: string[] };
  };
}

interface SanitizeResponse {
  sanitizationResult?: { filterMatchState?: string; filterResults?: Record<string, FilterResult> };
}

/** The findings of one filter's result. */
function filterFindings(text: string, result: FilterResult): Finding[] {
  const found: Finding[] = [];
  const rai = result.raiFilterResult;
  if (rai?.matchState === MATCH) {
    const types = Object.entries(rai.raiFilterTypeResults ?? {}).filter(([, type]) => type?.matchState === MATCH);
    found.push(...(types.length > 0 ? types.map(([name]) => categoryFinding(entityName(name))) : [categoryFinding('responsible_ai')]));
  }
  if (result.piAndJailbreakFilterResult?.matchState === MATCH) found.push(categoryFinding('prompt_injection'));
  if (result.csamFilterFilterResult?.matchState === MATCH) found.push(categoryFinding('csam'));
  if (result.virusScanFilterResult?.matchState === MATCH) found.push(categoryFinding('virus'));
  const uris = result.maliciousUriFilterResult;
  if (uris?.matchState === MATCH) {
    const items = uris.maliciousUriMatchedItems ?? [];
    found.push(...(items.length > 0 ? items.flatMap((item) => matchFindings(text, item?.uri ?? '', 'malicious_uri')) : [categoryFinding('malicious_uri')]));
  }
  const inspect = result.sdpFilterResult?.inspectResult;
  if (inspect?.matchState === MATCH) {
    const findings = inspect.findings ?? [];
    if (findings.length === 0) found.push(categoryFinding('sensitive_data'));
    for (const finding of findings) {
      const range = finding?.location?.codepointRange;
      const entity = entityName(finding?.infoType ?? 'sensitive_data');
      found.push(range ? codePointSpan(text, range.start, range.end, entity) : categoryFinding(entity));
    }
  }
  const deidentify = result.sdpFilterResult?.deidentifyResult;
  if (deidentify?.matchState === MATCH) {
    const infoTypes = deidentify.infoTypes ?? [];
    found.push(...(infoTypes.length > 0 ? infoTypes.map((infoType) => categoryFinding(entityName(infoType))) : [categoryFinding('sensitive_data')]));
  }
  return found;
}

let processAuth: Promise<GoogleAuth> | undefined;

/** A bearer token from Application Default Credentials, cached and refreshed by the library. */
async function applicationDefaultToken(signal: AbortSignal): Promise<string> {
  processAuth ??= import('google-auth-library').then(({ GoogleAuth }) => new GoogleAuth({ scopes: [CLOUD_PLATFORM_SCOPE] }));
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const token = await Promise.race([processAuth.then((auth) => auth.getAccessToken()), aborted]);
    if (typeof token !== 'string' || token === '') throw new ExternalCheckError('unavailable', SERVICE, 'the Google credentials gave no access token');
    return token;
  } catch (error) {
    if (error instanceof ExternalCheckError) throw error;
    if (signal.aborted) throw new ExternalCheckError('deadline_exceeded', SERVICE, 'no access token before the deadline');
    // The library's messages may quote a token endpoint's answer: only the status is repeated.
    const status = (error as { response?: { status?: unknown } }).response?.status ?? (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      throw new ExternalCheckError('upstream_error', SERVICE, `the Google token endpoint refused the credentials (${status})`);
    }
    throw new ExternalCheckError('unavailable', SERVICE, 'no Google access token (Application Default Credentials)');
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

/** The scanner of one model_armor check. */
function createScanner(spec: ExternalSpec, dependencies: ExternalDependencies): ExternalScanner {
  const template = spec.settings.template!;
  const location = TEMPLATE.exec(template)![1]!;
  const base = `${endpointOf(spec.baseUrl, `https://modelarmor.${location}.rep.googleapis.com`)}/v1/${template}`;
  return {
    async scan(texts, context) {
      const response = context.point === 'output';
      const url = `${base}:${response ? 'sanitizeModelResponse' : 'sanitizeUserPrompt'}`;
      const token = texts.some((text) => text.length > 0) ? (spec.credential !== '' ? spec.credential : await applicationDefaultToken(context.signal)) : '';
      return mapLimited(texts, PARALLEL_CALLS, async (text) => {
        if (text.length === 0) return [];
        const answer = (await postJson({
          service: SERVICE,
          url,
          headers: { authorization: `Bearer ${token}` },
          body: response ? { modelResponseData: { text } } : { userPromptData: { text } },
          signal: context.signal,
          fetch: dependencies.fetch,
          secrets: [token],
        })) as SanitizeResponse | null;
        const result = answer?.sanitizationResult;
        if (typeof result?.filterMatchState !== 'string') throw malformed(SERVICE, 'sanitizationResult.filterMatchState');
        if (result.filterMatchState !== MATCH) return [];
        const found = Object.values(result.filterResults ?? {}).flatMap((filter) => (filter ? filterFindings(text, filter) : []));
        return orderedFindings(found.length > 0 ? found : [categoryFinding('model_armor_match')]);
      });
    },
  };
}

/** The model_armor adapter. */
export const modelArmor: ExternalAdapter = {
  service: SERVICE,
  settings: ['template'],
  requiredSettings: ['template'],
  needsBaseUrl: false,
  needsCredential: false,
  checkSettings(spec) {
    const { template } = spec.settings;
    if (!TEMPLATE.test(template ?? ''))
      return `setting template must be a template's name (projects/<project>/locations/<location>/templates/<id>), not ${JSON.stringify(template)}`;
    return undefined;
  },
  create: createScanner,
};
