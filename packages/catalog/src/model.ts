import type { Pricing } from './pricing.js';

/** The providers an executor can talk to. */
export const PROVIDERS = ['simulated', 'openai-compatible', 'anthropic', 'gemini', 'azure', 'bedrock', 'vertex', 'vertex-anthropic'] as const;
export type Provider = (typeof PROVIDERS)[number];

/**
 * What a model does: `chat` answers the completion APIs (chat completions, responses, messages),
 * `embedding` answers /v1/embeddings. A request to the other kind's API is refused (400).
 */
export const MODEL_KINDS = ['chat', 'embedding'] as const;
export type ModelKind = (typeof MODEL_KINDS)[number];

/** The providers whose adapter serves embedding models (the others serve chat only). */
export const EMBEDDING_PROVIDERS: readonly Provider[] = ['simulated', 'openai-compatible', 'gemini', 'azure', 'bedrock', 'vertex'];

/** What an embedding model produces. */
export interface EmbeddingShape {
  /** The length of its vectors. */
  dimensions: number;
  /** Whether it takes a smaller `dimensions` (shortened vectors, as text-embedding-3 and Gemini's models do). */
  shortenable: boolean;
  /**
   * The most inputs one upstream call takes; absent: the adapter's own limit (OpenAI's 2048,
   * Gemini's 100). The executor splits a larger request and joins the vectors in order.
   */
  batch_size?: number;
}

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
   * The provider's base URL (`https://api.openai.com/v1`); absent for simulated models. A bedrock
   * model's defaults to its region's runtime endpoint (`https://bedrock-runtime.<region>.amazonaws.com`);
   * a Vertex model's to its region's (`https://{region}-aiplatform.googleapis.com`, or
   * `https://aiplatform.googleapis.com` for `global`), so it is always set once loaded.
   */
  base_url?: string;
  /**
   * The environment variable holding the provider key; the model is on only when it is set. A
   * bedrock model may name none: it then signs with SigV4 from AWS's default credential chain
   * and is on whenever the catalog lists it; when it names one, that variable holds a Bedrock API
   * key (sent as a bearer token) instead. For Vertex models it holds the Google credentials
   * instead: the path of a credentials file (a service-account key or a workload identity
   * federation config), or `default` for Application Default Credentials
   * (GOOGLE_APPLICATION_CREDENTIALS, else the GKE/GCE metadata server).
   */
  api_key_env?: string;
  /**
   * Where a regional provider serves the model: a bedrock model's AWS region, which its requests
   * are signed for (`us-east-1`), or a Vertex model's Vertex AI location (`us-central1`,
   * `europe-west4`, `global`); bedrock, vertex and vertex-anthropic only.
   */
  region?: string;
  /** The Google Cloud project of a Vertex model (vertex, vertex-anthropic only). */
  project?: string;
  /** Extra headers for every upstream request (no secrets: those come from api_key_env). */
  headers?: Readonly<Record<string, string>>;
  /**
   * Azure OpenAI: the deployment name. With it, requests go to the deployment-addressed URL
   * (`{base_url}/openai/deployments/{deployment}/chat/completions?api-version=...`); without it,
   * to the `/openai/v1/` routes with `model` in the body.
   */
  deployment?: string;
  /** Azure OpenAI: the `api-version` query parameter; required with `deployment`. */
  api_version?: string;
  /**
   * Azure OpenAI: how the executor authenticates. `api_key` (the default) sends the key in
   * api_key_env as the `api-key` header; `entra_id` sends a Microsoft Entra ID token from the
   * Azure credential chain, and api_key_env then names the variable holding the identity's client
   * id (AZURE_CLIENT_ID), which turns the model on.
   */
  auth?: AzureAuth;
  /**
   * Bedrock: the AWS identity this upstream signs with, its own and no other upstream's; absent:
   * AWS's default credential chain of the process. Refused with api_key_env (a Bedrock API key is
   * not signed).
   */
  aws_credentials?: AwsCredentialsSource;
  /**
   * Azure OpenAI with `auth: entra_id`: the Microsoft Entra ID application this upstream takes its
   * tokens as, its own and no other upstream's; absent: the process's credential chain with the
   * client id in api_key_env. With it the upstream names no api_key_env and is on whenever the
   * catalog lists it.
   */
  azure_credential?: AzureCredentialSource;
}

/**
 * Where a Bedrock upstream's AWS credentials come from: a source (a named profile, keys in named
 * environment variables, else AWS's default chain), and optionally a role assumed with them. The
 * catalog holds names only, never a key.
 */
export interface AwsCredentialsSource {
  /** An IAM role to assume (STS AssumeRole) with the source credentials (`arn:aws:iam::123456789012:role/bedrock`). */
  role_arn?: string;
  /** The external id the role's trust policy requires; role_arn only. */
  external_id?: string;
  /** The role session's name, as CloudTrail shows it; role_arn only; default `llm-gateway`. */
  session_name?: string;
  /** A profile of the shared AWS config and credentials files (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE). */
  profile?: string;
  /** The environment variable holding the access key id (with secret_access_key_env). */
  access_key_id_env?: string;
  /** The environment variable holding the secret access key (with access_key_id_env). */
  secret_access_key_env?: string;
  /** The environment variable holding a session token of temporary keys (with the two above). */
  session_token_env?: string;
}

/**
 * The Microsoft Entra ID application of an Azure OpenAI upstream: with client_secret_env, a client
 * secret of the tenant's app registration; without, the pod's workload identity token
 * (AZURE_FEDERATED_TOKEN_FILE) exchanged for this client id, else the managed identity of this
 * client id. Ids are not secrets; the secret stays in its variable.
 */
export interface AzureCredentialSource {
  /** The application's (or user-assigned managed identity's) client id. */
  client_id: string;
  /** The Entra ID tenant; required with client_secret_env, else AZURE_TENANT_ID's. */
  tenant_id?: string;
  /** The environment variable holding the application's client secret. */
  client_secret_env?: string;
}

/** How the executor authenticates to Azure OpenAI. */
export const AZURE_AUTH_KINDS = ['api_key', 'entra_id'] as const;
export type AzureAuth = (typeof AZURE_AUTH_KINDS)[number];

/**
 * One deployment of `deployments`: an upstream, served by the model's provider unless it names
 * another, priced at the model's prices unless it names its own (required with another provider).
 */
export interface CatalogDeployment extends Upstream {
  /** The provider of this deployment; absent: the model's. */
  provider?: Provider;
  /** What an answer of this deployment costs; absent: the model's pricing. */
  pricing?: Pricing;
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
  /** `embedding` for a model of /v1/embeddings; absent (or `chat`): a chat model. */
  kind?: ModelKind;
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
   * More deployments of the same model besides `upstream` (another region, account or server, or
   * another provider), each with its own base_url; model, api_key_env and headers default to
   * `upstream`'s when the deployment is of the model's provider. The executor balances over
   * `upstream` and these, and fails over between them before the first byte. Absent when the
   * catalog lists none.
   */
  deployments?: readonly CatalogDeployment[];
  /** Present for simulated models. */
  simulation?: Simulation;
  /**
   * Present for embedding models. Their context_window is the most tokens of one input; they
   * produce no completion (max_output_tokens 0, no capabilities, no fallbacks: another model's
   * vectors live in another space).
   */
  embedding?: EmbeddingShape;
}

/** A validated catalog. */
export interface Catalog {
  readonly models: readonly CatalogModel[];
  readonly byId: ReadonlyMap<string, CatalogModel>;
}
