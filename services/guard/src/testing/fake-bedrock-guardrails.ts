/**
 * A fake Amazon Bedrock runtime answering ApplyGuardrail (POST
 * /guardrail/{guardrailIdentifier}/version/{guardrailVersion}/apply) as the Bedrock Runtime API
 * reference documents it, for the bedrock_guardrails check's tests. It checks SigV4 as AWS does,
 * recomputing the signature with AWS's own signer (@smithy/signature-v4) and the secret of the key
 * the request names, as @gateway/testing's fake Bedrock does: an unknown key or session token is a
 * 403 UnrecognizedClientException, a signature that does not match (a wrong secret, a changed
 * body) or a scope of another region or service a 403 InvalidSignatureException. Its guardrail
 * intervenes on FLAG_TRIGGER (the VIOLENCE content filter and a custom word), on INJECTION_TRIGGER
 * in an INPUT (the prompt attack filter, which Bedrock applies to inputs only), on an e-mail
 * address (the EMAIL PII entity, anonymized) and on `stock tips` (a denied topic).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Sha256 } from '@aws-crypto/sha256-js';
import type { FakeAwsCredentials } from '@gateway/testing';
import { SignatureV4 } from '@smithy/signature-v4';
import { emailsOf, FLAG_TRIGGER, hasFlagTrigger, hasInjectionTrigger } from './moderation-triggers.js';
import { type FakeAnswer, type FakeModerationService, type FakeRequest, startFakeService } from './fake-service-server.js';

/** A started fake Bedrock with its guardrails. */
export interface FakeBedrockGuardrails extends FakeModerationService {
  readonly region: string;
}

/** How far a request's date may be from the fake's clock, as AWS allows. */
const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

/** The topic `stock tips` falls in. */
export const DENIED_TOPIC = 'Investment Advice';

function awsError(status: number, type: string, message: string): FakeAnswer {
  return {
    status,
    headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': randomBytes(16).toString('hex') },
    body: { message },
  };
}

const SIGNATURE_MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.';

/** The refusal of a request whose SigV4 is not valid for `region` and the known keys; undefined when it is. */
async function sigV4Refusal(request: FakeRequest, region: string, known: ReadonlyMap<string, FakeAwsCredentials>): Promise<FakeAnswer | undefined> {
  const header = String(request.headers.authorization ?? '');
  const parsed = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
    header.trim(),
  );
  if (!parsed) return awsError(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  const [, accessKeyId, , scopeRegion, service, signedHeaderList, signature] = parsed as unknown as string[];
  const credentials = known.get(accessKeyId!);
  if (!credentials || (credentials.sessionToken !== undefined && request.headers['x-amz-security-token'] !== credentials.sessionToken)) {
    return awsError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
  }
  const dateMatch = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(String(request.headers['x-amz-date'] ?? ''));
  if (!dateMatch) return awsError(403, 'IncompleteSignatureException', "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.");
  const [, year, month, day, hour, minute, second] = dateMatch.map(Number) as number[];
  const date = new Date(Date.UTC(year!, month! - 1, day!, hour!, minute!, second!));
  if (Math.abs(date.getTime() - Date.now()) > MAX_CLOCK_SKEW_MS) return awsError(403, 'InvalidSignatureException', 'Signature expired.');
  if (scopeRegion !== region || service !== 'bedrock') {
    return awsError(
      403,
      'InvalidSignatureException',
      `Credential should be scoped to a valid region and to the bedrock service, not '${scopeRegion}/${service}'.`,
    );
  }
  const signedHeaders = signedHeaderList!.split(';');
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const value = request.headers[name];
    if (value === undefined) return awsError(403, 'InvalidSignatureException', SIGNATURE_MISMATCH);
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const claimedHash = request.headers['x-amz-content-sha256'];
  if (claimedHash !== undefined && claimedHash !== createHash('sha256').update(request.rawBody).digest('hex')) {
    return awsError(403, 'InvalidSignatureException', SIGNATURE_MISMATCH);
  }
  const resigned = await new SignatureV4({ service: 'bedrock', region, sha256: Sha256, credentials }).sign(
    {
      method: request.method,
      protocol: 'http:',
      hostname: '127.0.0.1',
      path: request.rawPath,
      query: Object.fromEntries(request.query),
      headers,
      body: request.rawBody.toString('utf8'),
    },
    { signingDate: date, signableHeaders: new Set(signedHeaders) },
  );
  const expected = /Signature=([0-9a-f]{64})$/.exec(String(resigned.headers.authorization ?? ''))?.[1];
  if (expected === undefined || !timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(signature!, 'hex'))) {
    return awsError(403, 'InvalidSignatureException', SIGNATURE_MISMATCH);
  }
  return undefined;
}

