/**
 * What every outside service is to the guard: an adapter that knows the service's settings and
 * builds a Scanner calling it. The scanner's findings have no span (start and end -1) and name the
 * category the service flagged, unless the service says where in the text it found something (a
 * PII entity, a matched word), which is then a span.
 */
import type { Finding, ScanContext, Scanner } from '../scanner.js';

/** One outside check of a policy (the proto's ExternalCheck, its credential decrypted). */
export interface ExternalSpec {
  /** `openai_moderation`, `azure_content_safety`, `lakera_guard`, `bedrock_guardrails`, `model_armor` or `judge_model`. */
  service: string;
  /** The service's endpoint; '' for its public default (Azure, Model Armor and a judge model have none). */
  baseUrl: string;
  /** The API key or bearer token; '' where the service authenticates otherwise (Bedrock, Model Armor). */
  credential: string;
  /** The service's settings (a Bedrock `guardrail_id`, a Model Armor `template`, a judge's `model`, categories, thresholds). */
  settings: Record<string, string>;
  /** How long one scan may take (ms); 0: only the context's signal bounds it. */
  deadlineMs: number;
}

/** An outside check's scanner: always asynchronous, since it calls a service. */
export interface ExternalScanner extends Scanner {
  scan(texts: readonly string[], context: ScanContext): Promise<Finding[][]>;
}

/** AWS credentials, as AWS's credential providers give them. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** What an adapter's scanner reaches the world with. */
export interface ExternalDependencies {
  /** The fetch of the HTTP services (OpenAI, Azure, Lakera, Model Armor, a judge model). */
  fetch: typeof fetch;
  /** The credentials Bedrock's calls are signed with; undefined: AWS's default Node credential chain of the process. */
  awsCredentials?: (() => Promise<AwsCredentials>) | undefined;
}

/** One outside service. */
export interface ExternalAdapter {
  /** The ExternalCheck.service it answers to. */
  readonly service: string;
  /** Every setting it reads; any other is refused, so that a misspelt one is not silently ignored. */
  readonly settings: readonly string[];
  /** The settings it cannot do without. */
  readonly requiredSettings: readonly string[];
  /** True when it has no public endpoint, so base_url is required. */
  readonly needsBaseUrl: boolean;
  /** True when it authenticates with the check's credential, so one is required. */
  readonly needsCredential: boolean;
  /** Why the settings' values cannot work; undefined when they can. Called after the generic checks passed. */
  checkSettings(spec: ExternalSpec): string | undefined;
  /** The check's scanner; `spec` has passed validateExternalSpec. */
  create(spec: ExternalSpec, dependencies: ExternalDependencies): ExternalScanner;
}
