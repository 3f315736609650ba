import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_SECURITY_HEADERS, registerConsole } from './console.js';

/** The page template the build copies as it is into dist/console/index.html. */
const TEMPLATE = readFileSync(new URL('../../../console/index.html', import.meta.url), 'utf8');
const SCRIPT = 'console.log("app");\n';
const STYLES = 'body { margin: 0; }\n';

let built: string;
let empty: string;
let app: FastifyInstance | undefined;

beforeAll(() => {
  built = mkdtempSync(join(tmpdir(), 'console-built-'));
  writeFileSync(join(built, 'index.html'), TEMPLATE);
  writeFileSync(join(built, 'app.js'), SCRIPT);
  writeFileSync(join(built, 'app.css'), STYLES);
  empty = mkdtempSync(join(tmpdir(), 'console-empty-'));
  // A partial build is no build: index.html alone must not be served.
  writeFileSync(join(empty, 'index.html'), TEMPLATE);
});

afterEach(async () => {
  await app?.close();
  app = undefined;
});

afterAll(() => {
  rmSync(built, { recursive: true, force: true });
  rmSync(empty, { recursive: true, force: true });
});

async function consoleApp(options: Parameters<typeof registerConsole>[1]): Promise<FastifyInstance> {
  app = Fastify();
  registerConsole(app, options);
  await app.ready();
  return app;
}

function expectSecurityHeaders(headers: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(CONSOLE_SECURITY_HEADERS)) expect(headers[name], name).toBe(value);
}

describe('registerConsole', () => {
  it('serves the three files with their content types, no-cache and the security headers', async () => {
    const server = await consoleApp({ enabled: true, directory: built });
    const expected = [
      ['/console', 'text/html; charset=utf-8', TEMPLATE],
      ['/console/', 'text/html; charset=utf-8', TEMPLATE],
      ['/console/app.js', 'text/javascript; charset=utf-8', SCRIPT],
      ['/console/app.css', 'text/css; charset=utf-8', STYLES],
    ] as const;
    for (const [url, contentType, body] of expected) {
      const response = await server.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(200);
      expect(response.headers['content-type']).toBe(contentType);
      expect(response.headers['cache-control']).toBe('no-cache');
      expect(response.body).toBe(body);
      expectSecurityHeaders(response.headers);
    }
    expect(CONSOLE_SECURITY_HEADERS['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
  });

  it('answers 304 to a matching If-None-Match and the full file to a stale one', async () => {
    const server = await consoleApp({ enabled: true, directory: built });
    const first = await server.inject({ method: 'GET', url: '/console/app.js' });
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect((await server.inject({ method: 'GET', url: '/console/app.css' })).headers.etag).not.toBe(etag);

    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const cached = await server.inject({ method: 'GET', url: '/console/app.js', headers: { 'if-none-match': ifNoneMatch } });
      expect(cached.statusCode, ifNoneMatch).toBe(304);
      expect(cached.body).toBe('');
      expect(cached.headers.etag).toBe(etag);
      expect(cached.headers['cache-control']).toBe('no-cache');
      expectSecurityHeaders(cached.headers);
    }
    const stale = await server.inject({ method: 'GET', url: '/console/app.js', headers: { 'if-none-match': '"stale"' } });
    expect(stale.statusCode).toBe(200);
    expect(stale.body).toBe(SCRIPT);
  });

  it('keeps the security headers on an unknown path under /console/', async () => {
    const server = await consoleApp({ enabled: true, directory: built });
    const response = await server.inject({ method: 'GET', url: '/console/secrets.json' });
    expect(response.statusCode).toBe(404);
    expectSecurityHeaders(response.headers);
  });

  it('registers nothing when disabled', async () => {
    const server = await consoleApp({ enabled: false, directory: built });
    for (const url of ['/console', '/console/', '/console/app.js', '/console/app.css']) {
      const response = await server.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.headers['content-security-policy']).toBeUndefined();
    }
  });

  it('answers 503 in the OpenAI error envelope when the console was not built', async () => {
    const server = await consoleApp({ enabled: true, directory: empty });
    for (const url of ['/console', '/console/app.js', '/console/app.css']) {
      const response = await server.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(503);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expectSecurityHeaders(response.headers);
      expect(response.json()).toEqual({
        error: { message: expect.stringMatching(/console was not built/), type: 'service_unavailable_error', param: null, code: 'console_not_built' },
      });
    }
  });

  it('serves a page that a strict CSP allows and that holds no secret', async () => {
    const server = await consoleApp({ enabled: true, directory: built });
    const html = (await server.inject({ method: 'GET', url: '/console' })).body;
    // Every script is an external file of this origin; no inline script, style or handler.
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    expect(scripts.length).toBe(1);
    for (const [, attributes, content] of scripts) {
      expect(attributes).toMatch(/\ssrc="\/console\/app\.js"/);
      expect(content!.trim()).toBe('');
    }
    expect(html).toMatch(/<link rel="stylesheet" href="\/console\/app\.css">/);
    expect(html).not.toMatch(/<style\b|\sstyle\s*=|\son[a-z]+\s*=|javascript:/i);
    // Nothing that looks like a credential: a gateway key, a bearer token, a long random string.
    expect(html).not.toMatch(/br-[A-Za-z0-9]{8,}|bearer|token|secret|[A-Za-z0-9+/_-]{32,}/i);
  });
});
