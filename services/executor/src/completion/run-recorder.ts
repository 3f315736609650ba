/**
 * Where a completion's run is recorded, in one place: its metrics (labels are catalog ids only, an
 * id the catalog does not hold counted as "unknown"), its log line (an upstream cause at warn, our
 * own failures at error), and its spans (the call's, a child of the caller's, and one per upstream
 * call, per the GenAI semantic conventions).
 */
import { performance } from 'node:perf_hooks';
import type { CatalogModel } from '@gateway/catalog';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { endWithError, SpanKind, type Span, type Tracing } from '@gateway/observability';
import type { ExecuteRequestOutput, ExecutionAttempt, Usage } from '@gateway/proto';
import type { Provider } from '../providers/provider.js';
import type { ExecutorMetrics } from '../executor-metrics.js';
import type { DeploymentPool } from '../pool/deployment-pool.js';
import { toGatewayError } from '../to-gateway-error.js';

/** The RPC a run answers, as its log line names it. */
export type CompletionMethod = 'Complete' | 'StreamComplete' | 'Embed';

/** What a run reads of its call: a completion's ExecuteRequest, or an EmbedRequest (no chat request, no fallbacks). */
export type RunRequest = Pick<ExecuteRequestOutput, 'request_id' | 'model_id' | 'key_id'> & Partial<Pick<ExecuteRequestOutput, 'fallbacks' | 'request'>>;

/** Who answered a call, once known. */
export interface Answer {
  readonly model: CatalogModel;
  readonly provider: Provider;
  /** The id of the deployment that answered (Deployment.id): what the answer and the usage event name. */
  readonly deploymentId: string;
  readonly attempts: ExecutionAttempt[];
}

/** What the recorder reads of a run (a CompletionRun, completion-run.ts). */
export interface RecordedRun {
  readonly execute: RunRequest;
  readonly started: number;
  readonly method: CompletionMethod;
  readonly requestId: string;
  readonly span: Span | undefined;
  readonly answer: Answer | undefined;
}

/** What one call did, for the log line, the metrics and the span. */
export interface Outcome {
  /** "ok", "cancelled", or the failure's stable reason. */
  readonly label: string;
  readonly error?: unknown;
  readonly usage?: Usage;
}

/** Labels of a call whose model could not be resolved: never the caller's text. */
const UNKNOWN = 'unknown';

/** What the recorder writes to. */
export interface RunRecorderDependencies {
  readonly pool: DeploymentPool;
  readonly logger: Logger;
  readonly metrics: ExecutorMetrics;
  readonly tracing: Tracing;
}

/** Records runs: one per executor, shared by every call. */
export class RunRecorder {
  constructor(private readonly dependencies: RunRecorderDependencies) {}

  /** The outcome of a failure: "cancelled" when the caller went away, else its stable reason. */
  outcomeOf(error: unknown, signal: AbortSignal): Outcome {
    if (signal.aborted) return { label: 'cancelled' };
    const mapped = toGatewayError(error);
    return { label: mapped instanceof GatewayError ? mapped.reason : 'internal_error', error: mapped };
  }

  /** Counts a retry of a model before its first byte; bound, so every run passes it as it is. */
  readonly retried = (modelId: string, reason: string): void => {
    this.dependencies.metrics.retries.inc({ model: modelId, reason });
  };

  /** The executor's span of one call (tracing on): the caller's span its parent. */
  callSpan(name: string, execute: Pick<ExecuteRequestOutput, 'model_id'>, traceparent: string | undefined, operation = 'chat'): Span | undefined {
    return this.dependencies.tracing.startSpan(name, {
      kind: SpanKind.SERVER,
      parent: traceparent,
      attributes: { 'rpc.system': 'grpc', 'gen_ai.operation.name': operation, 'gen_ai.request.model': execute.model_id ?? '' },
    });
  }

