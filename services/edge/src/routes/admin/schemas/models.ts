/** The models' health (GET /admin/v1/models). */
import { type Static, Type } from '@sinclair/typebox';
import { Nullable } from './common.js';

/** A model's health as the gateway sees it (GET /admin/v1/models). */
export const ModelHealthSchema = Type.Object({
  id: Type.String(),
  provider: Type.String(),
  available: Type.Boolean(),
  retry_after_ms: Nullable(Type.Integer()),
  quality_tier: Nullable(Type.String()),
});
export type ModelHealth = Static<typeof ModelHealthSchema>;
