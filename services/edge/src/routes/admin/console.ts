/**
 * The web console at /console: the three files that scripts/build-console.mjs bundles from
 * `console/` (index.html, app.js, app.css), read once when the route is registered and served
 * under a strict Content-Security-Policy. The files hold no data and need no token; the console
 * reads everything from the admin API with the admin token its user types in, so it exists only
 * where the admin API does.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RequestError, errorBody } from '../../errors.js';

/**
 * Sent with every console response, the 304s, 404s and 503s included. The policy allows only the
 * console's own script and stylesheet: no inline script or style attribute, no other origin
 * (`connect-src 'self'` keeps the admin token from being sent anywhere but this edge), no framing.
 * `img-src data:` is for the empty favicon that stops the browser asking for /favicon.ico.
 */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
});

/** The built files and their content types; index.html names the other two by absolute path. */
const CONTENT_TYPES = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
} as const;

type ConsoleFileName = keyof typeof CONTENT_TYPES;

interface ConsoleFile {
  body: Buffer;
  contentType: string;
  /** Strong: it names these exact bytes. */
  etag: string;
}

/** Options of {@link registerConsole}. */
export interface ConsoleOptions {
  /** False registers nothing, so /console is the edge's plain 404 (the console needs the admin API). */
  enabled: boolean;
  /** Where the built files are; defaults to `dist/console`, beside the compiled `dist/routes`. */
  directory?: string;
}

/** The built files, or undefined when any of them is missing (the console was not built). */
function readConsoleFiles(directory: string): Map<ConsoleFileName, ConsoleFile> | undefined {
  const files = new Map<ConsoleFileName, ConsoleFile>();
  for (const [name, contentType] of Object.entries(CONTENT_TYPES) as Array<[ConsoleFileName, string]>) {
    let body: Buffer;
    try {
      body = readFileSync(join(directory, name));
    } catch (error) {
      // Only an absent file means "not built"; anything else (permissions) is a broken deployment
      // that should stop the edge at start-up rather than hide behind a 503.
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      throw error;
    }
    files.set(name, { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url')}"` });
  }
  return files;
}

/**
 * Whether an If-None-Match header names this entity tag. RFC 9110 §13.1.2 compares weakly here,
 * so `W/"x"` matches `"x"`; `*` matches any current representation.
 */
function noneMatchHits(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || (tag.startsWith('W/') ? tag.slice(2) : tag) === etag;
  });
}

/**
 * Registers GET /console, /console/ (index.html), /console/app.js and /console/app.css, and a
 * 404 with the same security headers for any other path under /console/. The files are read now,
 * once: a console that was not built answers 503 in the OpenAI error envelope until the edge is
 * rebuilt and restarted. Revalidation is by ETag (`cache-control: no-cache`), so a new build is
 * picked up on the next load without fingerprinted file names.
 */
export function registerConsole(app: FastifyInstance, options: ConsoleOptions): void {
  if (!options.enabled) return;
  const directory = options.directory ?? fileURLToPath(new URL('../../console/', import.meta.url));
  const files = readConsoleFiles(directory);
  if (!files) app.log.warn({ directory }, 'the console was not built: /console answers 503');
  const notBuilt = new RequestError(503, 'The console was not built. Build the edge (pnpm --filter @gateway/edge build) and restart it.', {
    code: 'console_not_built',
  });

  const serve = (name: ConsoleFileName) => async (request: FastifyRequest, reply: FastifyReply) => {
    void reply.headers(CONSOLE_SECURITY_HEADERS);
    const file = files?.get(name);
    if (!file) {
      void reply.status(503).header('content-type', 'application/json').header('cache-control', 'no-store');
      return reply.send(errorBody(notBuilt));
    }
    void reply.header('cache-control', 'no-cache').header('etag', file.etag);
    if (noneMatchHits(request.headers['if-none-match'], file.etag)) return reply.status(304).send();
    return reply.header('content-type', file.contentType).send(file.body);
  };

  app.get('/console', serve('index.html'));
  app.get('/console/', serve('index.html'));
  app.get('/console/app.js', serve('app.js'));
  app.get('/console/app.css', serve('app.css'));
  // Anything else under /console/ is the edge's own 404, with the console's headers on it.
  app.get('/console/*', async (_request, reply) => {
    void reply.headers(CONSOLE_SECURITY_HEADERS);
    return reply.callNotFound();
  });
}