  /** The span of one upstream call, a child of the call's span, per the GenAI conventions. */
  upstreamSpan(parent: Span | undefined, model: CatalogModel, provider: string): Span | undefined {
    if (!parent) return undefined;
    const address = hostOf(model.upstream.base_url);
    return this.dependencies.tracing.startSpan(`chat ${model.upstream.model ?? model.id}`, {
      kind: SpanKind.CLIENT,
      parent: this.dependencies.tracing.traceparentOf(parent),
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': provider,
        'gen_ai.request.model': model.upstream.model ?? model.id,
        'gateway.model': model.id,
        ...(address ? { 'server.address': address } : {}),
      },
    });
  }

  /** Ends an upstream call's span: with its usage when it answered, else with the outcome's label. */
  endUpstream(span: Span | undefined, outcome: Outcome): void {
    if (outcome.label !== 'ok') {
      endWithError(span, outcome.label);
      return;
    }
    span?.setAttributes({
      'gen_ai.usage.input_tokens': outcome.usage?.prompt_tokens ?? 0,
      'gen_ai.usage.output_tokens': outcome.usage?.completion_tokens ?? 0,
    });
    span?.end();
  }

  /**
   * Records a finished run: its metrics and log line, then its upstream span (a stream's, which
   * lives as long as the stream; absent for a whole completion, whose span ended at its answer),
   * then its own span.
   */
  finish(run: RecordedRun, outcome: Outcome, upstream?: Span): void {
    this.record(run, outcome);
    if (upstream) this.endUpstream(upstream, outcome);
    this.endCallSpan(run.span, run.answer, outcome);
  }

  private record(run: RecordedRun, outcome: Outcome): void {
    const { pool, metrics } = this.dependencies;
    const { execute, answer } = run;
    const model = answer?.model.id ?? (pool.has(execute.model_id ?? '') ? (execute.model_id ?? UNKNOWN) : UNKNOWN);
    const provider = answer?.provider.name ?? UNKNOWN;
    metrics.requests.inc({ model, provider, outcome: outcome.label });
    const seconds = (performance.now() - run.started) / 1000;
    if (answer) metrics.upstreamDuration.observe({ model, provider, outcome: outcome.label }, seconds);
    for (const attempt of answer?.attempts ?? [])
      metrics.fallbacks.inc({ from: pool.has(attempt.model_id ?? '') ? (attempt.model_id ?? UNKNOWN) : UNKNOWN, reason: attempt.reason ?? UNKNOWN });
    const fields = {
      method: run.method,
      request_id: run.requestId || execute.request_id,
      key_id: execute.key_id,
      model: answer?.model.id ?? execute.model_id,
      requested_model: execute.model_id,
      provider,
      attempts: answer?.attempts.length ? answer.attempts : undefined,
      outcome: outcome.label,
      duration_ms: Math.round(seconds * 1000),
      usage: outcome.usage,
    };
    this.log(fields, outcome.error);
  }

  private log(fields: Record<string, unknown>, error: unknown): void {
    const { logger } = this.dependencies;
    if (error === undefined) logger.info(fields, 'completion finished');
    else if (error instanceof GatewayError && error.code !== GrpcStatus.INTERNAL) {
      // The upstream cause (UpstreamError: status, kind, our wording) goes to the log only.
      logger.warn({ ...fields, err: error.cause ?? error }, 'completion failed');
    } else logger.error({ ...fields, err: error }, 'completion failed');
  }

  /** Ends a call's span with what it produced; failures with their reason. */
  private endCallSpan(span: Span | undefined, answer: Answer | undefined, outcome: Outcome): void {
    if (!span) return;
    span.setAttributes({
      'gen_ai.response.model': answer?.model.id ?? '',
      'gen_ai.provider.name': answer?.provider.name ?? '',
      'gen_ai.usage.input_tokens': outcome.usage?.prompt_tokens ?? 0,
      'gen_ai.usage.output_tokens': outcome.usage?.completion_tokens ?? 0,
      'gateway.outcome': outcome.label,
    });
    for (const attempt of answer?.attempts ?? [])
      span.addEvent('gateway.fallback', { 'gateway.fallback.from_model': attempt.model_id ?? '', 'gateway.fallback.reason': attempt.reason ?? '' });
    if (outcome.label === 'ok') span.end();
    else endWithError(span, outcome.label);
  }
}

/** The host of an upstream's base URL, for `server.address`; empty when it has none or it does not parse. */
function hostOf(baseUrl: string | undefined): string {
  try {
    return baseUrl ? new URL(baseUrl).host : '';
  } catch {
    return '';
  }
}
