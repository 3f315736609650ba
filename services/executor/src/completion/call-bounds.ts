/**
 * The bounds of a gRPC call (Complete, StreamComplete): its deadline, request id and traceparent,
 * and an AbortSignal that a cancelled call aborts.
 */
import { callTraceparent, requestIdOf } from '@gateway/grpc';
import type { ExecutorServiceHandlers } from '@gateway/proto';
import type { CallBounds } from './completion-run.js';

/** A StreamComplete call. */
export type StreamCall = Parameters<ExecutorServiceHandlers['StreamComplete']>[0];
/** A Complete or Embed call. */
export type UnaryCall = Parameters<ExecutorServiceHandlers['Complete']>[0] | Parameters<ExecutorServiceHandlers['Embed']>[0];

/** The bounds of a call, and the function that stops listening for its cancellation. */
export interface ListenedBounds {
  readonly bounds: CallBounds;
  /** Call when the call is over: stops listening for its cancellation. */
  readonly stopListening: () => void;
}

/** The deadline of a call in unix ms; Infinity when it has none. */
function deadlineOf(call: StreamCall | UnaryCall): number {
  const deadline = call.getDeadline();
  const value = deadline instanceof Date ? deadline.getTime() : Number(deadline);
  return Number.isFinite(value) && value > 0 ? value : Number.POSITIVE_INFINITY;
}

/** The call's bounds, with a signal aborted when the call is cancelled (at once if it already was). */
export function listenToCall(call: StreamCall | UnaryCall): ListenedBounds {
  const controller = new AbortController();
  const cancel = () => controller.abort();
  call.on('cancelled', cancel);
  if (call.cancelled) controller.abort();
  const bounds = { signal: controller.signal, deadline: deadlineOf(call), requestId: requestIdOf(call), traceparent: callTraceparent(call) };
  return { bounds, stopListening: () => call.off('cancelled', cancel) };
}
