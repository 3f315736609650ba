/**
 * GET /v1/models and GET /v1/models/{id}: OpenAI's list format from the router's pushed catalog,
 * every enabled model in the default page (the official SDK reads one page), with context
 * length, prices and capabilities on each entry; `limit` and `after` page through it.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ModelOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../dependencies.js';
import { RequestError } from '../errors.js';
import { bearerKey, checkKey, noteKeyChecked } from '../auth/key-check.js';

const TIERS: Record<string, string> = { QUALITY_TIER_ECONOMY: 'economy', QUALITY_TIER_STANDARD: 'standard', QUALITY_TIER_PREMIUM: 'premium' };

/** A proto QualityTier as the API shows it (`economy`, `standard`, `premium`), or null when unspecified. */
export function tierName(tier: string | null | undefined): string | null {
  return TIERS[tier ?? ''] ?? null;
}

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

function catalogOrUnavailable(deps: EdgeDependencies) {
  if (!deps.catalog.ready)
    throw new RequestError(503, 'The model catalog is not available yet. Please retry shortly.', {
      code: 'catalog_unavailable',
      headers: { 'retry-after': '1' },
    });
  return deps.catalog;
}

/** Registers the routes. */
export function registerModels(app: FastifyInstance, deps: EdgeDependencies): void {
  app.get('/v1/models', async (request: FastifyRequest<{ Querystring: Record<string, string | undefined> }>, reply) => {
    noteKeyChecked(request);
    await checkKey(deps, bearerKey(request), request.id);
    const models = catalogOrUnavailable(deps).list();
    const { limit: limitText, after } = request.query;
    let limit = models.length;
    if (limitText !== undefined) {
      limit = Number(limitText);
      if (!/^\d+$/.test(limitText) || limit < 1 || limit > 1000)
        throw new RequestError(400, `Invalid value for 'limit': expected an integer from 1 to 1000, got '${limitText.slice(0, 32)}'.`, {
          param: 'limit',
          code: 'invalid_value',
        });
    }
    let start = 0;
    if (after !== undefined) {
      const index = models.findIndex((model) => model.id === after);
      if (index < 0)
        throw new RequestError(400, `Invalid value for 'after': no model has the id '${after.slice(0, 128)}'.`, { param: 'after', code: 'invalid_value' });
      start = index + 1;
    }
    const page = models.slice(start, start + limit).map(modelJson);
    void reply.header('content-type', 'application/json');
    return JSON.stringify({
      object: 'list',
      data: page,
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
      has_more: start + limit < models.length,
    });
  });

  // The id may contain '/', sent raw or as %2F: take everything after the prefix.
  app.get('/v1/models/*', async (request: FastifyRequest<{ Params: { '*': string } }>, reply) => {
    noteKeyChecked(request);
    await checkKey(deps, bearerKey(request), request.id);
    let id: string;
    try {
      id = decodeURIComponent(request.params['*']);
    } catch {
      id = request.params['*'];
    }
    const model = catalogOrUnavailable(deps).get(id);
    if (!model)
      throw new RequestError(404, `The model \`${id.slice(0, 256)}\` does not exist or you do not have access to it.`, {
        param: 'model',
        code: 'model_not_found',
      });
    void reply.header('content-type', 'application/json');
    return JSON.stringify(modelJson(model));
  });
}
