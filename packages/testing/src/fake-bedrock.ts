/**
 * A fake Amazon Bedrock runtime (and a fake STS beside it) for the bedrock adapter's tests and the
 * end-to-end tests: a plain HTTP/1.1 server that implements Converse and ConverseStream as the
 * Bedrock Runtime API reference documents them, and checks what the real service checks before it
 * answers:
 * - SigV4, recomputed here with AWS's own signer (@smithy/signature-v4) and the secret of the
 *   access key the request names: an unknown key or session token is refused (403
 *   UnrecognizedClientException), a date more than 5 minutes from now (403
 *   InvalidSignatureException "Signature expired"), a signature that does not match, because the
 *   secret is wrong or the body or a signed header changed after signing (403
 *   InvalidSignatureException); a Bedrock API key is accepted as `Authorization: Bearer` instead;
 * - the body, against the shapes shipped in @aws-sdk/client-bedrock-runtime (ConverseRequest$ and
 *   ConverseStreamRequest$: unknown fields, missing required members, unions with other than one
 *   member, wrong types are a 400 ValidationException), and the conversation rules (starts with a
 *   user turn, roles alternate, tool blocks need a toolConfig);
 * - the path: /model/{modelId}/converse or /converse-stream, the model id percent-encoded;
 * - InvokeModel (/model/{modelId}/invoke) on the embedding models: the body of the model's family
 *   as the Bedrock user guide documents it (Titan Text Embeddings V2: `inputText`, `dimensions` of
 *   256/512/1024, `normalize`; V1: `inputText` only; Cohere Embed: 1 to 96 `texts` and a required
 *   `input_type`), unknown fields refused, answered with vectors of fakeVectorOf and the input
 *   tokens in `x-amzn-bedrock-input-token-count` (and `inputTextTokenCount` for Titan).
 * Streams are encoded with AWS's codec (@smithy/eventstream-codec) as
 * `application/vnd.amazon.eventstream`, each event's payload padded with a `p` field as Bedrock
 * does. The fake STS answers AssumeRoleWithWebIdentity (the IRSA exchange) with temporary
 * credentials the fake Bedrock then accepts.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { fakeVectorOf } from './fake-embeddings.js';
import { afterBody, type AnswerEnd, closing, listenOn, withAnswerEnd } from './fake-http-server.js';

/** An access key the fake knows, with its secret (and the session token temporary keys come with). */
export interface FakeAwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** One request the fake Bedrock received and accepted (auth, path and body valid). */
export interface BedrockRequest extends AnswerEnd {
  readonly operation: 'converse' | 'converse-stream' | 'invoke';
  /** The model id, decoded from the path. */
  readonly modelId: string;
  /** The path exactly as sent. */
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
  /** The access key that signed it, or `api-key` for a bearer Bedrock API key. */
  readonly signedBy: string;
}

/** One message of a ConverseStream answer: an event, or an exception (which ends the stream). */
export type BedrockStreamMessage = { readonly event: string; readonly payload: object } | { readonly exception: string; readonly payload: object };

/** How the fake answers an accepted request. */
export type BedrockReply =
  | { readonly kind: 'converse'; readonly body: object }
  /** InvokeModel answered as the embedding model of the path does (fakeVectorOf of each text). */
  | { readonly kind: 'embed' }
  | {
      readonly kind: 'stream';
      readonly messages: readonly BedrockStreamMessage[];
      readonly delayMs?: number;
      readonly end?: boolean;
      readonly cutLastBytes?: number;
    }
  | {
      readonly kind: 'error';
      readonly status: number;
      readonly errorType: string;
      readonly message: string;
      readonly headers?: Readonly<Record<string, string>>;
    }
  | { readonly kind: 'silent' }
  /** The connection reset before any byte of the answer, as a crashing endpoint or a proxy in front of it does. */
  | { readonly kind: 'reset' };

