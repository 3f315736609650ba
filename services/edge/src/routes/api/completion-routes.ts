/**
 * The completion routes: POST /v1/chat/completions, /v1/responses, /v1/messages and /v1/embeddings,
 * each a wire (wire/chat-completions-wire.ts, responses-wire.ts, messages-wire.ts,
 * embeddings-wire.ts) plugged into the completion pipeline (completions/completion-pipeline.ts),
 * which admits, routes, executes and reports every completion the same way whatever its wire.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requestKey } from '../../auth/key-check.js';
import { releaseReservation } from '../../auth/reservations.js';
import type { CompletionWire } from '../../completions/completion.js';
import { CompletionPipeline } from '../../completions/completion-pipeline.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { chatCompletionsWire } from '../../wire/chat-completions-wire.js';
import { embeddingsWire } from '../../wire/embeddings-wire.js';
import { messagesWire } from '../../wire/messages-wire.js';
import { responsesWire } from '../../wire/responses-wire.js';

/**
 * The completion APIs the edge serves, each a wire on the one pipeline. The embeddings wire reads a
 * ParsedEmbeddingRequest, a ParsedChatRequest with its embeddings' input beside it, so it is a
 * CompletionWire as it stands.
 */
const WIRES: readonly CompletionWire[] = [chatCompletionsWire, responsesWire, messagesWire, embeddingsWire];

/** A request without a key is refused before its body is read and parsed. */
export function requireKey(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  try {
    requestKey(request);
    done();
  } catch (error) {
    done(error as Error);
  }
}

/**
 * Registers the completion routes: one pipeline (its metrics are registered once), and a POST
 * route per wire whose errors the edge's error handler renders in that wire's shape.
 */
export function registerCompletionRoutes(app: FastifyInstance, deps: EdgeDependencies): void {
  const pipeline = new CompletionPipeline(deps);
  // A request that fails after auth reserved its tokens settles with 0: it produced nothing.
  app.addHook('onError', async (request) => releaseReservation(request));
  for (const wire of WIRES) {
    app.post(wire.route, { onRequest: requireKey, config: { wire } }, (request: FastifyRequest, reply: FastifyReply) => pipeline.run(wire, request, reply));
  }
}
