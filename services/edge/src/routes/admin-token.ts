/**
 * The admin token check shared by every /admin route: none or a wrong token is a 401, a gateway
 * API key (`br-...`) a 403. The comparison hashes both sides first, so it takes the same time
 * whatever the lengths, and the token itself is never logged or echoed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { RequestError } from '../errors.js';

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** An onRequest hook that lets through only requests bearing `token`. */
export function adminTokenHook(token: string): (request: FastifyRequest) => Promise<void> {
  const expected = sha256(token);
  return async (request) => {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header) : null;
    if (!match) throw new RequestError(401, 'The admin API needs the admin token in an Authorization header (Bearer).', { code: 'missing_admin_token' });
    if (timingSafeEqual(sha256(match[1]!), expected)) return;
    if (match[1]!.startsWith('br-')) throw new RequestError(403, 'An API key cannot use the admin API: use the admin token.', { code: 'admin_token_required' });
    throw new RequestError(401, 'The admin token is not valid.', { code: 'invalid_admin_token' });
  };
}