/** A started fake Bedrock. */
export interface FakeBedrock {
  /** `http://127.0.0.1:<port>`, the catalog base_url. */
  readonly baseUrl: string;
  readonly region: string;
  readonly requests: BedrockRequest[];
  /** Every refusal it sent (auth, path, body), as `<status> <type>: <message>`. */
  readonly refusals: string[];
  /** Sets how the next accepted requests are answered. */
  reply(replier: (request: BedrockRequest) => BedrockReply): void;
  /** Accepts another access key (as STS hands out). */
  addCredentials(credentials: FakeAwsCredentials): void;
  close(): Promise<void>;
}

/** How far a request's date may be from the fake's clock, as AWS allows. */
const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** A ConverseStream message in AWS's binary framing, as Bedrock sends it. */
export function encodeStreamMessage(message: BedrockStreamMessage): Uint8Array {
  const isEvent = 'event' in message;
  const payload = isEvent
    ? { ...message.payload, p: 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ'.slice(0, 1 + (JSON.stringify(message.payload).length % 30)) }
    : message.payload;
  return codec.encode({
    headers: {
      ':message-type': { type: 'string', value: isEvent ? 'event' : 'exception' },
      [isEvent ? ':event-type' : ':exception-type']: { type: 'string', value: isEvent ? message.event : message.exception },
      ':content-type': { type: 'string', value: 'application/json' },
    },
    body: fromUtf8(JSON.stringify(payload)),
  });
}

/** A refusal in Bedrock's error shape: the type in x-amzn-errortype, `{ message }` as the body. */
function sendError(response: ServerResponse, status: number, errorType: string, message: string, headers: Readonly<Record<string, string>> = {}): void {
  response.writeHead(status, {
    'content-type': 'application/json',
    'x-amzn-errortype': `${errorType}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    'x-amzn-requestid': randomBytes(16).toString('hex'),
    ...headers,
  });
  response.end(JSON.stringify({ message }));
}

// --- Body validation against the SDK's shapes (the compact schema arrays of @smithy/core/schema). ---

type SchemaRef = unknown;

/** A member's schema without its traits wrapper, functions called. */
function resolve(schema: SchemaRef): unknown {
  let current = schema;
  for (;;) {
    if (typeof current === 'function') current = (current as () => unknown)();
    else if (Array.isArray(current) && current.length === 2) current = current[0];
    else if (Array.isArray(current) && current.length === 5 && current[0] === 0) current = current[4];
    else return current;
  }
}

/** Problems with a value against a schema, each `path: what`. */
function validate(value: unknown, schemaRef: SchemaRef, path: string): string[] {
  const schema = resolve(schemaRef);
  if (typeof schema === 'number') return validateSimple(value, schema, path);
  if (!Array.isArray(schema)) return [];
  const [kind] = schema as [number];
  if (kind === 1) {
    if (!Array.isArray(value)) return [`${path}: expected type: JSONArray`];
    return value.flatMap((item, index) => validate(item, schema[4], `${path}/${index}`));
  }
  if (kind === 2) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: expected type: JSONObject`];
    return Object.entries(value).flatMap(([key, item]) => validate(item, schema[5], `${path}/${key}`));
  }
  if (kind === 3 || kind === 4) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: expected type: JSONObject`];
    const names = schema[4] as string[];
    const members = schema[5] as SchemaRef[];
    const problems: string[] = [];
    for (const key of Object.keys(value)) if (!names.includes(key)) problems.push(`${path}: extraneous key [${key}] is not permitted`);
    const present = names.filter((name) => (value as Record<string, unknown>)[name] !== undefined && (value as Record<string, unknown>)[name] !== null);
    if (kind === 4 && present.length !== 1) problems.push(`${path}: exactly one of [${names.join(', ')}] must be set, got ${present.length}`);
    if (kind === 3) {
      const required = typeof schema[6] === 'number' ? (schema[6] as number) : 0;
      for (const name of names.slice(0, required))
        if (!present.includes(name) && !(path === '#' && name === 'modelId')) problems.push(`${path}: required key [${name}] not found`);
    }
    for (const name of present) problems.push(...validate((value as Record<string, unknown>)[name], members[names.indexOf(name)], `${path}/${name}`));
    return problems;
  }
  return [];
}

function validateSimple(value: unknown, schema: number, path: string): string[] {
  if (schema >= 128) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: expected type: JSONObject`];
    return Object.entries(value).flatMap(([key, item]) => validateSimple(item, schema & 63, `${path}/${key}`));
  }
  if (schema >= 64) {
    if (!Array.isArray(value)) return [`${path}: expected type: JSONArray`];
    return value.flatMap((item, index) => validateSimple(item, schema & 63, `${path}/${index}`));
  }
  switch (schema) {
    case 0:
      return typeof value === 'string' ? [] : [`${path}: expected type: String`];
    case 1:
      return typeof value === 'number' ? [] : [`${path}: expected type: Number`];
    case 2:
      return typeof value === 'boolean' ? [] : [`${path}: expected type: Boolean`];
    case 21:
      return typeof value === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(value) ? [] : [`${path}: expected a base64 blob`];
    default:
      return [];
  }
}

