import type { Pricing } from './pricing.js';

/** The providers an executor can talk to. */
export const PROVIDERS = ['simulated', 'openai-compatible', 'anthropic', 'gemini', 'vertex', 'vertex-anthropic'] as const;
export type Provider = (typeof PROVIDERS)[number];

/** Coarse quality of a model's answers. */
export const QUALITY_TIERS = ['economy', 'standard', 'premium'] as const;
export type QualityTier = (typeof QUALITY_TIERS)[number];

/** What a model can do. */
export interface Capabilities {
  tools: boolean;
  vision: boolean;
  streaming: boolean;
  json_mode: boolean;
}

/** Where and how the executor reaches a model. */
export interface Upstream {
  /** The model name the provider expects. */
  model: string;
  /**
   * The provider's base URL (`https://api.openai.com/v1`); absent for simulated models. Vertex
   * models default it from `region` (`https://{region}-aiplatform.googleapis.com`, or
   * `https://aiplatform.googleapis.com` for `global`), so it is always set once loaded.
   */
  base_url?: string;
  /**
   * The environment variable holding the provider key; the model is on only when it is set. For
   * Vertex models it holds the Google credentials instead: the path of a credentials file (a
   * service-account key or a workload identity federation config), or `default` for Application
   * Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, else the GKE/GCE metadata server).
   */
  api_key_env?: string;
  /** The Google Cloud project of a Vertex model (vertex, vertex-anthropic only). */
  project?: string;
  /** The Vertex AI location of a Vertex model (`us-central1`, `europe-west4`, `global`); vertex providers only. */
  region?: string;
  /** Extra headers for every upstream request (no secrets: those come from api_key_env). */
  headers?: Readonly<Record<string, string>>;
}

/** How a simulated model behaves. */
export interface Simulation {
  /** Delay before the first token. */
  time_to_first_token_ms: number;
  /** Generation speed after the first token; 0 means as fast as possible. */
  tokens_per_second: number;
}

/** One model of the catalog, validated. */
export interface CatalogModel {
  id: string;
  provider: Provider;
  owned_by: string;
  /** Unix seconds, for the model list. */
  created: number;
  upstream: Upstream;
  pricing: Pricing;
  context_window: number;
  max_output_tokens: number;
  capabilities: Capabilities;
  quality_tier: QualityTier;
  /** The catalog's fallback chain, each an id of this catalog. */
  fallbacks: readonly string[];
  /**
   * More deployments of the same model besides `upstream` (another region, account or server),
   * each with its own base_url; model, api_key_env and headers default to `upstream`'s. The
   * executor balances over `upstream` and these. Absent when the catalog lists none.
   */
  deployments?: readonly Upstream[];
  /** Present for simulated models. */
  simulation?: Simulation;
}

/** A validated catalog. */
export interface Catalog {
  readonly models: readonly CatalogModel[];
  readonly byId: ReadonlyMap<string, CatalogModel>;
}
