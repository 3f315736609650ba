/**
 * Amazon Bedrock Guardrails through ApplyGuardrail (@aws-sdk/client-bedrock-runtime), one call per
 * text: source INPUT at the input and tool points, OUTPUT at the output point. A guardrail that
 * intervenes gives a finding per policy entry that acted (a detect-only entry, action NONE, gives
 * none): a denied topic `topic_<name>`, a content filter its type (`violence`, `hate`;
 * PROMPT_ATTACK `prompt_injection`), a word `word` (a managed list its type, `profanity`), a PII
 * entity its type (`email`, `us_social_security_number`), a regex its name, a grounding filter its
 * type; words, PII and regexes as spans where their match is in the text.
 *
 * Signed with SigV4 over AWS's default Node credential chain (@aws-sdk/credential-providers
 * fromNodeProviderChain, as the executor signs Bedrock calls: environment, shared files, web
 * identity, container and instance roles), one chain for the process so that its cached
 * credentials serve every check. The SDK's HTTP/1.1 handler (not its default HTTP/2 one) sends
 * the calls, one attempt each: the check's deadline is too short for the SDK's retries, and
 * on_error decides what a failure means. base_url, when set, replaces Bedrock's regional endpoint.
 */
import type { ApplyGuardrailResponse, BedrockRuntimeClient, GuardrailAssessment } from '@aws-sdk/client-bedrock-runtime';
import type { Finding } from '../scanner.js';
import type { AwsCredentials, ExternalAdapter, ExternalDependencies, ExternalScanner, ExternalSpec } from './external-adapter.js';
import { ExternalCheckError, reasonOfStatus, safeCode } from './external-check-error.js';
import { mapLimited, transportFailure } from './external-http.js';
import { categoryFinding, entityName, matchFindings, orderedFindings } from './findings.js';

const SERVICE = 'bedrock_guardrails';
const PARALLEL_CALLS = 8;

let processChain: (() => Promise<AwsCredentials>) | undefined;

/** AWS's default credential chain of the process, loaded at the first Bedrock check. */
function defaultCredentials(): () => Promise<AwsCredentials> {
  if (processChain) return processChain;
  let chain: Promise<() => Promise<AwsCredentials>> | undefined;
  processChain = async () => {
    chain ??= import('@aws-sdk/credential-providers').then(({ fromNodeProviderChain }) => fromNodeProviderChain());
    return (await chain)();
  };
  return processChain;
}

/** The ExternalCheckError of a failed ApplyGuardrail call. */
function callFailure(error: unknown, signal: AbortSignal): ExternalCheckError {
  if (signal.aborted) return new ExternalCheckError('deadline_exceeded', SERVICE, 'no answer before the deadline');
  const { name, $metadata } = error as { name?: unknown; $metadata?: { httpStatusCode?: unknown } };
  const status = $metadata?.httpStatusCode;
  if (typeof status === 'number') {
    const code = safeCode(name);
    return new ExternalCheckError(
      status >= 200 && status < 300 ? 'upstream_error' : reasonOfStatus(status),
      SERVICE,
      `answered ${status}${code ? ` (${code})` : ''}`,
    );
  }
  // The chain's message names the providers it tried, never a secret, but stays in the SDK's error.
  if (name === 'CredentialsProviderError') return new ExternalCheckError('unavailable', SERVICE, 'no AWS credentials to sign with');
  return transportFailure(SERVICE, error, signal);
}

/** A policy entry that acted: detected (or not said otherwise) and with an action other than NONE. */
function acted(entry: { action?: string | undefined; detected?: boolean | undefined } | undefined): boolean {
  return entry !== undefined && entry.detected !== false && entry.action !== undefined && entry.action !== 'NONE';
}

