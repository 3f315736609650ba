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
 *
 * A model is unavailable, from the first request on, when no deployment could be tried (every
 * breaker open) or when the last of its tries failed in a way that says its upstream cannot be
 * reached or cannot serve (UpstreamError `failureClass` `unavailable`: refused, reset, DNS, timeout
 * before the headers, 5xx, 429, 529). Either way it is recorded as `model_unavailable`, its
 * fallbacks are tried, and if none answers the call fails UNAVAILABLE `model_unavailable` with a
 * retry-after (HTTP 503), which the caller may retry: the same answer its open breaker gives later
 * requests. Only an upstream that answered something unusable (a malformed body, a 4xx that is the
 * gateway's fault) leaves as that failure (HTTP 502), and a caller's error (400) as its own.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { decorrelatedJitterGenerator, ExponentialBackoff, type IBackoff } from 'cockatiel';
import { GatewayError } from '@gateway/grpc';
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

/**
 * The retry-after of an unavailable model when neither an open breaker nor the upstream said how
 * long: long enough that a caller honouring it does not spend its retry within the same blip,
 * short enough that an upstream back after a restart costs little.
 */
export const UNAVAILABLE_RETRY_AFTER_MS = 2_000;

/** The shortest retry-after sent: the HTTP Retry-After header counts whole seconds. */
const MIN_RETRY_AFTER_MS = 1_000;

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

/**
 * Whether a model's failure, once its retries are spent, means the model is unavailable rather
 * than that its upstream answered something unusable. A deployment running in-process (simulated)
 * is never unavailable: its failures are directives written in the request, each standing for one
 * upstream answer, and are reported as that answer.
 */
function meansUnavailable(error: unknown, deployment: Deployment): boolean {
  return !deployment.inProcess && error instanceof UpstreamError && error.failureClass === 'unavailable';
}

/**
 * How long the caller of an unavailable model should wait: the remaining open time of its breakers
 * when they are open, else the wait its upstream asked for, else UNAVAILABLE_RETRY_AFTER_MS.
 */
function unavailableForMs(pool: DeploymentPool, modelId: string, failure: unknown): number {
  const breakerWait = pool.retryAfterMs(modelId);
  const upstreamWait = failure instanceof UpstreamError ? (failure.retryAfterMs ?? 0) : 0;
  const wait = breakerWait > 0 ? breakerWait : upstreamWait > 0 ? upstreamWait : UNAVAILABLE_RETRY_AFTER_MS;
  return Math.max(MIN_RETRY_AFTER_MS, wait);
}

/** Whether trying again (here or on a fallback) may help. */
function worthAnotherTry(error: unknown): boolean {
  if (error instanceof UpstreamError) return error.retryable;
  // A provider this executor cannot speak: another model may be served by one it can.
  return error instanceof GatewayError && error.reason === 'model_unavailable';
}

/** What trying one model came to when none of its deployments answered. */
interface ModelFailure {
  readonly tries: number;
  /** The last failure; undefined when no deployment could be tried (every breaker open). */
  readonly failure: unknown;
  /** The deployment of the last failure. */
  readonly failedOn: Deployment | undefined;
}

/** What the models passed over said, for the final failure. */
interface PassedOver {
  readonly attempts: ExecutionAttempt[];
  /** The last failure that was not unavailability. */
  lastError: unknown;
  earliestRetryMs: number | undefined;
  /** The upstream failure that made the first unavailable model so, for the log and ErrorInfo. */
  unavailableCause: UpstreamError | undefined;
}

/** A retry about to be decided. */
interface RetryDecision {
  readonly modelId: string;
  readonly error: UpstreamError;
  /** The backoff's next wait. */
  readonly backoffMs: number;
  /** How many of the model's deployments failed already. */
  readonly avoided: number;
}

/**
 * Runs the plan. Resolves with the first deployment that reached its first byte; rejects with the
 * first non-retryable failure, the cancellation, or, when every model failed, the last failure
 * that was not unavailability; when every model was unavailable, with UNAVAILABLE
 * `model_unavailable` naming the first model, with the earliest retry-after of them all.
 */
export async function runWithFallbacks<T>(plan: RunPlan<T>): Promise<Started<T>> {
  const passed: PassedOver = { attempts: [], lastError: undefined, earliestRetryMs: undefined, unavailableCause: undefined };
  const backoffFactory = new ExponentialBackoff({
    initialDelay: plan.retry.baseDelayMs,
    maxDelay: plan.retry.maxDelayMs,
    generator: decorrelatedJitterGenerator,
  });
  for (const modelId of plan.models) {
    plan.signal.throwIfAborted();
    if (!plan.pool.has(modelId)) {
      passed.attempts.push({ model_id: modelId, reason: 'model_not_found', tries: 0 });
      continue;
    }
    const tried = await tryModel(plan, modelId, backoffFactory, passed.attempts);
    if ('value' in tried) return tried;
    passOver(plan.pool, modelId, tried, passed);
  }
  if (passed.lastError !== undefined) throw passed.lastError;
  throw unavailableError(plan.models[0] ?? '', passed);
}

/**
 * Tries one model's deployments, with retries, until one reaches its first byte (resolved as what
 * answered); resolves with what the tries came to when none did; rejects with a failure another
 * try cannot help, or the cancellation.
 */
async function tryModel<T>(
  plan: RunPlan<T>,
  modelId: string,
  backoffFactory: ExponentialBackoff<unknown>,
  attempts: ExecutionAttempt[],
): Promise<Started<T> | ModelFailure> {
  const avoid = new Set<Deployment>();
  let backoff: IBackoff<unknown> | undefined;
  let tries = 0;
  let failure: unknown;
  let failedOn: Deployment | undefined;
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
      failedOn = deployment;
      avoid.add(deployment);
      // A simulated failure is written in the request: it would fail the same way again.
      if (deployment.inProcess || !(error instanceof UpstreamError) || tries >= plan.retry.maxAttempts) break;
      backoff = backoff ? backoff.next(undefined) : backoffFactory.next();
      const delay = retryDelay(plan, { modelId, error, backoffMs: backoff.duration, avoided: avoid.size });
      if (delay === undefined) break;
      plan.onRetry?.(modelId, reasonOf(error));
      await sleep(delay, undefined, { signal: plan.signal });
    }
  }
  return { tries, failure, failedOn };
}

