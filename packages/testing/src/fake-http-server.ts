/**
 * What the fake HTTP servers of this package share: reading a request's whole body before
 * answering, recording when a request's answer ended, and listening on a free loopback port.
 */
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Server as TcpServer } from 'node:net';

/** A request listener that is called once the request's body has arrived whole. */
export function afterBody(handle: (incoming: IncomingMessage, body: Buffer, response: ServerResponse) => void): RequestListener {
  return (incoming, response) => {
    const pieces: Buffer[] = [];
    incoming.on('data', (piece: Buffer) => pieces.push(piece));
    incoming.on('end', () => handle(incoming, Buffer.concat(pieces), response));
  };
}

/** How a request's answer ended, as a fake records it. */
export interface AnswerEnd {
  /** Resolves with the time (performance.now()) the connection closed or the response finished. */
  readonly closed: Promise<number>;
  /** True when the response was fully written before the connection closed. */
  finished: boolean;
}

/** A received request with how its answer ended, kept up to date as `response` finishes and closes. */
export function withAnswerEnd<Request extends object>(request: Request, response: ServerResponse): Request & AnswerEnd {
  let markClosed: (at: number) => void = () => {};
  const tracked = Object.assign(request, {
    closed: new Promise<number>((resolve) => {
      markClosed = resolve;
    }),
    finished: false,
  });
  response.on('finish', () => {
    tracked.finished = true;
  });
  response.on('close', () => markClosed(performance.now()));
  return tracked;
}

/** Listens on a free port of 127.0.0.1; returns its `http://127.0.0.1:<port>`. */
export async function listenOn(server: TcpServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A close of the server that ends its open connections rather than wait for them. */
export function closing(server: Server): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}
