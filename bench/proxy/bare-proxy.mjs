/**
 * The baseline of `pnpm bench proxy`: the least a proxy can do, a node:http server that forwards
 * each POST to the upstream with fetch and streams the answer back. No keys, limits or metering.
 * UPSTREAM is the upstream's base URL; prints its port on stdout once listening.
 */
import { createServer } from 'node:http';

const upstream = process.env.UPSTREAM;
const server = createServer(async (request, response) => {
  const parts = [];
  for await (const part of request) parts.push(part);
  try {
    const answer = await fetch(`${upstream}${request.url.replace(/^\/v1/, '')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
      body: Buffer.concat(parts),
    });
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    for await (const part of answer.body) response.write(part);
    response.end();
  } catch {
    if (!response.headersSent) response.writeHead(502);
    response.end();
  }
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(String(server.address().port)));
