/**
 * The reference of the API conformance tests: the simulated model answers the same conversation
 * the same way on every API, so the chat completion of a conversation is what the Messages or
 * Responses answer to it must say.
 */
import type OpenAI from 'openai';

/** The text and usage of the chat completion of `system` then `question` on `model`. */
export async function referenceAnswer(client: OpenAI, model: string, system: string, question: string) {
  const completion = await client.chat.completions.create({
    model,
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: question },
    ],
  });
  return { text: completion.choices[0]!.message.content!, usage: completion.usage! };
}
