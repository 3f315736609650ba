/**
 * The one test double of the gateway: a local HTTP server standing in for a model provider, which
 * speaks the providers' wire formats (OpenAI's chat completions, Anthropic's Messages, Gemini's
 * generateContent) by replaying the recorded fixtures of the executor's adapters
 * (this package's fixtures/<provider>/, read with `providerFixture`).
 * It records
 * every request (headers and JSON body) and when each request's connection closed, so tests can
 * assert what the adapter sent and that cancelling a call closes the upstream connection. For the
 * failures below HTTP it also gives a refused port and upstreams that reset or never answer.
 * Used by the executor's tests, the end-to-end tests and the benchmarks.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { freePort } from './processes.js';
import { afterBody, type AnswerEnd, closing, listenOn, withAnswerEnd } from './fake-http-server.js';

/** One request the fake upstream received. */
export interface ReceivedRequest extends AnswerEnd {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
}

/** How the fake upstream answers a request. */
export type Responder = (request: ReceivedRequest, response: ServerResponse) => void | Promise<void>;

/** A started fake upstream. */
export interface FakeUpstream {
  /** `http://127.0.0.1:<port>/v1`, the catalog base_url. */
  readonly baseUrl: string;
  readonly requests: ReceivedRequest[];
  /** Sets how the next requests are answered. */
  respond(responder: Responder): void;
  close(): Promise<void>;
}

/** Answers with a JSON fixture (or text) and a status. */
export function replayJson(status: number, body: string, headers: Record<string, string> = {}): Responder {
  return (_request, response) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(body);
  };
}

/**
 * Answers with an SSE fixture, one event at a time with `delayMs` between events; `end: false`
 * leaves the response open after the last event (a stalled upstream).
 */
export function replaySse(text: string, options: { delayMs?: number; end?: boolean; status?: number } = {}): Responder {
  const events = text
    .split(/\n\n/)
    .filter((event) => event.trim().length > 0)
    .map((event) => `${event}\n\n`);
  return async (_request, response) => {
    response.writeHead(options.status ?? 200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    for (const event of events) {
      if (response.destroyed) return;
      response.write(event);
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
    }
    if (options.end !== false) response.end();
  };
}

/**
 * Answers with a body written exactly as given, in one piece and then ended: a stream cut off in
 * the middle of an event stays cut off (replaySse completes every event).
 */
export function replayRaw(status: number, text: string, contentType = 'text/event-stream'): Responder {
  return (_request, response) => {
    response.writeHead(status, { 'content-type': contentType });
    response.end(text);
  };
}

/** Starts a fake upstream on a free port of 127.0.0.1, answering with `initial` until told otherwise. */
export async function startFakeUpstream(initial: Responder): Promise<FakeUpstream> {
  let responder = initial;
  const requests: ReceivedRequest[] = [];
  const server: Server = createServer(
    afterBody((incoming, body, response) => {
      const text = body.toString('utf8');
      const received = withAnswerEnd(
        {
          method: incoming.method ?? '',
          path: incoming.url ?? '',
          headers: incoming.headers,
          body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
        },
        response,
      );
      requests.push(received);
      void Promise.resolve(responder(received, response)).catch(() => response.destroy());
    }),
  );
  return {
    baseUrl: `${await listenOn(server)}/v1`,
    requests,
    respond: (next) => {
      responder = next;
    },
    close: closing(server),
  };
}

/**
 * A base URL (`http://127.0.0.1:<port>/v1`) where nothing listens, so that every connection is
 * refused: a port of freePort's, reserved for this process and never bound.
 */
export async function refusedBaseUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}/v1`;
}

/** An upstream that misbehaves below HTTP: it never sends a status line. */
export interface BrokenUpstream {
  /** `http://127.0.0.1:<port>/v1`, the catalog base_url. */
  readonly baseUrl: string;
  /** How many requests reached it (connections on which bytes arrived). */
  readonly requests: () => number;
  close(): Promise<void>;
}

/**
 * Starts an upstream that accepts connections and, once a request's bytes arrive, either resets
 * the connection (`reset`: a TCP RST, what a crashing or overloaded proxy does) or never answers
 * (`silent`: the first-byte timeout has to fire).
 */
export async function startBrokenUpstream(behaviour: 'reset' | 'silent'): Promise<BrokenUpstream> {
  const sockets = new Set<Socket>();
  let requests = 0;
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.once('data', () => {
      requests += 1;
      if (behaviour === 'reset') socket.resetAndDestroy();
    });
  });
  return {
    baseUrl: `${await listenOn(server)}/v1`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
