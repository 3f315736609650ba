/**
 * The ExecutorService handlers: resolve the catalog model, run its provider adapter, and convert
 * failures to gRPC statuses in one place (toGatewayError + toServiceError).
 *
 * Streams: one `chunk` event per upstream chunk as it arrives, then exactly one `end` event with
 * the usage of the whole stream (whether or not the caller asked for include_usage: the edge
 * builds the usage chunk from it; usage-only upstream chunks are therefore never forwarded as
 * chunks). A failure after chunks were sent arrives as the stream's error status after them.
 * A cancelled call (client gone, deadline passed) aborts the upstream request at once. When
 * call.write() reports a full buffer, nothing more is pulled from the upstream until 'drain'.
 */
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { CatalogModel } from '@gateway/catalog';
import { GatewayError, GrpcStatus, requestIdOf, toServiceError, unary, type ErrorReporter } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { ChatRequestOutput, ExecuteRequestOutput, ExecuteResponse, ExecutorServiceHandlers, Usage } from '@gateway/proto';
import type { ExecutorMetrics } from './executor-metrics.js';
import type { Provider } from './providers/provider.js';
import type { ProviderRegistry } from './providers/provider-registry.js';
import { toGatewayError } from './to-gateway-error.js';

/** What the handlers need. */
export interface ExecutorServiceDependencies {
  /** The models that are on (enabledModels of the catalog). */
  readonly models: readonly CatalogModel[];
  /** Which adapter serves a model (the ProviderRegistry; tests may give their own). */
  readonly providers: Pick<ProviderRegistry, 'forModel'>;
  readonly logger: Logger;
  readonly metrics: ExecutorMetrics;
}

type StreamCall = Parameters<ExecutorServiceHandlers['StreamComplete']>[0];
type UnaryCall = Parameters<ExecutorServiceHandlers['Complete']>[0];

interface Resolved {
  readonly model: CatalogModel;
  readonly provider: Provider;
  readonly request: ChatRequestOutput;
}

/** What one call did, for the log line and the metrics. */
interface Outcome {
  readonly label: string;
  readonly error?: unknown;
  readonly usage?: Usage;
}

/** Labels of a call whose model could not be resolved: never the caller's text. */
const UNKNOWN = 'unknown';

/** Creates the grpc-js handlers of gateway.executor.v1.ExecutorService. */
export function createExecutorHandlers(dependencies: ExecutorServiceDependencies): ExecutorServiceHandlers {
  const { logger, metrics, providers } = dependencies;
  const models = new Map(dependencies.models.map((model) => [model.id, model]));
  const report: ErrorReporter = (error, method) => logger.error({ err: error, method }, 'executor handler failed');

  function resolve(execute: ExecuteRequestOutput): Resolved {
    const model = models.get(execute.model_id ?? '');
    if (!model) {
      throw new GatewayError(GrpcStatus.NOT_FOUND, 'model_not_found', `The model '${execute.model_id ?? ''}' does not exist or is not available.`, { param: 'model' });
    }
    if (!execute.request) throw new GatewayError(GrpcStatus.INVALID_ARGUMENT, 'invalid_request', 'The execute request carries no chat request.');
    return { model, provider: providers.forModel(model), request: execute.request };
  }

  function outcomeOf(error: unknown, signal: AbortSignal): Outcome {
    if (signal.aborted) return { label: 'cancelled' };
    const mapped = toGatewayError(error);
    return { label: mapped instanceof GatewayError ? mapped.reason : 'internal_error', error: mapped };
  }

  function record(execute: ExecuteRequestOutput, requestId: string, resolved: Resolved | undefined, started: number | undefined, outcome: Outcome, method: string): void {
    const model = resolved?.model.id ?? UNKNOWN;
    const provider = resolved?.provider.name ?? UNKNOWN;
    metrics.requests.inc({ model, provider, outcome: outcome.label });
    const seconds = started === undefined ? undefined : (performance.now() - started) / 1000;
    if (seconds !== undefined) metrics.upstreamDuration.observe({ model, provider, outcome: outcome.label }, seconds);
    const fields = {
      method,
      request_id: requestId || execute.request_id,
      key_id: execute.key_id,
      model: resolved?.model.id ?? execute.model_id,
      provider,
      outcome: outcome.label,
      duration_ms: seconds === undefined ? undefined : Math.round(seconds * 1000),
      usage: outcome.usage,
    };
    if (outcome.error === undefined) logger.info(fields, 'completion finished');
    else if (outcome.error instanceof GatewayError && outcome.error.code !== GrpcStatus.INTERNAL) {
      // The upstream cause (UpstreamError: status, kind, our wording) goes to the log only.
      logger.warn({ ...fields, err: outcome.error.cause ?? outcome.error }, 'completion failed');
    } else logger.error({ ...fields, err: outcome.error }, 'completion failed');
  }

  /** Aborts the controller when the call is cancelled; returns the function that stops listening. */
  function abortOnCancel(call: StreamCall | UnaryCall, controller: AbortController): () => void {
    const cancel = () => controller.abort();
    call.on('cancelled', cancel);
    if (call.cancelled) controller.abort();
    return () => call.off('cancelled', cancel);
  }

  const complete = unary<ExecuteRequestOutput, ExecuteResponse>(async (execute, call) => {
    const requestId = requestIdOf(call);
    const controller = new AbortController();
    const stopListening = abortOnCancel(call, controller);
    let resolved: Resolved | undefined;
    let started: number | undefined;
    try {
      resolved = resolve(execute);
      started = performance.now();
      const response = await resolved.provider.complete(resolved.request, { model: resolved.model, signal: controller.signal, requestId });
      record(execute, requestId, resolved, started, { label: 'ok', usage: response.usage ?? undefined }, 'Complete');
      return { response, provider: resolved.provider.name };
    } catch (error) {
      const outcome = outcomeOf(error, controller.signal);
      record(execute, requestId, resolved, started, outcome, 'Complete');
      throw outcome.error ?? new GatewayError(GrpcStatus.CANCELLED, 'cancelled', 'The request was cancelled.');
    } finally {
      stopListening();
    }
  }, 'Complete', report);

  async function streamComplete(call: StreamCall): Promise<void> {
    const execute = call.request;
    const requestId = requestIdOf(call);
    const controller = new AbortController();
    const stopListening = abortOnCancel(call, controller);
    let resolved: Resolved | undefined;
    let started: number | undefined;
    try {
      resolved = resolve(execute);
      started = performance.now();
      let usage: Usage | undefined;
      for await (const event of resolved.provider.stream(resolved.request, { model: resolved.model, signal: controller.signal, requestId })) {
        controller.signal.throwIfAborted();
        if (event.type === 'usage') { usage = event.usage; continue; }
        if (!call.write({ chunk: event.chunk })) await once(call, 'drain', { signal: controller.signal });
      }
      controller.signal.throwIfAborted();
      call.write({ end: { usage: usage ?? {}, provider: resolved.provider.name } });
      call.end();
      record(execute, requestId, resolved, started, { label: 'ok', usage }, 'StreamComplete');
    } catch (error) {
      const outcome = outcomeOf(error, controller.signal);
      record(execute, requestId, resolved, started, outcome, 'StreamComplete');
      // A cancelled call has no one to tell; anything else leaves as the stream's status, after
      // the chunks already written.
      if (!controller.signal.aborted) call.emit('error', toServiceError(outcome.error, 'StreamComplete', report));
    } finally {
      stopListening();
    }
  }

  return {
    Complete: complete,
    StreamComplete: (call) => { void streamComplete(call); },
  };
}