/**
 * The wait before retrying the same model: the backoff, or the upstream's hint when longer and
 * within maxDelayMs. Undefined when it is not retried: a longer hint with no other deployment left,
 * or a wait that would reach the deadline.
 */
function retryDelay(plan: RunPlan<unknown>, retry: RetryDecision): number | undefined {
  const hint = retry.error.retryAfterMs ?? 0;
  if (hint > plan.retry.maxDelayMs && plan.pool.deploymentsOf(retry.modelId).length === retry.avoided) return undefined;
  const delay = hint > 0 && hint <= plan.retry.maxDelayMs ? Math.max(hint, retry.backoffMs) : retry.backoffMs;
  return Date.now() + delay + DEADLINE_MARGIN_MS >= plan.deadline ? undefined : delay;
}

/** Records a model passed over: unavailable, or failed with its last failure. */
function passOver(pool: DeploymentPool, modelId: string, tried: ModelFailure, passed: PassedOver): void {
  const { failure, failedOn, tries } = tried;
  const status = failure instanceof UpstreamError && failure.status !== undefined ? { upstream_status: failure.status } : {};
  if (failure === undefined || (failedOn && meansUnavailable(failure, failedOn))) {
    // No deployment to try (breakers open), or retries spent on an upstream that cannot serve.
    const wait = unavailableForMs(pool, modelId, failure);
    passed.earliestRetryMs = Math.min(passed.earliestRetryMs ?? wait, wait);
    if (failure instanceof UpstreamError) passed.unavailableCause ??= failure;
    passed.attempts.push({ model_id: modelId, reason: 'model_unavailable', tries, ...status });
  } else {
    passed.lastError = failure;
    passed.attempts.push({ model_id: modelId, reason: reasonOf(failure), tries, ...status });
  }
}

/** UNAVAILABLE `model_unavailable` naming the first model, with the earliest retry-after of them all. */
function unavailableError(primary: string, passed: PassedOver): GatewayError {
  const cause = passed.unavailableCause;
  const why = cause ? 'its provider cannot be reached or is overloaded' : 'no deployment is healthy';
  return GatewayError.of('model_unavailable', `The model \`${primary}\` is temporarily unavailable: ${why}. Please retry later.`, {
    retryable: true,
    retryAfterMs: passed.earliestRetryMs ?? UNAVAILABLE_RETRY_AFTER_MS,
    provider: cause?.provider,
    upstreamStatus: cause?.status,
    cause,
  });
}