/** The conversation rules Bedrock enforces beyond the shapes. */
function conversationProblems(body: Record<string, unknown>): string[] {
  const messages = (body.messages ?? []) as Array<{ role?: string; content?: Array<Record<string, unknown>> }>;
  const problems: string[] = [];
  if (messages[0]?.role !== 'user')
    problems.push('A conversation must start with a user message. Try again with a conversation that starts with a user message.');
  messages.forEach((message, index) => {
    if (index > 0 && messages[index - 1]?.role === message.role) problems.push('A conversation must alternate between user and assistant roles.');
    for (const block of message.content ?? []) if (block.text === '') problems.push('The text field in the ContentBlock object is blank.');
  });
  const hasToolBlocks = messages.some((message) => (message.content ?? []).some((block) => 'toolUse' in block || 'toolResult' in block));
  if (hasToolBlocks && body.toolConfig === undefined) problems.push('The toolConfig field must be defined when using toolUse and toolResult content blocks.');
  return problems;
}

// --- SigV4 verification. ---

/** Parsed `Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`. */
function parseAuthorization(
  header: string,
): { accessKeyId: string; date: string; region: string; service: string; signedHeaders: string[]; signature: string } | undefined {
  const match = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
    header.trim(),
  );
  if (!match) return undefined;
  const [, accessKeyId, date, region, service, signedHeaders, signature] = match as unknown as string[];
  return { accessKeyId: accessKeyId!, date: date!, region: region!, service: service!, signedHeaders: signedHeaders!.split(';'), signature: signature! };
}

/** `20260127T101500Z` -> a Date; undefined when it is not one. */
function amzDate(text: string | undefined): Date | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text ?? '');
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second] = match.map(Number) as number[];
  return new Date(Date.UTC(year!, month! - 1, day!, hour!, minute!, second!));
}

