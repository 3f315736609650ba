/**
 * Which model serves a chat completion: an explicit id from the catalog the router pushes to the
 * edge (no call), `auto` (or any id while no catalog has arrived) from the router; and how many
 * prompt tokens the request is checked and reserved with.
 */
import type { FastifyRequest } from 'fastify';
import { capabilityProblem as catalogCapabilityProblem } from '@gateway/catalog';
import { GatewayError, callUnary } from '@gateway/grpc';
import type { ModelOutput, RouteRequest, RouteResponseOutput } from '@gateway/proto';
import { countPromptTokensWithinAsync, promptTokenBounds, routingText, tokenPrefixAsync } from '@gateway/tokens';
import type { EdgeDependencies } from '../dependencies.js';
import { RequestError } from '../errors.js';
import type { ParsedChatRequest } from './parsed-request.js';

/** What the router or the edge's catalog decided. */
export interface Routing {
  model: ModelOutput;
  route?: RouteResponseOutput;
}

/** Checks that the chosen model can serve the request, before any upstream call. */
export function checkCapabilities(model: ModelOutput, parsed: ParsedChatRequest, promptTokens: number): void {
  const problem = capabilityProblem(model, parsed, promptTokens);
  if (problem) throw problem;
}

/** Why a model cannot serve the request (the catalog's one rule set, shared with the router), or undefined when it can. */
export function capabilityProblem(model: ModelOutput, parsed: ParsedChatRequest, promptTokens: number): RequestError | undefined {
  const problem = catalogCapabilityProblem(model, {
    embeddings: parsed.embeddings !== undefined,
    dimensions: parsed.embeddings?.dimensions,
    tools: parsed.needsTools,
    vision: parsed.needsVision,
    jsonMode: parsed.needsJsonMode,
    stream: parsed.request.stream === true,
    promptTokens,
    maxTokens: parsed.request.max_tokens,
    maxTokensParam: parsed.request.max_tokens_is_completion_tokens ? 'max_completion_tokens' : 'max_tokens',
  });
  return problem && new RequestError(400, problem.message, { param: problem.param, code: problem.code });
}

/** The smallest and largest context windows of a catalog's models (0 when none has one). */
interface CatalogWindows {
  smallest: number;
  largest: number;
}

const windowsOfList = new WeakMap<readonly ModelOutput[], CatalogWindows>();

/** The catalog's windows, computed once per catalog snapshot. */
function catalogWindows(catalog: EdgeDependencies['catalog']): CatalogWindows {
  const models = catalog.list();
  let windows = windowsOfList.get(models);
  if (!windows) {
    const sizes = models.map((model) => model.context_window ?? 0).filter((size) => size > 0);
    windows = { smallest: sizes.length > 0 ? Math.min(...sizes) : 0, largest: sizes.length > 0 ? Math.max(...sizes) : 0 };
    windowsOfList.set(models, windows);
  }
  return windows;
}

/**
 * The prompt tokens a request is reserved and checked with. Exact counting is needed only where
 * the number reaches the caller: when the prompt might not fit the context window of every model
 * that could serve it. Otherwise (the prompt's upper bound, its UTF-8 bytes, fits) the cheap
 * estimate is used, and the reservation is settled with the provider's reported usage.
 */
export async function promptTokensOf(catalog: EdgeDependencies['catalog'], parsed: ParsedChatRequest): Promise<{ tokens: number; exact: boolean }> {
  const bounds = promptTokenBounds(parsed.request);
  const named = catalog.get(parsed.request.model ?? '');
  // The window every candidate has: the named model's (none: no window check), else the smallest.
  const window = named ? named.context_window || Number.POSITIVE_INFINITY : catalogWindows(catalog).smallest;
  if (bounds.upper + (parsed.request.max_tokens ?? 0) <= window) return { tokens: bounds.estimate, exact: false };
  return { tokens: await countBoundedPromptTokens(catalog, parsed), exact: true };
}

/**
 * The prompt tokens of a request, counted no further than any model could take: the named
 * model's context window, else (auto, or an id the catalog lacks) the largest in the catalog. A
 * prompt past that is refused here, so a huge body costs a bounded share of the tokenizer.
 */
export async function countBoundedPromptTokens(catalog: EdgeDependencies['catalog'], parsed: ParsedChatRequest): Promise<number> {
  const named = catalog.get(parsed.request.model ?? '')?.context_window;
  const limit = named || catalogWindows(catalog).largest || Number.POSITIVE_INFINITY;
  // In time slices: a prompt of megabytes never holds the event loop (a small one takes no slice).
  const tokens = await countPromptTokensWithinAsync(parsed.request, limit);
  if (tokens !== undefined) return tokens;
  const whose = named ? "This model's" : "The largest model's";
  throw new RequestError(
    400,
    `${whose} maximum context length is ${limit} tokens. However, your messages resulted in more than ${limit} tokens. Please reduce the length of the messages.`,
    { param: 'messages', code: 'context_length_exceeded' },
  );
}

