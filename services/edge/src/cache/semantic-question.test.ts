import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '@gateway/proto';
import { MAX_QUESTION_CHARS, semanticQuestion } from './semantic-question.js';

const request = (messages: ChatRequest['messages'], extra: Partial<ChatRequest> = {}): ChatRequest => ({ model: 'gpt-4o', messages, temperature: 0, ...extra });

describe("a semantic lookup's question", () => {
  it("is the last user turn's text; its context is the request without that text, the same for every question", () => {
    const system = { role: 'ROLE_SYSTEM', text: 'You answer briefly.' } as const;
    const first = semanticQuestion(request([system, { role: 'ROLE_USER', text: 'What is the capital of France?' }]));
    const second = semanticQuestion(request([system, { role: 'ROLE_USER', text: 'Which city is the capital of France?' }]));
    expect(first?.text).toBe('What is the capital of France?');
    expect(second?.context).toEqual(first?.context);
    expect(first?.context.messages).toEqual([system, { role: 'ROLE_USER' }]);
    expect(first?.context.temperature).toBe(0);
  });

  it('joins text parts, and keeps what else the turn carries in its context', () => {
    const question = semanticQuestion(request([{ role: 'ROLE_USER', name: 'ada', parts: { parts: [{ text: 'Two lines' }, { text: 'of a question' }] } }]));
    expect(question?.text).toBe('Two lines\nof a question');
    expect(question?.context.messages).toEqual([{ role: 'ROLE_USER', name: 'ada' }]);
  });

  it('is none for a last turn of another role, with an image, empty, or too long to embed', () => {
    const user = { role: 'ROLE_USER', text: 'Look it up.' } as const;
    expect(semanticQuestion(request([user, { role: 'ROLE_TOOL', tool_call_id: 'call_1', text: '{"found":true}' }]))).toBeUndefined();
    expect(
      semanticQuestion(request([{ role: 'ROLE_USER', parts: { parts: [{ text: 'What is this?' }, { image_url: { url: 'https://example.com/a.png' } }] } }])),
    ).toBeUndefined();
    expect(semanticQuestion(request([{ role: 'ROLE_USER', text: '   ' }]))).toBeUndefined();
    expect(semanticQuestion(request([{ role: 'ROLE_USER', text: 'a'.repeat(MAX_QUESTION_CHARS + 1) }]))).toBeUndefined();
    expect(semanticQuestion(request([]))).toBeUndefined();
  });
});
