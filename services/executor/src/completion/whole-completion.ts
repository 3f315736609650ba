/**
 * Complete: a whole completion, the model, then its fallbacks, each with retries, until one
 * answers. The signal aborts everything at once (the caller went away); the deadline bounds the
 * retries.
 */
import { unary } from '@gateway/grpc';
import type { ExecuteRequestOutput, ExecuteResponse, ExecutorServiceHandlers } from '@gateway/proto';
import { listenToCall } from './call-bounds.js';
import { type Answer, CompletionRun, type RunServices } from './completion-run.js';

/** Runs a whole completion; rejects with the failure to answer the caller with. */
export async function runWhole(run: CompletionRun): Promise<ExecuteResponse> {
  const { recorder } = run.services;
  try {
    const response = await run.start(async (provider, context, upstream) => {
      const answered = await provider.complete(run.request, context);
      recorder.endUpstream(upstream, { label: 'ok', usage: answered.usage ?? undefined });
      return answered;
    });
    run.release();
    const answer = run.answer as Answer;
    run.succeed({ label: 'ok', usage: response.usage ?? undefined });
    return { response, provider: answer.provider.name, model_id: answer.model.id, attempts: answer.attempts, deployment_id: answer.deploymentId };
  } catch (error) {
    throw run.fail(run.outcomeOf(error));
  }
}

/** The Complete handler. */
export function completeHandler(services: RunServices): ExecutorServiceHandlers['Complete'] {
  return unary<ExecuteRequestOutput, ExecuteResponse>(
    async (execute, call) => {
      const { bounds, stopListening } = listenToCall(call);
      try {
        return await runWhole(new CompletionRun(services, execute, bounds, 'Complete'));
      } finally {
        stopListening();
      }
    },
    'Complete',
    services.report,
  );
}
