/** The small HTTP server of a service's /metrics, /healthz and /readyz. */
import { createServer, type Server } from 'node:http';
import type client from 'prom-client';

/** A started metrics server; close it on shutdown. */
export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves /metrics, /healthz (alive) and /readyz (ready() true) on a port; port 0 picks a free one.
 */
export async function startMetricsServer(registry: client.Registry, port: number, host = '0.0.0.0', ready: () => boolean = () => true): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    if (request.url === '/metrics') {
      registry.metrics().then(
        (text) => {
          response.writeHead(200, { 'content-type': registry.contentType });
          response.end(text);
        },
        () => {
          response.writeHead(500);
          response.end();
        },
      );
      return;
    }
    if (request.url === '/healthz') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"status":"ok"}');
      return;
    }
    if (request.url === '/readyz') {
      const ok = ready();
      response.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
      response.end(ok ? '{"status":"ready"}' : '{"status":"not ready"}');
      return;
    }
    response.writeHead(404);
    response.end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
