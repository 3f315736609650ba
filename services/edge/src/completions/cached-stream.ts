/**
 * A streamed hit: the kept answer written as the stream of the wire the caller asked on, at once,
 * through the same renderer and head as a live stream (completions/sse-relay.ts), and reported
 * before its last event so that the `gateway` summary shows its cost and latency.
 */
import type { ChatResponseOutput } from '@gateway/proto';
import type { Completion } from './completion.js';
import { writeSseHead } from './sse-relay.js';
import type { UsageReporter } from './usage-report.js';
import { replayedChunks } from '../cache/replayed-chunks.js';

/** Streams a kept answer to the caller, with a fresh completion id. */
export function replayStream(completion: Completion, response: ChatResponseOutput, id: string, report: UsageReporter): void {
  const renderer = completion.wire.openStream(completion);
  const created = Math.floor(Date.now() / 1000);
  renderer.named(id, created);
  const { chunks, finishing } = replayedChunks(response, id, created);
  writeSseHead(completion, renderer, chunks[0]);
  completion.firstTokenMs = completion.reply.elapsedTime;
  let text = '';
  const events: string[] = [];
  for (const chunk of [...chunks, ...finishing.slice(0, -1)]) {
    for (const choice of chunk.choices) {
      text += choice.delta?.content ?? '';
      for (const call of choice.delta?.tool_calls ?? []) text += call.function?.arguments ?? '';
    }
    events.push(renderer.event(renderer.chunkJson(chunk)));
  }
  completion.streamedText = text;
  report(completion, 'OUTCOME_COMPLETED');
  const last = finishing.at(-1);
  events.push(renderer.end(last ? renderer.chunkJson(last) : undefined, completion.usage));
  completion.reply.raw.end(events.join(''));
}
