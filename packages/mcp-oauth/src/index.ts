/**
 * Per-gateway-key OAuth credentials for upstream MCP servers: the authorization-code flow with
 * PKCE per key, tokens sealed in Redis, refresh, revocation, and the callback's answer.
 */
export { type CallbackResponse, oauthCallbackResponse } from './callback-response.js';
export { sha256Hex, type UpstreamCredentialKeys, upstreamCredentialKeys } from './keys.js';
export { assertCredentialsKey, CREDENTIALS_KEY_BYTES, credentialsKeyFromBase64, SealedBoxError } from './sealed-box.js';
export {
  REFRESH_BEFORE_EXPIRY_MS,
  STATE_TTL_SECONDS,
  UpstreamCredentials,
  type UpstreamCredentialsOptions,
  UpstreamOAuthError,
  type UpstreamOAuthErrorReason,
  type UpstreamOAuthServer,
} from './upstream-credentials.js';
