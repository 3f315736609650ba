/**
 * The McpService's Listen streams: each session's server-to-client stream (the edge's GET /mcp),
 * opened once the session is found for the caller's key, ended when the session ends elsewhere or
 * expires (checked every SESSION_CHECK_MS) and at shutdown. An upstream's list_changed
 * notifications go to every open stream, each kind sent once for the changes within
 * NOTIFY_DEBOUNCE_MS.
 */
import { type ErrorReporter, GatewayError, Metadata } from '@gateway/grpc';
import type { McpServiceHandlers } from '@gateway/proto';
import type { McpCaller } from './aggregator.js';
import type { ClientSessions } from './client-sessions.js';
import type { ListKind, UpstreamPool } from './upstream-pool.js';

type ListenCall = Parameters<McpServiceHandlers['Listen']>[0];

/** How often an open Listen stream checks that its session still exists (ended elsewhere, or expired). */
const SESSION_CHECK_MS = 5_000;
/** Notifications of one kind within this long are sent once. */
const NOTIFY_DEBOUNCE_MS = 100;

export class ListenStreams {
  private readonly listeners = new Set<ListenCall>();
  private readonly pending = new Set<ListKind>();
  private scheduled = false;

  constructor(
    private readonly sessions: ClientSessions,
    private readonly callerOf: (caller: ListenCall['request']['caller']) => McpCaller,
    private readonly report: ErrorReporter,
  ) {}

  /** Sends the pool's list_changed notifications to every open stream. */
  follow(pool: UpstreamPool): void {
    pool.onListChanged((_server, kind) => {
      this.pending.add(kind);
      if (this.scheduled) return;
      this.scheduled = true;
      setTimeout(() => this.notify(), NOTIFY_DEBOUNCE_MS).unref();
    });
  }

  private notify(): void {
    this.scheduled = false;
    const kinds = [...this.pending];
    this.pending.clear();
    for (const call of this.listeners) {
      for (const changed of kinds) {
        if (!call.cancelled && call.writable) call.write({ message_json: JSON.stringify({ jsonrpc: '2.0', method: `notifications/${changed}/list_changed` }) });
      }
    }
  }

  /** The Listen handler. */
  readonly listen = (call: ListenCall): void => {
    let caller: McpCaller;
    try {
      caller = this.callerOf(call.request.caller);
    } catch (error) {
      call.destroy(GatewayError.fromServiceError(error).toStreamError());
      return;
    }
    const sessionId = call.request.session_id ?? '';
    this.sessions.find(sessionId, caller.keyId).then(
      (session) => {
        if (!session) {
          call.destroy(GatewayError.of('not_found', 'Session not found.').toStreamError());
          return;
        }
        this.open(call, sessionId);
      },
      (error: unknown) => {
        this.report(error, 'Listen');
        call.destroy(GatewayError.of('store_unavailable', 'The session store is unavailable.').toStreamError());
      },
    );
  };

  private open(call: ListenCall, sessionId: string): void {
    this.listeners.add(call);
    // Headers go out at once, so that the edge can answer the client's GET with its stream.
    call.sendMetadata(new Metadata());
    const check = setInterval(() => {
      this.sessions.exists(sessionId).then(
        (alive) => {
          if (!alive) stop(true);
        },
        () => undefined,
      );
    }, SESSION_CHECK_MS);
    const stop = (end: boolean) => {
      clearInterval(check);
      this.listeners.delete(call);
      if (end && call.writable) call.end();
    };
    call.once('cancelled', () => stop(false));
    call.once('error', () => stop(false));
    call.once('finish', () => stop(false));
  }

  /** Ends every open stream (shutdown). */
  endAll(): void {
    for (const call of this.listeners) if (call.writable) call.end();
    this.listeners.clear();
  }
}
