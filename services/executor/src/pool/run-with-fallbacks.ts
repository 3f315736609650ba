/**
 * The failure handling of one request before its first byte: try the model's deployments, retry
 * retryable failures with backoff and jitter (honouring the upstream's retry hint, never past the
 * call's deadline), then the fallback models in order. Only `retryable` decides whether to go on
 * (a 400 fails the same everywhere); a model with no usable deployment is skipped at once. Every
 * outcome is reported to the deployment's breaker: retryable failures count against it, a 429 with
 * a hint holds it out for that long, anything else (a 4xx, a cancelled call) says nothing.
 *
 * `start` runs the request on a deployment and resolves at the first byte (a whole response, or a
 * stream's first event): after that nothing is retried, since the caller may have seen output.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { decorrelatedJitterGenerator, ExponentialBackoff, type IBackoff } from 'cockatiel';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { ExecutionAttempt } from '@gateway/proto';
import { UpstreamError } from '../providers/upstream-error.js';
import { toGatewayError } from '../to-gateway-error.js';
import type { Deployment, DeploymentPool } from './deployment-pool.js';

/** Retry tuning. */
export interface RetryOptions {
  /** Tries of one model (first try included) before its fallbacks. */
  readonly maxAttempts: number;
  /** The first backoff; later ones grow exponentially, with decorrelated jitter. */
  readonly baseDelayMs: number;
  /** The longest wait before a retry; a retry hint above it moves on to the next model instead. */
  readonly maxDelayMs: number;
}

/** What a request runs. */
export interface RunPlan<T> {
  readonly pool: DeploymentPool;
  /** The model asked for, then its fallbacks in order. */
  readonly models: readonly string[];
  /** Aborted when the call is cancelled: stops retries and fallbacks at once. */
  readonly signal: AbortSignal;
  /** Unix ms after which the caller no longer waits (the gRPC deadline); Infinity for none. */
  readonly deadline: number;
  readonly retry: RetryOptions;
  /** Runs the request on a deployment and resolves at its first byte. */
  start(deployment: Deployment): Promise<T>;
  /** Called before each retry of the same model, for metrics. */
  onRetry?(modelId: string, reason: string): void;
}

/** What answered. */
export interface Started<T> {
  readonly value: T;
  /** The deployment that answered; the caller reports a later failure and calls `finish`. */
  readonly deployment: Deployment;
  /** The models passed over before it. */
  readonly attempts: ExecutionAttempt[];
}

/** Leaves at least this much of the deadline for the retried call itself. */
const DEADLINE_MARGIN_MS = 50;

/** Reports what a failure says about the deployment to its breaker. */
export function blame(deployment: Deployment, error: unknown, signal: AbortSignal): void {
  if (signal.aborted || deployment.inProcess || !(error instanceof UpstreamError)) deployment.breaker.release();
  else if (error.status === 429 && error.retryAfterMs !== undefined && error.retryAfterMs > 0) deployment.breaker.hold(error.retryAfterMs);
  else if (error.retryable) deployment.breaker.failure();
  else deployment.breaker.release();
}

function reasonOf(error: unknown): string {
  const mapped = toGatewayError(error);
  return mapped instanceof GatewayError ? mapped.reason : 'internal_error';
}

/** Whether trying again (here or on a fallback) may help. */
function worthAnotherTry(error: unknown): boolean {
  if (error instanceof UpstreamError) return error.retryable;
  // A provider this executor cannot speak: another model may be served by one it can.
  return error instanceof GatewayError && error.reason === 'model_unavailable';
}

/**
 * Runs the plan. Resolves with the first deployment that reached its first byte; rejects with the
 * first non-retryable failure, the cancellation, or, when every model failed, the last failure
 * seen (or UNAVAILABLE `model_unavailable` with the earliest retry-after when no model had a
 * usable deployment to try).
 */
export async function runWithFallbacks<T>(plan: RunPlan<T>): Promise<Started<T>> {
  const attempts: ExecutionAttempt[] = [];
  const backoffFactory = new ExponentialBackoff({ initialDelay: plan.retry.baseDelayMs, maxDelay: plan.retry.maxDelayMs, generator: decorrelatedJitterGenerator });
  let lastError: unknown;
  let earliestRetryMs: number | undefined;

  for (const modelId of plan.models) {
    plan.signal.throwIfAborted();
    if (!plan.pool.has(modelId)) {
      attempts.push({ model_id: modelId, reason: 'model_not_found', tries: 0 });
      continue;
    }
    const avoid = new Set<Deployment>();
    let backoff: IBackoff<unknown> | undefined;
    let tries = 0;
    let failure: unknown;
    while (tries < plan.retry.maxAttempts) {
      const deployment = plan.pool.pick(modelId, avoid);
      if (!deployment) break;
      tries += 1;
      const sentAt = performance.now();
      try {
        const value = await plan.start(deployment);
        deployment.breaker.success();
        deployment.observeLatency(performance.now() - sentAt);
        return { value, deployment, attempts };
      } catch (error) {
        deployment.outstanding -= 1;
        blame(deployment, error, plan.signal);
        plan.signal.throwIfAborted();
        if (!worthAnotherTry(error)) throw error;
        failure = error;
        avoid.add(deployment);
        // A simulated failure is written in the request: it would fail the same way again.
        if (deployment.inProcess || !(error instanceof UpstreamError) || tries >= plan.retry.maxAttempts) break;
        backoff = backoff ? backoff.next(undefined) : backoffFactory.next();
        const hint = error.retryAfterMs ?? 0;
        if (hint > plan.retry.maxDelayMs && plan.pool.deploymentsOf(modelId).length === avoid.size) break;
        const delay = hint > 0 && hint <= plan.retry.maxDelayMs ? Math.max(hint, backoff.duration) : backoff.duration;
        if (Date.now() + delay + DEADLINE_MARGIN_MS >= plan.deadline) break;
        plan.onRetry?.(modelId, reasonOf(error));
        await sleep(delay, undefined, { signal: plan.signal });
      }
    }
    if (failure === undefined) {
      const wait = plan.pool.retryAfterMs(modelId);
      if (wait > 0) earliestRetryMs = Math.min(earliestRetryMs ?? wait, wait);
      attempts.push({ model_id: modelId, reason: 'model_unavailable', tries });
    } else {
      lastError = failure;
      const status = failure instanceof UpstreamError ? failure.status : undefined;
      attempts.push({ model_id: modelId, reason: reasonOf(failure), tries, ...(status === undefined ? {} : { upstream_status: status }) });
    }
  }
  if (lastError !== undefined) throw lastError;
  const primary = plan.models[0] ?? '';
  throw new GatewayError(GrpcStatus.UNAVAILABLE, 'model_unavailable', `The model \`${primary}\` is temporarily unavailable: no deployment is healthy. Please retry later.`, {
    retryable: true,
    retryAfterMs: Math.max(1000, earliestRetryMs ?? 1000),
  });
}
