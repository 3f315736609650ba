/**
 * The edge as a fastify instance, not listening: pure wiring that tests build without a port.
 * It speaks REST and SSE and nothing else; every decision is made by auth, router and executor.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import cors from '@fastify/cors';
import websocket from '@fastify/websocket';
import type { prometheus } from '@gateway/observability';
import { RequestError, errorBody, shouldRetry, toRequestError } from './errors.js';
import { UNAVAILABLE } from './error-codes.js';
import { registerCompletionRoutes } from './routes/api/completion-routes.js';
import { jsonNestsDeeperThan, MAX_JSON_NESTING } from './wire/json-nesting.js';
import { JsonParseFailure, OFF_THREAD_JSON_CHARACTERS, OffThreadJson } from './wire/off-thread-json.js';
import { registerModels } from './routes/api/models.js';
import { registerAdminAccess } from './routes/admin/admin-access.js';
import { registerAdminKeys } from './routes/admin/admin-keys.js';
import { registerAdminTeams } from './routes/admin/admin-teams.js';
import { registerAdminMcpServers } from './routes/admin/admin-mcp-servers.js';
import { registerAdminPolicies } from './routes/admin/admin-policies.js';
import { registerAdminCache } from './routes/admin/admin-cache.js';
import { registerMcp } from './routes/api/mcp.js';
import { registerResponses } from './routes/api/responses.js';
import { registerResponsesCompact } from './routes/api/responses-compact.js';
import { drainResponsesWebSockets, registerResponsesWebSocket } from './routes/api/responses-websocket.js';
import { registerAdminRequestLog } from './routes/admin/admin-request-log.js';
import { registerAdminToolCalls } from './routes/admin/admin-tool-calls.js';
import { registerAdminUsage } from './routes/admin/admin-usage.js';
import { registerUsage } from './routes/api/usage.js';
import { registerFiles } from './routes/api/files.js';
import { registerBatches } from './routes/api/batches.js';
import { registerMessageBatches } from './routes/api/message-batches.js';
import { registerConsole } from './routes/admin/console.js';
import { registerConsoleSso } from './routes/admin/console-sso.js';
import { adminApiEnabled } from './routes/admin/admin-scope.js';
import { registerMessagesCountTokens } from './routes/api/messages-count-tokens.js';
import { messagesErrors } from './wire/messages-output.js';
import { checkKey, keyCheckPending, noteKeyChecked, requestKey, routeWire } from './auth/key-check.js';
import { refusedBodyEvent } from './completions/usage-report.js';
import type { EdgeDependencies } from './dependencies.js';
import { errorCounter, httpMetricsHook } from './http-metrics.js';

export type { EdgeDependencies } from './dependencies.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/**
 * Joined once: @fastify/cors joins a list on every request, and each reply (each open stream) then
 * holds its own copy of the 280-character value.
 */
const EXPOSED_HEADERS = [
  'x-request-id',
  'openai-processing-ms',
  'openai-model',
  'retry-after',
  'retry-after-ms',
  'x-should-retry',
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-tokens',
  'x-gateway-budget-remaining-usd',
  // The MCP gateway's session, which a browser client (the MCP Inspector) must read to go on.
  'mcp-session-id',
].join(', ');

/** Maps fastify's own failures (body parsing, limits) to the error a caller should see. */
function frameworkError(error: FastifyError, limit: number): RequestError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new RequestError(413, `The request body is too large: the limit is ${limit} bytes.`, { code: 'request_too_large' });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new RequestError(415, "Unsupported Content-Type: send the body as JSON with 'Content-Type: application/json'.", {
        code: 'unsupported_media_type',
      });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new RequestError(400, 'The request body is empty: send a JSON object.', { code: 'invalid_json' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new RequestError(400, 'The Content-Length header does not match the body.', { code: 'invalid_body' });
    default:
      if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (error.statusCode === 400 && /JSON/i.test(error.message))) {
        return new RequestError(400, `We could not parse the JSON body of your request: ${error.message.slice(0, 200)}. Send a valid JSON object.`, {
          code: 'invalid_json',
        });
      }
      if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
        return new RequestError(error.statusCode, error.message.slice(0, 300), { code: 'invalid_request' });
      }
      return undefined;
  }
}

/** A route the edge serves: its method and path as registered (`/admin/v1/keys/:id`). */
export interface EdgeRoute {
  method: string;
  url: string;
}

const registered = new WeakMap<FastifyInstance, EdgeRoute[]>();

/**
 * Every route an app of buildEdgeApp serves (HEAD and OPTIONS, which fastify adds, and the 405
 * answers to other methods left out): what its README must list.
 */
