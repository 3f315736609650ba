/**
 * What the fake moderation services share: a node:http server on a free port of 127.0.0.1 that
 * reads each request whole, hands it to the service's handler (which checks auth and the body as
 * the service does) and can be told to answer slowly or to fail, as a loaded or broken service
 * does. A slow answer is abandoned when the client goes away, so a test's deadline ends it.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '@gateway/testing';

/** A request as the fake received it. */
export interface FakeRequest {
  readonly method: string;
  /** The path without the query. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: Buffer;
  /** The body as JSON; undefined when it is not JSON. */
  readonly body: unknown;
}

/** An answer: a status, a JSON body, extra headers. */
export interface FakeAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/** A started fake service. */
export interface FakeModerationService {
  /** `http://127.0.0.1:<port>`: the check's base_url. */
  readonly baseUrl: string;
  /** Every request that passed the auth check, in order. */
  readonly accepted: FakeRequest[];
  /** From now on, every answer waits `delayMs` first (0: answer at once). */
  slow(delayMs: number): void;
  /** From now on, every request is answered with `status` (500 by default) in the service's error envelope. */
  fail(status?: number): void;
  /** Answers normally again (and at once). */
  recover(): void;
  close(): Promise<void>;
}

/** What a service's fake is made of. */
export interface FakeServiceDefinition {
  /** The answer of a request whose auth is not the service's; undefined when it is. */
  refuseAuth(request: FakeRequest): FakeAnswer | undefined | Promise<FakeAnswer | undefined>;
  /** The answer of an accepted request. */
  answer(request: FakeRequest): FakeAnswer | Promise<FakeAnswer>;
  /** The answer of a failing service, in its error envelope. */
  failure(status: number): FakeAnswer;
}

function parsed(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Waits `delayMs`, or less when the client goes away first; true when the client is still there. */
function waited(response: ServerResponse, delayMs: number): Promise<boolean> {
  if (delayMs <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(true), delayMs);
    response.once('close', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
}

function send(response: ServerResponse, answer: FakeAnswer): void {
  if (response.destroyed) return;
  response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
  response.end(JSON.stringify(answer.body));
}

/** Starts a fake service on a free port of 127.0.0.1. */
export async function startFakeService(definition: FakeServiceDefinition): Promise<FakeModerationService> {
  const accepted: FakeRequest[] = [];
  let delayMs = 0;
  let failing: number | undefined;
  const server = createServer((incoming, response) => {
    const pieces: Buffer[] = [];
    incoming.on('data', (piece: Buffer) => pieces.push(piece));
    incoming.on('end', async () => {
      const url = new URL(incoming.url ?? '/', 'http://fake');
      const rawBody = Buffer.concat(pieces);
      const request: FakeRequest = {
        method: incoming.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: incoming.headers,
        rawBody,
        body: parsed(rawBody),
      };
      if (!(await waited(response, delayMs))) return;
      if (failing !== undefined) return send(response, definition.failure(failing));
      try {
        const refusal = await definition.refuseAuth(request);
        if (refusal) return send(response, refusal);
        accepted.push(request);
        send(response, await definition.answer(request));
      } catch (error) {
        send(response, { status: 500, body: { error: `the fake failed: ${(error as Error).message}` } });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    accepted,
    slow(delay) {
      delayMs = delay;
    },
    fail(status = 500) {
      failing = status;
    },
    recover() {
      failing = undefined;
      delayMs = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A base_url nothing listens on (a port reserved for this process and left closed): calls to it are refused. */
export async function closedBaseUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}

/** A bearer token's value, or undefined when the header is not `Bearer <token>`. */
export function bearerOf(headers: IncomingHttpHeaders): string | undefined {
  const match = /^Bearer (.+)$/.exec(headers.authorization ?? '');
  return match?.[1];
}
