/**
 * A streamed chat completion read the way an `openai` client user reads it: the text of the deltas
 * joined, the last finish reason, and the usage chunk (`stream_options.include_usage`).
 */
import type OpenAI from 'openai';

/** What a streamed chat completion said. */
export interface StreamedChat {
  text: string;
  usage: OpenAI.CompletionUsage | undefined;
  finish: string | null | undefined;
}

/** Streams a chat completion of `Hello` on `model` with its usage, and reads it whole. */
export async function streamedChat(openai: OpenAI, model: string): Promise<StreamedChat> {
  const stream = await openai.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Hello' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | undefined;
  let finish: string | null | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, usage, finish };
}
