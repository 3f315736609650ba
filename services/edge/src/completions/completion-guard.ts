/**
 * The guardrails of a completion (chat completions, Responses, Messages, embeddings), as the
 * pipeline runs them: after auth and routing, the input's texts are checked (a block refuses the
 * request in its API's error shape, a mask replaces the texts the executor receives); before a
 * whole answer is rendered, its texts are checked (a block empties it with finish_reason
 * content_filter, a mask masks it) and the input's placeholders of restore_masked policies are put
 * back. A request no policy covers makes no call.
 */
import type { ChatResponseOutput } from '@gateway/proto';
import type { Completion } from './completion.js';
import { edgeError } from '../error-codes.js';
import type { RequestError } from '../errors.js';
import { answerTexts, blankAnswer, inputTexts, writeBack } from '../guardrails/completion-texts.js';
import { blockedMessage, type GuardChecks, guardFor } from '../guardrails/request-guard.js';

/** The guard's API name of a wire, by its route. */
const API_OF_ROUTE: Readonly<Record<string, string>> = {
  '/v1/chat/completions': 'chat',
  '/v1/responses': 'responses',
  '/v1/messages': 'messages',
  '/v1/embeddings': 'embeddings',
};

/** The refusal of a request or tool call a policy blocked: 400 content_policy_violation. */
export function contentPolicyViolation(message: string): RequestError {
  return edgeError('content_policy_violation', message);
}

/**
 * Checks a routed completion's input and keeps its guard for the answer (Completion.guard, when
 * an output policy applies or masked input is to be restored); throws the refusal of a block.
 */
export async function guardCompletionInput(checks: GuardChecks | undefined, completion: Completion): Promise<void> {
  const { decision, routing, parsed } = completion;
  const guard = guardFor(
    checks,
    {
      requestId: completion.requestId,
      keyId: decision.key_id ?? '',
      teamId: decision.team_id ?? '',
      model: routing.model.id ?? '',
      api: API_OF_ROUTE[completion.wire.route] ?? completion.wire.route,
      signal: completion.signal,
      traceparent: completion.traceparent,
    },
    parsed.embeddings ? ['POINT_INPUT'] : ['POINT_INPUT', 'POINT_OUTPUT'],
  );
  if (!guard) return;
  completion.guardDecisions = guard.decisions;
  if (guard.covers('POINT_INPUT')) {
    const slots = inputTexts(parsed.request, parsed.embeddings);
    const response = await guard.check('POINT_INPUT', slots, true);
    if (response.blocked) throw contentPolicyViolation(blockedMessage('The request', response));
    writeBack(slots, response.texts);
  }
  if (guard.guardsOutput) completion.guard = guard;
}

/**
 * Checks a whole answer before it is rendered, in place: blocked, its content is removed and its
 * finish_reason is content_filter; masked, the masked texts replace the answer's. Then the input's
 * placeholders of restore_masked policies are put back.
 */
export async function guardWholeAnswer(completion: Completion, response: ChatResponseOutput): Promise<void> {
  const guard = completion.guard;
  if (!guard) return;
  if (guard.policies.length > 0) {
    const slots = answerTexts(response);
    const checked = await guard.check('POINT_OUTPUT', slots, true);
    if (checked.blocked) {
      blankAnswer(response);
      return;
    }
    writeBack(slots, checked.texts);
  }
  for (const slot of answerTexts(response)) {
    const restored = guard.restore(slot.text);
    if (restored !== slot.text) slot.holder[slot.field] = restored;
  }
}