export function registeredRoutes(app: FastifyInstance): readonly EdgeRoute[] {
  return registered.get(app) ?? [];
}

/** The fastify instance of the edge: its logger, body limit, request ids and prototype-poisoning rules. */
function createFastify(deps: EdgeDependencies): FastifyInstance {
  return Fastify({
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    bodyLimit: deps.config.EDGE_BODY_LIMIT_BYTES,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : `req_${randomUUID().replaceAll('-', '')}`;
    },
    return503OnClosing: true,
    // A `__proto__` or `constructor.prototype` key is dropped, not an error: it is never a field we read.
    onProtoPoisoning: 'remove',
    onConstructorPoisoning: 'remove',
  });
}

/** Records every route registered on the app, for registeredRoutes. */
function trackRoutes(app: FastifyInstance): void {
  const routes: EdgeRoute[] = [];
  registered.set(app, routes);
  app.addHook('onRoute', (route) => {
    if ((route.config as { methodNotAllowed?: boolean } | undefined)?.methodNotAllowed) return;
    for (const method of [route.method].flat()) if (method !== 'HEAD' && method !== 'OPTIONS') routes.push({ method, url: route.url });
  });
}

/**
 * Only JSON bodies: a text/plain body is a 415, not a string to validate. fastify's JSON parser
 * (prototype poisoning removed), after a linear check that the body does not nest deeper than any
 * request can: V8 parses deep nesting several times slower. A large body is parsed the same way
 * on a thread of its own, so that it never holds the event loop.
 */
function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('text/plain');
  const parseJson = app.getDefaultJsonParser('remove', 'remove');
  const offThread = new OffThreadJson();
  app.addHook('onClose', () => offThread.close());
  const tooDeep = () => new RequestError(400, `The request body nests objects and arrays more than ${MAX_JSON_NESTING} levels deep.`, { code: 'invalid_body' });
  const parseOffThread = (text: string, done: (error: Error | null, body?: unknown) => void) =>
    offThread.parse(text).then(
      (value) => done(null, value),
      (error: unknown) => {
        if (error instanceof JsonParseFailure) done(error.failure === 'too_deep' ? tooDeep() : new SyntaxError(error.message), undefined);
        // The parser thread died (it is started again for the next body): this body is refused.
        else done(UNAVAILABLE.requestBody(), undefined);
      },
    );
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.length >= OFF_THREAD_JSON_CHARACTERS) void parseOffThread(text, done);
    else if (jsonNestsDeeperThan(text, MAX_JSON_NESTING)) done(tooDeep(), undefined);
    else parseJson(request, text, done);
  });
}

/**
 * Every error in one envelope: the route's wire's (WireErrors, set as the route's `wire`), else
 * OpenAI's. Unknown URLs are 404s in OpenAI's envelope too.
 */
function registerErrorHandlers(app: FastifyInstance, deps: EdgeDependencies, errors: prometheus.Counter<string>): void {
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    let requestError = (error instanceof RequestError ? error : frameworkError(error, deps.config.EDGE_BODY_LIMIT_BYTES)) ?? toRequestError(error);
    // The key first: a body refused before auth saw the key waits for the key's check, and an
    // invalid key wins (401 rather than 400, 413 or 415).
    if (requestError.status !== 401 && keyCheckPending(request)) {
      noteKeyChecked(request);
      try {
        const decision = await checkKey(deps, requestKey(request), request.id);
        // A completion request of a known key refused before reaching a model: the request log shows it.
        const event =
          decision.key_id && deps.refusals
            ? refusedBodyEvent(request, reply.elapsedTime, { keyId: decision.key_id, teamId: decision.team_id ?? '' }, requestError)
            : undefined;
        if (event) deps.refusals?.publish(event);
      } catch (keyError) {
        requestError = toRequestError(keyError);
      }
    }
    if (requestError.status >= 500) request.log.error({ err: error, status: requestError.status }, 'request failed');
    else request.log.info({ status: requestError.status, code: requestError.code }, 'request refused');
    errors.inc({ status: String(requestError.status), type: requestError.type ?? '', code: requestError.code ?? '' });
    void reply.status(requestError.status).headers(requestError.headers).header('content-type', 'application/json');
    if (!shouldRetry(requestError.status)) void reply.header('x-should-retry', 'false');
    const wire = routeWire(request);
    return reply.send(wire ? wire.renderError(requestError) : errorBody(requestError));
  });
  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).header('content-type', 'application/json').header('x-should-retry', 'false');
    return reply.send(
      errorBody(new RequestError(404, `Unknown request URL: ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}.`, { code: 'unknown_url' })),
    );
  });
}

