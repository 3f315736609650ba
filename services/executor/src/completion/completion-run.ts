/**
 * One completion being run: the request, what bounds it (its signal and deadline), its span, the
 * deployment that answered and who it is, recorded once when the run ends (run-recorder.ts). The
 * whole, streamed and call-stream paths each create one per call and drive it.
 */
import { performance } from 'node:perf_hooks';
import { GatewayError, type ErrorReporter } from '@gateway/grpc';
import type { Span, Tracing } from '@gateway/observability';
import type { ChatRequestOutput, ExecuteRequestOutput } from '@gateway/proto';
import type { Deployment, DeploymentPool } from '../pool/deployment-pool.js';
import { runWithFallbacks, type RetryOptions } from '../pool/run-with-fallbacks.js';
import type { Provider, ProviderContext } from '../providers/provider.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import type { Answer, CompletionMethod, Outcome, RunRecorder, RunRequest } from './run-recorder.js';

export type { Answer, CompletionMethod, RunRequest } from './run-recorder.js';

/** What every run of one executor shares, built once. */
export interface RunServices {
  /** The deployments of the models that are on (enabledModels of the catalog). */
  readonly pool: DeploymentPool;
  /** Which adapter serves a model (the ProviderRegistry; tests may give their own). */
  readonly providers: Pick<ProviderRegistry, 'forModel'>;
  readonly retry: RetryOptions;
  readonly tracing: Tracing;
  readonly recorder: RunRecorder;
  /** Reports handler failures that are not the caller's (a bug), with the method. */
  readonly report: ErrorReporter;
}

/** What bounds a call, whichever way it came. */
export interface CallBounds {
  /** Aborted when the call is cancelled (client gone, deadline passed): stops everything at once. */
  readonly signal: AbortSignal;
  /** Unix ms after which the caller no longer waits; Infinity when the call has none. */
  readonly deadline: number;
  /** The edge's request id, for logs and upstreams. */
  readonly requestId: string;
  /** The caller's span as a W3C traceparent, when tracing is on. */
  readonly traceparent?: string;
}

/**
 * Runs the request on one deployment through its adapter, with the adapter's context and the span
 * of this upstream call (tracing on), and resolves at its first byte.
 */
export type OpenUpstream<T> = (provider: Provider, context: ProviderContext, upstream: Span | undefined) => Promise<T>;

/** The span each method's run opens. */
const SPAN_NAME: Readonly<Record<CompletionMethod, string>> = { Complete: 'executor.complete', StreamComplete: 'executor.stream', Embed: 'executor.embed' };

/** A completion being run. */
export class CompletionRun<Request extends RunRequest = ExecuteRequestOutput> {
  /** When the run began (performance.now()), for the upstream duration. */
  readonly started = performance.now();
  /** The executor's span of this call (tracing on). */
  readonly span: Span | undefined;
  /** Who answered, once a deployment reached its first byte. */
  answer: Answer | undefined;
  /** The deployment that answered: its `outstanding` count is the run's to give back. */
  deployment: Deployment | undefined;

  constructor(
    readonly services: RunServices,
    readonly execute: Request,
    readonly bounds: CallBounds,
    readonly method: CompletionMethod,
  ) {
    this.span = services.recorder.callSpan(SPAN_NAME[method], execute, bounds.traceparent, method === 'Embed' ? 'embeddings' : 'chat');
  }

  /** Aborted when the call is cancelled. */
  get signal(): AbortSignal {
    return this.bounds.signal;
  }

  /** The edge's request id. */
  get requestId(): string {
    return this.bounds.requestId;
  }

  /** The chat request; `plan` has checked that there is one. */
  get request(): ChatRequestOutput {
    return this.execute.request as ChatRequestOutput;
  }

  /**
   * Runs the request on the model, then its fallbacks, each with retries, until `open` reaches a
   * first byte (pool/run-with-fallbacks.ts); records who answered (`answer`, `deployment`). A failed
   * try ends its upstream span before the next one.
   */
  async start<T>(open: OpenUpstream<T>): Promise<T> {
    const { pool, retry, recorder, providers, tracing } = this.services;
    const result = await runWithFallbacks<{ value: T; provider: Provider }>({
      pool,
      models: this.plan(),
      signal: this.signal,
      deadline: this.bounds.deadline,
      retry,
      onRetry: recorder.retried,
      start: async (deployment) => {
        const { model } = deployment;
        const provider = providers.forModel(model);
        const upstream = recorder.upstreamSpan(this.span, model, provider.name);
        const context = { model, signal: this.signal, requestId: this.requestId, traceparent: tracing.traceparentOf(upstream) };
        try {
          return { value: await open(provider, context, upstream), provider };
        } catch (error) {
          recorder.endUpstream(upstream, { label: this.signal.aborted ? 'cancelled' : 'upstream_failed' });
          throw error;
        }
      },
    });
    this.deployment = result.deployment;
    this.answer = { model: result.deployment.model, provider: result.value.provider, deploymentId: result.deployment.id, attempts: result.attempts };
    return result.value.value;
  }

  /** Records a run that answered. */
  succeed(outcome: Outcome, upstream?: Span): void {
    this.services.recorder.finish(this, outcome, upstream);
  }

  /** The outcome of a failure: "cancelled" once the caller went away, else its stable reason. */
  outcomeOf(error: unknown): Outcome {
    return this.services.recorder.outcomeOf(error, this.signal);
  }

  /** Records a failed run; returns what the caller is answered with. */
  fail(outcome: Outcome, upstream?: Span): unknown {
    this.services.recorder.finish(this, outcome, upstream);
    return outcome.error ?? GatewayError.of('cancelled', 'The request was cancelled.');
  }

  /** Gives the answering deployment's slot back; once, when the run is over. */
  release(): void {
    if (this.deployment) this.deployment.outstanding -= 1;
    this.deployment = undefined;
  }

  /** The models to try, the primary first; an unknown primary is NOT_FOUND before anything runs. */
  private plan(): string[] {
    const { execute } = this;
    const primary = execute.model_id ?? '';
    if (!this.services.pool.has(primary)) {
      throw GatewayError.of('model_not_found', `The model '${primary}' does not exist or is not available.`, { param: 'model' });
    }
    if (this.method === 'Embed') return [primary];
    if (!execute.request) throw GatewayError.of('invalid_request', 'The execute request carries no chat request.');
    // The edge refuses this already; a caller that skipped it gets the same answer, not a chat from an embedding model.
    if (this.services.pool.deploymentsOf(primary)[0]?.model.kind === 'embedding') {
      throw GatewayError.of(
        'invalid_value',
        `The model \`${primary}\` is an embedding model: it serves /v1/embeddings only; choose a chat model for this API.`,
        {
          param: 'model',
        },
      );
    }
    const fallbacks = (execute.fallbacks ?? []).filter((id, index, all) => id !== primary && all.indexOf(id) === index);
    return [primary, ...fallbacks];
  }
}
