/**
 * CompleteCalls: Complete, StreamComplete and Embed as messages on a bidirectional stream, the same work
 * as the RPCs, their deadline, cancellation and (for streams) credit carried by the stream's
 * messages; the request id is the request's own.
 */
import { serveStreamedCalls, type StreamedCallContext, type StreamedCallsService, type StreamingCallContext } from '@gateway/grpc';
import type { CompleteCallRequestOutput, CompleteCallResponse, EmbedRequestOutput, ExecuteRequestOutput, ExecuteStreamEvent } from '@gateway/proto';
import { runEmbed } from './embedding-run.js';
import { CompletionRun, type RunServices } from './completion-run.js';
import { runStream } from './streamed-completion.js';
import { runWhole } from './whole-completion.js';

/** The CompleteCalls handler, and how its streams are drained on shutdown. */
export function completeCallsService(services: RunServices): StreamedCallsService<CompleteCallRequestOutput, CompleteCallResponse> {
  return serveStreamedCalls<CompleteCallRequestOutput, CompleteCallResponse>(
    {
      complete: (execute: ExecuteRequestOutput, context: StreamedCallContext) =>
        runWhole(new CompletionRun(services, execute, { ...context, requestId: execute.request_id ?? '' }, 'Complete')),
      embed: (embed: EmbedRequestOutput, context: StreamedCallContext) => runEmbed(embed, { ...context, requestId: embed.request_id ?? '' }, services),
    },
    'CompleteCalls',
    services.report,
    {
      stream: (execute: ExecuteRequestOutput, context: StreamingCallContext<ExecuteStreamEvent>) =>
        runStream(new CompletionRun(services, execute, { ...context, requestId: execute.request_id ?? '' }, 'StreamComplete'), context),
    },
  );
}