/** Why a request's auth is refused (status, type, message); undefined when it is accepted, with who signed it. */
async function checkAuth(
  incoming: IncomingMessage,
  rawBody: Buffer,
  accepted: { region: string; credentials: ReadonlyMap<string, FakeAwsCredentials>; apiKeys: ReadonlySet<string>; service?: string },
): Promise<{ refused: [number, string, string] } | { signedBy: string }> {
  const { region, credentials, apiKeys, service = 'bedrock' } = accepted;
  const header = incoming.headers.authorization ?? '';
  if (header.startsWith('Bearer ')) {
    return apiKeys.has(header.slice('Bearer '.length))
      ? { signedBy: 'api-key' }
      : { refused: [403, 'UnrecognizedClientException', 'Invalid API Key format: Must start with pre-defined prefix'] };
  }
  const authorization = parseAuthorization(header);
  if (!authorization) return { refused: [403, 'MissingAuthenticationTokenException', 'Missing Authentication Token'] };
  const known = credentials.get(authorization.accessKeyId);
  const token = incoming.headers['x-amz-security-token'];
  if (!known || (known.sessionToken !== undefined && token !== known.sessionToken)) {
    return { refused: [403, 'UnrecognizedClientException', 'The security token included in the request is invalid.'] };
  }
  const date = amzDate(incoming.headers['x-amz-date'] as string | undefined);
  if (!date) return { refused: [403, 'IncompleteSignatureException', "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."] };
  if (Math.abs(date.getTime() - Date.now()) > MAX_CLOCK_SKEW_MS) {
    return {
      refused: [403, 'InvalidSignatureException', `Signature expired: ${incoming.headers['x-amz-date']} is now earlier than the allowed window of 5 minutes.`],
    };
  }
  if (authorization.region !== region || authorization.service !== service) {
    return {
      refused: [
        403,
        'InvalidSignatureException',
        `Credential should be scoped to a valid region and to the ${service} service, not '${authorization.region}/${authorization.service}'.`,
      ],
    };
  }
  const bodyHash = createHash('sha256').update(rawBody).digest('hex');
  const claimedHash = incoming.headers['x-amz-content-sha256'];
  // The signed headers as received; x-amz-content-sha256 is recomputed from the body itself.
  const headers: Record<string, string> = {};
  for (const name of authorization.signedHeaders) {
    const value = incoming.headers[name];
    if (value === undefined)
      return {
        refused: [
          403,
          'InvalidSignatureException',
          `The request signature we calculated does not match the signature you provided: signed header ${name} is missing.`,
        ],
      };
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  if (claimedHash !== undefined && claimedHash !== bodyHash) {
    return {
      refused: [
        403,
        'InvalidSignatureException',
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
      ],
    };
  }
  const [path, query = ''] = (incoming.url ?? '/').split('?') as [string, string?];
  const signer = new SignatureV4({ service, region, sha256: Sha256, credentials: known });
  const resigned = await signer.sign(
    {
      method: incoming.method ?? 'POST',
      protocol: 'http:',
      hostname: '127.0.0.1',
      path,
      query: Object.fromEntries(new URLSearchParams(query)),
      headers,
      body: rawBody.toString('utf8'),
    },
    { signingDate: date, signableHeaders: new Set(authorization.signedHeaders) },
  );
  const expected = parseAuthorization(String(resigned.headers.authorization ?? ''));
  const same =
    expected !== undefined &&
    expected.signedHeaders.join(';') === authorization.signedHeaders.join(';') &&
    timingSafeEqual(Buffer.from(expected.signature, 'hex'), Buffer.from(authorization.signature, 'hex'));
  if (!same) {
    return {
      refused: [
        403,
        'InvalidSignatureException',
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
      ],
    };
  }
  return { signedBy: authorization.accessKeyId };
}

/** The embedding family of a model id (foundation model, inference profile or ARN ending in it). */
function embeddingFamily(modelId: string): 'titan-v1' | 'titan-v2' | 'cohere' | undefined {
  if (/(?:^|[./])amazon\.titan-embed-text-v2/.test(modelId)) return 'titan-v2';
  if (/(?:^|[./])amazon\.titan-embed-text-v1/.test(modelId)) return 'titan-v1';
  if (/(?:^|[./])cohere\.embed-/.test(modelId)) return 'cohere';
  return undefined;
}

/** What is wrong with an InvokeModel body for an embedding model, as Bedrock's ValidationException lists it. */
function embeddingProblems(modelId: string, body: Record<string, unknown>): string[] {
  const family = embeddingFamily(modelId);
  if (family === undefined) return ['the provided model identifier is not an embedding model this fake serves'];
  const allowed =
    family === 'titan-v2'
      ? ['inputText', 'dimensions', 'normalize', 'embeddingTypes']
      : family === 'titan-v1'
        ? ['inputText']
        : ['texts', 'input_type', 'truncate', 'embedding_types', 'output_dimension', 'max_tokens'];
  const problems = Object.keys(body)
    .filter((key) => !allowed.includes(key))
    .map((key) => `extraneous key [${key}] is not permitted`);
  if (family === 'cohere') {
    const { texts, input_type: inputType } = body;
    if (!Array.isArray(texts) || texts.length === 0 || !texts.every((text) => typeof text === 'string' && text !== ''))
      problems.push('#/texts: expected 1 to 96 non-empty strings');
    else if (texts.length > 96) problems.push(`#/texts: expected maximum item count: 96, found: ${texts.length}`);
    if (!['search_document', 'search_query', 'classification', 'clustering'].includes(inputType as string))
      problems.push('#/input_type: search_document, search_query, classification or clustering is required');
  } else {
    if (typeof body.inputText !== 'string' || body.inputText === '') problems.push('#/inputText: expected a non-empty string');
    if (body.dimensions !== undefined && ![256, 512, 1024].includes(body.dimensions as number))
      problems.push(`#/dimensions: ${String(body.dimensions)} is not a valid enum value`);
    if (body.normalize !== undefined && typeof body.normalize !== 'boolean') problems.push('#/normalize: expected type: Boolean');
  }
  return problems;
}

/** Words the fake counts as tokens: one per whitespace-separated word. */
function wordCount(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** InvokeModel's answer for a valid embedding body, and its input tokens. */
function embeddingAnswer(modelId: string, body: Record<string, unknown>): { body: object; tokens: number } {
  if (embeddingFamily(modelId) === 'cohere') {
    const texts = body.texts as string[];
    return {
      body: { id: randomBytes(8).toString('hex'), response_type: 'embeddings_floats', embeddings: texts.map((text) => fakeVectorOf(text, 1024)), texts },
      tokens: texts.reduce((sum, text) => sum + wordCount(text), 0),
    };
  }
  const text = body.inputText as string;
  const tokens = wordCount(text);
  return { body: { embedding: fakeVectorOf(text, typeof body.dimensions === 'number' ? body.dimensions : 1024), inputTextTokenCount: tokens }, tokens };
}

/** Starts a fake Bedrock runtime on a free port of 127.0.0.1 for `region`, accepting `credentials` and `apiKeys`. */
export async function startFakeBedrock(options: {
  region: string;
  credentials: readonly FakeAwsCredentials[];
  apiKeys?: readonly string[];
}): Promise<FakeBedrock> {
  // Loaded here, not with the module: every test that imports @gateway/testing would pay for the SDK.
  const { ConverseRequest$, ConverseStreamRequest$ } = await import('@aws-sdk/client-bedrock-runtime');
  const credentials = new Map(options.credentials.map((entry) => [entry.accessKeyId, entry]));
  const apiKeys = new Set(options.apiKeys ?? []);
  const requests: BedrockRequest[] = [];
  const refusals: string[] = [];
  let replier: (request: BedrockRequest) => BedrockReply = () => ({
    kind: 'error',
    status: 500,
    errorType: 'InternalServerException',
    message: 'no reply set',
  });
  const refuse = (response: ServerResponse, status: number, type: string, message: string) => {
    refusals.push(`${status} ${type}: ${message}`);
    sendError(response, status, type, message);
  };

  const handle = async (incoming: IncomingMessage, rawBody: Buffer, response: ServerResponse) => {
    const auth = await checkAuth(incoming, rawBody, { region: options.region, credentials, apiKeys });
    if ('refused' in auth) return refuse(response, ...auth.refused);
    const match = /^\/model\/([^/]+)\/(converse|converse-stream|invoke)$/.exec(incoming.url ?? '');
    if (incoming.method !== 'POST' || !match) return refuse(response, 404, 'UnknownOperationException', 'Unknown operation');
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(rawBody.toString('utf8')) as Record<string, unknown>;
    } catch {
      return refuse(response, 400, 'ValidationException', 'Malformed input request, please reformat your input and try again.');
    }
    const operation = match[2] as 'converse' | 'converse-stream' | 'invoke';
    const problems =
      operation === 'invoke'
        ? embeddingProblems(decodeURIComponent(match[1]!), body)
        : [...validate(body, operation === 'converse' ? ConverseRequest$ : ConverseStreamRequest$, '#'), ...conversationProblems(body)];
    if (problems.length > 0)
      return refuse(response, 400, 'ValidationException', `Malformed input request: ${problems.join(', ')}, please reformat your input and try again.`);
    const request: BedrockRequest = withAnswerEnd(
      { operation, modelId: decodeURIComponent(match[1]!), path: incoming.url ?? '', headers: incoming.headers, body, signedBy: auth.signedBy },
      response,
    );
    requests.push(request);
    const reply = replier(request);
    const requestId = randomBytes(16).toString('hex');
    switch (reply.kind) {
      case 'silent':
        return;
      case 'reset':
        incoming.socket.resetAndDestroy();
        return;
      case 'error':
        return sendError(response, reply.status, reply.errorType, reply.message, reply.headers);
      case 'converse':
        response.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': requestId });
        return response.end(JSON.stringify(reply.body));
      case 'embed': {
        if (operation !== 'invoke') return refuse(response, 400, 'ValidationException', 'The fake was told to embed on a Converse call.');
        const { body: answer, tokens } = embeddingAnswer(request.modelId, body);
        response.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': requestId, 'x-amzn-bedrock-input-token-count': String(tokens) });
        return response.end(JSON.stringify(answer));
      }
      case 'stream': {
        if (operation !== 'converse-stream') return refuse(response, 400, 'ValidationException', 'The fake was told to stream a Converse answer.');
        response.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': requestId });
        const frames = reply.messages.map(encodeStreamMessage);
        for (const [index, frame] of frames.entries()) {
          if (response.destroyed) return;
          const last = index === frames.length - 1;
          response.write(last && reply.cutLastBytes ? frame.subarray(0, frame.length - reply.cutLastBytes) : frame);
          if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
        }
        if (reply.end !== false) response.end();
        return;
      }
    }
  };

  const server: Server = createServer(
    afterBody((incoming, body, response) => {
      void handle(incoming, body, response).catch(() => response.destroy());
    }),
  );
  return {
    baseUrl: await listenOn(server),
    region: options.region,
    requests,
    refusals,
    reply: (next) => {
      replier = next;
    },
    addCredentials: (entry) => {
      credentials.set(entry.accessKeyId, entry);
    },
    close: closing(server),
  };
}

/** A started fake STS. */
export interface FakeSts {
  /** `http://127.0.0.1:<port>`, for AWS_ENDPOINT_URL_STS. */
  readonly url: string;
  /** The web identity tokens it exchanged, in order. */
  readonly exchanged: string[];
  /** The AssumeRole calls it granted, in order: the role, who signed the call, its session name and external id. */
  readonly assumed: Array<{ roleArn: string; signedBy: string; sessionName: string; externalId?: string }>;
  close(): Promise<void>;
}

/** A role the fake STS lets be assumed (AssumeRole): by whom, and with which external id. */
export interface FakeAssumableRole {
  readonly roleArn: string;
  /** The keys its trust policy lets assume it; the call's SigV4 (service sts) is checked against them. */
  readonly trusted: readonly FakeAwsCredentials[];
  /** The external id the trust policy requires, when it requires one. */
  readonly externalId?: string;
}

/**
 * A fake STS answering AssumeRoleWithWebIdentity (AWS's query protocol, XML answer) for `roleArn`
 * and a token equal to `token`, and AssumeRole of the `roles` given (its SigV4 for `region`
 * recomputed as STS does, the caller one the role trusts, the external id the role requires), with
 * temporary credentials it first hands to `onIssue` (the fake Bedrock's addCredentials). Any other
 * action, role, token, signer or external id is refused as STS refuses it.
 */
export async function startFakeSts(options: {
  roleArn: string;
  token: string;
  onIssue: (credentials: FakeAwsCredentials) => void;
  roles?: readonly FakeAssumableRole[];
  region?: string;
}): Promise<FakeSts> {
  const exchanged: string[] = [];
  const assumed: FakeSts['assumed'] = [];
  const server = createServer(
    afterBody((incoming, body, response) => {
      const form = new URLSearchParams(body.toString('utf8'));
      const fail = (status: number, code: string, message: string) => {
        response.writeHead(status, { 'content-type': 'text/xml' });
        response.end(
          `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>${randomBytes(8).toString('hex')}</RequestId></ErrorResponse>`,
        );
      };
      if (form.get('Action') === 'AssumeRole') {
        void assumeRole(incoming, body, form, fail, response).catch(() => response.destroy());
        return;
      }
      if (form.get('Action') !== 'AssumeRoleWithWebIdentity') return fail(400, 'InvalidAction', 'Could not find operation');
      if (form.get('RoleArn') !== options.roleArn) return fail(403, 'AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
      const token = form.get('WebIdentityToken') ?? '';
      exchanged.push(token);
      if (token !== options.token) return fail(400, 'InvalidIdentityToken', "Couldn't retrieve verification key from your identity provider");
      const issued: FakeAwsCredentials = {
        accessKeyId: `ASIA${randomBytes(8).toString('hex').toUpperCase()}`,
        secretAccessKey: randomBytes(20).toString('base64'),
        sessionToken: randomBytes(48).toString('base64'),
      };
      options.onIssue(issued);
      const expiration = new Date(Date.now() + 60 * 60 * 1000).toISOString();
      response.writeHead(200, { 'content-type': 'text/xml' });
      response.end(
        `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>` +
          `<Credentials><AccessKeyId>${issued.accessKeyId}</AccessKeyId><SecretAccessKey>${issued.secretAccessKey}</SecretAccessKey>` +
          `<SessionToken>${issued.sessionToken}</SessionToken><Expiration>${expiration}</Expiration></Credentials>` +
          `<SubjectFromWebIdentityToken>system:serviceaccount:gateway:executor</SubjectFromWebIdentityToken>` +
          `<AssumedRoleUser><AssumedRoleId>AROAFAKE:${form.get('RoleSessionName') ?? ''}</AssumedRoleId><Arn>${options.roleArn}/${form.get('RoleSessionName') ?? ''}</Arn></AssumedRoleUser>` +
          `</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>${randomBytes(8).toString('hex')}</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`,
      );
    }),
  );
  const assumeRole = async (
    incoming: IncomingMessage,
    body: Buffer,
    form: URLSearchParams,
    fail: (status: number, code: string, message: string) => void,
    response: ServerResponse,
  ) => {
    const role = options.roles?.find((entry) => entry.roleArn === form.get('RoleArn'));
    const trusted = new Map((role?.trusted ?? []).map((entry) => [entry.accessKeyId, entry]));
    const auth = await checkAuth(incoming, body, { region: options.region ?? 'us-east-1', credentials: trusted, apiKeys: new Set(), service: 'sts' });
    if ('refused' in auth) return fail(403, 'AccessDenied', `User is not authorized to perform: sts:AssumeRole (${auth.refused[1]})`);
    if (!role) return fail(403, 'AccessDenied', 'User is not authorized to perform: sts:AssumeRole');
    const externalId = form.get('ExternalId') ?? undefined;
    if (role.externalId !== undefined && externalId !== role.externalId)
      return fail(403, 'AccessDenied', 'User is not authorized to perform: sts:AssumeRole on resource');
    const sessionName = form.get('RoleSessionName') ?? '';
    if (!/^[\w+=,.@-]{2,64}$/.test(sessionName)) return fail(400, 'ValidationError', 'Invalid RoleSessionName');
    const issued = temporaryCredentials();
    options.onIssue(issued);
    assumed.push({ roleArn: role.roleArn, signedBy: auth.signedBy, sessionName, ...(externalId === undefined ? {} : { externalId }) });
    const expiration = new Date(Date.now() + 60 * 60 * 1000).toISOString();
    response.writeHead(200, { 'content-type': 'text/xml' });
    response.end(
      `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>` +
        `<Credentials><AccessKeyId>${issued.accessKeyId}</AccessKeyId><SecretAccessKey>${issued.secretAccessKey}</SecretAccessKey>` +
        `<SessionToken>${issued.sessionToken}</SessionToken><Expiration>${expiration}</Expiration></Credentials>` +
        `<AssumedRoleUser><AssumedRoleId>AROAFAKE:${sessionName}</AssumedRoleId><Arn>${role.roleArn}/${sessionName}</Arn></AssumedRoleUser>` +
        `</AssumeRoleResult><ResponseMetadata><RequestId>${randomBytes(8).toString('hex')}</RequestId></ResponseMetadata></AssumeRoleResponse>`,
    );
  };
  return { url: await listenOn(server), exchanged, assumed, close: closing(server) };
}

/** A started fake credentials endpoint (the ECS/EKS Pod Identity container endpoint or EC2's IMDS). */
export interface FakeCredentialsEndpoint {
  /** `http://127.0.0.1:<port>` (for IMDS, AWS_EC2_METADATA_SERVICE_ENDPOINT; for the container endpoint, its base). */
  readonly url: string;
  /** The credentials it hands out (temporary, with a session token). */
  readonly credentials: FakeAwsCredentials;
  /** How many times it handed them out. */
  served(): number;
  close(): Promise<void>;
}

function temporaryCredentials(): Required<FakeAwsCredentials> {
  return {
    accessKeyId: `ASIA${randomBytes(8).toString('hex').toUpperCase()}`,
    secretAccessKey: randomBytes(20).toString('base64'),
    sessionToken: randomBytes(48).toString('base64'),
  };
}

/**
 * The container credentials endpoint of ECS task roles and EKS Pod Identity
 * (AWS_CONTAINER_CREDENTIALS_FULL_URI): GET with the `Authorization` header the task gets in
 * AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE) answers `{AccessKeyId, SecretAccessKey, Token,
 * Expiration}`; a wrong or missing token is a 401.
 */
export async function startFakeContainerCredentials(options: {
  authorizationToken: string;
  onIssue: (credentials: FakeAwsCredentials) => void;
}): Promise<FakeCredentialsEndpoint> {
  const credentials = temporaryCredentials();
  options.onIssue(credentials);
  let served = 0;
  const server = createServer((incoming, response) => {
    if (incoming.method !== 'GET' || incoming.headers.authorization !== options.authorizationToken) {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"code":"AccessDeniedException","message":"Invalid authorization token"}');
      return;
    }
    served += 1;
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        AccessKeyId: credentials.accessKeyId,
        SecretAccessKey: credentials.secretAccessKey,
        Token: credentials.sessionToken,
        AccountId: '123456789012',
        Expiration: new Date(Date.now() + 60 * 60 * 1000).toISOString(),
      }),
    );
  });
  return { url: await listenOn(server), credentials, served: () => served, close: closing(server) };
}

