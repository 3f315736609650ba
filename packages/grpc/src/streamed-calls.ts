/**
 * Streamed calls: many small calls carried as messages on a few long-lived bidirectional streams
 * instead of one unary call each. A unary call costs a new HTTP/2 stream, headers, a message and
 * trailers on both sides; a message on an open stream costs the message alone (about a quarter of
 * the CPU per call on each side, measured with grpc-js 1.14).
 *
 * The wire protocol (frames, who sends what, credit, cancel, drain, errors) is written up once in
 * proto/gateway/rpc/v1/STREAMED_CALLS.md. The server side is streamed-calls-server.ts, the client
 * side streamed-calls-client.ts, the per-call credit window credit-window.ts, and the frames both
 * read and write streamed-call-frames.ts.
 */
export {
  serveStreamedCalls,
  type StreamedCallContext,
  type StreamedCallsService,
  type StreamedHandlers,
  type StreamingCallContext,
  type StreamingHandlers,
} from './streamed-calls-server.js';
export { StreamedCalls, type StreamedCallPath, type StreamedCallsOptions, type StreamedMethods } from './streamed-calls-client.js';
