/**
 * The usage API's JSON, shared by the route that writes it (routes/usage.ts) and the web console
 * that reads it (console/src/admin-api.ts): one declaration, so the two cannot drift. Types only.
 */

/** One result of a usage bucket (or the totals): one group where the query groups by key, model or plan. */
export interface UsageResultJson {
  object: 'usage.result';
  key_id?: string;
  model?: string;
  plan?: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cost_usd: number;
  /** The exact cost: pico-USD (10^-12 USD) as a decimal integer. */
  cost_pico_usd: string;
  errors: number;
  fallbacks: number;
}
