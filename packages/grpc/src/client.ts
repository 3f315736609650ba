import * as grpc from '@grpc/grpc-js';
import { installAddressResolver } from './address-resolver.js';
import { GatewayError } from './gateway-error.js';

// Every channel of the process resolves `dns:` names again every few seconds, so that replicas
// added behind a name get calls (address-resolver.ts).
installAddressResolver();

/** The metadata key carrying the edge's request id to every service. */
export const REQUEST_ID_METADATA = 'x-request-id';

/**
 * Channel options for long-lived channels: keepalive so a dead peer is noticed, round-robin over
 * every address a name resolves to (so `dns:///executor:50053` spreads over all replicas, the set
 * resolved again every few seconds: see address-resolver.ts), and retries of calls that never
 * reached a server.
 */
export function channelOptions(extra: grpc.ChannelOptions = {}): grpc.ChannelOptions {
  return {
    'grpc.keepalive_time_ms': 15_000,
    'grpc.keepalive_timeout_ms': 5_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    'grpc.initial_reconnect_backoff_ms': 200,
    'grpc.max_reconnect_backoff_ms': 2_000,
    'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
    ...extra,
  };
}

/** Creates a client on a long-lived insecure channel; create one per process and reuse it. */
export function createClient<Client extends grpc.Client>(
  Constructor: new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => Client,
  address: string,
  options?: grpc.ChannelOptions,
): Client {
  return new Constructor(address, grpc.credentials.createInsecure(), channelOptions(options));
}

/** Per-call options: every call has a deadline. */
export interface CallOptions {
  deadlineMs: number;
  requestId?: string;
  /** Cancels the call when aborted (a client that went away). */
  signal?: AbortSignal;
  /** The caller's span as a W3C traceparent: the parent of the server's span (metadata `traceparent`). */
  traceparent?: string;
  /** Who asked for the call (an admin API principal): what an audited change records (metadata `gateway-actor`). */
  actor?: CallActor;
}

/**
 * The principal on whose behalf a call is made, as the edge's admin API resolved it. Never a
 * secret: a subject is `static-token`, an admin token's id or an SSO user's subject.
 */
export interface CallActor {
  subject: string;
  /** `admin` or `viewer`. */
  role: string;
  /** Where the credential came from: `static_token`, `admin_token`, `sso_session`, `cli`. */
  via: string;
}

/**
 * The metadata key carrying a call's actor: `<role> <via> <subject>`, the subject percent-encoded
 * (encodeURIComponent) so that any subject fits ASCII metadata and splits unambiguously.
 */
export const ACTOR_METADATA = 'gateway-actor';

/** A call's actor as the `gateway-actor` metadata value. */
export function encodeActor(actor: CallActor): string {
  return `${actor.role} ${actor.via} ${encodeURIComponent(actor.subject)}`;
}

/** The actor a caller sent, or undefined when none or malformed. */
export function actorOf(call: { metadata: grpc.Metadata }): CallActor | undefined {
  const value = call.metadata.get(ACTOR_METADATA)[0];
  const match = typeof value === 'string' ? /^([a-z_]{1,32}) ([a-z_]{1,32}) (\S{1,512})$/.exec(value) : null;
  if (!match) return undefined;
  try {
    return { role: match[1]!, via: match[2]!, subject: decodeURIComponent(match[3]!) };
  } catch {
    return undefined;
  }
}

/** The gRPC metadata key, and call-stream field, that carries a W3C traceparent. */
export const TRACEPARENT_METADATA = 'traceparent';

/** Builds the metadata and grpc-js options of one call. */
export function callMetadata(options: CallOptions): { metadata: grpc.Metadata; callOptions: grpc.CallOptions } {
  const metadata = new grpc.Metadata();
  if (options.requestId) metadata.set(REQUEST_ID_METADATA, options.requestId);
  if (options.traceparent) metadata.set(TRACEPARENT_METADATA, options.traceparent);
  if (options.actor) metadata.set(ACTOR_METADATA, encodeActor(options.actor));
  return { metadata, callOptions: { deadline: Date.now() + options.deadlineMs } };
}

type UnaryMethod<Request, Response> = (
  request: Request,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: grpc.requestCallback<Response>,
) => grpc.ClientUnaryCall;

/**
 * Calls a unary method and resolves with its response; a failure rejects with a GatewayError
 * rebuilt from the status and its ErrorInfo trailer.
 */
export function callUnary<Request, Response>(
  client: grpc.Client,
  method: UnaryMethod<Request, Response>,
  request: Request,
  options: CallOptions,
): Promise<Response> {
  const { metadata, callOptions } = callMetadata(options);
  return new Promise<Response>((resolve, reject) => {
    const call = withoutCallerStack(() =>
      method.call(client, request, metadata, callOptions, (error, response) => {
        options.signal?.removeEventListener('abort', cancel);
        if (error) reject(GatewayError.fromServiceError(error));
        else resolve(response as Response);
      }),
    );
    function cancel() {
      call.cancel();
    }
    if (options.signal?.aborted) call.cancel();
    else options.signal?.addEventListener('abort', cancel, { once: true });
  });
}

/**
 * Starts a grpc-js call without the stack trace grpc-js captures for every call (an Error built at
 * the start, kept until the call ends, to add the caller's stack to the call's error): the gateway
 * never shows that stack (GatewayError carries the status and ErrorInfo), and capturing it costs
 * CPU on every call and memory for the life of every stream.
 */
export function withoutCallerStack<Call>(start: () => Call): Call {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return start();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** Reads the request id a caller sent, or '' when none. */
export function requestIdOf(call: { metadata: grpc.Metadata }): string {
  const value = call.metadata.get(REQUEST_ID_METADATA)[0];
  return typeof value === 'string' ? value : '';
}
