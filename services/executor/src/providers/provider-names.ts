/**
 * The name of each provider adapter: reported to callers (ExecuteResponse.provider, StreamEnd.provider),
 * kept in usage records, the catalog's `provider` value, and the name the refusals of what an adapter
 * cannot translate give (ProviderRefusal). Each is written here only.
 */
export const ANTHROPIC_PROVIDER = 'anthropic';
export const AZURE_PROVIDER = 'azure';
export const BEDROCK_PROVIDER = 'bedrock';
export const GEMINI_PROVIDER = 'gemini';
export const OPENAI_COMPATIBLE_PROVIDER = 'openai-compatible';
export const SIMULATED_PROVIDER = 'simulated';
export const VERTEX_PROVIDER = 'vertex';
export const VERTEX_ANTHROPIC_PROVIDER = 'vertex-anthropic';