/**
 * EC2's instance metadata service with IMDSv2 only: PUT /latest/api/token gives a session token,
 * required (as x-aws-ec2-metadata-token) by GET /latest/meta-data/iam/security-credentials/ (the
 * role's name) and GET .../security-credentials/<role> (the role's temporary credentials); a
 * request without the token is a 401, as on an instance that requires IMDSv2.
 */
export async function startFakeImds(options: { roleName: string; onIssue: (credentials: FakeAwsCredentials) => void }): Promise<FakeCredentialsEndpoint> {
  const credentials = temporaryCredentials();
  options.onIssue(credentials);
  const sessionToken = randomBytes(24).toString('base64');
  let served = 0;
  const server = createServer((incoming, response) => {
    const path = (incoming.url ?? '').replace(/\/+$/, '');
    if (incoming.method === 'PUT' && path === '/latest/api/token') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end(sessionToken);
      return;
    }
    if (incoming.headers['x-aws-ec2-metadata-token'] !== sessionToken) {
      response.writeHead(401).end();
      return;
    }
    if (incoming.method === 'GET' && path === '/latest/meta-data/iam/security-credentials') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end(options.roleName);
      return;
    }
    if (incoming.method === 'GET' && path === `/latest/meta-data/iam/security-credentials/${options.roleName}`) {
      served += 1;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          Code: 'Success',
          LastUpdated: new Date().toISOString(),
          Type: 'AWS-HMAC',
          AccessKeyId: credentials.accessKeyId,
          SecretAccessKey: credentials.secretAccessKey,
          Token: credentials.sessionToken,
          Expiration: new Date(Date.now() + 60 * 60 * 1000).toISOString(),
        }),
      );
      return;
    }
    response.writeHead(404).end();
  });
  return { url: await listenOn(server), credentials, served: () => served, close: closing(server) };
}
