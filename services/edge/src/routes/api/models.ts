/**
 * GET /v1/models and GET /v1/models/{id}: OpenAI's list format from the router's pushed catalog,
 * every enabled model in the default page (the official SDK reads one page), with context
 * length, prices and capabilities on each entry; `limit` and `after` page through it.
 *
 * A request with an `anthropic-version` header (every Anthropic SDK and Claude Code send one) is
 * answered as Anthropic's Models API: its key from `x-api-key` or the bearer token, model objects
 * `{type: "model", id, display_name, created_at}`, pages of `limit` (default 20) after `after_id`
 * or before `before_id`, and errors in Anthropic's envelope.
 *
 * OpenAI's list also carries `models`: the same page as Codex's model catalog (its ModelInfo:
 * `slug`, `context_window`, `input_modalities`, `supports_parallel_tool_calls`, the shell and
 * patch tools it should offer...), so that the response saved as a file is a catalog Codex reads
 * (`model_catalog_json`) and Codex knows the gateway's models instead of falling back to defaults.
 *
 * Either way only the models the key's allow-lists let it use are listed, and any other model is
 * a 404 as an unknown one is: a key learns nothing of models it may not use.
 */
import { tierName } from '../../catalog-view.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ModelOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../../dependencies.js';
import { RequestError } from '../../errors.js';
import { UNAVAILABLE } from '../../error-codes.js';
import { checkKey, noteKeyChecked, requestKey } from '../../auth/key-check.js';
import type { WireErrors } from '../../completions/completion.js';
import { allowListsOf, isAllowed } from '../../completions/allowed-models.js';
import { messagesErrors } from '../../wire/messages-output.js';

/** Integer micro-USD back to the catalog's decimal USD; dividing by a power of ten prints exactly. */
function usdPerMtok(microPerMtok: number | undefined): number {
  return (microPerMtok ?? 0) / 1_000_000;
}

/** One model as an OpenAI model object with the gateway's extra fields. */
export function modelJson(model: ModelOutput) {
  return {
    id: model.id,
    object: 'model',
    created: model.created ?? 0,
    owned_by: model.owned_by || model.provider,
    context_window: model.context_window ?? 0,
    max_output_tokens: model.max_output_tokens ?? 0,
    pricing: {
      currency: 'USD',
      unit: 'per_million_tokens',
      input: usdPerMtok(model.pricing?.input_micro_usd_per_mtok),
      cached_input: usdPerMtok(model.pricing?.cached_input_micro_usd_per_mtok),
      output: usdPerMtok(model.pricing?.output_micro_usd_per_mtok),
    },
    capabilities: {
      tools: model.capabilities?.tools ?? false,
      vision: model.capabilities?.vision ?? false,
      streaming: model.capabilities?.streaming ?? false,
      json_mode: model.capabilities?.json_mode ?? false,
    },
    quality_tier: tierName(model.quality_tier),
    available: model.available ?? false,
  };
}

/**
 * The base instructions of every model in Codex's catalog: a catalog entry must carry its own
 * (Codex refuses one without). The gateway's own words, for any model it serves; Codex adds its
 * tools, its sandbox and the workspace's AGENTS.md as it does for every model.
 */
export const CODEX_BASE_INSTRUCTIONS = [
  "You are a coding agent working in the Codex CLI on the user's computer, in the workspace it opened. Work until the user's request is",
  'fully handled: read the code before changing it, make the changes with the tools you are given (run commands with the shell tool,',
  'edit files with the patch tool), run the checks that show the change works, and report what you did and what is left, briefly.',
  'Follow the instructions of AGENTS.md files in the workspace and the conventions of the surrounding code. Keep changes focused on',
  'the request; do not revert changes you did not make. Ask the user only when the request is ambiguous and a wrong guess would be costly.',
].join(' ');

/**
 * One model in Codex's catalog format (codex-rs `ModelInfo`), from what the gateway knows of it:
 * its context window, whether it sees images, whether it may call tools in parallel. The shell
 * tool is Codex's plain function one and its patch tool Codex's default, which every upstream serves; reasoning
 * controls are not offered (the gateway maps efforts per provider itself).
 */
