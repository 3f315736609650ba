/**
 * The edge's quota decisions and settlements, carried on a few long-lived Decide streams to auth
 * (a message each, instead of a unary call's HTTP/2 stream each), unary while no stream is open.
 */
import { callUnary, type StreamedCalls } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { prometheus } from '@gateway/observability';
import { measuredStreamedCalls } from './measured-streamed-calls.js';
import type { AuthServiceClient, CheckKeyRequest, CheckKeyResponseOutput, SettleUsageRequest, SettleUsageResponseOutput } from '@gateway/proto';

/** The calls the edge makes on a Decide stream, by their names in DecideRequest's oneof. */
export type AuthDecisionMethods = {
  check_key: [CheckKeyRequest, CheckKeyResponseOutput];
  settle_usage: [SettleUsageRequest, SettleUsageResponseOutput];
};

/** CheckKey and SettleUsage over Decide streams, each call with its own deadline and signal. */
export type AuthDecisions = StreamedCalls<AuthDecisionMethods>;

/**
 * Opens `streams` Decide streams on the auth channel (0: every call unary) and counts each call's
 * path (`gateway_auth_calls_total`) and the open streams (`gateway_auth_streams_open`); with a
 * DNS name as `target` (the channel's), as many streams to each auth replica, spread again when
 * the name's address set changes. Close it before the channel.
 */
export function createAuthDecisions(
  auth: AuthServiceClient,
  { streams, target }: { streams: number; target: string },
  registry: prometheus.Registry,
  logger: Logger,
): AuthDecisions {
  return measuredStreamedCalls<AuthDecisionMethods>({
    service: 'auth',
    calls: 'Quota decisions and settlements sent to auth',
    streamsOf: 'Decision streams to auth',
    open: () => auth.Decide(),
    streams,
    target,
    unary: {
      check_key: (request, options) => callUnary(auth, auth.CheckKey, request, options),
      settle_usage: (request, options) => callUnary(auth, auth.SettleUsage, request, options),
    },
    registry,
    logger,
  });
}
