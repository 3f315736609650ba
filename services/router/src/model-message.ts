import { createHash } from 'node:crypto';
import type { CatalogModel, QualityTier } from '@gateway/catalog';
import type { Model } from '@gateway/proto';

/** A catalog quality tier as the proto QualityTier. */
export const QUALITY_TIER_ENUM: Readonly<Record<QualityTier, 'QUALITY_TIER_ECONOMY' | 'QUALITY_TIER_STANDARD' | 'QUALITY_TIER_PREMIUM'>> = {
  economy: 'QUALITY_TIER_ECONOMY',
  standard: 'QUALITY_TIER_STANDARD',
  premium: 'QUALITY_TIER_PREMIUM',
};

/**
 * A catalog model as gateway.router.v1.Model. `fallbacks` is the catalog's chain as given; the
 * caller decides which of them are usable (Route filters them per request).
 */
export function toModelMessage(model: CatalogModel, available: boolean): Model {
  const providerPricing = Object.fromEntries(
    (model.deployments ?? []).flatMap((deployment) => (deployment.provider && deployment.pricing ? [[deployment.provider, { ...deployment.pricing }]] : [])),
  );
  return {
    id: model.id,
    provider: model.provider,
    owned_by: model.owned_by,
    created: model.created,
    pricing: { ...model.pricing },
    context_window: model.context_window,
    max_output_tokens: model.max_output_tokens,
    capabilities: { ...model.capabilities },
    quality_tier: QUALITY_TIER_ENUM[model.quality_tier],
    available,
    fallbacks: [...model.fallbacks],
    kind: model.kind === 'embedding' ? 'MODEL_KIND_EMBEDDING' : 'MODEL_KIND_CHAT',
    ...(model.embedding ? { embedding_dimensions: model.embedding.dimensions, embedding_shortenable: model.embedding.shortenable } : {}),
    ...(Object.keys(providerPricing).length > 0 ? { provider_pricing: providerPricing } : {}),
    revision: revisionOf(model),
  };
}

/** Model.revision: a hash of the catalog entry without its prices (16 hex digits). */
function revisionOf(model: CatalogModel): string {
  const entry = { ...model, pricing: undefined, deployments: (model.deployments ?? []).map((deployment) => ({ ...deployment, pricing: undefined })) };
  return createHash('sha256').update(JSON.stringify(entry)).digest('hex').slice(0, 16);
}
