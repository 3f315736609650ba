/**
 * What every route of OpenAI's Files and Batch APIs shares (files.ts, batches.ts): the caller's key
 * checked with auth (only checked: reading or keeping a file counts no request and reserves no
 * token), the key's owner `{key_id, team_id}` that every call to the batch service carries, the 404
 * of a gateway without a batch service, one unary call, and a failure of the batch service as the
 * error a client receives.
 */
import type { FastifyRequest } from 'fastify';
import { callUnary, GatewayError, GrpcStatus, type CallOptions } from '@gateway/grpc';
import type { BatchOwner, BatchServiceClient } from '@gateway/proto';
import { checkKey, noteKeyChecked, requestKey } from '../../auth/key-check.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { edgeError, UNAVAILABLE } from '../../error-codes.js';
import { fromGatewayError, RequestError } from '../../errors.js';

/** What a gateway without a batch service (BATCH_SERVICE_ADDR empty) answers on /v1/files and /v1/batches. */
export const NO_BATCH_SERVICE =
  'The gateway has no batch service configured: the Files and Batch APIs (/v1/files, /v1/batches, /v1/messages/batches) are not served here.';

/** The caller of a batch route, once its key is checked. */
export interface BatchCaller {
  /** The batch service's client. */
  batch: BatchServiceClient;
  /** Whose files and batches these are: the key's public id and its team ('' for none). */
  owner: BatchOwner;
  /**
   * The caller's own key as it sent it: only CreateBatch passes it on (each line of the batch is
   * sent to the edge with it); never logged, never in an answer.
   */
  apiKey: string;
}

/**
 * Checks the request's key (a 401 for a missing, unknown or revoked one, before anything else), then
 * answers the 404 of a gateway without a batch service, else the caller.
 */
export async function batchCaller(deps: EdgeDependencies, request: FastifyRequest): Promise<BatchCaller> {
  noteKeyChecked(request);
  const apiKey = requestKey(request);
  const decision = await checkKey(deps, apiKey, request.id);
  if (!deps.batch) throw edgeError('batch_not_configured', NO_BATCH_SERVICE);
  return { batch: deps.batch, owner: { key_id: decision.key_id ?? '', team_id: decision.team_id ?? '' }, apiKey };
}

/**
 * A failure of the batch service as the error to send: a service that cannot answer (down, or past
 * the deadline) is a 503 that says so; its own refusals map as every peer's do (errors.ts: NOT_FOUND
 * a 404, INVALID_ARGUMENT a 400 with its param, the registry's status for a registered reason).
 */
export function batchFailure(deps: EdgeDependencies, error: unknown, requestId: string): RequestError {
  if (error instanceof RequestError) return error;
  const failure = error instanceof GatewayError ? error : GatewayError.fromServiceError(error);
  if (failure.code === GrpcStatus.UNAVAILABLE || failure.code === GrpcStatus.DEADLINE_EXCEEDED) {
    deps.logger.warn({ request_id: requestId, reason: failure.reason }, 'the batch service could not answer');
    return UNAVAILABLE.batch();
  }
  return fromGatewayError(failure);
}

/** The options of a call of a request to the batch service: its request id and a deadline of `deadlineMs`. */
export function batchCallOptions(request: FastifyRequest, deadlineMs: number): CallOptions {
  return { deadlineMs, requestId: request.id };
}

/** The deadline of a unary call to the batch service (ms): a database read or write, more than a control call's. */
export function unaryDeadlineMs(deps: EdgeDependencies): number {
  return Math.max(deps.config.EDGE_CONTROL_DEADLINE_MS, 10_000);
}

type UnaryMethod<Request, Response> = Parameters<typeof callUnary<Request, Response>>[1];

/** One unary call to the batch service; a failure throws what batchFailure makes of it. */
export async function callBatch<Request, Response>(
  deps: EdgeDependencies,
  request: FastifyRequest,
  caller: BatchCaller,
  method: UnaryMethod<Request, Response>,
  message: Request,
): Promise<Response> {
  try {
    return await callUnary<Request, Response>(caller.batch, method, message, batchCallOptions(request, unaryDeadlineMs(deps)));
  } catch (error) {
    throw batchFailure(deps, error, request.id);
  }
}
