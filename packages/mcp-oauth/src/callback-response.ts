/**
 * The answer to the OAuth callback (`GET /mcp/oauth/callback?code&state`), independent of any
 * HTTP framework: the edge mounts it and writes what it returns. A browser (Accept: text/html)
 * gets a small page telling the user to return to their client; anything else gets JSON. Neither
 * ever holds the code, the state, a token or the authorization server's text.
 */
import { UpstreamOAuthError, type UpstreamOAuthErrorReason, type UpstreamCredentials } from './upstream-credentials.js';

/** What to send back: status, headers (content type among them) and body. */
export interface CallbackResponse {
  status: number;
  contentType: string;
  /** Every header to send: the content type, and that the answer is not cached, leaks no referrer and runs nothing. */
  headers: Record<string, string>;
  body: string;
  /** The key and server the tokens were stored for, when the flow completed (for the caller's log and audit). */
  completed?: { keyId: string; serverId: string };
}

/** The callback's status per failure: the client's fault is 400, the user's refusal 403, the authorization server's 502. */
const STATUS: Record<UpstreamOAuthErrorReason, number> = {
  invalid_state: 400,
  invalid_request: 400,
  invalid_server: 400,
  authorization_denied: 403,
  authorization_failed: 502,
  upstream_unavailable: 502,
};

/** The query's parameters as the callback reads them: the first value of each, strings only. */
function queryValue(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && typeof value[0] === 'string') return value[0];
  return undefined;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

const HTML = 'text/html; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The callback's URL holds a code and a state: the answer is never cached, sends no referrer, and
 * its page loads and runs nothing (only its inline style applies).
 */
function headersOf(contentType: string): Record<string, string> {
  return {
    'content-type': contentType,
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    ...(contentType === HTML ? { 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'" } : {}),
  };
}

function page(title: string, message: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto; padding: 0 1rem"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>
`;
}

/**
 * Completes the flow for a callback query (`code`, `state`, `error`; a framework's parsed query
 * object, repeated parameters taking their first value) and renders the result, as HTML when the
 * request's Accept header prefers it and JSON otherwise. A failure of our own (Redis down) is
 * rethrown for the caller's 500 handling: it is not the user's to read.
 */
export async function oauthCallbackResponse(
  credentials: Pick<UpstreamCredentials, 'complete'>,
  query: Record<string, unknown>,
  accept?: string,
): Promise<CallbackResponse> {
  const html = typeof accept === 'string' && /\btext\/html\b/.test(accept);
  const code = queryValue(query.code);
  const state = queryValue(query.state);
  const error = queryValue(query.error);
  try {
    const completed = await credentials.complete({
      ...(code !== undefined ? { code } : {}),
      ...(state !== undefined ? { state } : {}),
      ...(error !== undefined ? { error } : {}),
    });
    const message = `The gateway can now call the MCP server "${completed.serverId}" for you. You can close this window and return to your client.`;
    return {
      status: 200,
      completed,
      ...(html
        ? { contentType: HTML, headers: headersOf(HTML), body: page('Authorized', message) }
        : { contentType: JSON_TYPE, headers: headersOf(JSON_TYPE), body: JSON.stringify({ status: 'authorized', server: completed.serverId }) }),
    };
  } catch (failure) {
    if (!(failure instanceof UpstreamOAuthError)) throw failure;
    const status = STATUS[failure.reason];
    return html
      ? { status, contentType: HTML, headers: headersOf(HTML), body: page('Authorization failed', `${failure.message}. Start again from your client.`) }
      : {
          status,
          contentType: JSON_TYPE,
          headers: headersOf(JSON_TYPE),
          body: JSON.stringify({ error: { message: failure.message, type: 'oauth_error', param: null, code: failure.oauthError ?? failure.reason } }),
        };
  }
}