export function codexModelJson(model: ModelOutput, priority: number) {
  const contextWindow = model.context_window ?? 0;
  return {
    slug: model.id,
    display_name: model.id,
    base_instructions: CODEX_BASE_INSTRUCTIONS,
    description: `${model.id} through the gateway (${model.owned_by || model.provider}).`,
    context_window: contextWindow > 0 ? contextWindow : null,
    max_context_window: contextWindow > 0 ? contextWindow : null,
    auto_compact_token_limit: null,
    default_reasoning_level: null,
    supported_reasoning_levels: [],
    shell_type: 'shell_command',
    visibility: 'list',
    supported_in_api: true,
    priority,
    upgrade: null,
    supports_reasoning_summaries: false,
    support_verbosity: false,
    default_verbosity: null,
    apply_patch_tool_type: null,
    truncation_policy: { mode: 'bytes', limit: 10_000 },
    supports_parallel_tool_calls: model.capabilities?.tools ?? false,
    input_modalities: model.capabilities?.vision ? ['text', 'image'] : ['text'],
    experimental_supported_tools: [],
  };
}

function catalogOrUnavailable(deps: EdgeDependencies) {
  if (!deps.catalog.ready) throw UNAVAILABLE.catalog();
  return deps.catalog;
}

/** Anthropic's API for a request that names its version, else OpenAI's (the route's `wire`). */
function anthropicOrOpenAi(request: FastifyRequest): WireErrors | undefined {
  return request.headers['anthropic-version'] === undefined ? undefined : messagesErrors;
}

/** One model as an Anthropic model object. */
function anthropicModelJson(model: ModelOutput) {
  return { type: 'model', id: model.id, display_name: model.id, created_at: new Date((model.created ?? 0) * 1000).toISOString() };
}

/** A page size from `limit`: an integer from 1 to 1000, else a 400 naming it. */
function pageLimit(limitText: string | undefined, fallback: number): number {
  if (limitText === undefined) return fallback;
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > 1000)
    throw new RequestError(400, `Invalid value for 'limit': expected an integer from 1 to 1000, got '${limitText.slice(0, 32)}'.`, {
      param: 'limit',
      code: 'invalid_value',
    });
  return limit;
}

/** Where a page starts: after the model `after` (or, when `before` is given, `limit` before it). */
function pageStart(models: readonly ModelOutput[], cursor: { after?: string; before?: string }, limit: number): number {
  const id = cursor.after ?? cursor.before;
  if (id === undefined) return 0;
  const index = models.findIndex((model) => model.id === id);
  const param = cursor.after !== undefined ? 'after' : 'before';
  if (index < 0) throw new RequestError(400, `Invalid value for '${param}': no model has the id '${id.slice(0, 128)}'.`, { param, code: 'invalid_value' });
  return cursor.after !== undefined ? index + 1 : Math.max(0, index - limit);
}

/** Registers the routes. */
export function registerModels(app: FastifyInstance, deps: EdgeDependencies): void {
  const config = { wire: anthropicOrOpenAi };
  app.get('/v1/models', { config }, async (request: FastifyRequest<{ Querystring: Record<string, string | undefined> }>, reply) => {
    noteKeyChecked(request);
    const lists = allowListsOf(await checkKey(deps, requestKey(request), request.id));
    const models = catalogOrUnavailable(deps)
      .list()
      .filter((model) => isAllowed(lists, model.id ?? ''));
    const anthropic = anthropicOrOpenAi(request) !== undefined;
    const { limit: limitText, after, after_id: afterId, before_id: beforeId } = request.query;
    const limit = pageLimit(limitText, anthropic ? 20 : models.length);
    const start = pageStart(models, anthropic ? { after: afterId, before: beforeId } : { after }, limit);
    const end = anthropic && beforeId !== undefined ? models.findIndex((model) => model.id === beforeId) : start + limit;
    const page = models.slice(start, end);
    const data = anthropic ? page.map(anthropicModelJson) : page.map(modelJson);
    void reply.header('content-type', 'application/json');
    return JSON.stringify({
      ...(anthropic ? {} : { object: 'list' }),
      data,
      ...(anthropic ? {} : { models: page.map((model, index) => codexModelJson(model, start + index)) }),
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
      has_more: anthropic && beforeId !== undefined ? start > 0 : end < models.length,
    });
  });

  // The id may contain '/', sent raw or as %2F: take everything after the prefix.
  app.get('/v1/models/*', { config }, async (request: FastifyRequest<{ Params: { '*': string } }>, reply) => {
    noteKeyChecked(request);
    const lists = allowListsOf(await checkKey(deps, requestKey(request), request.id));
    let id: string;
    try {
      id = decodeURIComponent(request.params['*']);
    } catch {
      id = request.params['*'];
    }
    const model = catalogOrUnavailable(deps).get(id);
    if (!model || !isAllowed(lists, id))
      throw new RequestError(404, `The model \`${id.slice(0, 256)}\` does not exist or you do not have access to it.`, {
        param: 'model',
        code: 'model_not_found',
      });
    void reply.header('content-type', 'application/json');
    return JSON.stringify(anthropicOrOpenAi(request) ? anthropicModelJson(model) : modelJson(model));
  });
}