/** The findings of one assessment of `text`. */
function assessmentFindings(text: string, assessment: GuardrailAssessment): Finding[] {
  const found: Finding[] = [];
  for (const topic of assessment.topicPolicy?.topics ?? []) if (acted(topic)) found.push(categoryFinding(`topic_${entityName(topic.name ?? 'denied')}`));
  for (const filter of assessment.contentPolicy?.filters ?? []) {
    if (acted(filter)) found.push(categoryFinding(filter.type === 'PROMPT_ATTACK' ? 'prompt_injection' : entityName(filter.type ?? 'content')));
  }
  for (const word of assessment.wordPolicy?.customWords ?? []) if (acted(word)) found.push(...matchFindings(text, word.match ?? '', 'word'));
  for (const word of assessment.wordPolicy?.managedWordLists ?? []) {
    if (acted(word)) found.push(...matchFindings(text, word.match ?? '', entityName(word.type ?? 'profanity')));
  }
  for (const entity of assessment.sensitiveInformationPolicy?.piiEntities ?? []) {
    if (acted(entity)) found.push(...matchFindings(text, entity.match ?? '', entityName(entity.type ?? 'pii')));
  }
  for (const regex of assessment.sensitiveInformationPolicy?.regexes ?? []) {
    if (acted(regex)) found.push(...matchFindings(text, regex.match ?? '', entityName(regex.name ?? 'regex')));
  }
  for (const filter of assessment.contextualGroundingPolicy?.filters ?? [])
    if (acted(filter)) found.push(categoryFinding(entityName(filter.type ?? 'grounding')));
  return found;
}

/** The findings of an answer about `text`: none unless the guardrail intervened. */
export function guardrailFindings(text: string, answer: ApplyGuardrailResponse): Finding[] {
  if (answer.action !== 'GUARDRAIL_INTERVENED') return [];
  const found = (answer.assessments ?? []).flatMap((assessment) => assessmentFindings(text, assessment));
  return orderedFindings(found.length > 0 ? found : [categoryFinding('guardrail_intervened')]);
}

/** The scanner of one bedrock_guardrails check. */
function createScanner(spec: ExternalSpec, dependencies: ExternalDependencies): ExternalScanner {
  const { guardrail_id: guardrailIdentifier, guardrail_version: guardrailVersion, region } = spec.settings;
  const credentials = dependencies.awsCredentials ?? defaultCredentials();
  let client: Promise<{ client: BedrockRuntimeClient; Command: typeof import('@aws-sdk/client-bedrock-runtime').ApplyGuardrailCommand }> | undefined;
  // Loaded at the first scan, so that a guard with no Bedrock check does not carry the SDK.
  const clientOf = () =>
    (client ??= Promise.all([import('@aws-sdk/client-bedrock-runtime'), import('@smithy/node-http-handler')]).then(([sdk, { NodeHttpHandler }]) => ({
      client: new sdk.BedrockRuntimeClient({
        region,
        credentials,
        requestHandler: new NodeHttpHandler(),
        maxAttempts: 1,
        ...(spec.baseUrl === '' ? {} : { endpoint: spec.baseUrl.replace(/\/+$/, '') }),
      }),
      Command: sdk.ApplyGuardrailCommand,
    })));
  return {
    async scan(texts, context) {
      const source = context.point === 'output' ? 'OUTPUT' : 'INPUT';
      const { client: runtime, Command } = await clientOf();
      return mapLimited(texts, PARALLEL_CALLS, async (text) => {
        if (text.length === 0) return [];
        let answer: ApplyGuardrailResponse;
        try {
          answer = await runtime.send(new Command({ guardrailIdentifier, guardrailVersion, source, content: [{ text: { text } }] }), {
            abortSignal: context.signal,
          });
        } catch (error) {
          throw callFailure(error, context.signal);
        }
        if (typeof answer.action !== 'string') throw new ExternalCheckError('upstream_error', SERVICE, 'answered without action');
        return guardrailFindings(text, answer);
      });
    },
  };
}

/** The bedrock_guardrails adapter. */
export const bedrockGuardrails: ExternalAdapter = {
  service: SERVICE,
  settings: ['guardrail_id', 'guardrail_version', 'region'],
  requiredSettings: ['guardrail_id', 'guardrail_version', 'region'],
  needsBaseUrl: false,
  needsCredential: false,
  checkSettings(spec) {
    const { guardrail_id: id, guardrail_version: version, region } = spec.settings;
    if (!/^(([a-z0-9]+)|(arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail\/[a-z0-9]+))$/.test(id ?? '')) {
      return `setting guardrail_id must be a guardrail id or ARN, not ${JSON.stringify(id)}`;
    }
    if (!/^(DRAFT|[1-9][0-9]{0,7})$/.test(version ?? '')) return `setting guardrail_version must be DRAFT or a version number, not ${JSON.stringify(version)}`;
    if (!/^[a-z]{2}(-[a-z]+)+-[0-9]+$/.test(region ?? '')) return `setting region must be an AWS region (us-east-1), not ${JSON.stringify(region)}`;
    if (spec.credential !== '') return 'takes no credential: it signs with the AWS credential chain of the guard';
    return undefined;
  },
  create: createScanner,
};
