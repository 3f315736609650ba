/**
 * The ExecutorService handlers, wired: each call becomes a CompletionRun (completion/), driven by
 * the whole path (Complete), the streamed path (StreamComplete) or either of them on a
 * CompleteCalls stream. They resolve the catalog model, run it through the deployment pool
 * (retries, breakers, fallbacks: pool/run-with-fallbacks.ts), record it in one place
 * (completion/run-recorder.ts), and convert failures to gRPC statuses in one place (toGatewayError
 * + toServiceError). The stream's contract is told in completion/streamed-completion.ts.
 */
import type { ErrorReporter } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { NO_TRACING, type Tracing } from '@gateway/observability';
import type { ExecutorServiceHandlers } from '@gateway/proto';
import { completeCallsService } from './completion/completion-calls.js';
import { embedHandler } from './completion/embedding-run.js';
import type { RunServices } from './completion/completion-run.js';
import { RunRecorder } from './completion/run-recorder.js';
import { streamCompleteHandler } from './completion/streamed-completion.js';
import { completeHandler } from './completion/whole-completion.js';
import type { ExecutorMetrics } from './executor-metrics.js';
import type { DeploymentPool } from './pool/deployment-pool.js';
import type { RetryOptions } from './pool/run-with-fallbacks.js';
import type { ProviderRegistry } from './providers/provider-registry.js';

/** What the handlers need. */
export interface ExecutorServiceDependencies {
  /** The deployments of the models that are on (enabledModels of the catalog). */
  readonly pool: DeploymentPool;
  /** Which adapter serves a model (the ProviderRegistry; tests may give their own). */
  readonly providers: Pick<ProviderRegistry, 'forModel'>;
  readonly logger: Logger;
  readonly metrics: ExecutorMetrics;
  readonly retry: RetryOptions;
  /** Traces (OTLP), when configured; off by default. */
  readonly tracing?: Tracing;
}

/** The executor's handlers, and how its CompleteCalls streams are drained on shutdown. */
export interface ExecutorService {
  readonly handlers: ExecutorServiceHandlers;
  /** Asks the callers of CompleteCalls streams to move elsewhere; see GatewayService.drain. */
  readonly drain: (patienceMs: number) => Promise<void>;
}

/** Creates the grpc-js handlers of gateway.executor.v1.ExecutorService. */
export function createExecutorHandlers(dependencies: ExecutorServiceDependencies): ExecutorService {
  const { logger, metrics, providers, pool, retry } = dependencies;
  const tracing = dependencies.tracing ?? NO_TRACING;
  const report: ErrorReporter = (error, method) => logger.error({ err: error, method }, 'executor handler failed');
  const services: RunServices = { pool, providers, retry, tracing, report, recorder: new RunRecorder({ pool, logger, metrics, tracing }) };
  const completeCalls = completeCallsService(services);
  return {
    handlers: {
      Complete: completeHandler(services),
      StreamComplete: streamCompleteHandler(services),
      CompleteCalls: completeCalls.handler,
      Embed: embedHandler(services),
    },
    drain: completeCalls.drain,
  };
}
