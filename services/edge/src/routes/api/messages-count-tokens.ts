/**
 * POST /v1/messages/count_tokens: Anthropic's token count of a Messages body (the body of
 * POST /v1/messages, `max_tokens` optional), `{"input_tokens": N}`, counted with the gateway's
 * tokenizer on the request the body translates into: the count the completion would be checked
 * and reserved with. The key is checked only (auth's check-only call): a count is neither a
 * request of the key's rate limit nor a reservation of its tokens. A model outside the key's
 * allow-lists is refused (403 permission_error) by that same check. The body is read first: its
 * errors still answer after the key's (the error handler checks a key it has not seen).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { countPromptTokensAsync } from '@gateway/tokens';
import { checkKey, noteKeyChecked, requestKey } from '../../auth/key-check.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { messagesErrors } from '../../wire/messages-output.js';
import { parseMessagesRequest } from '../../wire/parse-messages-request.js';
import { requireKey } from './completion-routes.js';

/** Registers POST /v1/messages/count_tokens, its errors in Anthropic's envelope. */
export function registerMessagesCountTokens(app: FastifyInstance, deps: EdgeDependencies): void {
  app.post('/v1/messages/count_tokens', { onRequest: requireKey, config: { wire: messagesErrors } }, async (request: FastifyRequest, reply: FastifyReply) => {
    const parsed = parseMessagesRequest(request.body, { countOnly: true });
    noteKeyChecked(request);
    const model = parsed.request.model ?? '';
    await checkKey(deps, requestKey(request), request.id, { model: model === 'auto' ? '' : model });
    const inputTokens = await countPromptTokensAsync(parsed.request);
    void reply.header('content-type', 'application/json').header('request-id', request.id);
    return JSON.stringify({ input_tokens: inputTokens });
  });
}