/** 405s for the other methods on the API's paths; marked, as they are no endpoints (registeredRoutes leaves them out). */
function registerMethodRefusals(app: FastifyInstance): void {
  const methodNotAllowed = (allowed: string) => async () => {
    throw new RequestError(405, `Method not allowed. This endpoint accepts ${allowed}.`, { code: 'method_not_allowed', headers: { allow: allowed } });
  };
  const refusal = { methodNotAllowed: true };
  app.route({ method: ['GET', 'PUT', 'PATCH', 'DELETE'], url: '/v1/chat/completions', config: refusal, handler: methodNotAllowed('POST') });
  // GET is the WebSocket upgrade (routes/api/responses-websocket.ts), a 405 itself without one.
  app.route({ method: ['PUT', 'PATCH', 'DELETE'], url: '/v1/responses', config: refusal, handler: methodNotAllowed('POST') });
  for (const url of ['/v1/messages', '/v1/messages/count_tokens'])
    app.route({ method: ['GET', 'PUT', 'PATCH', 'DELETE'], url, config: { ...refusal, wire: messagesErrors }, handler: methodNotAllowed('POST') });
  app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE'], url: '/v1/models', config: refusal, handler: methodNotAllowed('GET') });
}

/**
 * Which routes an app serves: `public`, the APIs callers use with their keys; `admin`, the admin
 * API (/admin/*) and the web console (/console) for a listener of their own (EDGE_ADMIN_PORT) that
 * the network keeps private; `both`, everything on one port. Every surface has /healthz and
 * /readyz; a route of another surface is the plain 404 (`unknown_url`).
 */
export type EdgeSurface = 'public' | 'admin' | 'both';

/** Options of {@link buildEdgeApp}. */
export interface EdgeAppOptions {
  /** The routes served; `both` by default. */
  surface?: EdgeSurface;
}

/** The routes of a surface, on an app with its parsers, hooks and error handlers in place. */
function registerSurface(app: FastifyInstance, deps: EdgeDependencies, surface: EdgeSurface): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = await deps.ready();
    void reply.status(ready ? 200 : 503);
    return { status: ready ? 'ready' : 'not ready' };
  });
  if (surface !== 'admin') {
    registerMethodRefusals(app);
    registerCompletionRoutes(app, deps);
    registerMessagesCountTokens(app, deps);
    registerModels(app, deps);
    registerUsage(app, deps);
    registerFiles(app, deps);
    registerBatches(app, deps);
    registerMessageBatches(app, deps);
    registerResponses(app, deps);
    registerResponsesWebSocket(app, deps);
    registerResponsesCompact(app, deps);
    registerMcp(app, deps);
  }
  if (surface !== 'public') {
    registerAdminKeys(app, deps);
    registerAdminAccess(app, deps);
    registerAdminTeams(app, deps);
    registerAdminMcpServers(app, deps);
    registerAdminPolicies(app, deps);
    registerAdminCache(app, deps);
    registerAdminUsage(app, deps);
    registerAdminRequestLog(app, deps);
    registerAdminToolCalls(app, deps);
    const consoleEnabled = adminApiEnabled(deps.config);
    registerConsole(app, { enabled: consoleEnabled });
    if (consoleEnabled) registerConsoleSso(app, deps.config);
  }
}

/** Builds the edge, or one surface of it (see EdgeSurface). */
export async function buildEdgeApp(deps: EdgeDependencies, options: EdgeAppOptions = {}): Promise<FastifyInstance> {
  const app = createFastify(deps);
  trackRoutes(app);
  const errors = errorCounter(deps.registry);
  const recordResponse = httpMetricsHook(deps.registry);
  registerJsonParser(app);
  await app.register(cors, { origin: true, methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'], exposedHeaders: EXPOSED_HEADERS, maxAge: 600 });
  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done();
  });
  app.addHook('onResponse', recordResponse);
  registerErrorHandlers(app, deps, errors);
  // The Responses API's WebSocket mode; a message larger than the bound closes its socket (1009).
  // At close, its sockets finish their running responses within the shutdown's grace, as in-flight
  // requests do, before the server closes.
  await app.register(websocket, {
    options: { maxPayload: deps.config.EDGE_WS_MAX_MESSAGE_BYTES },
    preClose: async function (this: FastifyInstance) {
      await drainResponsesWebSockets(this, deps.config.EDGE_SHUTDOWN_GRACE_MS);
      this.websocketServer.close();
    },
  });
  registerSurface(app, deps, options.surface ?? 'both');
  return app;
}
