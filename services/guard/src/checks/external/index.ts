/**
 * The outside checks: the services a policy's `external` check may name, the validation of such a
 * check (each message says what to fix), and the scanner of a valid one. A scanner's scan rejects
 * with an ExternalCheckError when the service gives no usable answer; its signal is the context's,
 * ended at the check's own deadline too when it has one.
 */
import type { ScanContext } from '../scanner.js';
import type { AwsCredentials, ExternalAdapter, ExternalScanner, ExternalSpec } from './external-adapter.js';
import { ExternalCheckError } from './external-check-error.js';
import { azureContentSafety } from './azure-content-safety.js';
import { bedrockGuardrails } from './bedrock-guardrails.js';
import { judgeModel } from './judge-model.js';
import { lakeraGuard } from './lakera-guard.js';
import { modelArmor } from './model-armor.js';
import { openAiModeration } from './openai-moderation.js';

export type { AwsCredentials, ExternalAdapter, ExternalDependencies, ExternalScanner, ExternalSpec } from './external-adapter.js';
export { ExternalCheckError, type ExternalFailureReason } from './external-check-error.js';

const ADAPTERS: readonly ExternalAdapter[] = [openAiModeration, azureContentSafety, lakeraGuard, bedrockGuardrails, modelArmor, judgeModel];

const BY_SERVICE = new Map(ADAPTERS.map((adapter) => [adapter.service, adapter]));

/** The services an external check may name. */
export const EXTERNAL_SERVICES: readonly string[] = ADAPTERS.map((adapter) => adapter.service);

/** The longest deadline an external check may set (ms), the bound of GUARD_CHECK_DEADLINE_MS. */
export const MAX_EXTERNAL_DEADLINE_MS = 60_000;

/** Why `baseUrl` cannot be an endpoint; undefined when it can. */
function urlProblem(baseUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return 'base_url is not a URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `base_url must be http or https, not ${url.protocol.slice(0, -1)}`;
  if (url.username !== '' || url.password !== '') return 'base_url must not carry credentials (put the key in credential)';
  if (url.search !== '' || url.hash !== '') return 'base_url must not have a query or a fragment';
  return undefined;
}

/** Why `spec` cannot be checked; undefined when it can. */
export function validateExternalSpec(spec: ExternalSpec): string | undefined {
  const adapter = BY_SERVICE.get(spec.service);
  if (!adapter) return `unknown service ${JSON.stringify(spec.service)} (known: ${EXTERNAL_SERVICES.join(', ')})`;
  const name = adapter.service;
  if (spec.baseUrl === '') {
    if (adapter.needsBaseUrl) return `${name} needs base_url (it has no public endpoint)`;
  } else {
    const problem = urlProblem(spec.baseUrl);
    if (problem) return `${name}: ${problem}`;
  }
  if (adapter.needsCredential && spec.credential === '') return `${name} needs a credential (its API key)`;
  const unknown = Object.keys(spec.settings).filter((setting) => !adapter.settings.includes(setting));
  if (unknown.length > 0) {
    return `${name} has no setting ${unknown.join(', ')} (its settings: ${adapter.settings.length > 0 ? adapter.settings.join(', ') : 'none'})`;
  }
  const missing = adapter.requiredSettings.filter((setting) => (spec.settings[setting] ?? '') === '');
  if (missing.length > 0) return `${name} needs the setting${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`;
  if (!Number.isInteger(spec.deadlineMs) || spec.deadlineMs < 0 || spec.deadlineMs > MAX_EXTERNAL_DEADLINE_MS) {
    return `${name}: deadline_ms must be an integer from 0 to ${MAX_EXTERNAL_DEADLINE_MS}`;
  }
  const problem = adapter.checkSettings(spec);
  return problem ? `${name}: ${problem}` : undefined;
}

/** The context's signal, ended at `deadlineMs` as well when that is set. */
function deadlineSignal(signal: AbortSignal, deadlineMs: number): AbortSignal {
  return deadlineMs > 0 ? AbortSignal.any([signal, AbortSignal.timeout(deadlineMs)]) : signal;
}

/** What the scanners are given in place of the process's defaults. */
export interface ExternalScannerOptions {
  /** The transport of the HTTP services; the global fetch by default. */
  fetch?: typeof fetch;
  /** The credentials Bedrock's calls are signed with; AWS's default Node credential chain by default. */
  awsCredentials?: () => Promise<AwsCredentials>;
}

/** The scanner of a valid external check (throws on one validateExternalSpec refuses). */
export function createExternalScanner(spec: ExternalSpec, options: ExternalScannerOptions = {}): ExternalScanner {
  const problem = validateExternalSpec(spec);
  if (problem) throw new Error(problem);
  const adapter = BY_SERVICE.get(spec.service)!;
  const scanner = adapter.create(spec, { fetch: options.fetch ?? fetch, awsCredentials: options.awsCredentials });
  return {
    async scan(texts: readonly string[], context: ScanContext) {
      const signal = deadlineSignal(context.signal, spec.deadlineMs);
      if (signal.aborted) throw new ExternalCheckError('deadline_exceeded', adapter.service, 'no time left before the deadline');
      try {
        return await scanner.scan(texts, { ...context, signal });
      } catch (error) {
        if (error instanceof ExternalCheckError) throw error;
        if (signal.aborted) throw new ExternalCheckError('deadline_exceeded', adapter.service, 'no answer before the deadline');
        // Adapters turn their transport's failures into ExternalCheckErrors; anything else is an
        // answer they could not read.
        throw new ExternalCheckError('upstream_error', adapter.service, `its answer could not be read (${(error as Error).name})`);
      }
    },
  };
}