function modelNotFound(modelId: string): RequestError {
  return new RequestError(404, `The model \`${modelId}\` does not exist or you do not have access to it.`, { param: 'model', code: 'model_not_found' });
}

/** What routing reads of a request (a Completion is one). */
export interface RouteQuery {
  parsed: ParsedChatRequest;
  promptTokens: number;
  requestId: string;
  signal: AbortSignal;
  traceparent?: string;
}

/** A routing decision's function: resolves the model of a request under a policy; see createModelResolver. */
export type ModelResolver = (query: RouteQuery, policy: string | undefined) => Promise<Routing>;

/**
 * The resolver of a chat completion's model: an explicit id is looked up in the pushed catalog and
 * checked against the request's needs; `auto`, or any id before a catalog arrived, asks the router.
 */
export function createModelResolver(deps: Pick<EdgeDependencies, 'config' | 'catalog' | 'router'>): ModelResolver {
  const { config, catalog } = deps;
  return async function resolve({ parsed, promptTokens, requestId, signal, traceparent }: RouteQuery, policy: string | undefined): Promise<Routing> {
    const modelId = parsed.request.model ?? '';
    if (modelId !== 'auto' && catalog.ready) {
      const model = catalog.get(modelId);
      if (!model) throw modelNotFound(modelId);
      checkCapabilities(model, parsed, promptTokens);
      return { model };
    }
    const route = await callUnary<RouteRequest, RouteResponseOutput>(
      deps.router,
      deps.router.Route,
      {
        request_id: requestId,
        model: modelId,
        prompt_text: modelId === 'auto' ? routingText(parsed.request.messages ?? []) : '',
        policy: modelId === 'auto' ? (policy ?? '') : '',
        traits: {
          needs_tools: parsed.needsTools,
          needs_vision: parsed.needsVision,
          needs_json_mode: parsed.needsJsonMode,
          stream: parsed.stream,
          prompt_tokens: promptTokens,
          max_tokens: parsed.request.max_tokens ?? 0,
          embeddings: parsed.embeddings !== undefined,
        },
      },
      { deadlineMs: config.EDGE_CONTROL_DEADLINE_MS, requestId, signal, traceparent },
    ).catch((error: unknown) => {
      // The router names its own field; the caller sent it as route_policy (or x-route-policy).
      if (error instanceof GatewayError && error.param === 'policy') {
        throw new RequestError(400, error.message, { param: 'route_policy', code: error.reason });
      }
      throw error;
    });
    const routedId = route.model_id ?? '';
    const model = catalog.get(routedId) ?? ({ id: routedId, pricing: {}, capabilities: {}, fallbacks: [] } satisfies ModelOutput);
    if (catalog.ready) checkCapabilities(model, parsed, promptTokens);
    return { model, route };
  };
}

/** The catalog entry of the model that answered (the primary, or a fallback). */
export function answeredModel(catalog: EdgeDependencies['catalog'], routing: Routing, modelId: string | undefined): ModelOutput {
  if (!modelId || modelId === routing.model.id) return routing.model;
  return catalog.get(modelId) ?? ({ ...routing.model, id: modelId } as ModelOutput);
}

/** The caller's routing policy: the body's `route_policy`, else the `x-route-policy` header. */
export function routePolicy(request: FastifyRequest, parsed: ParsedChatRequest): string | undefined {
  if (parsed.routePolicy !== undefined) return parsed.routePolicy;
  const header = request.headers['x-route-policy'];
  return typeof header === 'string' && header.length > 0 && header.length <= 64 ? header : undefined;
}

/**
 * The input tokens of an embeddings request: an estimate from the texts' UTF-8 size (token ids
 * counted as they are), or their exact count with `exact`. Each input must fit the named model's
 * context window (its most tokens per input): one whose size alone could exceed it is counted, no
 * further than the window, and refused past it.
 */
export async function embeddingInputTokens(
  catalog: EdgeDependencies['catalog'],
  parsed: ParsedChatRequest,
  exact: boolean,
): Promise<{ tokens: number; exact: boolean }> {
  const inputs = parsed.embeddings!;
  const window = catalog.get(parsed.request.model ?? '')?.context_window || Number.POSITIVE_INFINITY;
  const tooLong = (index: number) =>
    new RequestError(
      400,
      `This model's maximum context length is ${window} tokens per input, however 'input[${index}]' has more. Please reduce the length of the input.`,
      { param: `input[${index}]`, code: 'context_length_exceeded' },
    );
  let tokens = 0;
  for (const [index, ids] of inputs.tokenArrays.entries()) {
    if (ids.length > window) throw tooLong(index);
    tokens += ids.length;
  }
  for (const [index, text] of inputs.texts.entries()) {
    const bytes = Buffer.byteLength(text);
    if (!exact && bytes <= window) {
      tokens += Math.ceil(bytes / 4);
      continue;
    }
    const prefix = await tokenPrefixAsync(text, window);
    if (!prefix.complete) throw tooLong(index);
    tokens += prefix.tokens;
  }
  return { tokens, exact };
}
