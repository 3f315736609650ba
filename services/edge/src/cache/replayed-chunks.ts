/**
 * A kept answer as the chunks of a stream, for a streamed hit: per choice, its thinking blocks,
 * its text, its refusal, its tool calls whole, then its finish; the wire renders each chunk as it
 * renders a live one, so that the hit parses as the original did. The chunks carry the answer's
 * content, not its pacing: a hit streams at once.
 */
import type { ChatChunkOutput, ChatResponseOutput, DeltaOutput } from '@gateway/proto';

/** The chunks of a kept answer, the finishing ones last (one per choice). */
export function replayedChunks(response: ChatResponseOutput, id: string, created: number): { chunks: ChatChunkOutput[]; finishing: ChatChunkOutput[] } {
  const chunk = (index: number, delta: Partial<DeltaOutput>, finish?: ChatChunkOutput['choices'][number]['finish_reason']): ChatChunkOutput => ({
    id,
    created,
    model: response.model ?? '',
    choices: [{ index, delta: { tool_calls: [], ...delta } as DeltaOutput, ...(finish && { finish_reason: finish }) }],
  });
  const chunks: ChatChunkOutput[] = [];
  const finishing: ChatChunkOutput[] = [];
  for (const choice of response.choices) {
    const index = choice.index ?? 0;
    const message = choice.message;
    chunks.push(chunk(index, { role: 'ROLE_ASSISTANT' }));
    for (const block of message?.thinking?.blocks ?? []) {
      if (block.thinking) chunks.push(chunk(index, { thinking: block.thinking.thinking ?? '', thinking_signature: block.thinking.signature ?? '' }));
      else if (block.redacted_thinking) chunks.push(chunk(index, { redacted_thinking: block.redacted_thinking.data ?? '' }));
    }
    if (message?.content) chunks.push(chunk(index, { content: message.content }));
    if (message?.refusal) chunks.push(chunk(index, { refusal: message.refusal }));
    for (const [position, call] of (message?.tool_calls ?? []).entries()) {
      chunks.push(
        chunk(index, {
          tool_calls: [
            {
              index: position,
              id: call.id ?? '',
              type: call.type || 'function',
              function: { name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' },
            },
          ],
        }),
      );
    }
    finishing.push(chunk(index, {}, choice.finish_reason ?? 'FINISH_REASON_STOP'));
  }
  return { chunks, finishing };
}