/** The assessment of one text, and whether the guardrail intervenes. */
function assess(text: string, source: string): { intervened: boolean; assessment: Record<string, unknown>; output: string } {
  const filters: object[] = [];
  if (hasFlagTrigger(text)) filters.push({ type: 'VIOLENCE', confidence: 'HIGH', filterStrength: 'HIGH', action: 'BLOCKED', detected: true });
  if (source === 'INPUT' && hasInjectionTrigger(text))
    filters.push({ type: 'PROMPT_ATTACK', confidence: 'HIGH', filterStrength: 'HIGH', action: 'BLOCKED', detected: true });
  // A filter that saw something too weak to act on, as Bedrock reports it.
  filters.push({ type: 'INSULTS', confidence: 'LOW', filterStrength: 'MEDIUM', action: 'NONE', detected: false });
  const emails = emailsOf(text);
  const topics = text.toLowerCase().includes('stock tips') ? [{ name: DENIED_TOPIC, type: 'DENY', action: 'BLOCKED', detected: true }] : [];
  const words = hasFlagTrigger(text) ? [{ match: FLAG_TRIGGER, action: 'BLOCKED', detected: true }] : [];
  const assessment: Record<string, unknown> = {
    contentPolicy: { filters },
    ...(topics.length > 0 ? { topicPolicy: { topics } } : {}),
    ...(words.length > 0 ? { wordPolicy: { customWords: words, managedWordLists: [] } } : {}),
    ...(emails.length > 0
      ? {
          sensitiveInformationPolicy: {
            piiEntities: emails.map((email) => ({ match: email.text, type: 'EMAIL', action: 'ANONYMIZED', detected: true })),
            regexes: [],
          },
        }
      : {}),
    invocationMetrics: { guardrailProcessingLatency: 120, usage: {}, guardrailCoverage: { textCharacters: { guarded: text.length, total: text.length } } },
  };
  const intervened = filters.length > 1 || topics.length > 0 || words.length > 0 || emails.length > 0;
  const blocked = filters.length > 1 || topics.length > 0 || words.length > 0;
  const output = blocked ? 'Sorry, the model cannot answer this question.' : emails.reduce((masked, email) => masked.split(email.text).join('{EMAIL}'), text);
  return { intervened, assessment, output };
}

/** The ApplyGuardrail answer of an accepted request. */
function applyGuardrail(request: FakeRequest, guardrails: ReadonlySet<string>): FakeAnswer {
  const match = /^\/guardrail\/([^/]+)\/version\/([^/]+)\/apply$/.exec(request.rawPath);
  if (request.method !== 'POST' || !match) return awsError(404, 'UnknownOperationException', 'Unknown operation');
  const [id, version] = [decodeURIComponent(match[1]!), decodeURIComponent(match[2]!)];
  if (!guardrails.has(`${id}@${version}`))
    return awsError(404, 'ResourceNotFoundException', 'The guardrail identifier or version provided in the request does not exist.');
  const body = request.body as { source?: unknown; content?: unknown } | undefined;
  if (body?.source !== 'INPUT' && body?.source !== 'OUTPUT')
    return awsError(400, 'ValidationException', "1 validation error detected: Value at 'source' failed to satisfy constraint.");
  const content = body.content;
  if (
    !Array.isArray(content) ||
    content.length === 0 ||
    content.some((block) => typeof (block as { text?: { text?: unknown } })?.text?.text !== 'string' || Object.keys(block as object).length !== 1)
  ) {
    return awsError(400, 'ValidationException', "1 validation error detected: Value at 'content' failed to satisfy constraint.");
  }
  const text = (content as Array<{ text: { text: string } }>).map((block) => block.text.text).join('\n');
  const { intervened, assessment, output } = assess(text, body.source);
  return {
    status: 200,
    headers: { 'x-amzn-requestid': randomBytes(16).toString('hex') },
    body: {
      usage: {
        topicPolicyUnits: 1,
        contentPolicyUnits: 1,
        wordPolicyUnits: 1,
        sensitiveInformationPolicyUnits: 1,
        sensitiveInformationPolicyFreeUnits: 0,
        contextualGroundingPolicyUnits: 0,
      },
      action: intervened ? 'GUARDRAIL_INTERVENED' : 'NONE',
      ...(intervened ? { actionReason: 'Guardrail blocked.' } : {}),
      outputs: intervened ? [{ text: output }] : [],
      assessments: [assessment],
      guardrailCoverage: { textCharacters: { guarded: text.length, total: text.length } },
    },
  };
}

/** Starts a fake Bedrock in `region` that knows `credentials` and the guardrails `id@version`. */
export async function startFakeBedrockGuardrails(options: {
  region: string;
  credentials: readonly FakeAwsCredentials[];
  guardrails: readonly string[];
}): Promise<FakeBedrockGuardrails> {
  const known = new Map(options.credentials.map((entry) => [entry.accessKeyId, entry]));
  const guardrails = new Set(options.guardrails);
  const fake = await startFakeService({
    refuseAuth: (request) => sigV4Refusal(request, options.region, known),
    answer: (request) => applyGuardrail(request, guardrails),
    failure: (status) => awsError(status, status === 503 ? 'ServiceUnavailableException' : 'InternalServerException', 'The server encountered an error.'),
  });
  return { ...fake, region: options.region };
}
